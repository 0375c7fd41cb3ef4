/**
 * @module Message properties ⇄ NATS headers.
 *
 * A property becomes one header line `key: value`. NATS header keys are printable ASCII without `:`;
 * values cannot hold a line break, and the receiving client trims surrounding whitespace. A property that
 * breaks these rules rejects with `invalid-request` instead of corrupting the message.
 *
 * Two codecs write the same bytes and read the same properties: {@link FAST_HEADERS} builds the block once
 * as text and reads received blocks straight from their bytes (nats.js private behaviour, allowed only
 * after the version check of `nats-internals.ts`); {@link PUBLIC_HEADERS} goes through the client's
 * public `MsgHdrsImpl` and `msg.headers`.
 */
import { MsgHdrsImpl, type Msg, type MsgHdrs } from '@nats-io/transport-node';
import { ToolbusError } from '../../errors/index.js';
import type { BusProperties } from '../index.js';
import { PreEncodedHeaders, rawHeaderBlock } from './nats-internals.js';

const HEADER_KEY = /^[\x21-\x39\x3b-\x7e]+$/;
/** The envelope's property names (valid header names): most messages carry them, so they skip the pattern. */
const ENVELOPE_KEYS: ReadonlySet<string> = new Set(['id', 'deadline', 'traceparent', 'tracestate', 'cancel']);
/** `NATS/1.0\r\n` before the lines and `\r\n` after them. */
const FRAMING_BYTES = 12;
const decoder = new TextDecoder();
/** Received messages without headers share this (frozen) object. */
export const NO_PROPERTIES: BusProperties = Object.freeze({});

/** Headers ready to publish. */
export interface EncodedHeaders {
  /** What the client's `publish` takes. */
  readonly headers: MsgHdrs;
  /** The block's size on the wire, framing included (the client counts it against max_payload). */
  readonly byteLength: number;
}

/** How a bus writes properties as headers and reads them back. */
export interface HeaderCodec {
  /**
   * The headers for `properties`; undefined when there are none.
   * @throws ToolbusError `invalid-request` for a key or value NATS headers cannot carry.
   */
  encode(topic: string, properties: BusProperties): EncodedHeaders | undefined;
  /** A received message's headers as properties (the first value of each header). */
  decode(msg: Msg): BusProperties;
}

/**
 * UTF-8 bytes of a string. `Buffer.from` slices small strings out of a shared pool, about four times
 * cheaper than `TextEncoder.encode` (a fresh ArrayBuffer each time) for message-sized text.
 */
export function encodeText(text: string): Uint8Array {
  return Buffer.from(text, 'utf8');
}

/** Throws unless NATS headers can carry `key: value` as written. */
function checkProperty(topic: string, key: string, value: unknown): asserts value is string {
  if (!ENVELOPE_KEYS.has(key) && !HEADER_KEY.test(key)) {
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
}

/** Builds the header block as text once, and reads received blocks from the message's bytes. */
export const FAST_HEADERS: HeaderCodec = {
  encode(topic, properties) {
    let text = '';
    for (const key in properties) {
      const value = properties[key];
      checkProperty(topic, key, value);
      text += `${key}: ${value}\r\n`;
    }
    if (text === '') return undefined;
    return new PreEncodedHeaders(encodeText(`NATS/1.0\r\n${text}\r\n`));
  },
  decode(msg) {
    const block = rawHeaderBlock(msg);
    if (block === null) return NO_PROPERTIES;
    if (block === undefined) return PUBLIC_HEADERS.decode(msg);
    return parseHeaderBlock(decoder.decode(block));
  },
};

/** Goes through the client's public header API only. */
export const PUBLIC_HEADERS: HeaderCodec = {
  encode(topic, properties) {
    // No prototype: a `__proto__` property stays an ordinary key.
    const record = Object.create(null) as Record<string, string[]>;
    let byteLength = FRAMING_BYTES;
    for (const key in properties) {
      const value = properties[key];
      checkProperty(topic, key, value);
      record[key] = [value];
      // `key: value\r\n`; keys are ASCII.
      byteLength += key.length + 4 + Buffer.byteLength(value);
    }
    if (byteLength === FRAMING_BYTES) return undefined;
    // Checked above; `fromRecord` keeps keys and values as written (`headers().set` would also look up
    // every existing key for each one).
    return { headers: MsgHdrsImpl.fromRecord(record), byteLength };
  },
  decode(msg) {
    const headers = msg.headers;
    if (headers === undefined) return NO_PROPERTIES;
    const properties: Record<string, string> = {};
    for (const [key, values] of headers) {
      if (values[0] !== undefined && key !== '__proto__') properties[key] = values[0];
    }
    return properties;
  },
};

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
