/**
 * @module The extension point of the registry: a tool type turns one config item into a `Tool`.
 */
import type { MessageBus } from '../bus/index.js';
import type { ChatCompletionClient } from '../models/index.js';
import type { JsonObject, JsonValue } from '../schema/index.js';
import type { Tool } from '../tools/index.js';

/** What a {@link ToolTypeFactory} gets besides the descriptor. */
export interface ToolTypeContext {
  /** The config key of the item being built (`tell-joke` for `tool/tell-joke`). */
  readonly key: string;
  /** The registry's bus, when it has one. */
  readonly bus: MessageBus | undefined;
  /** The registry's model, when it has one (`text-completion` and `prompt` need it). */
  readonly model: ChatCompletionClient | undefined;
  /**
   * Another config item the tool depends on, e.g. the `mcp/<id>` item of an `mcp-tool` or the
   * `tool-service/<id>` of a tool-service tool (an announced service counts too). The registry records
   * each lookup and rebuilds the tool when a looked-up item changes, appears or goes.
   */
  lookup(type: string, key: string): JsonValue | undefined;
  /** Reports a problem that does not stop the tool (shown in `registry.problems()` as a warning). */
  warn(message: string): void;
  /**
   * Aborted when the built tool leaves the registry (its item changed or was deleted, or the registry
   * closed). Release connections here; calls already running on the old set may still be finishing.
   */
  readonly signal: AbortSignal;
}

/**
 * Builds the tool a config item of one `type` describes. Throw `ToolbusError` `invalid-config` for a
 * bad item, naming the field and what was expected: the registry reports it under the item's key and
 * skips that item alone.
 *
 * @example
 * ```ts
 * const echoType: ToolTypeFactory = (descriptor, ctx) =>
 *   new FunctionTool(({ text }) => text, { name: ctx.key, description: 'echo', parameters: z.object({ text: z.string() }) });
 * new ToolRegistry({ store, toolTypes: { echo: echoType } });
 * ```
 */
export type ToolTypeFactory = (descriptor: JsonObject, ctx: ToolTypeContext) => Tool | Promise<Tool>;

/** How bad a {@link RegistryProblem} is. */
export const ProblemSeverity = {
  /** The item was skipped (a tool that was live keeps its last good version). */
  Error: 'error',
  /** The item is live, but something about it is probably not what was meant. */
  Warning: 'warning',
} as const;
/** One of {@link ProblemSeverity}'s values. */
export type ProblemSeverity = (typeof ProblemSeverity)[keyof typeof ProblemSeverity];

/** One thing wrong with the config or the announcements, as `registry.problems()` lists it. */
export interface RegistryProblem {
  /**
   * What it is about: a config item (`tool/tell-joke`, `tool-service/joke-service`), an announced tool
   * (`announced/joke-service/tell-joke`), or `store` for a failing config store.
   */
  key: string;
  /** What is wrong and what is expected. */
  message: string;
  /** @default 'error' */
  severity: ProblemSeverity;
  /** The `ToolbusError` code behind it, when there is one (e.g. `invalid-config`). */
  code?: string;
}
