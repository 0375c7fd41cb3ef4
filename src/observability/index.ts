/**
 * @module observability: the `toolbus_*` Prometheus metrics of a process (prom-client). Internal to the
 * CLI for now: not exported from the root entry nor a subpath.
 */
export { ToolbusMetrics, DEFAULT_TOOL_CALL_BUCKETS, UNKNOWN_TOOL_LABEL } from './metrics.js';
export type {
  ToolbusMetricsOptions,
  MetricsExposition,
  ObservedService,
  ObservedRegistry,
  Unobserve,
} from './metrics.js';
