/**
 * @module The console's one way to the gateway: JSON requests and server-sent event streams over
 * `fetch`, each with the session's token (`EventSource` cannot send an `Authorization` header). A 401
 * anywhere ends the session, so the app goes back to its login page.
 */
import { createParser } from 'eventsource-parser';

/** A gateway error answer (`{ error: { code, message } }`) or a network failure (status 0). */
export class ApiError extends Error {
  readonly status: number;
  readonly code: string;
  constructor(status: number, code: string, message: string) {
    super(message);
    this.name = 'ApiError';
    this.status = status;
    this.code = code;
  }
}

/** Options of {@link Api.json}. */
export interface RequestOptions {
  method?: string;
  /** Sent as JSON. */
  body?: unknown;
  signal?: AbortSignal;
}

/** Options of {@link Api.stream}. */
export interface StreamOptions extends RequestOptions {
  /** Called for each event, its data parsed as JSON (the raw text when it is not JSON). */
  onEvent(event: string, data: unknown): void;
  /** Called once the gateway has answered 200, before the first event. */
  onOpen?(): void;
}

/** What the app gives the client. */
export interface ApiOptions {
  token: string;
  /** Called on a 401 answer: the token was refused (expired, revoked, or wrong). */
  onUnauthorized(error: ApiError): void;
}

/** The gateway's API with the session's token. */
export interface Api {
  readonly token: string;
  /** A JSON request; rejects with an {@link ApiError} on a non-2xx answer. */
  json<T>(path: string, options?: RequestOptions): Promise<T>;
  /** A request answered with server-sent events; resolves when the stream ends. */
  stream(path: string, options: StreamOptions): Promise<void>;
}

/** The error in a failed answer, read from its JSON body when there is one. */
async function errorOf(response: Response): Promise<ApiError> {
  const text = await response.text().catch(() => '');
  try {
    const body = JSON.parse(text) as { error?: { code?: unknown; message?: unknown } };
    if (body.error && typeof body.error.message === 'string') {
      const code = typeof body.error.code === 'string' ? body.error.code : `http-${response.status}`;
      return new ApiError(response.status, code, body.error.message);
    }
  } catch {
    // Not JSON: the text itself is the message.
  }
  const message = text.trim().slice(0, 500) || `${response.status} ${response.statusText}`;
  return new ApiError(response.status, `http-${response.status}`, message);
}

function parseData(data: string): unknown {
  try {
    return JSON.parse(data);
  } catch {
    return data;
  }
}

/** Makes the client of one session. */
export function createApi(options: ApiOptions): Api {
  const { token } = options;

  async function send(path: string, init: RequestOptions, accept: string): Promise<Response> {
    const headers: Record<string, string> = { accept };
    if (token !== '') headers.authorization = `Bearer ${token}`;
    if (init.body !== undefined) headers['content-type'] = 'application/json';
    let response: Response;
    try {
      response = await fetch(path, {
        method: init.method ?? (init.body === undefined ? 'GET' : 'POST'),
        headers,
        ...(init.body !== undefined ? { body: JSON.stringify(init.body) } : {}),
        ...(init.signal ? { signal: init.signal } : {}),
        cache: 'no-store',
      });
    } catch (error) {
      if (init.signal?.aborted) throw error;
      throw new ApiError(0, 'unreachable', `cannot reach the gateway: ${String(error)}`);
    }
    if (response.ok) return response;
    const error = await errorOf(response);
    if (response.status === 401) options.onUnauthorized(error);
    throw error;
  }

  return {
    token,
    async json<T>(path: string, init: RequestOptions = {}): Promise<T> {
      const response = await send(path, init, 'application/json');
      const text = await response.text();
      return (text === '' ? undefined : JSON.parse(text)) as T;
    },
    async stream(path, init) {
      const response = await send(path, init, 'text/event-stream');
      init.onOpen?.();
      if (!response.body) return;
      const parser = createParser({
        onEvent: (message) => init.onEvent(message.event ?? 'message', parseData(message.data)),
      });
      const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
      try {
        for (;;) {
          const { done, value } = await reader.read();
          if (done) break;
          parser.feed(value);
        }
      } finally {
        reader.releaseLock();
      }
    },
  };
}

/** The error's text for a person: the gateway's message, with its code. */
export function errorText(error: unknown): string {
  if (error instanceof ApiError)
    return error.status === 0 ? error.message : `${error.message} (${error.code})`;
  return error instanceof Error ? error.message : String(error);
}

/** Whether the error is the abort of a request the console cancelled itself. */
export function isAbort(error: unknown): boolean {
  return error instanceof DOMException && error.name === 'AbortError';
}
