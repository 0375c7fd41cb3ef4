/**
 * @module The registry's prompts: every `prompt` tool item is also an MCP prompt of the same name, its
 * arguments the item's, its template filled with the client's arguments (`registry.prompts`). It needs
 * no model: the client's model answers. A bad item is reported once, by the tool builder, and left out.
 */
import type { JsonObject, JsonValue } from '../schema/index.js';
import {
  completeFrom,
  type PromptGetOptions,
  type PromptInfo,
  type PromptMessage,
  type PromptProvider,
  type PromptResult,
} from '../tools/index.js';
import { parsePromptItem, renderTemplate, type PromptItem } from './model-tools.js';
import type { ConfigSnapshot } from './tool-set-plan.js';

function isObject(value: JsonValue | undefined): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** A prompt item as a prompt's listing. */
function infoOf(item: PromptItem): PromptInfo {
  return {
    name: item.name,
    description: item.description,
    arguments: item.arguments.map((a) => ({
      name: a.name,
      ...(a.description !== '' ? { description: a.description } : {}),
      required: a.required,
    })),
  };
}

/**
 * The `prompt` tool items of the config as a {@link PromptProvider}. {@link update} reads them again
 * (the registry calls it after each change) and tells the listeners when the list changed.
 */
export class ConfigPrompts implements PromptProvider {
  #items = new Map<string, PromptItem>();
  /** The listing as JSON, to tell a change of the list from a change of a template alone. */
  #listing = '[]';
  readonly #listeners = new Set<() => void>();

  /** Reads the `prompt` tool items of `config` again; tells the listeners when the list changed. */
  update(config: ConfigSnapshot): void {
    const items = new Map<string, PromptItem>();
    const lookup = (type: string, key: string): JsonValue | undefined => config.get(type, key);
    const entries = [...config.entries('tool')].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    for (const [key, value] of entries) {
      if (!isObject(value) || value['type'] !== 'prompt') continue;
      let item: PromptItem;
      try {
        item = parsePromptItem(value, { key, lookup });
      } catch {
        continue; // the tool builder reports it under tool/<key>
      }
      // Two items of one name: the first wins, as it does for the tool (the other is reported there).
      if (!items.has(item.name)) items.set(item.name, item);
    }
    this.#items = items;
    const listing = JSON.stringify([...items.values()].map(infoOf));
    if (listing === this.#listing) return;
    this.#listing = listing;
    for (const listener of [...this.#listeners]) {
      try {
        listener();
      } catch {
        // A listener's failure is its own.
      }
    }
  }

  list(): readonly PromptInfo[] {
    return [...this.#items.values()].map(infoOf);
  }

  /**
   * The item's template filled with `args` as one user message, after its system text (MCP prompts have
   * no system role, so it comes first as a user message).
   */
  async get(
    name: string,
    args: Readonly<Record<string, string>>,
    _options: PromptGetOptions,
  ): Promise<PromptResult | undefined> {
    const item = this.#items.get(name);
    if (item === undefined) return undefined;
    const messages: PromptMessage[] = [];
    if (item.system) messages.push({ role: 'user', content: { type: 'text', text: item.system } });
    messages.push({ role: 'user', content: { type: 'text', text: renderTemplate(item.template, args) } });
    return { description: item.description, messages };
  }

  /** The argument's `enum` values that start with `value`. */
  complete(name: string, argument: string, value: string): readonly string[] {
    const values = this.#items.get(name)?.arguments.find((a) => a.name === argument)?.enum;
    return values === undefined ? [] : completeFrom(values.map(String), value);
  }

  onChange(listener: () => void): () => void {
    this.#listeners.add(listener);
    return () => void this.#listeners.delete(listener);
  }
}
