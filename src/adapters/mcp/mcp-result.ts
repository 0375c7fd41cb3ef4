/**
 * @module MCP results and toolbus values: a `CallToolResult` becomes a tool value (text, the
 * `structuredContent`, or content parts when it holds images, audio or resources; never dropped, never
 * an error), `isError` a `ToolError`; toolbus parts become MCP content blocks for the bridge.
 */
import type { CallToolResult, ContentBlock } from '@modelcontextprotocol/client';
import { ToolError, describePart, truncateOutput, type ContentPart } from '../../tools/index.js';

/**
 * One content block as a toolbus part: text, image, audio and embedded resources as themselves; a
 * resource link (a URI the client may fetch) as text describing it.
 */
export function contentBlockToPart(block: ContentBlock): ContentPart {
  switch (block.type) {
    case 'text':
      return { type: 'text', text: block.text };
    case 'image':
    case 'audio':
      return { type: block.type, data: block.data.replace(/\s+/g, ''), mimeType: block.mimeType };
    case 'resource': {
      const r = block.resource;
      const part: ContentPart = { type: 'resource', uri: r.uri };
      if (r.mimeType) part.mimeType = r.mimeType;
      if ('text' in r && typeof r.text === 'string') part.text = r.text;
      else if ('blob' in r && typeof r.blob === 'string') part.blob = r.blob.replace(/\s+/g, '');
      return part;
    }
    case 'resource_link': {
      const mime = block.mimeType ? `, ${block.mimeType}` : '';
      const size = typeof block.size === 'number' ? `, ${block.size} bytes` : '';
      const title = block.title ?? block.name;
      const desc = block.description ? ` — ${block.description}` : '';
      return { type: 'text', text: `[resource link: ${title} <${block.uri}>${mime}${size}]${desc}` };
    }
    default: {
      const unknown = block as { type?: unknown };
      return { type: 'text', text: `[${String(unknown.type ?? 'unknown')} content]` };
    }
  }
}

/** A toolbus part as an MCP content block (what the bridge serves). */
export function partToContentBlock(part: ContentPart): ContentBlock {
  switch (part.type) {
    case 'text':
      return { type: 'text', text: part.text };
    case 'image':
    case 'audio':
      return { type: part.type, data: part.data, mimeType: part.mimeType };
    default: {
      const mime = part.mimeType !== undefined ? { mimeType: part.mimeType } : {};
      return {
        type: 'resource',
        resource:
          part.blob !== undefined
            ? { uri: part.uri, ...mime, blob: part.blob }
            : { uri: part.uri, ...mime, text: part.text ?? '' },
      };
    }
  }
}

/** One content block as text a model can read. */
export function describeContentBlock(block: ContentBlock): string {
  return describePart(contentBlockToPart(block));
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
 * `returnValueAsString`); content parts when the content holds media (images, audio, resources), which
 * `ToolSet` keeps as `ToolResult.parts`; otherwise the text.
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
  const parts = (result.content ?? []).map(contentBlockToPart);
  return parts.some((part) => part.type !== 'text') ? parts : text;
}
