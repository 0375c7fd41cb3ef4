/**
 * @module Wires a whole toolbus system together (what `toolbus up` runs): bus, config store, example
 * service, registry, agent service and gateway. Only the CLI imports leaves, so the wiring lives here.
 */
import type { CliIO } from './command.js';
import type { MessageBus } from '../bus/index.js';
import type { ConfigStore } from '../config/index.js';
import type { ChatCompletionClient } from '../models/index.js';
import {
  hookList,
  type DeferredToolsOptions,
  type PromptProvider,
  type ResourceProvider,
  type ToolProvider,
  type ToolSetHooks,
} from '../tools/index.js';
import { ToolbusError } from '../errors/index.js';
import {
  createGateway,
  type Gateway,
  type GatewayAgent,
  type GatewayAgentEvent,
  type GatewayOAuthOptions,
  type GatewayOptions,
  type ReadinessCheck,
} from '../gateway/index.js';
import { ToolRegistry, configAllowlistFromEnv } from '../registry/index.js';
import type { AgentClient, AgentStreamEvent } from '../agents/index.js';
import { approvalFromJson, RunStore } from '../runs/index.js';
import type { JsonValue } from '../schema/index.js';
import { CallTasks, type DynamicToolService } from '../services/index.js';
import type { McpBridgeTools, McpHttpHandler } from '../adapters/mcp/index.js';
import { LiveCalls, ToolbusMetrics } from '../observability/index.js';
import {
  busNatsUrl,
  configStorePath,
  openBus,
  openConfigStore,
  openEmbeddedBus,
  describeStore,
} from './connect.js';
import { consoleDir, systemInspector } from './system-inspector.js';
import { defaultToolTypes } from './tool-types.js';
import { importLeaf } from './import-leaf.js';
import { logBusStatus, logDenied, logRegistry, logServiceErrors, type CliLogger } from './logger.js';
import { startServiceModule, type RunningServiceModule, type ServiceModuleEvent } from './service-module.js';
import { startAudit, type AuditSettings } from './audit-setup.js';
import { displayNatsUrl, type NatsSecurity } from './nats-security.js';
import { AccessPolicy, toolsMatching, type JwtOptions } from '../policy/index.js';

/** Options of {@link startSystem}. */
export interface SystemOptions {
  nats?: string | undefined;
  /** Credentials and TLS for NATS (`--nats-user`, `--nats-tls-ca`…). @default the `TOOLBUS_NATS_*` variables */
  natsSecurity?: NatsSecurity | undefined;
  store?: string | undefined;
  /** Start the example joke service and load its descriptors. */
  examples: boolean;
  /** Service modules (paths relative to `io.cwd`) to run in this process, on the system's bus. */
  serviceModules?: readonly string[];
  /** Reload each of `serviceModules` when its file changes. */
  watch?: boolean;
  model?: ChatCompletionClient | undefined;
  /** The `model` label of the model's token counts. @default 'model' */
  modelName?: string | undefined;
  /** The gateway's bearer token; required unless `noAuth`. */
  token?: string | undefined;
  /** Serve the gateway without a token (loopback only). */
  noAuth?: boolean;
  /** Also accept JWTs of this OpenID Connect provider (`--jwt-jwks`, `--jwt-issuer`, `--jwt-audience`). */
  jwt?: JwtOptions | undefined;
  /** Be an OAuth 2.1 resource server for the JWT provider (`--oauth`): see `GatewayOptions.oauth`. */
  oauth?: GatewayOAuthOptions | undefined;
  /** The gateway's public origin behind a TLS proxy (`--public-url`). */
  publicUrl?: string | undefined;
  allowedHosts?: readonly string[];
  allowedOrigins?: readonly string[];
  agentUnavailableMessage: string;
  /** The audit log (`--no-audit`, `--audit-args`, limits). @default none kept */
  audit?: AuditSettings | undefined;
  /** How long an approval request waits before it is denied. @default DEFAULT_APPROVAL_TIMEOUT_MS (1 h) */
  approvalTimeoutMs?: number | undefined;
  /** Let the principal that started a run decide its approvals (`--allow-self-approval`). @default false */
  allowSelfApproval?: boolean | undefined;
  /**
   * When the agent and `/mcp` show `search_tools` instead of every tool (`--tool-search`): `auto` once
   * there are more than TOOL_SEARCH_AUTO_ABOVE tools. @default 'auto'
   */
  toolSearch?: 'auto' | 'on' | 'off' | undefined;
  /** The process's log: bus outages, registry changes and problems, service errors, denied requests. */
  logger?: CliLogger | undefined;
}

/** A running system; `close()` stops everything in reverse order. */
export interface RunningSystem {
  bus: MessageBus;
  store: ConfigStore;
  registry: ToolRegistry;
  tools: ToolProvider;
  gateway: Gateway;
  /** The process's `toolbus_*` series, also served at the gateway's `/metrics`. */
  metrics: ToolbusMetrics;
  /** The latest tool calls of the registry's tools, served at the gateway's `/api/v1/live-calls`. */
  liveCalls: LiveCalls;
  serviceNames: string[];
  /** The running `serviceModules`, in the order given. */
  serviceModules: readonly RunningServiceModule[];
  busDescription: string;
  storeDescription: string;
  /** Where the audit log is kept, when it is on. */
  auditDescription?: string | undefined;
  problems(): readonly { key: string; message: string }[];
  close(): Promise<void>;
}

const EXAMPLE_DIR = new URL('../../examples/joke-service/', import.meta.url);
const EXAMPLE_DESCRIPTORS: [type: string, key: string, file: string][] = [
  ['tool-service', 'joke-service', 'joke-service.json'],
  ['tool', 'tell-joke', 'tell-joke.json'],
  ['tool', 'tell-dad-joke', 'tell-dad-joke.json'],
];

/** Puts the example descriptors in the store unless an item of that name is already there. */
async function loadExampleDescriptors(store: ConfigStore): Promise<void> {
  const { readFile } = await import('node:fs/promises');
  for (const [type, key, file] of EXAMPLE_DESCRIPTORS) {
    const text = await readFile(new URL(file, EXAMPLE_DIR), 'utf8');
    try {
      await store.put(type, key, text, { ifRevision: 0 });
    } catch (error) {
      // Already there (maybe edited by the user): keep theirs.
      if ((error as { code?: string }).code !== 'config-conflict') throw error;
    }
  }
}

/**
 * The example service module: compiled beside the CLI in a built package (`dist/examples/`, written by
 * `npm run build`), its TypeScript source when the CLI itself runs from source (a checkout, through tsx).
 */
async function importExampleService(): Promise<{ default: (bus: MessageBus) => DynamicToolService }> {
  const { existsSync } = await import('node:fs');
  const { fileURLToPath } = await import('node:url');
  const compiled = new URL('../examples/joke-service/service.js', import.meta.url);
  if (existsSync(fileURLToPath(compiled))) return import(compiled.href);
  if (import.meta.url.endsWith('.ts')) return import(new URL('service.js', EXAMPLE_DIR).href);
  throw new Error(
    `the example joke service is missing: expected ${fileURLToPath(compiled)} (written by 'npm run build'); ` +
      'rebuild the package, or start without it: toolbus up --no-examples',
  );
}

async function startExampleService(bus: MessageBus): Promise<DynamicToolService> {
  const mod = await importExampleService();
  const service = mod.default(bus);
  await service.start();
  return service;
}

/**
 * Adapts the bus agent client to what the gateway expects. A streamed answer (the gateway passes an
 * `onEvent`) also asks the agent service for its tool calls' progress; a JSON one does not.
 */
export function gatewayAgent(client: AgentClient): GatewayAgent {
  return {
    async ask(question, options) {
      return client.ask(question, {
        user: options.user,
        signal: options.signal,
        ...(options.tools ? { tools: options.tools } : {}),
        ...(options.history ? { history: options.history } : {}),
        ...(options.runId !== undefined ? { runId: options.runId } : {}),
        ...(options.principal !== undefined ? { principal: options.principal } : {}),
        ...(options.profile !== undefined ? { profile: options.profile } : {}),
        // A run that waits for a person lives as long as its client does (the HTTP connection), not
        // the client's default ten minutes; when the client goes, a paused run stays paused.
        timeoutMs: Infinity,
        ...(options.onEvent ? { onEvent: (e) => options.onEvent?.(gatewayEvent(e)) } : {}),
      });
    },
  };
}

/**
 * An agent-stream event as the gateway streams it: an approval's JSON content also parsed, and a
 * progress report (which the client has parsed) with its call.
 */
function gatewayEvent(e: AgentStreamEvent): GatewayAgentEvent {
  if (e.type === 'progress') {
    return {
      type: e.type,
      content: e.content,
      ...(e.toolName !== undefined ? { toolName: e.toolName } : {}),
      ...(e.callId !== undefined ? { callId: e.callId } : {}),
      ...(e.progress ? { progress: e.progress } : {}),
    };
  }
  if (e.type !== 'approval') return { type: e.type, content: e.content };
  const approval = approvalFromJson(safeJson(e.content));
  return { type: e.type, content: e.content, ...(approval ? { approval } : {}) };
}

function safeJson(text: string): JsonValue | undefined {
  try {
    return JSON.parse(text) as JsonValue;
  } catch {
    return undefined;
  }
}

/** The gateway's `/mcp` handler, made on first use; `close()` closes it if it was made. */
export interface LazyMcpHandler {
  handle: NonNullable<GatewayOptions['mcpHandler']>;
  /** Closes the handler if one was made. Idempotent; afterwards `handle` rejects with `unavailable`. */
  close(): Promise<void>;
}

/**
 * Serves `/mcp` with `createMcpHttpHandler(tools)`, importing the MCP leaf (the SDK's server and client
 * and their dependencies, a few dozen modules) on the first `/mcp` request instead of at start, which
 * most starts never see. Concurrent first requests share one load. A failed load (the SDK is not
 * installed: `unsupported`, with the install command) fails that request, and the next one tries again.
 */
export function lazyMcpHandler(
  tools: McpBridgeTools,
  options: {
    onError: (error: Error) => void;
    toolSearch?: DeferredToolsOptions;
    tasks?: CallTasks;
    resources?: ResourceProvider;
    prompts?: PromptProvider;
  },
): LazyMcpHandler {
  let handler: Promise<McpHttpHandler> | undefined;
  let closed = false;
  const load = (): Promise<McpHttpHandler> =>
    (handler ??= importLeaf('mcp', () => import('../adapters/mcp/index.js')).then(
      (mcp) => mcp.createMcpHttpHandler(tools, options),
      (error: unknown) => {
        handler = undefined;
        throw error;
      },
    ));
  return {
    async handle(req, res, request) {
      if (closed) throw new ToolbusError('unavailable', 'the MCP endpoint is closed');
      const mcp = await load();
      await mcp.handle(req, res, request);
    },
    async close() {
      closed = true;
      const made = handler;
      if (made) await (await made.catch(() => undefined))?.close();
    },
  };
}

/** One line per reload of a watched service module: the news on stdout, a failure on stderr. */
function reportServiceModuleEvent(event: ServiceModuleEvent, io: CliIO): void {
  if (event.type === 'reloaded') {
    io.stdout.write(
      `toolbus: reloaded ${event.specifier} (${event.ids.join(', ')}); calls in flight finish on the old instance\n`,
    );
  } else if (event.type === 'reload-failed') {
    io.stderr.write(
      `toolbus: ${event.specifier} not reloaded, the running instance stays: ${event.message}\n`,
    );
  } else {
    io.stderr.write(`toolbus: while stopping the old instance of ${event.specifier}: ${event.message}\n`);
  }
}

/** Starts every part; on failure, stops what had started and rethrows. */
export async function startSystem(options: SystemOptions, io: CliIO): Promise<RunningSystem> {
  const cleanups: (() => Promise<void>)[] = [];
  const closeAll = async (): Promise<void> => {
    for (const cleanup of cleanups.reverse()) {
      try {
        await cleanup();
      } catch (error) {
        io.stderr.write(`toolbus: while stopping: ${(error as Error).message}\n`);
      }
    }
  };
  // The operator's allowlist, from the environment of this process: enforced by the registry where tools
  // are built, and by the gateway's config PUT.
  const allowlist = configAllowlistFromEnv(io.env);
  try {
    const flags = { nats: options.nats, store: options.store, natsSecurity: options.natsSecurity };
    const busNats = busNatsUrl(flags, io); // the bus openBus picks, so the banner names it
    const logger = options.logger;
    let bus: MessageBus;
    if (busNats) {
      bus = await openBus(flags, io, logger ? logBusStatus(logger, 'the bus') : undefined);
    } else {
      const embedded = await openEmbeddedBus(flags, io);
      cleanups.push(() => embedded.callStore.close());
      bus = embedded.bus;
    }
    cleanups.push(() => bus.close());
    // Async calls (`?async=1`, `toolbus call --async`): their states in the bus's call store. Closed
    // before the bus: tasks still running in this process are stored as failed, not left `running`.
    const lease = Number(io.env.TOOLBUS_CALL_LEASE_MS);
    const calls = new CallTasks(bus, lease > 0 ? { leaseMs: lease } : {});
    cleanups.push(() => calls.close());
    const metrics = new ToolbusMetrics();
    metrics.observeBus(bus);
    const store = await openConfigStore(flags, io);
    cleanups.push(() => store.close());
    const storeDescription = describeStore(flags, io);
    // Closed after the gateway and the registry (cleanups run in reverse), so their last calls are kept.
    const audit = await startAudit(flags, options.audit, io, options.logger);
    if (audit) cleanups.push(() => audit.log.close());

    const serviceNames: string[] = [];
    let exampleService: DynamicToolService | undefined;
    if (options.examples) {
      await loadExampleDescriptors(store);
      const service = await startExampleService(bus);
      if (logger) service.addHooks(logServiceErrors(logger));
      exampleService = service;
      serviceNames.push('joke-service');
      cleanups.push(() => service.stop());
    }
    const serviceModules: RunningServiceModule[] = [];
    for (const specifier of options.serviceModules ?? []) {
      const running = await startServiceModule(specifier, bus, {
        cwd: io.cwd,
        watch: options.watch === true,
        onEvent: (event) => reportServiceModuleEvent(event, io),
        ...(logger ? { hooks: logServiceErrors(logger) } : {}),
      });
      serviceModules.push(running);
      cleanups.push(() => running.close());
    }
    metrics.observeServices(() => [
      ...(exampleService ? [exampleService] : []),
      ...serviceModules.flatMap((m) => m.services()),
    ]);

    // Every call of the registry's tools, whichever surface made it, is counted, shown live and audited.
    const liveCalls = new LiveCalls();
    const callHooks = combineToolSetHooks(metrics.toolSetHooks(), liveCalls.toolSetHooks());
    const registry = new ToolRegistry({
      store,
      bus,
      allowlist,
      ...(options.model ? { model: options.model } : {}),
      toolTypes: defaultToolTypes(store),
      toolSetOptions: { hooks: audit ? audit.toolSetHooks(callHooks) : callHooks },
    });
    metrics.observeRegistry(registry);
    metrics.observeToolSet(registry.tools);
    cleanups.push(() => registry.close()); // also when start fails: it holds a bus subscription
    await registry.start();
    if (logger) {
      const stop = logRegistry(logger, registry);
      cleanups.push(async () => stop());
    }

    const toolSearch = toolSearchOptions(options.toolSearch);
    let agent: GatewayAgent | undefined;
    let runs: RunStore | undefined;
    if (options.model) {
      const model = options.model;
      metrics.observeModel(options.modelName ?? 'model', model);
      // Loaded only with a model: a start without one serves no agent.
      const { AgentClient, AgentService, ToolUseAgent } = await import('../agents/index.js');
      // Runs are kept in the system's store: a run paused for an approval survives a restart, and any
      // replica on the same NATS goes on with it once someone decides.
      const runStore = new RunStore(store, {
        bus,
        ...(logger ? { onProblem: (message) => logger.warn({ event: 'runs.problem' }, message) } : {}),
      });
      cleanups.push(async () => runStore.close());
      runs = runStore;
      const agentOptions = {
        model,
        runs: runStore,
        ...(options.approvalTimeoutMs !== undefined ? { approvalTimeoutMs: options.approvalTimeoutMs } : {}),
        ...(toolSearch ? { toolSearch } : {}),
      };
      const everyTool = new ToolUseAgent({ ...agentOptions, tools: registry.tools });
      // One agent per profile: its tool list (and the model's schemas of it) is kept across runs.
      const byProfile = new Map<string, InstanceType<typeof ToolUseAgent>>();
      const agentService = new AgentService({
        bus,
        runs: runStore,
        // A run for a profile offers its tools; one for a principal with a tool policy, only the tools
        // it may use (within the profile). An unknown profile fails the run with `not-found`.
        agent: (request) => {
          const profile = request.profile;
          if (profile === undefined && !request.tools) return everyTool;
          const base = profile === undefined ? registry.tools : registry.profile(profile);
          if (!request.tools) {
            let agent = byProfile.get(profile!);
            if (agent === undefined) {
              if (byProfile.size >= 256) byProfile.clear(); // bounded: ids come from requests
              byProfile.set(profile!, (agent = new ToolUseAgent({ ...agentOptions, tools: base })));
            }
            return agent;
          }
          return new ToolUseAgent({ ...agentOptions, tools: toolsMatching(base, request.tools) });
        },
      });
      await agentService.start();
      cleanups.push(() => agentService.close());
      const client = new AgentClient(bus);
      cleanups.push(() => client.close());
      agent = gatewayAgent(client);
    }

    const onError = (error: Error): void =>
      void io.stderr.write(`toolbus: gateway: ${error.stack ?? error.message}\n`);
    // MCP clients get tool calls as tasks too (tools/call with `task`, tasks/get, tasks/result).
    const mcp = lazyMcpHandler(registry.tools, {
      onError,
      tasks: calls,
      // The resource/<id> items, and the prompt tool items as MCP prompts.
      resources: registry.resources,
      prompts: registry.prompts,
      ...(toolSearch ? { toolSearch } : {}),
    });
    cleanups.push(() => mcp.close());

    // Who may call what: the owner's token (principal admin), the principal/role/quota items of the
    // store, and JWTs when a provider is set. Open (principal admin for all) with --no-auth. Its
    // refusals reach the log and the audit through the gateway's onDenied.
    const policy = new AccessPolicy(
      options.noAuth === true && !options.token
        ? { open: true }
        : {
            ...(options.token ? { adminToken: options.token } : {}),
            store,
            ...(options.jwt ? { jwt: options.jwt } : {}),
          },
    );
    cleanups.push(async () => policy.close());
    await policy.start();
    const problems = (): readonly { key: string; message: string }[] => [
      ...registry.problems(),
      ...policy.problems(),
    ];

    const gateway = createGateway({
      tools: registry.tools,
      store,
      policy,
      ...(agent ? { agent } : {}),
      ...(runs ? { runs } : {}),
      allowSelfApproval: options.allowSelfApproval === true,
      profiles: (id) => registry.profile(id),
      agentUnavailableMessage: options.agentUnavailableMessage,
      allowedHosts: options.allowedHosts ?? [],
      allowedOrigins: options.allowedOrigins ?? [],
      ...(options.oauth ? { oauth: options.oauth } : {}),
      ...(options.publicUrl !== undefined ? { publicUrl: options.publicUrl } : {}),
      allowlist,
      onError,
      problems,
      refresh: () => registry.refresh(),
      readiness: { ...readinessChecks(bus, registry), ...audit?.readiness },
      onDenied: [...(logger ? [logDenied(logger)] : []), ...(audit ? [audit.onDenied] : [])],
      ...(audit ? { audit: audit.log } : {}),
      mcpHandler: mcp.handle,
      metrics: () => metrics.scrape(),
      calls,
      consoleDir: consoleDir(),
      liveCalls,
      inspect: systemInspector({
        bus,
        busNats,
        store,
        storeFile: storeDescription.startsWith('sqlite ') ? configStorePath(flags, io) : undefined,
        storeDescription,
        registry,
        cwd: io.cwd,
      }),
    });
    cleanups.push(() => gateway.close());

    return {
      bus,
      store,
      registry,
      tools: registry.tools,
      gateway,
      metrics,
      liveCalls,
      serviceNames,
      serviceModules,
      busDescription: busNats ? `NATS at ${displayNatsUrl(busNats)}` : 'in-process (memory)',
      storeDescription,
      auditDescription: audit?.description,
      problems,
      close: closeAll,
    };
  } catch (error) {
    await closeAll();
    throw error;
  }
}

/** The hooks of several sources as one: each kind's functions in the order given. */
function combineToolSetHooks(...sets: ToolSetHooks[]): ToolSetHooks {
  return {
    onCall: sets.flatMap((h) => hookList(h.onCall)),
    onStart: sets.flatMap((h) => hookList(h.onStart)),
    onResult: sets.flatMap((h) => hookList(h.onResult)),
    onError: sets.flatMap((h) => hookList(h.onError)),
    onProgress: sets.flatMap((h) => hookList(h.onProgress)),
  };
}

/** Above this many tools, `--tool-search auto` (the default) shows the model `search_tools` instead. */
export const TOOL_SEARCH_AUTO_ABOVE = 64;

/** Deferred loading for `--tool-search`: none for `off`, from the first tool for `on`. */
function toolSearchOptions(mode: SystemOptions['toolSearch']): DeferredToolsOptions | undefined {
  if (mode === 'off') return undefined;
  return mode === 'on' ? {} : { minTools: TOOL_SEARCH_AUTO_ABOVE };
}

/** The parts of `toolbus up` that `/api/v1/ready` checks besides the store and the model. */
function readinessChecks(bus: MessageBus, registry: ToolRegistry): Record<string, ReadinessCheck> {
  return {
    bus: () =>
      bus.connected === false
        ? { ok: false, detail: 'the bus is disconnected from its broker; it reconnects by itself' }
        : { ok: true, detail: 'the bus is connected' },
    registry: () => {
      // The registry loaded its first tool set before the gateway started; what can go wrong later is
      // its watch of the store (it then serves the last set it built, and retries).
      const store = registry.problems().find((p) => p.key === 'store');
      return store
        ? { ok: false, detail: store.message }
        : { ok: true, detail: `${registry.tools.list().length} tools live` };
    },
  };
}
