/**
 * @module `ToolBuilder`: runs the tool type factories, each build at most `buildTimeoutMs` waited for,
 * under the allowlist, reusing a build whose item and looked-up items did not change.
 */
import type { MessageBus } from '../bus/index.js';
import type { ChatCompletionClient } from '../models/index.js';
import type { JsonObject, JsonValue } from '../schema/index.js';
import {
  MAX_TIMER_MS,
  checkToolTags,
  decorateTool,
  validateToolName,
  type ToolDecoration,
} from '../tools/index.js';
import { ToolbusError, didYouMean } from '../errors/index.js';
import { TOOL_TYPE_PROVIDERS, toolTypeOf } from './builtin-tool-types.js';
import { assertConfigAllowed, type ConfigAllowlist } from './config-allowlist.js';
import { closedError } from './registry-errors.js';
import type { BuildResult, BuiltTool, ToolSource } from './tool-set-plan.js';
import type { ToolTypeContext, ToolTypeFactory } from './tool-type.js';

/** Options of {@link ToolBuilder}; all required (the registry resolves its defaults). */
export interface ToolBuilderOptions {
  /** The factories by tool type. */
  factories: ReadonlyMap<string, ToolTypeFactory>;
  /** What factories see as `ctx.bus` and `ctx.model`. */
  bus: MessageBus | undefined;
  model: ChatCompletionClient | undefined;
  /** Checked on every tool item and on every item its factory looks up, before it is used. */
  allowlist: Required<ConfigAllowlist>;
  /** How long {@link ToolBuilder.build} waits for one factory; positive, or Infinity. */
  buildTimeoutMs: number;
  /** When it aborts, every build still running is dropped and waiters get `closed`. */
  signal: AbortSignal;
  /** Called when a build that outlived its timeout finishes and is still wanted: build again to take it in. */
  onLateBuild: () => void;
}

/** A tool build that may still be running. */
interface Attempt {
  descriptorJson: string;
  /** What the factory looked up so far. */
  lookups: BuiltTool['lookups'];
  controller: AbortController;
  /** Settles when the build does, when buildTimeoutMs passes, or when it is dropped. */
  waited: Promise<void>;
  wake: () => void;
  timer?: ReturnType<typeof setTimeout> | undefined;
  /** buildTimeoutMs passed before the build settled. */
  expired?: boolean;
  settled: BuildResult | undefined;
}

/**
 * Builds tools from {@link ToolSource}s. A build that takes longer than `buildTimeoutMs` is reported as
 * a `timeout` but goes on: a later {@link build} of the same unchanged source waits for the same
 * attempt instead of starting another, and when it finishes `onLateBuild` asks for it to be taken in.
 * An edit of the item (or of what it looked up) drops the running attempt and starts a new one.
 */
export class ToolBuilder {
  readonly #options: ToolBuilderOptions;
  /** Builds still running (or finished after their timeout and not yet taken in), by source. */
  readonly #attempts = new Map<string, Attempt>();
  /**
   * The JSON of each item seen, by object: items and announcements are replaced, never changed in
   * place, so checking thousands of unchanged tools costs no `JSON.stringify` each per rebuild.
   */
  readonly #json = new WeakMap<object, string>();

  constructor(options: ToolBuilderOptions) {
    this.#options = options;
    // A hung build must neither hold up close (nor a start waiting for it) nor keep the process alive
    // with its timer.
    options.signal.addEventListener('abort', () => this.keepOnly(new Set()), { once: true });
  }

  /**
   * Builds one tool, or returns `previous` when its item and everything it looked up are unchanged.
   * Never rejects: a failure, a refusal by the allowlist (`not-allowed`), a `timeout` or `closed`
   * comes back as `{ error }`.
   */
  async build(source: ToolSource, previous: BuiltTool | undefined): Promise<BuildResult> {
    const descriptorJson = this.#jsonOf(source.descriptor)!;
    const unchanged = (b: { descriptorJson: string; lookups: BuiltTool['lookups'] }): boolean =>
      this.#unchanged(b, descriptorJson, source);
    if (previous && unchanged(previous)) return { built: previous };
    let attempt = this.#attempts.get(source.source);
    if (attempt && !unchanged(attempt)) {
      this.#drop(source.source, attempt);
      attempt = undefined;
    }
    attempt ??= this.#start(source, descriptorJson);
    await attempt.waited;
    if (attempt.settled) {
      if (this.#attempts.get(source.source) === attempt) this.#attempts.delete(source.source);
      return attempt.settled;
    }
    if (this.#options.signal.aborted) return { error: closedError() };
    return {
      error: new ToolbusError(
        'timeout',
        `building it has taken longer than ${this.#options.buildTimeoutMs} ms (buildTimeoutMs); the other ` +
          'tools were applied without it, and it goes live when its build finishes',
      ),
    };
  }

  /**
   * `previous` when its item and everything it looked up are unchanged, so it needs no build; else
   * undefined. Synchronous: the registry checks every tool of a rebuild with it.
   */
  reusable(source: ToolSource, previous: BuiltTool | undefined): BuiltTool | undefined {
    if (!previous) return undefined;
    return this.#unchanged(previous, this.#jsonOf(source.descriptor)!, source) ? previous : undefined;
  }

  /** Gives up on the builds still running for sources not in `wanted` (their item changed or went). */
  keepOnly(wanted: ReadonlySet<string>): void {
    for (const [source, attempt] of [...this.#attempts]) {
      if (!wanted.has(source)) this.#drop(source, attempt);
    }
  }

  /** Gives up on the build still running for `source`, if there is one. */
  drop(source: string): void {
    const attempt = this.#attempts.get(source);
    if (attempt) this.#drop(source, attempt);
  }

  /** Starts a build; `waited` settles when it does, when buildTimeoutMs passes, or when it is dropped. */
  #start({ source, key, descriptor, lookup }: ToolSource, descriptorJson: string): Attempt {
    const { allowlist, buildTimeoutMs, factories } = this.#options;
    const controller = new AbortController();
    const lookups: BuiltTool['lookups'] = new Map();
    const warnings: string[] = [];
    // The first item the allowlist refused. Factories may catch a lookup's error and throw their own
    // (mcp-tool wraps it in `invalid-config`), or carry on without the item: the refusal is reported
    // either way, and the tool never goes live.
    let refused: unknown;
    const ctx: ToolTypeContext = {
      key,
      bus: this.#options.bus,
      model: this.#options.model,
      signal: controller.signal,
      lookup: (type, itemKey) => {
        const value = lookup(type, itemKey);
        lookups.set(`${type}/${itemKey}`, { type, key: itemKey, json: this.#jsonOf(value) });
        try {
          assertConfigAllowed(allowlist, type, itemKey, value);
        } catch (error) {
          refused ??= error;
          throw error;
        }
        return value === undefined ? undefined : structuredClone(value);
      },
      warn: (message) => void warnings.push(message),
    };
    let wake!: () => void;
    const waited = new Promise<void>((resolve) => (wake = resolve));
    const attempt: Attempt = { descriptorJson, lookups, controller, waited, wake, settled: undefined };
    attempt.timer =
      buildTimeoutMs === Infinity
        ? undefined
        : setTimeout(
            () => {
              attempt.expired = true;
              wake();
            },
            Math.min(buildTimeoutMs, MAX_TIMER_MS),
          );
    const build = async (): Promise<BuildResult> => {
      try {
        // Before the factory: nothing of a refused item may run, not even its type's checks.
        assertConfigAllowed(allowlist, 'tool', key, descriptor);
        const { type, descriptor: object } = toolTypeOf(descriptor, ctx);
        const factory = factories.get(type);
        if (!factory) throw unknownType(type, key, [...factories.keys()]);
        const { itemFields, typeFields } = splitItemFields(object);
        const tool = decorateTool(
          await factory(structuredClone(typeFields), ctx),
          itemOptions(itemFields, key),
        );
        if (refused !== undefined) throw refused;
        validateToolName(tool.name);
        return { built: { descriptorJson, lookups, tool, warnings, controller } };
      } catch (error) {
        controller.abort();
        return { error: refused ?? error };
      }
    };
    void build().then((result) => {
      attempt.settled = result;
      clearTimeout(attempt.timer);
      wake();
      // It outlived its timeout, so the reload went on without it: take it in now.
      if (attempt.expired && this.#attempts.get(source) === attempt) this.#options.onLateBuild();
    });
    this.#attempts.set(source, attempt);
    return attempt;
  }

  #unchanged(
    built: { descriptorJson: string; lookups: BuiltTool['lookups'] },
    descriptorJson: string,
    source: ToolSource,
  ): boolean {
    if (built.descriptorJson !== descriptorJson) return false;
    for (const l of built.lookups.values()) {
      if (this.#jsonOf(source.lookup(l.type, l.key)) !== l.json) return false;
    }
    return true;
  }

  #jsonOf(value: JsonValue | undefined): string | undefined {
    if (value === undefined) return undefined;
    if (value === null || typeof value !== 'object') return JSON.stringify(value);
    let json = this.#json.get(value);
    if (json === undefined) this.#json.set(value, (json = JSON.stringify(value)));
    return json;
  }

  #drop(source: string, attempt: Attempt): void {
    if (this.#attempts.get(source) === attempt) this.#attempts.delete(source);
    clearTimeout(attempt.timer);
    attempt.controller.abort();
    attempt.wake();
  }
}

function unknownType(type: string, key: string, known: string[]): ToolbusError {
  const provider = TOOL_TYPE_PROVIDERS[type];
  const message = provider
    ? `config 'tool/${key}': tool type '${type}' is not installed in this registry; ${provider}`
    : `config 'tool/${key}': unknown tool type '${type}'${didYouMean(type, known)}; known types: ${known.join(', ')}`;
  return new ToolbusError('invalid-config', message);
}

/** Fields of a tool item the registry reads for every tool type; the type's factory never sees them. */
const ITEM_FIELDS: ReadonlySet<string> = new Set(['approval', 'tags']);

function splitItemFields(descriptor: JsonObject): { itemFields: JsonObject; typeFields: JsonObject } {
  let itemFields: JsonObject | undefined;
  let typeFields: JsonObject | undefined;
  for (const key of Object.keys(descriptor)) {
    if (!ITEM_FIELDS.has(key)) continue;
    itemFields ??= {};
    typeFields ??= { ...descriptor };
    itemFields[key] = descriptor[key]!;
    delete typeFields[key];
  }
  return { itemFields: itemFields ?? {}, typeFields: typeFields ?? descriptor };
}

/**
 * What an item's own fields add to the tool its type builds: `"approval"`: `"always"` (every call needs
 * a person's approval first) or `"never"` (the default), and `"tags"`: words for search and profiles.
 * The model's schema is the same either way.
 *
 * @throws ToolbusError `invalid-config` naming the field and what was expected.
 */
function itemOptions(fields: JsonObject, key: string): ToolDecoration {
  const owner = `config 'tool/${key}'`;
  const options: ToolDecoration = {};
  const approval = fields['approval'];
  if (approval === 'always') options.needsApproval = true;
  else if (approval !== undefined && approval !== 'never') {
    throw new ToolbusError(
      'invalid-config',
      `${owner}: field 'approval' must be "always" or "never", got ${JSON.stringify(approval)}`,
    );
  }
  const tags = fields['tags'];
  if (tags !== undefined) {
    try {
      options.tags = checkToolTags(tags, `${owner}: field 'tags'`);
    } catch (error) {
      throw new ToolbusError('invalid-config', (error as Error).message);
    }
  }
  return options;
}
