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
  RequestId,
  ServerContext,
} from '@modelcontextprotocol/server';
import {
  MAX_TIMER_MS,
  ToolError,
  toolAbortError,
  type ElicitationRequest,
  type ElicitationResult,
  type SamplingRequest,
  type SamplingResult,
  type ToolClientFeatures,
  type ToolLogLevel,
} from '../../tools/index.js';
import type { McpBridgeServer } from './mcp-tasks.js';
import { samplingParams, samplingResult } from './mcp-sampling.js';

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

/** The answer of a form elicitation as `ctx.elicit` resolves with it. */
function elicitation(answer: { action: ElicitationResult['action']; content?: unknown }): ElicitationResult {
  return answer.content === undefined
    ? { action: answer.action }
    : { action: answer.action, content: answer.content as ElicitationResult['content'] };
}

/** `elicit` of a call whose client declared form elicitation (`this`: its {@link McpCallFeatures}). */
async function elicitForm(
  this: McpCallFeatures,
  request: ElicitationRequest,
  { signal }: { signal: AbortSignal },
): Promise<ElicitationResult> {
  const params: ElicitRequestFormParams = {
    mode: 'form',
    message: request.message,
    requestedSchema: request.requestedSchema as ElicitRequestFormParams['requestedSchema'],
  };
  try {
    return elicitation(await this.server.elicitInput(params, this.requestOptions(signal)));
  } catch (error) {
    throw clientFailure(this.toolName, 'elicitation', error, signal);
  }
}

/** `sample` of a call whose client declared sampling (`this`: its {@link McpCallFeatures}). */
async function sampleModel(
  this: McpCallFeatures,
  request: SamplingRequest,
  { signal }: { signal: AbortSignal },
): Promise<SamplingResult> {
  try {
    const result = await this.server.createMessage(samplingParams(request), this.requestOptions(signal));
    return samplingResult(result as CreateMessageResult);
  } catch (error) {
    throw clientFailure(this.toolName, 'sampling', error, signal);
  }
}

/**
 * The client features of one `tools/call` of `server` (see the module), and the notifications it sent,
 * so the bridge can wait for them before it answers: a client drops a call's progress and log handlers
 * once its response arrives. `log` is always offered (the bridge declares the `logging` capability; a
 * message below the client's level is not sent); `elicit` and `sample` only to a 2025-era client that
 * declared `elicitation` (form mode) or `sampling`. One object a call: its methods are shared.
 */
export class McpCallFeatures implements ToolClientFeatures {
  readonly server: McpBridgeServer;
  readonly ctx: ServerContext;
  readonly toolName: string;
  elicit?: ToolClientFeatures['elicit'];
  sample?: ToolClientFeatures['sample'];
  #last: Promise<unknown> | undefined;

  constructor(server: McpBridgeServer, ctx: ServerContext, toolName: string) {
    this.server = server;
    this.ctx = ctx;
    this.toolName = toolName;
    // The 2026-07-28 revision has no server-to-client requests: only a 2025-era connection can ask.
    const capabilities = server.legacyEra ? server.getClientCapabilities() : undefined;
    if (capabilities?.elicitation?.form !== undefined) this.elicit = elicitForm;
    if (capabilities?.sampling !== undefined) this.sample = sampleModel;
  }

  log(level: ToolLogLevel, data: unknown, logger?: string): void {
    this.track(this.ctx.mcpReq.log(level, data, logger));
  }

  /** Keeps `sent` as the latest notification (its failure is ignored: notifications are best effort). */
  track(sent: Promise<unknown>): void {
    this.#last = sent.catch(() => undefined);
  }

  /**
   * Resolves once every notification sent has been handed to the transport (one transport sends in
   * order, so waiting for the last waits for them all); undefined when none was sent.
   */
  drained(): Promise<unknown> | undefined {
    return this.#last;
  }

  /**
   * Related to the call, so Streamable HTTP sends a request on the call's stream; the call's signal
   * (which carries its deadline) bounds it, not the SDK's default request timeout.
   */
  requestOptions(signal: AbortSignal): { relatedRequestId: RequestId; signal: AbortSignal; timeout: number } {
    return { relatedRequestId: this.ctx.mcpReq.id, signal, timeout: MAX_TIMER_MS };
  }
}
