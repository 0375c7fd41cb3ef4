/**
 * @module The spans of the RPC layer, made only while tracing is on: a CLIENT span per call, whose W3C
 * trace context (`traceparent`, `tracestate`) goes on the request's properties, and a SERVER span per
 * served call, whose parent is read back from those properties. Carriers go through the OpenTelemetry
 * propagation API (the registered propagator decides the keys), never through hand parsing.
 *
 * Names follow the RPC conventions: `{rpc.service}/{rpc.method}`, with the canonical request queue as
 * the service, e.g. `request:tg:joke/invoke`.
 */
import type { Attributes, Context, Span } from '@opentelemetry/api';
import type { BusProperties } from '../../bus/index.js';
import { otel, startSpan } from '../../tools/index.js';

/** The `rpc.system` of every toolbus protocol on the bus. */
export const RPC_SYSTEM = 'toolbus';

/** What names the spans of one client or server: its canonical request queue and the protocol's method. */
export interface RpcSpanTarget {
  /** The canonical request queue, e.g. `request:tg:joke`. */
  readonly service: string;
  /** The protocol's operation, e.g. `invoke` (tool services) or `ask` (the agent service). */
  readonly method: string;
}

/** Sets the attributes every RPC span has, plus the protocol's own (`extra`). */
function describe(span: Span, target: RpcSpanTarget, id: string, extra: Attributes | undefined): void {
  span.setAttribute('rpc.system', RPC_SYSTEM);
  span.setAttribute('rpc.service', target.service);
  span.setAttribute('rpc.method', target.method);
  // The correlation id: finds the call in the service's logs and hooks.
  span.setAttribute('toolbus.rpc.id', id);
  if (extra !== undefined) span.setAttributes(extra);
}

/**
 * Starts the CLIENT span of call `id` as a child of the active context, and writes its trace context
 * into `properties` (a fresh object of the caller's, about to be published). `extra` is asked for only
 * when the span records.
 */
export function startClientSpan(
  target: RpcSpanTarget,
  id: string,
  properties: Record<string, string>,
  extra: (() => Attributes | undefined) | undefined,
): Span {
  const { SpanKind, context, propagation, trace } = otel();
  const parent = context.active();
  const span = startSpan(`${target.service}/${target.method}`, { kind: SpanKind.CLIENT }, parent);
  if (span.isRecording()) describe(span, target, id, extra?.());
  // A span that does not record (sampled out) still carries its context, so the service follows the
  // caller's sampling decision.
  propagation.inject(trace.setSpan(parent, span), properties);
  return span;
}

/**
 * Starts the SERVER span of served call `id`, whose parent is the trace context the request carried
 * (none: a new trace). Returns the span and the context to serve the call in.
 */
export function startServerSpan(
  target: RpcSpanTarget,
  id: string,
  properties: BusProperties,
  extra: Attributes | undefined,
): { span: Span; context: Context } {
  const { ROOT_CONTEXT, SpanKind, propagation, trace } = otel();
  const parent = propagation.extract(ROOT_CONTEXT, properties);
  const span = startSpan(`${target.service}/${target.method}`, { kind: SpanKind.SERVER }, parent);
  if (span.isRecording()) describe(span, target, id, extra);
  return { span, context: trace.setSpan(parent, span) };
}
