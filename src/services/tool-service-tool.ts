/**
 * @module The `tool-service` tool type: a `Tool` built from a tool-service descriptor and a tool
 * descriptor, calling the service through a `ToolServiceClient`.
 */
import type { MessageBus } from '../bus/index.js';
import { setOwn, type JsonObject, type JsonValue, type ObjectJsonSchema } from '../schema/index.js';
import { BaseTool, MAX_TIMER_MS, ToolError, isTaskId } from '../tools/index.js';
import { ToolbusError } from '../errors/index.js';
import type { Tool, ToolCallContext } from '../tools/index.js';
import type { ToolServiceClientCache } from './tool-service-client-cache.js';
import { ToolServiceClient, callForValue } from './tool-service-client.js';
import { fromWireError } from './wire.js';
import type { CallRecord } from '../bus/index.js';
import {
  parseToolServiceDescriptor,
  parseToolServiceToolDescriptor,
  type ToolServiceDescriptor,
  type ToolServiceToolArgument,
  type ToolServiceToolDescriptor,
} from './descriptors.js';

/** Options of {@link createToolServiceTool}. Give `clients`, `client` or `bus`. */
export interface CreateToolServiceToolOptions {
  /** A shared client cache (one client per queue pair); preferred. @default none */
  clients?: ToolServiceClientCache;
  /**
   * With `clients`: the tool's lifetime. Its client is held from the cache until this aborts, then let
   * go (`ToolServiceClientCache.retain`), so the clients of tools that left do not pile up.
   * @default none: the client stays in the cache until it closes
   */
  signal?: AbortSignal;
  /** The client to call through, used as is. @default none */
  client?: ToolServiceClient;
  /** A bus to create a client on, when neither `clients` nor `client` is given. @default none */
  bus?: MessageBus;
  /**
   * The tool-service descriptor the tool references: parsed, or its JSON. `undefined` means the service is
   * not known, which is an error naming it.
   */
  service: ToolServiceDescriptor | unknown;
  /** The tool descriptor: parsed, or its JSON (`type: "tool-service"`). */
  tool: ToolServiceToolDescriptor | unknown;
  /**
   * The timeout of each call, unless the caller's signal or deadline (`ToolCallContext.deadline`) ends it
   * first. @default the client's (60 000)
   */
  timeoutMs?: number;
}

/** What {@link createToolServiceTool} returns. */
export interface ToolServiceToolResult {
  tool: ToolServiceTool;
  /** Problems that did not stop the tool, e.g. keys that are not config params of the service. */
  warnings: string[];
}

/** Options of {@link ToolServiceTool}. */
export interface ToolServiceToolOptions {
  descriptor: ToolServiceToolDescriptor;
  service: ToolServiceDescriptor;
  client: ToolServiceClient;
  /** The config values sent with every call (from the descriptor). */
  config: Record<string, JsonValue>;
  /** @default the client's timeout */
  timeoutMs?: number;
}

/**
 * A tool that calls a tool service. The model fills only `arguments`; `user` comes from the call context
 * (`ToolCallContext.user`) and the config values from the tool descriptor.
 */
export class ToolServiceTool extends BaseTool implements Tool {
  /** The id of the tool service this tool calls. */
  readonly serviceId: string;
  readonly #client: ToolServiceClient;
  readonly #configJson: string;
  readonly #argumentNames: readonly string[];
  readonly #timeoutMs: number | undefined;
  readonly #idempotent: boolean;
  /** From the descriptor's `max-total-timeout-ms`: progress restarts the timeout up to it. */
  readonly maxTotalTimeoutMs?: number;

  /** @throws ToolbusError `invalid-name` or `invalid-schema`. Prefer {@link createToolServiceTool}. */
  constructor(options: ToolServiceToolOptions) {
    super({
      name: options.descriptor.name,
      description: options.descriptor.description,
      parameters: argumentsToJsonSchema(options.descriptor.arguments),
      ...(options.descriptor.idempotent ? { annotations: { idempotent: true } } : {}),
      ...(options.descriptor.outputSchema !== undefined
        ? { outputSchema: options.descriptor.outputSchema }
        : {}),
    });
    this.#idempotent = options.descriptor.idempotent;
    if (options.descriptor.maxTotalTimeoutMs !== undefined) {
      this.maxTotalTimeoutMs = options.descriptor.maxTotalTimeoutMs;
    }
    this.serviceId = options.service.id;
    this.#client = options.client;
    this.#configJson = JSON.stringify(options.config);
    this.#argumentNames = options.descriptor.arguments.map((a) => a.name);
    this.#timeoutMs = options.timeoutMs;
  }

  /** The config values sent with every call. */
  get config(): JsonObject {
    return JSON.parse(this.#configJson) as JsonObject;
  }

  protected run(args: Record<string, unknown>, ctx: ToolCallContext): Promise<unknown> {
    // Only declared arguments travel; anything else the model sent stays behind.
    const forwarded: Record<string, unknown> = {};
    for (const name of this.#argumentNames) {
      if (args[name] !== undefined) forwarded[name] = args[name];
    }
    if (isTaskId(ctx.callId) && this.#client.delivery === 'durable') return this.#runTask(forwarded, ctx);
    // The context's deadline is the outermost caller's budget: the client sends no later one.
    // Each streamed chunk is a step of progress (the result is still every chunk joined).
    let chunks = 0;
    const progress = ctx.progress?.bind(ctx);
    // A result with content parts is those parts (ToolSet keeps them; `response` is only their text).
    return this.#client[callForValue](ctx.user ?? '', this.#configJson, JSON.stringify(forwarded), {
      signal: ctx.signal,
      // Under a ToolSet the deadline is the budget (which progress may have extended to a cap): the
      // client's own default timeout must not end the call sooner.
      timeoutMs: this.#timeoutMs ?? (ctx.deadline !== undefined ? MAX_TIMER_MS : undefined),
      deadline: ctx.deadline,
      toolName: this.name,
      idempotent: this.#idempotent,
      ...(progress ? { onChunk: (chunk: string) => progress({ progress: ++chunks, message: chunk }) } : {}),
    });
  }

  /**
   * A task on a durable service: queued under the task's id with no deadline (it may run for hours),
   * then followed in the store until it ends, so the state outlives this process and this wait.
   */
  async #runTask(args: Record<string, unknown>, ctx: ToolCallContext): Promise<unknown> {
    const client = this.#client;
    const id = ctx.callId;
    await client.start(ctx.user ?? '', this.#configJson, JSON.stringify(args), {
      id,
      toolName: this.name,
      idempotent: this.#idempotent,
      ...(this.#timeoutMs !== undefined ? { timeoutMs: this.#timeoutMs } : {}),
    });
    let last: CallRecord | undefined;
    for await (const record of client.watch(id, { signal: ctx.signal })) last = record;
    if (ctx.signal.aborted) {
      await client.cancel(id, 'the task was cancelled').catch(() => undefined);
      throw ctx.signal.reason;
    }
    if (last?.status === 'completed') return last.parts ?? last.response ?? '';
    const error = last?.error ?? { type: 'tool-service-error', message: 'the call ended without an outcome' };
    if (last?.status === 'cancelled')
      throw new ToolError('cancelled', error.message, { toolName: this.name });
    throw fromWireError(error, client.requestQueue, this.name);
  }

  /** How calls reach the tool's service. */
  get delivery(): 'request-response' | 'durable' {
    return this.#client.delivery;
  }
}

/**
 * Builds the `tool-service` tool a tool descriptor describes, checking it against its service: the
 * service must be given and match `tool.service`, and every required config param must have a value.
 * Config values are forwarded; any other key is reported in `warnings` (TrustGraph drops it silently).
 *
 * @throws ToolbusError `invalid-config` (unknown service, missing required config param, malformed
 * descriptor), `invalid-name` (bad tool name).
 * @example
 * ```ts
 * const clients = new ToolServiceClientCache(bus);
 * const { tool, warnings } = createToolServiceTool({ clients, service: jokeServiceJson, tool: tellJokeJson });
 * await tool.runJson({ topic: 'cats' }, signal, { user: 'alice' });
 * ```
 */
export function createToolServiceTool(options: CreateToolServiceToolOptions): ToolServiceToolResult {
  const descriptor = isParsedTool(options.tool) ? options.tool : parseToolServiceToolDescriptor(options.tool);
  const where = `tool '${descriptor.name}'`;
  if (options.service === undefined || options.service === null) {
    throw new ToolbusError(
      'invalid-config',
      `${where} references unknown tool service '${descriptor.service}'; add config item 'tool-service/${descriptor.service}'`,
    );
  }
  const service = isParsedService(options.service)
    ? options.service
    : parseToolServiceDescriptor(options.service);
  if (service.id !== descriptor.service) {
    throw new ToolbusError(
      'invalid-config',
      `${where} references tool service '${descriptor.service}', but was given service '${service.id}'`,
    );
  }
  const warnings: string[] = [];
  const config: Record<string, JsonValue> = {};
  const paramNames = new Set<string>();
  for (const param of service.configParams) {
    paramNames.add(param.name);
    // Own values only, defined as own properties: a param named like an Object.prototype member
    // ('toString', '__proto__') would otherwise read an inherited member or set config's prototype.
    const value = Object.hasOwn(descriptor.values, param.name) ? descriptor.values[param.name] : undefined;
    if (value !== undefined) {
      setOwn(config, param.name, value);
    } else if (param.required) {
      throw new ToolbusError(
        'invalid-config',
        `${where}: missing required config param '${param.name}' of tool service '${service.id}'`,
      );
    }
  }
  const known = service.configParams.map((p) => `'${p.name}'`).join(', ') || 'none';
  for (const key of Object.keys(descriptor.values)) {
    if (!paramNames.has(key)) {
      warnings.push(
        `${where}: key '${key}' is not a config param of tool service '${service.id}' (its params: ${known}); it is not forwarded`,
      );
    }
  }
  for (const arg of descriptor.arguments) {
    if (paramNames.has(arg.name)) {
      warnings.push(
        `${where}: argument '${arg.name}' has the name of a config param of tool service '${service.id}'; ` +
          `the model's value goes in 'arguments' only, 'config' keeps the descriptor's value`,
      );
    }
    if (arg.name === 'user') {
      warnings.push(
        `${where}: argument 'user' is filled by the model; the request's 'user' field still comes from the caller`,
      );
    }
  }
  const client = resolveClient(options, service, where);
  const bus = options.bus ?? options.clients?.bus;
  if (service.delivery === 'durable' && bus?.durable?.queue.crashRecovery === false) {
    warnings.push(
      `tool service '${service.id}' is durable, but this bus queues its calls in process memory: calls ` +
        `wait for a replica and their results are kept, but a crash loses the calls in flight. Crash ` +
        `recovery needs NATS (toolbus up --nats nats://…)`,
    );
  }
  const tool = new ToolServiceTool({ descriptor, service, client, config, timeoutMs: options.timeoutMs });
  return { tool, warnings };
}

/** The JSON Schema the model sees for a tool descriptor's `arguments`. */
export function argumentsToJsonSchema(args: readonly ToolServiceToolArgument[]): ObjectJsonSchema {
  const properties: Record<string, JsonValue> = {};
  const required: string[] = [];
  for (const arg of args) {
    const schema: JsonObject = { type: arg.type };
    if (arg.description !== '') schema['description'] = arg.description;
    if (arg.type === 'array') schema['items'] = {};
    if (arg.enum !== undefined) schema['enum'] = [...arg.enum];
    properties[arg.name] = schema;
    if (arg.required) required.push(arg.name);
  }
  return { type: 'object', properties, required, additionalProperties: false };
}

function resolveClient(
  options: CreateToolServiceToolOptions,
  service: ToolServiceDescriptor,
  where: string,
): ToolServiceClient {
  if (options.client) return options.client;
  if (options.clients) {
    return options.signal
      ? options.clients.retain(service.requestQueue, service.responseQueue, options.signal, service.delivery)
      : options.clients.get(service.requestQueue, service.responseQueue, service.delivery);
  }
  if (options.bus) {
    return new ToolServiceClient(options.bus, {
      requestQueue: service.requestQueue,
      responseQueue: service.responseQueue,
      delivery: service.delivery,
    });
  }
  throw new ToolbusError(
    'invalid-config',
    `${where}: createToolServiceTool needs 'clients', 'client' or 'bus'`,
  );
}

function isParsedService(value: unknown): value is ToolServiceDescriptor {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as ToolServiceDescriptor).requestQueue === 'string' &&
    Array.isArray((value as ToolServiceDescriptor).configParams)
  );
}

function isParsedTool(value: unknown): value is ToolServiceToolDescriptor {
  return (
    typeof value === 'object' &&
    value !== null &&
    !('type' in value) &&
    typeof (value as ToolServiceToolDescriptor).values === 'object' &&
    Array.isArray((value as ToolServiceToolDescriptor).arguments)
  );
}
