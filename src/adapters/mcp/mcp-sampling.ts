/**
 * @module MCP sampling (`sampling/createMessage`) both ways: toolbus's `SamplingRequest` and
 * `SamplingResult` as MCP params and results (the bridge asks its client for a tool's `ctx.sample`)
 * and back (a remote server asks toolbus's MCP client, and the toolbus call behind it answers).
 */
import type {
  ContentBlock,
  CreateMessageRequestParams,
  CreateMessageRequestParamsBase,
  CreateMessageResult,
} from '@modelcontextprotocol/server';
import type { JsonObject } from '../../schema/index.js';
import {
  describePart,
  type SamplingContent,
  type SamplingRequest,
  type SamplingResult,
} from '../../tools/index.js';
import { contentBlockToPart, partToContentBlock } from './mcp-result.js';

/** A sampling part as an MCP content block; any other part (not allowed in sampling) as its text. */
function toBlock(part: SamplingContent): ContentBlock {
  const type = (part as { type?: unknown }).type;
  return type === 'text' || type === 'image' || type === 'audio'
    ? partToContentBlock(part)
    : { type: 'text', text: `[${String(type)} content]` };
}

function toBlocks(content: SamplingContent | SamplingContent[]): ContentBlock | ContentBlock[] {
  return Array.isArray(content) ? content.map(toBlock) : toBlock(content);
}

/**
 * An MCP sampling content block as a toolbus part: text, image and audio as themselves (as in tool
 * results); anything else (a tool use or result, a resource) as text describing it.
 */
function toPart(block: unknown): SamplingContent {
  const part = contentBlockToPart(block as ContentBlock);
  return part.type === 'text' || part.type === 'image' || part.type === 'audio'
    ? part
    : { type: 'text', text: describePart(part) };
}

/** `ctx.sample`'s request as MCP's `sampling/createMessage` params. */
export function samplingParams(request: SamplingRequest): CreateMessageRequestParamsBase {
  const params: CreateMessageRequestParamsBase = {
    messages: request.messages.map((m) => ({ role: m.role, content: toBlocks(m.content) })),
    maxTokens: request.maxTokens,
  } as CreateMessageRequestParamsBase;
  if (request.systemPrompt !== undefined) params.systemPrompt = request.systemPrompt;
  if (request.temperature !== undefined) params.temperature = request.temperature;
  if (request.stopSequences !== undefined) params.stopSequences = request.stopSequences;
  if (request.modelPreferences !== undefined) params.modelPreferences = request.modelPreferences;
  if (request.includeContext !== undefined) params.includeContext = request.includeContext;
  if (request.metadata !== undefined) params.metadata = request.metadata;
  return params;
}

/** A client's `sampling/createMessage` answer as what `ctx.sample` resolves with. */
export function samplingResult(result: CreateMessageResult): SamplingResult {
  const content = result.content as unknown;
  const out: SamplingResult = {
    role: result.role,
    content: Array.isArray(content) ? content.map(toPart) : toPart(content),
    model: result.model,
  };
  if (typeof result.stopReason === 'string') out.stopReason = result.stopReason;
  return out;
}

/** A server's `sampling/createMessage` params as the `SamplingRequest` a toolbus call's `ctx.sample` takes. */
export function samplingRequestOf(params: CreateMessageRequestParams): SamplingRequest {
  const request: SamplingRequest = {
    messages: params.messages.map((m) => {
      const content = m.content as unknown;
      return { role: m.role, content: Array.isArray(content) ? content.map(toPart) : toPart(content) };
    }),
    maxTokens: params.maxTokens,
  };
  if (params.systemPrompt !== undefined) request.systemPrompt = params.systemPrompt;
  if (params.temperature !== undefined) request.temperature = params.temperature;
  if (params.stopSequences !== undefined) request.stopSequences = params.stopSequences;
  if (params.modelPreferences !== undefined) request.modelPreferences = params.modelPreferences;
  if (params.includeContext !== undefined) request.includeContext = params.includeContext;
  if (params.metadata !== undefined) request.metadata = params.metadata as JsonObject;
  return request;
}

/** What a toolbus call's `ctx.sample` resolved with, as the `sampling/createMessage` result a server expects. */
export function samplingAnswer(result: SamplingResult): CreateMessageResult {
  return {
    role: result.role,
    content: toBlocks(result.content),
    model: result.model,
    ...(result.stopReason !== undefined ? { stopReason: result.stopReason } : {}),
  } as CreateMessageResult;
}
