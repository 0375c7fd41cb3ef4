/**
 * @module A small HTTP client for a running `toolbus up`, used by `call`, `tools` and `ask`.
 */
import { ToolbusError, type ToolbusErrorCode } from '../errors/index.js';
import { UsageError, type CliIO } from './command.js';
import { isLoopbackHost } from '../gateway/index.js';
import { readTokenFile } from './token-file.js';

/** The default gateway address. */
export const DEFAULT_GATEWAY_URL = 'http://127.0.0.1:8888';

/** An error answer from the gateway, or a connection failure, with a message for the terminal. */
export class GatewayRequestError extends ToolbusError {
  constructor(
    message: string,
    /** The HTTP status; undefined when the gateway could not be reached. */
    readonly status: number | undefined,
    /** The gateway's error code (`unreachable` when it could not be reached). */
    code: ToolbusErrorCode,
  ) {
    super(code, message);
  }
}

/** Where and how to reach the gateway. */
export interface GatewayTarget {
  url: string;
  token: string | undefined;
}

/**
 * Resolves `--url`/`--token` against `TOOLBUS_URL`/`TOOLBUS_TOKEN` and the default. Without a token, a
 * gateway on this machine (a loopback URL) gets the one `toolbus up` wrote to `$TOOLBUS_HOME/token`; it
 * is never sent to another host.
 * Throws a `UsageError` when the URL is not an http(s) URL (e.g. `localhost:8888`, without the scheme),
 * which would otherwise surface as a misleading "cannot reach toolbus".
 */
export function gatewayTarget(values: { url?: string; token?: string }, io: CliIO): GatewayTarget {
  const url = (values.url ?? io.env.TOOLBUS_URL ?? DEFAULT_GATEWAY_URL).replace(/\/+$/, '');
  let protocol: string | undefined;
  let hostname = '';
  try {
    ({ protocol, hostname } = new URL(url));
  } catch {
    // not a URL at all
  }
  if (protocol !== 'http:' && protocol !== 'https:') {
    const source = values.url !== undefined ? '--url' : 'TOOLBUS_URL';
    throw new UsageError(
      `${source} must be an http:// or https:// URL such as ${DEFAULT_GATEWAY_URL}, got '${url}'`,
    );
  }
  const token =
    values.token ??
    (io.env.TOOLBUS_TOKEN || undefined) ??
    (isLoopbackHost(hostname) ? readTokenFile(io) : undefined);
  return { url, token };
}

/** Sends a request to the gateway; resolves with the response (2xx or SSE) or rejects with a clear error. */
export async function gatewayFetch(
  target: GatewayTarget,
  path: string,
  init: { method?: string; body?: unknown; accept?: string; signal?: AbortSignal } = {},
): Promise<Response> {
  // The gateway records the caller of a tool call as `cli:` rather than `http:` for this agent.
  const headers: Record<string, string> = {
    accept: init.accept ?? 'application/json',
    'user-agent': 'toolbus-cli',
  };
  if (target.token) headers.authorization = `Bearer ${target.token}`;
  if (init.body !== undefined) headers['content-type'] = 'application/json';
  let response: Response;
  try {
    response = await fetch(target.url + path, {
      method: init.method ?? 'GET',
      headers,
      body: init.body === undefined ? undefined : JSON.stringify(init.body),
      signal: init.signal,
    });
  } catch (error) {
    if (init.signal?.aborted) throw error;
    throw new GatewayRequestError(
      `cannot reach toolbus at ${target.url} (${causeText(error)}). ` +
        `Is 'toolbus up' running? Start it with 'npm start', or pass --url.`,
      undefined,
      'unreachable',
    );
  }
  if (response.ok) return response;
  let code: ToolbusErrorCode = response.status >= 500 ? 'internal' : 'invalid-request';
  let message = `${response.status} ${response.statusText}`;
  try {
    const body = (await response.json()) as { error?: { code?: string; message?: string } };
    if (typeof body.error?.code === 'string') code = body.error.code as ToolbusErrorCode;
    if (body.error?.message) message = body.error.message;
  } catch {
    // Not JSON: keep the status line.
  }
  if (response.status === 401) {
    message = target.token
      ? `${message} (the token was refused: is it the one of this 'toolbus up'? Run the command in the folder ` +
        'where toolbus up runs, or with the same TOOLBUS_HOME, or pass --token)'
      : `${message} (no token found: run the command in the folder where 'toolbus up' runs, or with the same ` +
        'TOOLBUS_HOME, so it reads .toolbus/token; or set TOOLBUS_TOKEN or pass --token)';
  }
  throw new GatewayRequestError(message, response.status, code);
}

function causeText(error: unknown): string {
  const cause = (error as { cause?: { code?: string; message?: string } }).cause;
  return cause?.code ?? cause?.message ?? (error as Error).message;
}

/** Parses a `text/event-stream` body into `{ event, data }` records as they arrive. */
export async function* readServerSentEvents(
  body: ReadableStream<Uint8Array>,
): AsyncGenerator<{ event: string; data: string }> {
  const decoder = new TextDecoder();
  let buffer = '';
  for await (const chunk of body as unknown as AsyncIterable<Uint8Array>) {
    buffer += decoder.decode(chunk, { stream: true });
    let boundary: number;
    while ((boundary = buffer.indexOf('\n\n')) !== -1) {
      const block = buffer.slice(0, boundary);
      buffer = buffer.slice(boundary + 2);
      let event = 'message';
      const data: string[] = [];
      for (const line of block.split('\n')) {
        if (line.startsWith('event:')) event = line.slice(6).trim();
        else if (line.startsWith('data:')) data.push(line.slice(5).replace(/^ /, ''));
      }
      if (data.length > 0) yield { event, data: data.join('\n') };
    }
  }
}
