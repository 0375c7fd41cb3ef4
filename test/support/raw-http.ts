/**
 * A raw HTTP/1.1 request with full control of the headers (fetch will not send a forged `Host`), for
 * tests that play an attacker against a gateway on 127.0.0.1.
 */
import { request } from 'node:http';

/** What a raw request got back, or `hung: true` when nothing came within the time limit. */
export interface RawResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
  /** No complete answer within `timeoutMs`. */
  hung: boolean;
  /** The connection failed or was cut before an answer (e.g. a refused or dropped connection). */
  error?: string;
}

/** Options of {@link rawRequest}. */
export interface RawRequestOptions {
  method?: string;
  headers?: Record<string, string>;
  body?: string | Buffer;
  /** @default 10_000 */
  timeoutMs?: number;
}

/** Sends one request to `base` (`http://127.0.0.1:PORT`) + `path` on a fresh connection. */
export function rawRequest(
  base: string,
  path: string,
  options: RawRequestOptions = {},
): Promise<RawResponse> {
  const url = new URL(base);
  return new Promise((resolve) => {
    let settled = false;
    const done = (response: RawResponse): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve(response);
    };
    const headers: Record<string, string> = { connection: 'close', ...(options.headers ?? {}) };
    // Framed explicitly: Node's client sends a DELETE/TRACE/OPTIONS body unframed (which its own server
    // then reads as a second, garbled request).
    if (
      options.body !== undefined &&
      !Object.keys(headers).some((h) => h.toLowerCase() === 'content-length')
    ) {
      headers['content-length'] = String(Buffer.byteLength(options.body));
    }
    const req = request({
      host: url.hostname,
      port: url.port,
      path,
      method: options.method ?? 'GET',
      headers,
      agent: false,
      setHost: options.headers?.host === undefined && options.headers?.Host === undefined,
    });
    const timer = setTimeout(() => {
      done({ status: 0, headers: {}, body: '', hung: true });
      req.destroy();
    }, options.timeoutMs ?? 10_000);
    req.on('response', (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () =>
        done({
          status: res.statusCode ?? 0,
          headers: res.headers,
          body: Buffer.concat(chunks).toString('utf8'),
          hung: false,
        }),
      );
      res.on('error', (e) =>
        done({ status: res.statusCode ?? 0, headers: res.headers, body: '', hung: false, error: e.message }),
      );
    });
    req.on('error', (e) => done({ status: 0, headers: {}, body: '', hung: false, error: e.message }));
    req.end(options.body);
  });
}
