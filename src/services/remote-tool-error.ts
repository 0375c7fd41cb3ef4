/**
 * @module `RemoteToolError`: a tool service answered with an error object.
 */
import { ToolError } from '../tools/index.js';

/** Options of {@link RemoteToolError}. */
export interface RemoteToolErrorOptions extends ErrorOptions {
  /** The wire `error.type`, e.g. `tool-service-error`. */
  remoteType: string;
  /** The wire `error.message`. */
  remoteMessage: string;
  /** The tool whose call failed. @default undefined */
  toolName?: string;
}

/**
 * A tool service replied `{ error: { type, message } }`. Its `code` is always `tool-error`; the wire type
 * and message stay available as `remoteType` and `remoteMessage`. Built only by `fromWireError`.
 */
export class RemoteToolError extends ToolError {
  /** The wire `error.type`, e.g. `tool-service-error`, `too-many-requests`, `invalid-request`. */
  readonly remoteType: string;
  /** The wire `error.message`. */
  readonly remoteMessage: string;

  constructor(message: string, options: RemoteToolErrorOptions) {
    super('tool-error', message, options);
    this.remoteType = options.remoteType;
    this.remoteMessage = options.remoteMessage;
  }
}
