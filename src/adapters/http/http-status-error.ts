/**
 * @module The error of an HTTP tool call answered with a non-2xx status.
 */
import { ToolError } from '../../tools/index.js';

/**
 * An HTTP tool's request was answered with a status outside 200–299. `code` is `tool-error`; the
 * message (written for the model) carries the method, URL path, status and an excerpt of the body.
 */
export class HttpStatusError extends ToolError {
  /** The HTTP status, e.g. 404. */
  readonly status: number;
  /** The start of the response body (at most a few hundred bytes), decoded as UTF-8. */
  readonly bodyExcerpt: string;

  constructor(
    message: string,
    options: { toolName: string; status: number; bodyExcerpt: string } & ErrorOptions,
  ) {
    super('tool-error', message, options);
    this.status = options.status;
    this.bodyExcerpt = options.bodyExcerpt;
  }
}
