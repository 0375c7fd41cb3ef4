/**
 * @module What an MCP client can do for the tools it calls, as toolbus `ToolClientFeatures`: log
 * messages become `notifications/message` (at or above the level the client set with
 * `logging/setLevel`), and, for a 2025-era client that declared the capability, `ctx.elicit` sends
 * `elicitation/create` and `ctx.sample` sends `sampling/createMessage`, each related to the
 * `tools/call` being served (on Streamable HTTP it travels on that call's stream) and cancelled with it.
 */
import type {
  CreateMessageResult,
  ElicitRequestFormParams,
  ServerContext,
} from '@modelcontextprotocol/server';
import { MAX_TIMER_MS, ToolError, toolAbortError, type ToolClientFeatures } from '../../tools/index.js';
import type { McpBridgeServer } from './mcp-tasks.js';
import { samplingParams, samplingResult } from './mcp-sampling.js';

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
