/**
 * @module Content parts: a tool result made of text, images, audio and resources (MCP's content
 * blocks), for tools whose output is more than text. A tool returns them as a value (one part, or an
 * array of parts); `ToolSet` keeps them as `ToolResult.parts` beside their text, which describes what a
 * text-only reader cannot see (`[image: image/png, 1234 bytes]`).
 */
import { ToolError } from './errors.js';

/** Text, as a part of a result. */
export interface TextPart {
  type: 'text';
  text: string;
}

/** An image: base64 `data` of a `mimeType` such as `image/png`. */
export interface ImagePart {
  type: 'image';
  /** The image's bytes, base64-encoded. */
  data: string;
  /** `image/png`, `image/jpeg`, `image/gif`, `image/webp`, … */
  mimeType: string;
}

/** A sound: base64 `data` of a `mimeType` such as `audio/wav`. */
export interface AudioPart {
  type: 'audio';
  /** The sound's bytes, base64-encoded. */
  data: string;
  /** `audio/wav`, `audio/mpeg`, … */
  mimeType: string;
}

/** A resource by URI, with its contents as `text` or as base64 `blob` (MCP's embedded resource). */
export interface ResourcePart {
  type: 'resource';
  uri: string;
  mimeType?: string;
  text?: string;
  /** The contents' bytes, base64-encoded, for a resource that is not text. */
  blob?: string;
}

/** One part of a result. */
export type ContentPart = TextPart | ImagePart | AudioPart | ResourcePart;

/** Parts that carry bytes rather than text. */
export type MediaPart = ImagePart | AudioPart | ResourcePart;

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

/** True for standard base64 text, padded with `=` to a multiple of 4 characters (empty included). */
export function isBase64(text: string): boolean {
  return text.length % 4 === 0 && BASE64.test(text);
}

/** Decoded size of a base64 payload, in bytes. */
export function base64Bytes(data: string): number {
  const padding = data.endsWith('==') ? 2 : data.endsWith('=') ? 1 : 0;
  return Math.max(0, Math.floor((data.length * 3) / 4) - padding);
}

/**
 * The parts a tool's return value holds, or `undefined` when it is not content parts (plain data, which
 * becomes JSON text as before). A value is parts when it is one part or an array of parts, each with
 * the fields of its type. @throws ToolError `tool-error` for an image or audio part that is broken (no
 * MIME type, data that is not base64): a part meant as one, which as JSON would flood the model with
 * base64 text.
 */
export function contentParts(toolName: string, value: unknown): ContentPart[] | undefined {
  if (Array.isArray(value)) {
    if (value.length === 0 || !looksLikePart(value[0])) return undefined;
    const parts: ContentPart[] = [];
    for (let i = 0; i < value.length; i++) {
      const part = readPart(toolName, value[i], i);
      if (part === undefined) return undefined;
      parts.push(part);
    }
    return parts;
  }
  if (!looksLikePart(value)) return undefined;
  const part = readPart(toolName, value, 0);
  return part === undefined ? undefined : [part];
}

/** The cheap first test: an object whose `type` names a kind of part. */
function looksLikePart(value: unknown): boolean {
  if (value === null || typeof value !== 'object') return false;
  const type = (value as { type?: unknown }).type;
  return type === 'text' || type === 'image' || type === 'audio' || type === 'resource';
}

function readPart(toolName: string, value: unknown, index: number): ContentPart | undefined {
  if (!looksLikePart(value)) return undefined;
  const v = value as Record<string, unknown>;
  switch (v['type']) {
    case 'text':
      return typeof v['text'] === 'string' ? { type: 'text', text: v['text'] } : undefined;
    case 'image':
    case 'audio': {
      const type = v['type'] as 'image' | 'audio';
      const data = v['data'];
      const mimeType = v['mimeType'];
      if (typeof data !== 'string') return undefined;
      if (typeof mimeType !== 'string' || !mimeType.startsWith(`${type}/`)) {
        throw broken(
          toolName,
          index,
          type,
          `needs a 'mimeType' such as '${type === 'image' ? 'image/png' : 'audio/wav'}', got ${describe(mimeType)}`,
        );
      }
      if (!isBase64(data)) {
        throw broken(
          toolName,
          index,
          type,
          `needs its bytes base64-encoded in 'data' (A-Z, a-z, 0-9, +, /, padded with =)`,
        );
      }
      return { type, data, mimeType };
    }
    default: {
      const uri = v['uri'];
      if (typeof uri !== 'string') return undefined;
      const part: ResourcePart = { type: 'resource', uri };
      if (typeof v['mimeType'] === 'string') part.mimeType = v['mimeType'];
      if (typeof v['text'] === 'string') part.text = v['text'];
      else if (typeof v['blob'] === 'string') {
        if (!isBase64(v['blob'])) {
          throw broken(toolName, index, 'resource', `needs its bytes base64-encoded in 'blob'`);
        }
        part.blob = v['blob'];
      }
      return part;
    }
  }
}

/** How many bytes a part stands for: its text's UTF-8 length, or its decoded data. */
export function partBytes(part: ContentPart): number {
  switch (part.type) {
    case 'text':
      return Buffer.byteLength(part.text);
    case 'image':
    case 'audio':
      return base64Bytes(part.data);
    default:
      return part.text !== undefined
        ? Buffer.byteLength(part.text)
        : part.blob !== undefined
          ? base64Bytes(part.blob)
          : 0;
  }
}

/** One part as text a model can read: text as it is, media described. */
export function describePart(part: ContentPart): string {
  switch (part.type) {
    case 'text':
      return part.text;
    case 'image':
    case 'audio':
      return `[${part.type}: ${part.mimeType}, ${base64Bytes(part.data)} bytes]`;
    default: {
      const mime = part.mimeType ? `, ${part.mimeType}` : '';
      if (part.text !== undefined) return `[resource: ${part.uri}${mime}]\n${part.text}`;
      return `[resource: ${part.uri}${mime}, ${part.blob !== undefined ? base64Bytes(part.blob) : 0} bytes]`;
    }
  }
}

/** The text of a result made of parts: each part described, joined with newlines. */
export function partsToText(parts: readonly ContentPart[]): string {
  return parts.map(describePart).join('\n');
}

/** True for a part that carries bytes (image, audio, a resource with a blob) rather than text. */
export function isMediaPart(part: ContentPart): part is MediaPart {
  return (
    part.type === 'image' || part.type === 'audio' || (part.type === 'resource' && part.blob !== undefined)
  );
}

function broken(toolName: string, index: number, type: string, what: string): ToolError {
  return new ToolError('tool-error', `tool '${toolName}': part ${index} of its result (${type}) ${what}`, {
    toolName,
  });
}

function describe(value: unknown): string {
  if (value === undefined) return 'nothing';
  if (typeof value === 'string') return `'${value.slice(0, 40)}'`;
  return value === null ? 'null' : typeof value;
}
