/**
 * @module Reading a request body as JSON, bounded in size and nesting, with a 4xx that says what was
 * wrong and what is expected for every way it can be bad.
 */
import type { IncomingMessage } from 'node:http';
import { findJsonError, jsonDepth } from '../schema/index.js';
import { HttpError } from './http-error.js';

/** Reads the whole body as UTF-8 text; 413 beyond `limit` bytes (declared or sent). */
export async function readBody(req: IncomingMessage, limit: number): Promise<string> {
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > limit) {
    throw new HttpError(413, 'too-large', `request body is ${declared} bytes; the limit is ${limit} bytes`);
  }
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > limit)
      throw new HttpError(413, 'too-large', `request body exceeds the limit of ${limit} bytes`);
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/**
 * Parses JSON text; 400 `invalid-request` when it is empty, not JSON, or nested deeper than `maxDepth`
 * (checked first: a deep value overflows the stack of whatever walks it next).
 */
export function parseJsonText(text: string, what: string, maxDepth: number): unknown {
  if (text.trim() === '')
    throw new HttpError(400, 'invalid-request', `${what}: the request body is empty; send JSON`);
  if (jsonDepth(text, maxDepth) > maxDepth) {
    throw new HttpError(
      400,
      'invalid-request',
      `${what}: the JSON nests deeper than ${maxDepth} levels of arrays and objects (the limit); flatten it`,
    );
  }
  try {
    return JSON.parse(text) as unknown;
  } catch (error) {
    const at = findJsonError(text);
    throw new HttpError(
      400,
      'invalid-request',
      `${what}: the body is not valid JSON` +
        (at
          ? ` at line ${at.line}, column ${at.column} (position ${at.position}): ${at.reason}`
          : ` (${(error as Error).message})`),
    );
  }
}

/** True for `application/json` and `application/<x>+json`, with or without parameters. */
export function isJsonMediaType(contentType: string | undefined): boolean {
  const type = (contentType ?? '').split(';')[0]?.trim().toLowerCase() ?? '';
  return type === 'application/json' || /^application\/[\w.-]+\+json$/.test(type);
}

/**
 * Reads and drops a body nobody will read (a `GET` or `DELETE` with one, or a request refused before
 * its body was looked at), up to `limit` bytes: answering and closing while the client is still sending
 * would reset the connection, and the client would never see the answer. A body declared larger than
 * `limit` is left alone (its connection is closed after the answer).
 */
export async function discardBody(req: IncomingMessage, limit: number): Promise<void> {
  // `readableFlowing` is null until someone starts reading: then the body is theirs.
  if (req.readableEnded || req.readableFlowing !== null) return;
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > limit) return;
  let size = 0;
  try {
    for await (const chunk of req as AsyncIterable<Buffer>) {
      size += chunk.length;
      if (size > limit) return;
    }
  } catch {
    // The client went away: nothing left to answer.
  }
}
