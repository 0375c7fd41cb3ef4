/**
 * @module `ModelError`: a failure reported by a model provider, with the HTTP details code can act on.
 */
import { ToolbusError, type ToolbusErrorCode } from '../errors/index.js';

/** The extra fields of a {@link ModelError}, all optional. */
export interface ModelErrorOptions extends ErrorOptions {
  /** The model the request was for. */
  model?: string;
  /** The HTTP status the provider answered with, when there was one. */
  status?: number;
  /** How long the provider asked us to wait (from `retry-after-ms` or `retry-after`), in ms. */
  retryAfterMs?: number;
  /** The tool whose schema the provider rejected (code `bad-request`), by its toolbus name. */
  toolName?: string;
}

/**
 * A failure reported by a model provider. `code` is one of `authentication`, `rate-limited`,
 * `context-length`, `bad-request`, `model-error` or `unavailable` (the provider could not be reached).
 *
 * @example
 * ```ts
 * try { await client.create(messages) } catch (e) {
 *   if (e instanceof ModelError && e.code === 'rate-limited') await sleep(e.retryAfterMs ?? 1000);
 * }
 * ```
 */
export class ModelError extends ToolbusError {
  /** The model the request was for, when known. */
  readonly model: string | undefined;
  /** The HTTP status, when the provider answered. */
  readonly status: number | undefined;
  /** The wait the provider asked for, in ms (code `rate-limited`). */
  readonly retryAfterMs: number | undefined;
  /** The tool whose schema the provider rejected (code `bad-request`). */
  readonly toolName: string | undefined;

  constructor(code: ToolbusErrorCode, message: string, options: ModelErrorOptions = {}) {
    super(code, message, options.cause === undefined ? undefined : { cause: options.cause });
    this.model = options.model;
    this.status = options.status;
    this.retryAfterMs = options.retryAfterMs;
    this.toolName = options.toolName;
  }
}
