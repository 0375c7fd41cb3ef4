/**
 * @module OpenTelemetry tracing shared by every layer: the one cheap "is tracing on" test, the API, the
 * tracer, the content opt-in, and how a span ends. Built on `@opentelemetry/api` alone, a no-op until an
 * SDK is registered (`toolbus up` and `toolbus service` start one when `OTEL_EXPORTER_OTLP_ENDPOINT` is
 * set).
 *
 * Every instrumented path calls {@link tracingEnabled} once and, when it is false, takes the code it took
 * before tracing existed: no span, no context, no attribute object. The API itself is loaded at the first
 * span ({@link otel}), not at import: it is some 50 files, and a process that traces nothing (most starts
 * of `toolbus up`) never loads it. Attributes are set only on a span that records, and content
 * (arguments, results, messages, error text) only with `TOOLBUS_TRACE_CONTENT=1`.
 */
import { createRequire } from 'node:module';
import type * as OtelApiModule from '@opentelemetry/api';
import type { Context, Span, SpanOptions, Tracer, TracerProvider } from '@opentelemetry/api';
import { isToolbusError } from '../errors/index.js';

/** The `@opentelemetry/api` module. */
export type OtelApi = typeof OtelApiModule;

/**
 * Where every copy of the API of major version 1 keeps what was registered with it (the tracer provider
 * under `trace`, the context manager, the propagator): one global shared by the ESM and CommonJS builds
 * and by other packages' copies, so it can be read without loading the API.
 */
const API_GLOBAL = Symbol.for('opentelemetry.js.api.1');

let api: OtelApi | undefined;

/**
 * The OpenTelemetry API, loaded at the first call (synchronously: its CommonJS build). Call it only on a
 * path {@link tracingEnabled} let through. Registrations made through the ESM build (an SDK, a test) are
 * seen here too: both keep them in the one global.
 */
export function otel(): OtelApi {
  return (api ??= createRequire(import.meta.url)('@opentelemetry/api') as OtelApi);
}

/** The instrumentation scope of toolbus's spans. */
export const TRACER_NAME = 'toolbus';

/** The environment variable that lets spans carry content: `1` or `true`. */
export const TRACE_CONTENT_ENV = 'TOOLBUS_TRACE_CONTENT';

/** Attribute names used by more than one layer (OpenTelemetry semantic conventions). */
export const TraceAttribute = {
  ErrorType: 'error.type',
  OperationName: 'gen_ai.operation.name',
  ProviderName: 'gen_ai.provider.name',
  /** The older name of `gen_ai.provider.name`, still read by many backends. */
  System: 'gen_ai.system',
  RequestModel: 'gen_ai.request.model',
  ToolName: 'gen_ai.tool.name',
  ToolCallId: 'gen_ai.tool.call.id',
  ToolType: 'gen_ai.tool.type',
  ToolDescription: 'gen_ai.tool.description',
  ToolCallArguments: 'gen_ai.tool.call.arguments',
  ToolCallResult: 'gen_ai.tool.call.result',
} as const;

/**
 * True when an OpenTelemetry SDK has registered a tracer provider (with this or any other copy of the API
 * of major version 1). The test is two property reads of a global and loads nothing: the hot paths
 * (`ToolSet.call`, the RPC layer) make it once per call and skip everything else when it is false.
 */
export function tracingEnabled(): boolean {
  return (globalThis as Record<symbol, { trace?: unknown } | undefined>)[API_GLOBAL]?.trace !== undefined;
}

/**
 * The content setting of the process: `TOOLBUS_TRACE_CONTENT`, read at the first span that could carry
 * content (an environment read costs as much as a third of a span), or what {@link setTraceContent} set.
 * Process-wide like the tracer provider it goes with.
 */
let content: boolean | undefined;

/**
 * True when spans may carry content: tool arguments and results, model messages, error messages.
 * @default false (`TOOLBUS_TRACE_CONTENT` unset)
 */
export function traceContent(): boolean {
  if (content === undefined) {
    const value = process.env[TRACE_CONTENT_ENV];
    content = value === '1' || value === 'true';
  }
  return content;
}

/**
 * Sets whether spans carry content, instead of `TOOLBUS_TRACE_CONTENT`; `undefined` reads the variable
 * again at the next span. For a program that embeds toolbus, and for tests.
 */
export function setTraceContent(enabled: boolean | undefined): void {
  content = enabled;
}

/** toolbus's tracer, kept with the provider it came from: a provider registered (or replaced) later is used at once. */
let tracerOf: { provider: TracerProvider; tracer: Tracer } | undefined;

/** Starts a span of toolbus's tracer, as a child of `parent` (the active context unless given). */
export function startSpan(
  name: string,
  options: SpanOptions,
  parent: Context = otel().context.active(),
): Span {
  const global = otel().trace.getTracerProvider();
  // The global proxy's delegate, to skip a hop per span (duck-typed: the proxy may be another copy's).
  const provider = hasDelegate(global) ? global.getDelegate() : global;
  if (tracerOf?.provider !== provider) tracerOf = { provider, tracer: provider.getTracer(TRACER_NAME) };
  return tracerOf.tracer.startSpan(name, options, parent);
}

/** Runs `fn` with `span` active in `parent`, so spans `fn` starts (sync or async) are its children. */
export function runInSpan<T>(span: Span, fn: () => T, parent: Context = otel().context.active()): T {
  const { context, trace } = otel();
  return context.with(trace.setSpan(parent, span), fn);
}

function hasDelegate(
  provider: TracerProvider,
): provider is TracerProvider & { getDelegate(): TracerProvider } {
  return typeof (provider as { getDelegate?: unknown }).getDelegate === 'function';
}

/**
 * The `error.type` of a failure: a toolbus error's `code` (`timeout`, `unavailable`, …), else the
 * error's class name (`TypeError`), else `_OTHER` as the conventions say.
 */
export function errorTypeOf(error: unknown): string {
  if (isToolbusError(error)) return error.code;
  if (error instanceof Error) return error.name || '_OTHER';
  return '_OTHER';
}

/**
 * Ends `span` as failed: `error.type` and an error status, whose description is `message` only with the
 * content opt-in (a tool's error text is what the model is told, and may quote its arguments).
 */
export function endSpanWithError(span: Span, errorType: string, message: string | undefined): void {
  if (span.isRecording()) {
    span.setAttribute(TraceAttribute.ErrorType, errorType);
    span.setStatus(
      message !== undefined && traceContent()
        ? { code: otel().SpanStatusCode.ERROR, message }
        : { code: otel().SpanStatusCode.ERROR },
    );
  }
  span.end();
}

/** Ends `span` as failed by `error` (see {@link errorTypeOf}). */
export function endSpanWithFailure(span: Span, error: unknown): void {
  endSpanWithError(span, errorTypeOf(error), error instanceof Error ? error.message : String(error));
}

/** JSON text of a value for a content attribute; a value JSON cannot write becomes its `String` form. */
export function contentText(value: unknown): string {
  if (typeof value === 'string') return value;
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}
