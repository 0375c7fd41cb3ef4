/**
 * @module Turns an MCP `CallToolResult` into a tool value: text joined, `structuredContent` as JSON,
 * images, audio and resources described (never dropped, never an error), `isError` as a `ToolError`.
 */
import type { CallToolResult, ContentBlock } from '@modelcontextprotocol/client';
import { ToolError, truncateOutput } from '../../tools/index.js';

/** Decoded size of a base64 payload, in bytes. */
function base64Bytes(data: string): number {
  const clean = data.replace(/\s+/g, '');
  const padding = clean.endsWith('==') ? 2 : clean.endsWith('=') ? 1 : 0;
  return Math.max(0, Math.floor((clean.length * 3) / 4) - padding);
}

/** One content block as text a model can read. */
export function describeContentBlock(block: ContentBlock): string {
  switch (block.type) {
    case 'text':
      return block.text;
    case 'image':
      return `[image: ${block.mimeType}, ${base64Bytes(block.data)} bytes]`;
    case 'audio':
      return `[audio: ${block.mimeType}, ${base64Bytes(block.data)} bytes]`;
    case 'resource': {
      const r = block.resource;
      const mime = r.mimeType ? `, ${r.mimeType}` : '';
      if ('text' in r && typeof r.text === 'string') return `[resource: ${r.uri}${mime}]\n${r.text}`;
      const blob = 'blob' in r && typeof r.blob === 'string' ? r.blob : '';
      return `[resource: ${r.uri}${mime}, ${base64Bytes(blob)} bytes]`;
    }
    case 'resource_link': {
      const mime = block.mimeType ? `, ${block.mimeType}` : '';
      const size = typeof block.size === 'number' ? `, ${block.size} bytes` : '';
      const title = block.title ?? block.name;
      const desc = block.description ? ` — ${block.description}` : '';
      return `[resource link: ${title} <${block.uri}>${mime}${size}]${desc}`;
    }
    default: {
      const unknown = block as { type?: unknown };
      return `[${String(unknown.type ?? 'unknown')} content]`;
    }
  }
}

/** Every content block described, joined with newlines. */
export function contentToText(content: readonly ContentBlock[] | undefined): string {
  return (content ?? []).map(describeContentBlock).join('\n');
}

/** At most this many bytes of an error's `structuredContent` (as JSON) go into the message. */
const MAX_ERROR_STRUCTURED_BYTES = 4096;

/**
 * What the model reads for an `isError` result: its text, plus its `structuredContent` as JSON (bounded)
 * unless the text already is that JSON; a server may report the details only there.
 */
function errorDetails(text: string, structured: CallToolResult['structuredContent']): string {
  const json = structured === undefined || structured === null ? '' : JSON.stringify(structured);
  const details = json && text.trim() !== json ? truncateOutput(json, MAX_ERROR_STRUCTURED_BYTES).text : '';
  return [text, details].filter(Boolean).join('\n') || 'the MCP server reported an error';
}

/**
 * The tool value of a result: `structuredContent` when present (an object, serialised as JSON by
 * `returnValueAsString`), otherwise the described content joined as text.
 *
 * Throws a `ToolError` with code `tool-error` when the result has `isError: true`, with the server's
 * message (its text and its `structuredContent`).
 */
export function callToolResultToValue(toolName: string, result: CallToolResult): unknown {
  const text = contentToText(result.content);
  if (result.isError) {
    throw new ToolError('tool-error', `tool '${toolName}': ${errorDetails(text, result.structuredContent)}`, {
      toolName,
    });
  }
  if (result.structuredContent !== undefined && result.structuredContent !== null) {
    return result.structuredContent;
  }
  return text;
}
