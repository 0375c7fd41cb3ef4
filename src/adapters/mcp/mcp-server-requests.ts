/**
 * @module What a remote MCP server may ask of toolbus's MCP client while one of its tools runs: a
 * question for a person (`elicitation/create`), a completion on a model (`sampling/createMessage`), and
 * log messages (`notifications/message`). Each goes to the toolbus call that made the request: its
 * `ctx.elicit`, `ctx.sample` and `ctx.log`, i.e. whoever called it (an MCP client of the bridge, which
 * makes toolbus a faithful proxy, or a program passing `clientFeatures`).
 *
 * Which call a server's request belongs to: on Streamable HTTP the server sends it on the response
 * stream of that call's `tools/call`, which the SDK reads within the call's async context, so the call
 * is the one {@link ServerRequestRouter.run} runs there. Where nothing says (stdio, or a request the
 * server sent apart from the call, as the SDK's `ctx.mcpReq.elicitInput` does unless given
 * `relatedRequestId`), it is the only call in flight on the session; with several, nobody is asked
 * rather than perhaps the wrong person, who would see another caller's question.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import {
  ProtocolError,
  ProtocolErrorCode,
  type Client,
  type ClientCapabilities,
  type ElicitResult,
} from '@modelcontextprotocol/client';
import { isToolLogLevel, type ElicitationResult, type ToolClientFeatures } from '../../tools/index.js';
import { samplingAnswer, samplingRequestOf } from './mcp-sampling.js';

/**
 * The capabilities toolbus's MCP client declares: form elicitation (with the schema's defaults filled
 * in for fields the answer leaves out) and sampling, answered by the calling toolbus call.
 */
export const MCP_CLIENT_CAPABILITIES: ClientCapabilities = {
  elicitation: { form: { applyDefaults: true } },
  sampling: {},
};

/** A call whose caller offers nothing: it counts as in flight, but answers nobody's question. */
const NO_FEATURES: ToolClientFeatures = Object.freeze({});

/** Which toolbus call, with its caller's features, a remote server's request belongs to. */
export class ServerRequestRouter {
  readonly #current = new AsyncLocalStorage<ToolClientFeatures>();
  /** The features of every call in flight, one entry per call. */
  readonly #inFlight = new Set<{ readonly features: ToolClientFeatures }>();

  /** Runs `op` (one call to the server) as made by a caller with `features` (none: nobody to ask). */
  async run<T>(features: ToolClientFeatures | undefined, op: () => Promise<T>): Promise<T> {
    const call = { features: features ?? NO_FEATURES };
    this.#inFlight.add(call);
    try {
      return await this.#current.run(call.features, op);
    } finally {
      this.#inFlight.delete(call);
    }
  }

  /** The features of the call a server's request or notification belongs to, when that can be told. */
  current(): ToolClientFeatures | undefined {
    const own = this.#current.getStore();
    if (own !== undefined) return own;
    if (this.#inFlight.size !== 1) return undefined;
    return this.#inFlight.values().next().value?.features;
  }
}

/** The protocol error a server gets when no toolbus call can answer its `what`. */
function nobodyToAsk(what: string, serverId: string): ProtocolError {
  // Says nothing of the caller: the server is a third party.
  return new ProtocolError(
    ProtocolErrorCode.InvalidRequest,
    `toolbus cannot answer this ${what} for MCP server '${serverId}': the call it belongs to has nobody ` +
      `who can (only a call made by an MCP client with that capability, or a program offering it, has)`,
  );
}

/** A rejection of the caller's `ctx.elicit`/`ctx.sample` as the error the server gets. */
function refused(what: string, serverId: string, error: unknown): ProtocolError {
  const code = (error as { code?: unknown } | null)?.code;
  if (code === 'unsupported') return nobodyToAsk(what, serverId);
  if (code === 'cancelled' || code === 'timeout') {
    return new ProtocolError(ProtocolErrorCode.InternalError, `the ${what} was cancelled: the call ended`);
  }
  return new ProtocolError(ProtocolErrorCode.InternalError, `the ${what} failed on toolbus's side`);
}

/**
 * Answers `client`'s server: elicitation and sampling requests through the features of the call they
 * belong to (see {@link ServerRequestRouter}), log messages to that call's `ctx.log` (dropped when no
 * call can be told). Register before connecting.
 */
export function answerServerRequests(client: Client, router: ServerRequestRouter, serverId: string): void {
  client.setRequestHandler('elicitation/create', async (request, ctx): Promise<ElicitResult> => {
    const features = router.current();
    if (features?.elicit === undefined) throw nobodyToAsk('elicitation', serverId);
    const params = request.params as { message: string; requestedSchema?: unknown };
    let answer: ElicitationResult;
    try {
      answer = await features.elicit(
        { message: params.message, requestedSchema: (params.requestedSchema ?? {}) as never },
        { signal: ctx.mcpReq.signal },
      );
    } catch (error) {
      throw refused('elicitation', serverId, error);
    }
    return answer.content === undefined
      ? { action: answer.action }
      : { action: answer.action, content: answer.content };
  });
  client.setRequestHandler('sampling/createMessage', async (request, ctx) => {
    const features = router.current();
    if (features?.sample === undefined) throw nobodyToAsk('sampling request', serverId);
    try {
      return samplingAnswer(
        await features.sample(samplingRequestOf(request.params), { signal: ctx.mcpReq.signal }),
      );
    } catch (error) {
      throw refused('sampling request', serverId, error);
    }
  });
  client.setNotificationHandler('notifications/message', (notification) => {
    const { level, data, logger } = notification.params;
    if (!isToolLogLevel(level)) return;
    router.current()?.log?.(level, data, logger);
  });
}
