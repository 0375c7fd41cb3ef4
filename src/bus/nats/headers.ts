/**
 * @module Message properties ⇄ NATS headers, without the client's general-purpose header object.
 *
 * A property becomes one header line `key: value`. NATS header keys are printable ASCII without `:`;
 * values cannot hold a line break, and the receiving client trims surrounding whitespace. A property that
 * breaks these rules rejects with `invalid-request` instead of corrupting the message.
 *
 * Encoding builds the header block once as text (the client's `MsgHdrs` keeps a map of arrays per
 * message); decoding reads the block of a received message straight from its bytes when the client's
 * message object exposes them (nats.js 3.x), and falls back to `msg.headers` otherwise.
 */
import type { Msg } from '@nats-io/transport-node';
import { ToolbusError } from '../../tools/index.js';
import type { BusProperties } from '../index.js';

const HEADER_KEY = /^[\x21-\x39\x3b-\x7e]+$/;
const decoder = new TextDecoder();
/** Received messages without headers share this (frozen) object. */
export const NO_PROPERTIES: BusProperties = Object.freeze({});

/**
 * A header block already in wire form. When it publishes, the client only calls `encode()` on the
 * headers it is given (nats.js 3.x `ProtocolHandler.publish`), so this skips the `MsgHdrsImpl` map and
 * its per-key arrays. Cast to `MsgHdrs` at the one call site that hands it to `publish`.
 */
export interface EncodedHeaders {
  encode(): Uint8Array;
}

class PreEncodedHeaders implements EncodedHeaders {
  readonly #bytes: Uint8Array;
  constructor(bytes: Uint8Array) {
    this.#bytes = bytes;
  }
  encode(): Uint8Array {
    return this.#bytes;
  }
}

/**
 * UTF-8 bytes of a string. `Buffer.from` slices small strings out of a shared pool, about four times
 * cheaper than `TextEncoder.encode` (a fresh ArrayBuffer each time) for message-sized text.
 */
export function encodeText(text: string): Uint8Array {
  return Buffer.from(text, 'utf8');
}

/**
 * Encodes properties as a NATS header block; undefined when there are none.
 * @throws ToolbusError `invalid-request` for a key or value NATS headers cannot carry.
 */
export function encodeProperties(topic: string, properties: BusProperties): EncodedHeaders | undefined {
  let text = '';
  for (const key in properties) {
    const value = properties[key] as string;
    if (!HEADER_KEY.test(key)) {
      throw new ToolbusError(
        'invalid-request',
        `cannot publish to topic '${topic}': property '${key}' cannot be a NATS header name ` +
          `(expected printable ASCII without ':' or spaces)`,
      );
    }
    if (typeof value !== 'string' || value.includes('\r') || value.includes('\n')) {
      throw new ToolbusError(
        'invalid-request',
        `cannot publish to topic '${topic}': property '${key}' must be a string without line breaks`,
      );
    }
    text += `${key}: ${value}\r\n`;
  }
  if (text === '') return undefined;
  return new PreEncodedHeaders(encodeText(`NATS/1.0\r\n${text}\r\n`));
}

/** The shape of a nats.js 3.x message's internals that hold the raw header block. */
interface RawMsg {
  _msg?: { hdr?: unknown };
  _rdata?: unknown;
}

/** Reads a received message's headers as properties (the first value of each header). */
export function decodeProperties(msg: Msg): BusProperties {
  const raw = msg as unknown as RawMsg;
  const length = raw._msg?.hdr;
  if (typeof length === 'number' && raw._rdata instanceof Uint8Array) {
    return length < 0 ? NO_PROPERTIES : parseHeaderBlock(decoder.decode(raw._rdata.subarray(0, length)));
  }
  const headers = msg.headers;
  if (headers === undefined) return NO_PROPERTIES;
  const properties: Record<string, string> = {};
  for (const [key, values] of headers) {
    if (values[0] !== undefined && key !== '__proto__') properties[key] = values[0];
  }
  return properties;
}

/** Parses `NATS/1.0[ status]\r\nkey: value\r\n...\r\n\r\n`, keeping the first value of each key. */
export function parseHeaderBlock(text: string): BusProperties {
  const properties: Record<string, string> = {};
  let start = text.indexOf('\r\n');
  if (start === -1) return properties;
  start += 2;
  while (start < text.length) {
    let end = text.indexOf('\r\n', start);
    if (end === -1) end = text.length;
    const colon = text.indexOf(':', start);
    if (colon > start && colon < end) {
      const key = text.slice(start, colon);
      if (key !== '__proto__' && !Object.hasOwn(properties, key)) {
        properties[key] = text.slice(colon + 1, end).trim();
      }
    }
    start = end + 2;
  }
  return properties;
}
