/**
 * @module Registers the real OpenTelemetry Node SDK in a test process, with spans kept in memory: the
 * context manager (AsyncLocalStorage) and the W3C propagator are the ones `toolbus up` gets. A tracer
 * provider is process-wide, so a test file registers it once (node's runner gives each file a process).
 */
import { NodeSDK } from '@opentelemetry/sdk-node';
import { InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from '@opentelemetry/sdk-trace';

/** The in-memory SDK of a test file. */
export interface TestTracing {
  /** Every span ended so far, in the order they ended. */
  spans(): ReadableSpan[];
  /** Forgets the spans so far. */
  reset(): void;
  /** The one span named `name`; fails naming the spans there are otherwise. */
  one(name: string): ReadableSpan;
  /** Shuts the SDK down. */
  stop(): Promise<void>;
}

/** Starts the SDK with a synchronous in-memory exporter (a span is visible as soon as it ends). */
export function startTestTracing(): TestTracing {
  const exporter = new InMemorySpanExporter();
  const sdk = new NodeSDK({
    serviceName: 'toolbus-test',
    spanProcessors: [new SimpleSpanProcessor({ exporter })],
    metricReaders: [],
    logRecordProcessors: [],
    resourceDetectors: [],
  });
  sdk.start();
  return {
    spans: () => [...exporter.getFinishedSpans()],
    reset: () => exporter.reset(),
    one(name) {
      const found = exporter.getFinishedSpans().filter((s) => s.name === name);
      if (found.length !== 1) {
        const names = exporter.getFinishedSpans().map((s) => s.name);
        throw new Error(`expected one span '${name}', got ${found.length}; spans: ${JSON.stringify(names)}`);
      }
      return found[0]!;
    },
    stop: () => sdk.shutdown(),
  };
}

/** The id of a span's parent, or undefined for a root span. */
export function parentIdOf(span: ReadableSpan): string | undefined {
  return span.parentSpanContext?.spanId;
}
