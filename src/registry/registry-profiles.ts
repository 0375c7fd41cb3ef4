/**
 * @module The registry's profiles: `profile/<id>` items read from its config copy, each served as a
 * view of the live tools that follows both the tools and the item.
 */
import { ToolbusError, closestName } from '../errors/index.js';
import type { JsonValue } from '../schema/index.js';
import {
  PROFILE_CONFIG_TYPE,
  parseToolProfile,
  profileAccepts,
  toolView,
  type ObservableToolProvider,
  type ToolProfile,
} from '../tools/index.js';
import type { ConfigSnapshot } from './tool-set-plan.js';
import type { RegistryProblem } from './tool-type.js';

type Parsed = { profile: ToolProfile } | { error: ToolbusError };

/** Profiles over one registry's tools. */
export class RegistryProfiles {
  readonly #config: ConfigSnapshot;
  readonly #tools: ObservableToolProvider;
  readonly #onChange: (listener: () => void) => () => void;
  /** Parsed items by value: an item is read again only when it changed. */
  readonly #parsed = new WeakMap<object, Parsed>();
  readonly #views = new Map<string, ObservableToolProvider>();

  /**
   * @param onChange the registry's change listeners: they hear of profile edits too, so a view's
   *   listeners (an MCP session's `list_changed`) do.
   */
  constructor(
    config: ConfigSnapshot,
    tools: ObservableToolProvider,
    onChange: (listener: () => void) => () => void,
  ) {
    this.#config = config;
    this.#tools = tools;
    this.#onChange = onChange;
  }

  /** The ids of the profile items, valid or not, sorted. */
  ids(): string[] {
    return [...this.#config.entries(PROFILE_CONFIG_TYPE)].map(([id]) => id).sort();
  }

  /** Each profile item that cannot be read, as a registry problem. */
  problems(): RegistryProblem[] {
    const problems: RegistryProblem[] = [];
    for (const [id, value] of this.#config.entries(PROFILE_CONFIG_TYPE)) {
      const parsed = this.#parse(id, value);
      if ('error' in parsed) {
        problems.push({
          key: `${PROFILE_CONFIG_TYPE}/${id}`,
          message: parsed.error.message,
          severity: 'error',
          code: parsed.error.code,
        });
      }
    }
    return problems;
  }

  /**
   * The profile's definition now.
   * @throws ToolbusError `not-found` (naming the profiles there are) or `invalid-config`.
   */
  definition(id: string): ToolProfile {
    const value = this.#config.get(PROFILE_CONFIG_TYPE, id);
    if (value === undefined) {
      const ids = this.ids();
      const near = closestName(id, ids);
      throw new ToolbusError(
        'not-found',
        `unknown profile '${id.slice(0, 80)}'${near ? ` (did you mean '${near}'?)` : ''}; ` +
          (ids.length > 0
            ? `profiles: ${ids.slice(0, 20).join(', ')}${ids.length > 20 ? ', …' : ''}`
            : `there are none: add one with toolbus config put profile/${id.slice(0, 80)} '{"tools": ["*"]}'`),
      );
    }
    const parsed = this.#parse(id, value);
    if ('error' in parsed) throw parsed.error;
    return parsed.profile;
  }

  /**
   * The tools of profile `id`, live: a later edit of the item or of the tools shows at once. A view of
   * an item deleted or broken later lists nothing.
   *
   * @throws ToolbusError `not-found` or `invalid-config` when the item is not there or unreadable now.
   */
  view(id: string): ObservableToolProvider {
    this.definition(id);
    let view = this.#views.get(id);
    if (view === undefined) {
      const current = (): ToolProfile | undefined => {
        const value = this.#config.get(PROFILE_CONFIG_TYPE, id);
        if (value === undefined) return undefined;
        const parsed = this.#parse(id, value);
        return 'profile' in parsed ? parsed.profile : undefined;
      };
      view = toolView(this.#tools, {
        version: current,
        accepts: (tool) => {
          const profile = current();
          return profile !== undefined && profileAccepts(profile, tool);
        },
      });
      view.onChange = (listener) => this.#onChange(() => listener());
      this.#views.set(id, view);
    }
    return view;
  }

  #parse(id: string, value: JsonValue): Parsed {
    const key = value !== null && typeof value === 'object' ? value : undefined;
    const cached = key ? this.#parsed.get(key) : undefined;
    if (cached) return cached;
    let parsed: Parsed;
    try {
      parsed = { profile: parseToolProfile(value, `config '${PROFILE_CONFIG_TYPE}/${id}'`) };
    } catch (error) {
      parsed = { error: error as ToolbusError };
    }
    if (key) this.#parsed.set(key, parsed);
    return parsed;
  }
}
