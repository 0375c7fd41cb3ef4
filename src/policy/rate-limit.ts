/**
 * @module Rates as people write them (`20/s`, `600/m`, `1000/h`) and the token bucket that enforces one.
 */
import { ToolbusError } from '../errors/index.js';

/** A rate: `tokens` per `periodMs`, with bursts up to `burst` (by default one period's worth). */
export interface Rate {
  /** How many calls a period allows. */
  readonly tokens: number;
  /** The period in milliseconds (1 000 for `/s`). */
  readonly periodMs: number;
  /** The most calls allowed at once after a quiet spell. @default tokens */
  readonly burst: number;
  /** The rate as written, e.g. `20/s`. */
  readonly text: string;
}

const PERIODS: Record<string, number> = { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 };
const RATE_SHAPE = /^\s*(\d+(?:\.\d+)?)\s*\/\s*(\d*)\s*(s|sec|second|m|min|minute|h|hour|d|day)\s*$/i;

/**
 * Parses `N/s`, `N/m`, `N/h`, `N/d` (also `N/10s`, `N/min`); `burst` overrides the bucket's size.
 * @throws ToolbusError `invalid-config` naming what was expected.
 */
export function parseRate(text: string, burst?: number): Rate {
  const match = RATE_SHAPE.exec(text);
  const tokens = match ? Number(match[1]) : NaN;
  // `3/0s` is no period at all: refuse it rather than read it as `3/s`.
  if (!match || !(tokens > 0) || (match[2] !== '' && !(Number(match[2]) > 0))) {
    throw new ToolbusError(
      'invalid-config',
      `rate '${String(text).slice(0, 40)}' is not a rate: expected N/s, N/m, N/h or N/d with N > 0, e.g. 20/s`,
    );
  }
  const multiple = match[2] === '' ? 1 : Number(match[2]);
  const periodMs = PERIODS[match[3]!.toLowerCase()[0]!]! * multiple;
  if (burst !== undefined && !(Number.isFinite(burst) && burst >= 1)) {
    throw new ToolbusError('invalid-config', `burst must be a number ≥ 1, got ${String(burst)}`);
  }
  return { tokens, periodMs, burst: burst ?? Math.max(1, tokens), text: text.trim() };
}

/**
 * A token bucket: it holds up to `rate.burst` tokens and refills at `rate.tokens` per `rate.periodMs`;
 * each call takes one. Refilled lazily from the clock, so an idle bucket costs nothing.
 */
export class TokenBucket {
  readonly rate: Rate;
  #tokens: number;
  #at: number;

  constructor(rate: Rate, now: number = Date.now()) {
    this.rate = rate;
    this.#tokens = rate.burst;
    this.#at = now;
  }

  /**
   * Takes a token: 0 when there was one, else how many milliseconds until there is one (nothing taken).
   */
  take(now: number = Date.now()): number {
    const { tokens, periodMs, burst } = this.rate;
    if (now > this.#at) {
      this.#tokens = Math.min(burst, this.#tokens + ((now - this.#at) * tokens) / periodMs);
      this.#at = now;
    }
    if (this.#tokens >= 1) {
      this.#tokens -= 1;
      return 0;
    }
    return Math.max(1, Math.ceil(((1 - this.#tokens) * periodMs) / tokens));
  }

  /** Puts back a token taken for a call that another limit then refused, so it costs nothing. */
  giveBack(): void {
    this.#tokens = Math.min(this.rate.burst, this.#tokens + 1);
  }

  /** True when the bucket is full again, so a caller may forget it. */
  full(now: number = Date.now()): boolean {
    const { tokens, periodMs, burst } = this.rate;
    return this.#tokens + ((now - this.#at) * tokens) / periodMs >= burst;
  }
}
