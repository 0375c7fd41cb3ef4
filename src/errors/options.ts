/**
 * @module The one check of numeric options given in code, with the one code for that misuse: `usage`.
 * (Values read from config items are config errors instead: `invalid-config`, from their parsers.)
 */
import { ToolbusError } from './toolbus-error.js';

/** What {@link numberOption} accepts besides positive finite numbers. */
export interface NumberOptionRule {
  /** Only whole numbers. @default false */
  integer?: boolean;
  /** 0 too. @default false */
  zero?: boolean;
  /** `Infinity` too (e.g. "no limit"). @default false */
  infinity?: boolean;
  /** The smallest value taken, above 0 (e.g. room for a truncation notice). @default none */
  min?: number;
  /** The largest value taken (e.g. the longest `setTimeout` delay). @default none */
  max?: number;
}

/**
 * Returns `value`, or `fallback` when it is undefined, after checking it is a number the rule allows.
 *
 * @throws ToolbusError `usage` naming the owner, the option, what it must be and what it got, e.g.
 *   `ToolSet: option 'concurrency' must be a positive integer, got 0`.
 */
export function numberOption(
  owner: string,
  name: string,
  value: unknown,
  fallback: number,
  rule: NumberOptionRule = {},
): number {
  if (value === undefined) return fallback;
  const ok =
    typeof value === 'number' &&
    !Number.isNaN(value) &&
    (value > 0 || (rule.zero === true && value === 0)) &&
    (Number.isFinite(value) ? !rule.integer || Number.isInteger(value) : rule.infinity === true) &&
    (rule.min === undefined || value >= rule.min) &&
    (rule.max === undefined || value <= rule.max || (rule.infinity === true && value === Infinity));
  if (ok) return value;
  const kind = `${rule.zero ? '0 or a ' : 'a '}positive ${rule.integer ? 'integer' : 'number'}`;
  const extras = [
    ...(rule.min !== undefined ? [`at least ${rule.min}`] : []),
    ...(rule.max !== undefined ? [`at most ${rule.max}`] : []),
    ...(rule.infinity ? ['or Infinity for no limit'] : []),
  ];
  throw new ToolbusError(
    'usage',
    `${owner}: option '${name}' must be ${kind}${extras.length ? ` (${extras.join(', ')})` : ''}, got ${String(value)}`,
  );
}
