/**
 * @module What an MCP client can do for the tools it calls, as toolbus `ToolClientFeatures`: log
 * messages become `notifications/message` (at or above the level the client set with
 * `logging/setLevel`), and, for a 2025-era client that declared the capability, `ctx.elicit` sends
 * `elicitation/create` and `ctx.sample` sends `sampling/createMessage`, each related to the
 * `tools/call` being served (on Streamable HTTP it travels on that call's stream) and cancelled with it.
 */
import type {
  ContentBlock,
  CreateMessageRequestParamsBase,
  CreateMessageResult,
  ElicitRequestFormParams,
  ServerContext,
} from '@modelcontextprotocol/server';
import {
  MAX_TIMER_MS,
  ToolError,
  toolAbortError,
  type SamplingContent,
  type SamplingRequest,
  type SamplingResult,
  type ToolClientFeatures,
} from '../../tools/index.js';
import type { McpBridgeServer } from './mcp-tasks.js';

/**
 * The notifications one call sent, so the bridge can wait for them before it answers: a client drops
 * a call's progress and log handlers once its response arrives. One transport sends in order, so
 * waiting for the last waits for them all.
 */
export class CallNotices {
  #last: Promise<unknown> | undefined;

  /** Keeps `sent` as the latest notification (its failure is ignored: notifications are best effort). */
  track(sent: Promise<unknown>): void {
    this.#last = sent.catch(() => undefined);
  }

  /** Resolves once every tracked notification has been handed to the transport. */
  drained(): Promise<unknown> | undefined {
    return this.#last;
  }
}

/** A sampling part as an MCP content block; any other part (not allowed in sampling) as its text. */
function toBlock(part: SamplingContent): ContentBlock {
  switch (part.type) {
    case 'text':
      return { type: 'text', text: part.text };
    case 'image':
    case 'audio':
      return { type: part.type, data: part.data, mimeType: part.mimeType };
    default: {
      const other = part as { type?: unknown };
      return { type: 'text', text: `[${String(other.type)} content]` };
    }
  }
}

function toBlocks(content: SamplingContent | SamplingContent[]): ContentBlock | ContentBlock[] {
  return Array.isArray(content) ? content.map(toBlock) : toBlock(content);
}

/** An MCP sampling content block as a toolbus part; a block toolbus has no part for, as text. */
function toPart(block: unknown): SamplingContent {
  const b = block as { type?: unknown; text?: unknown; data?: unknown; mimeType?: unknown };
  if (b.type === 'text' && typeof b.text === 'string') return { type: 'text', text: b.text };
  if (
    (b.type === 'image' || b.type === 'audio') &&
    typeof b.data === 'string' &&
    typeof b.mimeType === 'string'
  ) {
    return { type: b.type, data: b.data, mimeType: b.mimeType };
  }
  return { type: 'text', text: `[${String(b.type ?? 'unknown')} content]` };
}

/** `ctx.sample`'s request as MCP's `sampling/createMessage` params. */
function samplingParams(request: SamplingRequest): CreateMessageRequestParamsBase {
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

function samplingResult(result: CreateMessageResult): SamplingResult {
  const content = result.content as unknown;
  const out: SamplingResult = {
    role: result.role,
    content: Array.isArray(content) ? content.map(toPart) : toPart(content),
    model: result.model,
  };
  if (typeof result.stopReason === 'string') out.stopReason = result.stopReason;
  return out;
}

/**
 * The error a tool sees when the client's answer failed: the call's own abort error once it was
 * cancelled or timed out, else `unavailable` with the client's reason (one line, bounded).
 */
function clientFailure(toolName: string, what: string, error: unknown, signal: AbortSignal): ToolError {
  if (signal.aborted) return toolAbortError(signal, toolName);
  const reason = (error instanceof Error ? error.message : String(error)).replace(/\s+/g, ' ').slice(0, 300);
  return new ToolError('unavailable', `tool '${toolName}': the MCP client's ${what} failed: ${reason}`, {
    cause: error,
    toolName,
  });
}

/**
 * The client features of one `tools/call` of `server` (see the module). `log` is always offered (the
 * bridge declares the `logging` capability; a message below the client's level is not sent); `elicit`
 * and `sample` only to a 2025-era client that declared `elicitation` (form mode) or `sampling`. The
 * notifications sent go to `notices`.
 */
export function mcpClientFeatures(
  server: McpBridgeServer,
  ctx: ServerContext,
  toolName: string,
  notices: CallNotices,
): ToolClientFeatures {
  const features: ToolClientFeatures = {
    log: (level, data, logger) => notices.track(ctx.mcpReq.log(level, data, logger)),
  };
  // The 2026-07-28 revision has no server-to-client requests: only a 2025-era connection can ask.
  const capabilities = server.legacyEra ? server.getClientCapabilities() : undefined;
  if (capabilities === undefined) return features;
  // Related to the call, so Streamable HTTP sends it on the call's stream; the call's signal (which
  // carries its deadline) bounds it, not the SDK's default request timeout.
  const requestOptions = (signal: AbortSignal) => ({
    relatedRequestId: ctx.mcpReq.id,
    signal,
    timeout: MAX_TIMER_MS,
  });
  if (capabilities.elicitation?.form !== undefined) {
    features.elicit = async (request, { signal }) => {
      const params: ElicitRequestFormParams = {
        mode: 'form',
        message: request.message,
        requestedSchema: request.requestedSchema as ElicitRequestFormParams['requestedSchema'],
      };
      try {
        const answer = await server.elicitInput(params, requestOptions(signal));
        return answer.content === undefined
          ? { action: answer.action }
          : {
              action: answer.action,
              content: answer.content as Record<string, string | number | boolean | string[]>,
            };
      } catch (error) {
        throw clientFailure(toolName, 'elicitation', error, signal);
      }
    };
  }
  if (capabilities.sampling !== undefined) {
    features.sample = async (request, { signal }) => {
      try {
        const result = await server.createMessage(samplingParams(request), requestOptions(signal));
        return samplingResult(result as CreateMessageResult);
      } catch (error) {
        throw clientFailure(toolName, 'sampling', error, signal);
      }
    };
  }
  return features;
}
