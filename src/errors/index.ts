/**
 * @module errors: floor 0. The base error, its codes grouped by layer, and the abort mapping every
 * layer shares. Imports nothing.
 */
export { ToolbusError, isToolbusError } from './toolbus-error.js';
export {
  ToolbusErrorCode,
  ToolErrorCode,
  SchemaErrorCode,
  ConfigErrorCode,
  BusErrorCode,
  ModelErrorCode,
  GatewayErrorCode,
  UsageErrorCode,
} from './codes.js';
export { abortError, raceSignal } from './abort.js';
export type { AbortState } from './abort.js';
export { numberOption } from './options.js';
export type { NumberOptionRule } from './options.js';
export { closestName, didYouMean } from './did-you-mean.js';
