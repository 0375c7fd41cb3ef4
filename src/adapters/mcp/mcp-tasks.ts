/**
 * @module MCP tasks (the 2025-11-25 specification's "tasks" utility) for the MCP server bridge, over
 * {@link CallTasks}: a `tools/call` carrying `params.task` starts the call as a task and answers a
 * `CreateTaskResult` at once; `tasks/get`, `tasks/result` (waits until the task ends), `tasks/list` and
 * `tasks/cancel` follow it; `notifications/tasks/status` says when it ended.
 *
 * The SDK keeps the task wire schemas but runs none of it, so this module registers the four methods
 * itself (explicit-schema handlers) and serves them on 2025-era connections only: the 2026-07-28 era
 * has no such methods. A task belongs to whoever started it (the principal the HTTP caller named, else
 * the session or connection): for anyone else its id is unknown. The bridge remembers the most recent
 * {@link MAX_REMEMBERED_TASKS} tasks it started; a task it no longer remembers, or whose state the
 * call store no longer keeps, is unknown too.
 */
import {
  ProtocolError,
  ProtocolErrorCode,
  RELATED_TASK_META_KEY,
  ResourceNotFoundError,
  Server,
  type CallToolResult,
  type CreateTaskResult,
  type JSONRPCMessage,
  type JSONRPCRequest,
  type ListTasksResult,
  type Result,
  type ServerCapabilities,
  type ServerContext,
  type RequestId,
  type Task,
  type Transport,
} from '@modelcontextprotocol/server';
import { z } from 'zod';
import { FINAL_CALL_STATUSES, type CallRecord } from '../../bus/index.js';
import type { CallTasks } from '../../services/index.js';
import type { ToolCallOptions, ToolProvider } from '../../tools/index.js';
import { partToContentBlock } from './mcp-result.js';

/** A task's `ttl` when the client asks none: 1 hour. */
export const DEFAULT_MCP_TASK_TTL_MS = 3_600_000;
/** The longest `ttl` granted: 24 hours (how long the default call store keeps a state). */
export const MAX_MCP_TASK_TTL_MS = 86_400_000;
/** The shortest `ttl` granted: 1 second. */
export const MIN_MCP_TASK_TTL_MS = 1000;
/** The `pollInterval` suggested to clients, in ms. */
export const MCP_TASK_POLL_INTERVAL_MS = 1000;
/** Tasks the bridge remembers (per `CallTasks`); past it the oldest are forgotten. */
export const MAX_REMEMBERED_TASKS = 10_000;
/** Tasks per `tasks/list` page. */
export const MCP_TASK_LIST_PAGE = 100;

/** The first protocol revision without 2025-era tasks (revisions are dates, so they sort as strings). */
const FIRST_MODERN_REVISION = '2026-07-28';

/** What the server advertises when it serves tasks. */
export const MCP_TASK_CAPABILITIES: NonNullable<ServerCapabilities['tasks']> = {
  list: {},
  cancel: {},
  requests: { tools: { call: {} } },
};

type RequestHandler = (request: JSONRPCRequest, ctx: ServerContext) => Promise<Result>;

/** The `task` param of a task-augmented request, when it has one. */
function taskParamOf(params: unknown): { ttl?: unknown } | undefined {
  if (typeof params !== 'object' || params === null) return undefined;
  const task = (params as { task?: unknown }).task;
  return typeof task === 'object' && task !== null && !Array.isArray(task) ? task : undefined;
}

/** The 2025-era error code of a read of an unknown resource. */
const RESOURCE_NOT_FOUND = -32002;
/** Not-found answers pending at once per connection (requests in flight), beyond which the oldest go. */
const MAX_PENDING_NOT_FOUND = 1024;

/**
 * The bridge's `Server`. When it serves tasks, a task-augmented `tools/call` of a 2025-era connection
 * may answer a `CreateTaskResult`, which the SDK's own `tools/call` result check (made for
 * `CallToolResult`) would refuse; any other request goes through that check as before. It advertises
 * the `tasks` capability on 2025-era connections only. A 2025-era read of an unknown resource is
 * answered with that era's -32002 "Resource not found" (the SDK sends 2026-07-28's -32602 in every era).
 */
export class McpBridgeServer extends Server {
  /** Set by {@link serveMcpTasks}. */
  servesTasks = false;
  /** Ids of 2025-era requests answered "resource not found", whose error code goes out as -32002. */
  readonly #notFound = new Set<RequestId>();

  /**
   * The error for a read of `uri`, which does not exist, in request `id`: MCP's "Resource not found"
   * with the URI in `data` (-32002 on a 2025-era connection, -32602 on a later one).
   */
  resourceNotFound(id: RequestId, uri: string): ProtocolError {
    if (this.legacyEra) {
      this.#notFound.add(id);
      if (this.#notFound.size > MAX_PENDING_NOT_FOUND) {
        this.#notFound.delete(this.#notFound.values().next().value as RequestId);
      }
    }
    return new ResourceNotFoundError(uri, `Resource not found: ${uri}`);
  }

  override async connect(transport: Transport): Promise<void> {
    const send = transport.send.bind(transport);
    transport.send = (message, options) => send(this.#withEraCode(message), options);
    return super.connect(transport);
  }

  #withEraCode(message: JSONRPCMessage): JSONRPCMessage {
    if (this.#notFound.size === 0 || !('error' in message) || message.id === undefined) return message;
    if (!this.#notFound.delete(message.id)) return message;
    return { ...message, error: { ...message.error, code: RESOURCE_NOT_FOUND } };
  }

  /** Runs `fn` when the connection closes, before what was set to run then (`onclose`, chained). */
  whenClosed(fn: () => void): void {
    const previous = this.onclose;
    this.onclose = () => {
      fn();
      previous?.();
    };
  }

  /** The protocol revision the connection negotiated, once it has. */
  get protocolVersion(): string | undefined {
    return this._negotiatedProtocolVersion;
  }

  /** True once the connection negotiated a 2025-era protocol revision. */
  get legacyEra(): boolean {
    const version = this._negotiatedProtocolVersion;
    return version !== undefined && version < FIRST_MODERN_REVISION;
  }

  /** True when `params` (of a `tools/call`) ask for a task and this connection serves them. */
  isTaskCall(params: unknown): boolean {
    return this.servesTasks && this.legacyEra && taskParamOf(params) !== undefined;
  }

  override getCapabilities(): ServerCapabilities {
    const capabilities = super.getCapabilities();
    if (capabilities.tasks === undefined || this.legacyEra) return capabilities;
    const { tasks: _tasks, ...others } = capabilities;
    return others;
  }

  protected override _wrapHandler(method: string, handler: RequestHandler): RequestHandler {
    const checked = super._wrapHandler(method, handler);
    if (method !== 'tools/call') return checked;
    // The request itself is validated by the handler's registration (the era's wire schema).
    return (request, ctx) =>
      this.isTaskCall(request.params) ? handler(request, ctx) : checked(request, ctx);
  }
}

/**
 * A `CreateTaskResult` as the answer of a `tools/call` handler. The SDK types those as answering a
 * `CallToolResult` (it has no task runtime); {@link McpBridgeServer} sends this one as it is.
 */
export function asToolCallAnswer(result: CreateTaskResult): CallToolResult {
  return result as unknown as CallToolResult;
}

/** One task the bridge started. */
interface TaskEntry {
  readonly owner: string;
  /** Its place in the order tasks were started (the `tasks/list` cursor). */
  readonly seq: number;
  readonly createdAt: number;
  readonly ttl: number;
}

/** The tasks the bridge started, by id: bounded, oldest forgotten first, each until its ttl is over. */
class TaskRegistry {
  readonly #entries = new Map<string, TaskEntry>();
  #seq = 0;

  get lastSeq(): number {
    return this.#seq;
  }

  add(id: string, owner: string, createdAt: number, ttl: number): TaskEntry {
    const entry: TaskEntry = { owner, seq: ++this.#seq, createdAt, ttl };
    this.#entries.set(id, entry);
    while (this.#entries.size > MAX_REMEMBERED_TASKS) {
      const oldest = this.#entries.keys().next();
      if (oldest.done === true) break;
      this.#entries.delete(oldest.value);
    }
    return entry;
  }

  /** The entry of `id` when `owner` started it and its ttl is not over. */
  find(id: string, owner: string): TaskEntry | undefined {
    const entry = this.#entries.get(id);
    if (entry === undefined) return undefined;
    if (Date.now() - entry.createdAt >= entry.ttl) {
      this.#entries.delete(id);
      return undefined;
    }
    return entry.owner === owner ? entry : undefined;
  }

  forget(id: string): void {
    this.#entries.delete(id);
  }

  /** Up to `limit` live tasks of `owner` started after `after` (a seq), oldest first, and if more follow. */
  page(owner: string, after: number, limit: number): { tasks: [string, TaskEntry][]; more: boolean } {
    const now = Date.now();
    const tasks: [string, TaskEntry][] = [];
    for (const [id, entry] of this.#entries) {
      if (entry.owner !== owner || entry.seq <= after) continue;
      if (now - entry.createdAt >= entry.ttl) {
        this.#entries.delete(id);
        continue;
      }
      if (tasks.length === limit) return { tasks, more: true };
      tasks.push([id, entry]);
    }
    return { tasks, more: false };
  }
}

/** One registry per `CallTasks`: every bridge of the process that shares it sees the same tasks. */
const registries = new WeakMap<CallTasks, TaskRegistry>();

function registryOf(tasks: CallTasks): TaskRegistry {
  let registry = registries.get(tasks);
  if (registry === undefined) registries.set(tasks, (registry = new TaskRegistry()));
  return registry;
}

/** The ttl granted for a requested one. */
function grantedTtl(requested: unknown): number {
  if (typeof requested !== 'number' || !Number.isFinite(requested)) return DEFAULT_MCP_TASK_TTL_MS;
  return Math.min(MAX_MCP_TASK_TTL_MS, Math.max(MIN_MCP_TASK_TTL_MS, Math.round(requested)));
}

/** True when the task is over for MCP: final, or cancelled on request (it stays `cancelled`). */
function isTerminal(record: CallRecord): boolean {
  return record.cancelRequested === true || FINAL_CALL_STATUSES.has(record.status);
}

function cancelledMessage(id: string, record: CallRecord): string {
  return record.status === 'cancelled' && record.error !== undefined
    ? record.error.message
    : `task '${id}' was cancelled by request`;
}

/** A task's MCP state (`Task`) from its call state. */
function taskOf(id: string, entry: TaskEntry, record: CallRecord): Task {
  let status: Task['status'];
  let statusMessage: string | undefined;
  if (record.cancelRequested === true || record.status === 'cancelled') {
    status = 'cancelled';
    statusMessage = cancelledMessage(id, record);
  } else if (record.status === 'completed') {
    status = 'completed';
  } else if (record.status === 'failed') {
    status = 'failed';
    statusMessage = record.error?.message ?? 'the tool call failed';
  } else {
    status = 'working';
  }
  return {
    taskId: id,
    status,
    ...(statusMessage !== undefined ? { statusMessage } : {}),
    createdAt: new Date(entry.createdAt).toISOString(),
    lastUpdatedAt: new Date(Math.max(record.updatedAt, entry.createdAt)).toISOString(),
    ttl: entry.ttl,
    pollInterval: MCP_TASK_POLL_INTERVAL_MS,
  };
}

/**
 * What a finished task's `tools/call` would have answered: the tool's text, `isError` with the
 * message for a failed or cancelled one, and (as an unknown tool is) a -32602 error for a tool that
 * was gone when the task ran.
 */
function resultOf(id: string, record: CallRecord): CallToolResult {
  const _meta = { [RELATED_TASK_META_KEY]: { taskId: id } };
  if (record.cancelRequested !== true && record.status === 'completed') {
    const content = record.parts?.map(partToContentBlock) ?? [{ type: 'text', text: record.response ?? '' }];
    return { content, _meta };
  }
  if (record.cancelRequested !== true && record.error?.type === 'unknown-tool') {
    throw new ProtocolError(ProtocolErrorCode.InvalidParams, record.error.message);
  }
  const text =
    record.cancelRequested === true || record.status === 'cancelled'
      ? cancelledMessage(id, record)
      : (record.error?.message ?? 'the tool call failed');
  return { content: [{ type: 'text', text }], isError: true, _meta };
}

function quoteId(id: string): string {
  return `'${id.length > 100 ? `${id.slice(0, 100)}…` : id}'`;
}

/** The spec's error for an unknown (or someone else's, or expired) task. */
function unknownTask(id: string): ProtocolError {
  return new ProtocolError(
    ProtocolErrorCode.InvalidParams,
    `Failed to retrieve task: task ${quoteId(id)} not found (unknown, not yours, or expired)`,
  );
}

function storeError(error: unknown): ProtocolError {
  const why = error instanceof Error ? error.message : String(error);
  return new ProtocolError(ProtocolErrorCode.InternalError, `reading the task state failed: ${why}`);
}

/** How one server serves tasks. */
export interface McpTaskServing {
  /** Where tasks run and their states are kept. */
  tasks: CallTasks;
  /** Whom the tasks started here belong to: only requests of the same owner see them. */
  owner: string;
  /** The tools a task calls (the ones a normal call of this server calls). */
  calls: ToolProvider;
  /** The options a normal call of this server gets (but the call id and signal). */
  callOptions: Pick<ToolCallOptions, 'caller' | 'timeoutMs' | 'user'>;
}

/** Starts task-augmented `tools/call`s of one server (see {@link serveMcpTasks}). */
export interface McpTaskStarter {
  /** Starts `name(args)` as a task; resolves with the `CreateTaskResult` once it is stored. */
  start(name: string, args: Record<string, unknown>, params: unknown): Promise<CreateTaskResult>;
}

const TaskIdParams = z.object({ taskId: z.string() });
const ListParams = z.object({ cursor: z.string().optional() });

/**
 * Serves MCP tasks on `server`: registers `tasks/get`, `tasks/result`, `tasks/list` and `tasks/cancel`
 * and advertises the `tasks` capability (2025-era connections only). The server's `tools/call` handler
 * calls the returned `start` for a call `server.isTaskCall(params)` says is one. Status notifications
 * stop when the server closes.
 */
export function serveMcpTasks(server: McpBridgeServer, serving: McpTaskServing): McpTaskStarter {
  const { tasks, owner, calls, callOptions } = serving;
  const registry = registryOf(tasks);
  server.registerCapabilities({ tasks: MCP_TASK_CAPABILITIES });
  server.servesTasks = true;
  const closed = new AbortController();
  server.whenClosed(() => closed.abort());

  const requireLegacy = (method: string): void => {
    if (!server.legacyEra) {
      throw new ProtocolError(
        ProtocolErrorCode.MethodNotFound,
        `${method} is a 2025-11-25 method; this connection speaks a later protocol revision`,
      );
    }
  };

  /** The task and its state, when `owner` may see it; else the spec's unknown-task error. */
  const lookup = async (method: string, id: string): Promise<{ entry: TaskEntry; record: CallRecord }> => {
    requireLegacy(method);
    const entry = registry.find(id, owner);
    if (entry === undefined) throw unknownTask(id);
    let record: CallRecord | undefined;
    try {
      record = await tasks.get(id);
    } catch (error) {
      throw storeError(error);
    }
    if (record === undefined) {
      registry.forget(id);
      throw unknownTask(id);
    }
    return { entry, record };
  };

  /** Tells the client once the task is over (best effort: the notification is optional). */
  const notifyWhenOver = async (id: string, entry: TaskEntry): Promise<void> => {
    try {
      for await (const record of tasks.watch(id, closed.signal)) {
        if (!isTerminal(record)) continue;
        await server.notification({
          method: 'notifications/tasks/status',
          params: taskOf(id, entry, record),
        });
        return;
      }
    } catch {
      // The store or the connection is gone: the client still polls with tasks/get.
    }
  };

  server.setRequestHandler('tasks/get', { params: TaskIdParams }, async ({ taskId }) => {
    const { entry, record } = await lookup('tasks/get', taskId);
    return taskOf(taskId, entry, record);
  });

  server.setRequestHandler('tasks/result', { params: TaskIdParams }, async ({ taskId }, ctx) => {
    let { record } = await lookup('tasks/result', taskId);
    if (!isTerminal(record)) {
      try {
        for await (const next of tasks.watch(taskId, ctx.mcpReq.signal)) {
          record = next;
          if (isTerminal(record)) break;
        }
      } catch (error) {
        throw storeError(error);
      }
      if (!isTerminal(record)) {
        throw new ProtocolError(
          ProtocolErrorCode.InternalError,
          `tasks/result for task ${quoteId(taskId)} ended before the task did`,
        );
      }
    }
    return resultOf(taskId, record);
  });

  server.setRequestHandler(
    'tasks/list',
    { params: ListParams },
    async ({ cursor }): Promise<ListTasksResult> => {
      requireLegacy('tasks/list');
      let after = 0;
      if (cursor !== undefined) {
        after = /^\d{1,15}$/.test(cursor) ? Number(cursor) : NaN;
        if (!Number.isSafeInteger(after) || after > registry.lastSeq) {
          throw new ProtocolError(
            ProtocolErrorCode.InvalidParams,
            `Invalid cursor for tasks/list: ${quoteId(cursor)}`,
          );
        }
      }
      const page = registry.page(owner, after, MCP_TASK_LIST_PAGE);
      let records: (CallRecord | undefined)[];
      try {
        records = await Promise.all(page.tasks.map(([id]) => tasks.get(id)));
      } catch (error) {
        throw storeError(error);
      }
      const listed: Task[] = [];
      page.tasks.forEach(([id, entry], i) => {
        const record = records[i];
        if (record === undefined) registry.forget(id);
        else listed.push(taskOf(id, entry, record));
      });
      const last = page.tasks[page.tasks.length - 1];
      return {
        tasks: listed,
        ...(page.more && last !== undefined ? { nextCursor: String(last[1].seq) } : {}),
      };
    },
  );

  server.setRequestHandler('tasks/cancel', { params: TaskIdParams }, async ({ taskId }) => {
    const { entry, record } = await lookup('tasks/cancel', taskId);
    if (isTerminal(record)) {
      const status = taskOf(taskId, entry, record).status;
      throw new ProtocolError(
        ProtocolErrorCode.InvalidParams,
        `Cannot cancel task: already in terminal status '${status}'`,
      );
    }
    let after: CallRecord | undefined;
    try {
      after = await tasks.cancel(taskId, 'cancelled by the MCP client (tasks/cancel)');
    } catch (error) {
      throw storeError(error);
    }
    if (after === undefined) {
      registry.forget(taskId);
      throw unknownTask(taskId);
    }
    return taskOf(taskId, entry, after);
  });

  return {
    async start(name, args, params) {
      const ttl = grantedTtl(taskParamOf(params)?.ttl);
      const createdAt = Date.now();
      let id: string;
      try {
        id = await tasks.start(calls, name, args, callOptions);
      } catch (error) {
        const why = error instanceof Error ? error.message : String(error);
        throw new ProtocolError(ProtocolErrorCode.InternalError, `starting the task failed: ${why}`);
      }
      const entry = registry.add(id, owner, createdAt, ttl);
      void notifyWhenOver(id, entry);
      const at = new Date(createdAt).toISOString();
      return {
        task: {
          taskId: id,
          status: 'working',
          createdAt: at,
          lastUpdatedAt: at,
          ttl,
          pollInterval: MCP_TASK_POLL_INTERVAL_MS,
        },
      };
    },
  };
}
