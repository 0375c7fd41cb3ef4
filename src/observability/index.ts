/**
 * @module observability: the `toolbus_*` Prometheus metrics of a process (prom-client), and its live tool
 * calls for the web console. Internal to the CLI and the gateway for now: not exported from the root entry
 * nor a subpath (the gateway entry re-exports what its options name).
 */
export { ToolbusMetrics, DEFAULT_TOOL_CALL_BUCKETS, UNKNOWN_TOOL_LABEL } from './metrics.js';
export type {
  ToolbusMetricsOptions,
  MetricsExposition,
  ObservedService,
  ObservedRegistry,
  Unobserve,
} from './metrics.js';
export {
  LiveCalls,
  LiveCallStatus,
  DEFAULT_LIVE_CALLS_KEPT,
  DEFAULT_MAX_LIVE_CALL_LISTENERS,
  LIVE_CALL_BUCKET_MS,
  LIVE_CALL_BUCKETS,
  LIVE_CALL_TEXT_BYTES,
} from './live-calls.js';
export type {
  LiveCall,
  LiveCallEvent,
  LiveCallFeed,
  LiveCallProgress,
  LiveCallQuery,
  LiveCallRates,
  LiveCallsOptions,
} from './live-calls.js';
