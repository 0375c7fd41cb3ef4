/**
 * @module Reading a `fetch` response body with a byte cap, stopping at the cap instead of buffering
 * whatever the server sends.
 */

/** The outcome of {@link readBodyCapped}. */
export interface CappedBody {
  /** The bytes read, at most `maxBytes`. */
  bytes: Uint8Array;
  /** True when the body had more than `maxBytes` bytes; the rest was not read. */
  truncated: boolean;
}

/**
 * Reads up to `maxBytes` bytes of `response`'s body, then cancels the stream. A `content-length`
 * above the cap is detected before reading anything, unless `keepHead` asks for the first `maxBytes`
 * bytes anyway (an error excerpt wants the start of the body, however long it says it is). `onBytes`
 * hears the bytes read so far after each piece, with the declared length when there is one.
 */
export async function readBodyCapped(
  response: Response,
  maxBytes: number,
  keepHead = false,
  onBytes?: (read: number, total: number | undefined) => void,
): Promise<CappedBody> {
  const declared = Number(response.headers.get('content-length') ?? NaN);
  if (!keepHead && Number.isFinite(declared) && declared > maxBytes) {
    await response.body?.cancel().catch(() => undefined);
    return { bytes: new Uint8Array(0), truncated: true };
  }
  if (response.body === null) return { bytes: new Uint8Array(0), truncated: false };
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  let truncated = false;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      if (size + value.byteLength > maxBytes) {
        chunks.push(value.subarray(0, maxBytes - size));
        size = maxBytes;
        truncated = true;
        break;
      }
      chunks.push(value);
      size += value.byteLength;
      onBytes?.(size, Number.isFinite(declared) ? declared : undefined);
    }
  } finally {
    if (truncated) await reader.cancel().catch(() => undefined);
    reader.releaseLock();
  }
  const bytes = new Uint8Array(size);
  let offset = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return { bytes, truncated };
}
