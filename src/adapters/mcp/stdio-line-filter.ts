/**
 * @module The lines a stdio MCP server reads, checked before the SDK's transport sees them: the SDK drops
 * a line that is not JSON, or not a JSON-RPC message, without a word. Here such a line gets the error
 * reply JSON-RPC 2.0 asks for (-32700 Parse error with `id: null`, or -32600 Invalid Request with the
 * message's id when it has one) and the server keeps serving; every good line passes on unchanged.
 */
import { StringDecoder } from 'node:string_decoder';
import { Transform, type TransformCallback } from 'node:stream';
import { JsonRpcErrorCode, jsonRpcError, jsonRpcIdOf, jsonRpcProblem } from './json-rpc-checks.js';

/** The longest line read (as the SDK's stdio transport): 10 MiB. */
const MAX_STDIO_LINE_BYTES = 10 * 1024 * 1024;

/**
 * A transform from raw stdin to checked lines. `reply` gets each error response, as one JSON line to
 * write to stdout.
 */
export class JsonRpcLineFilter extends Transform {
  readonly #reply: (line: string) => void;
  /** Keeps a character whose UTF-8 bytes a chunk boundary split until the rest of them arrive. */
  readonly #decoder = new StringDecoder('utf8');
  #pending = '';
  /** Set while the rest of an over-long line is skipped (its error was already sent). */
  #skipping = false;

  constructor(reply: (line: string) => void) {
    super({ decodeStrings: true });
    this.#reply = reply;
  }

  override _transform(chunk: Buffer | string, _encoding: BufferEncoding, callback: TransformCallback): void {
    const text = typeof chunk === 'string' ? chunk : this.#decoder.write(chunk);
    let start = 0;
    for (let end = text.indexOf('\n'); end !== -1; end = text.indexOf('\n', start)) {
      const line = this.#pending + text.slice(start, end);
      this.#pending = '';
      start = end + 1;
      if (this.#skipping) this.#skipping = false;
      else this.#line(line);
    }
    if (!this.#skipping) {
      this.#pending += text.slice(start);
      if (this.#pending.length > MAX_STDIO_LINE_BYTES) {
        this.#pending = '';
        this.#skipping = true;
        this.#error(
          JsonRpcErrorCode.ParseError,
          `Parse error: a line longer than ${MAX_STDIO_LINE_BYTES} bytes; send one JSON-RPC message per line`,
          null,
        );
      }
    }
    callback();
  }

  override _flush(callback: TransformCallback): void {
    // A last message without its newline is still a message (a character cut short ends it as U+FFFD).
    const last = this.#pending + this.#decoder.end();
    if (!this.#skipping && last.trim() !== '') this.#line(last);
    this.#pending = '';
    callback();
  }

  #line(raw: string): void {
    const line = raw.endsWith('\r') ? raw.slice(0, -1) : raw;
    if (line.trim() === '') return;
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch (error) {
      const reason = error instanceof SyntaxError ? error.message.replace(/,\s*".*$/s, '').slice(0, 120) : '';
      this.#error(JsonRpcErrorCode.ParseError, `Parse error: the line is not valid JSON (${reason})`, null);
      return;
    }
    const problem = Array.isArray(value)
      ? 'JSON-RPC batches are not accepted over stdio (they were removed in protocol revision 2025-06-18): send one message per line'
      : jsonRpcProblem(value);
    if (problem !== undefined) {
      this.#error(JsonRpcErrorCode.InvalidRequest, `Invalid Request: ${problem}`, jsonRpcIdOf(value));
      return;
    }
    this.push(`${line}\n`);
  }

  #error(code: number, message: string, id: string | number | null): void {
    this.#reply(`${JSON.stringify(jsonRpcError(code, message, id))}\n`);
  }
}
