/**
 * @module Prompts: message templates a client fills in and hands to its model (MCP's prompts), and the
 * provider contract the MCP bridge serves them from. `PromptSet` is the in-memory provider for code;
 * the registry serves its `prompt` tool items as prompts too.
 */
import { ToolbusError } from '../errors/index.js';
import { completeWith, type CompletionSource } from './completion.js';
import { contentParts, type ContentPart } from './content-parts.js';

/** One argument of a prompt. Arguments are strings. */
export interface PromptArgumentInfo {
  name: string;
  description?: string;
  /** @default false */
  required?: boolean;
}

/** A prompt a client can list and get. */
export interface PromptInfo {
  /** Unique in its provider. */
  name: string;
  title?: string;
  description?: string;
  /** @default none */
  arguments?: readonly PromptArgumentInfo[];
}

/** One message of a filled-in prompt: text, an image, a sound or an embedded resource. */
export interface PromptMessage {
  role: 'user' | 'assistant';
  content: ContentPart;
}

/** A filled-in prompt. */
export interface PromptResult {
  description?: string;
  messages: PromptMessage[];
}

/** What a `get` knows of its caller. */
export interface PromptGetOptions {
  /** Aborted when the client cancels. Always present. */
  signal: AbortSignal;
}

/**
 * Where the MCP bridge finds prompts (`createMcpServer(tools, { prompts })`). The bridge checks that
 * every required argument is there before `get` runs (a missing one is -32602 naming it); `get`
 * resolves undefined for a name the provider does not have, and rejects with a `ToolbusError` whose
 * message may be shown to the client (`invalid-arguments` for a bad value: -32602).
 */
export interface PromptProvider {
  list(): readonly PromptInfo[];
  get(
    name: string,
    args: Readonly<Record<string, string>>,
    options: PromptGetOptions,
  ): Promise<PromptResult | undefined>;
  /**
   * Values argument `argument` of prompt `name` may take that start with `value` (the bridge answers at
   * most `MAX_COMPLETION_VALUES`). `context` holds the arguments already filled. @default none
   */
  complete?(
    name: string,
    argument: string,
    value: string,
    context: Readonly<Record<string, string>>,
  ): readonly string[] | Promise<readonly string[]>;
  /** Registers a change listener (the list changed); returns its removal. @default no changes */
  onChange?(listener: () => void): () => void;
}

/** What a prompt's `get` may return: text (one user message), or a result. */
export type PromptValue = string | PromptResult;

/** One prompt of a {@link PromptSet}. */
export interface PromptEntry extends PromptInfo {
  get(args: Readonly<Record<string, string>>, options: PromptGetOptions): PromptValue | Promise<PromptValue>;
  /** Completion of each argument: a list of values, or a function. @default none */
  complete?: Readonly<Record<string, CompletionSource>>;
}

/** The first required argument of `prompt` that `args` lacks, if any. */
export function missingPromptArgument(
  prompt: PromptInfo,
  args: Readonly<Record<string, string>>,
): string | undefined {
  return prompt.arguments?.find((a) => a.required === true && typeof args[a.name] !== 'string')?.name;
}

/**
 * A prompt's result for `value`: text as one user message; a result's messages checked (each a role and
 * one content part).
 *
 * @throws ToolbusError `tool-error` for a value that is neither.
 */
export function toPromptResult(name: string, value: PromptValue): PromptResult {
  if (typeof value === 'string')
    return { messages: [{ role: 'user', content: { type: 'text', text: value } }] };
  if (typeof value !== 'object' || value === null || !Array.isArray(value.messages)) {
    throw new ToolbusError('tool-error', `prompt '${name}': get must return text or { messages: [...] }`);
  }
  const messages = value.messages.map((message, i): PromptMessage => {
    const role = (message as { role?: unknown }).role;
    const parts = contentParts(`prompt '${name}'`, (message as { content?: unknown }).content);
    if ((role !== 'user' && role !== 'assistant') || parts?.length !== 1) {
      throw new ToolbusError(
        'tool-error',
        `prompt '${name}': message ${i} must be { role: 'user' | 'assistant', content: one part (text, image, audio or resource) }`,
      );
    }
    return { role, content: parts[0]! };
  });
  return value.description === undefined ? { messages } : { description: value.description, messages };
}

function checkEntry(entry: PromptEntry): PromptEntry {
  const name = (entry as { name?: unknown }).name;
  if (typeof name !== 'string' || name === '') {
    throw new ToolbusError('usage', "PromptSet: a prompt's 'name' must be a non-empty string");
  }
  if (typeof entry.get !== 'function') {
    throw new ToolbusError('usage', `PromptSet: prompt '${name}': 'get' must be a function`);
  }
  const names = (entry.arguments ?? []).map((a) => a.name);
  for (const argument of Object.keys(entry.complete ?? {})) {
    if (!names.includes(argument)) {
      throw new ToolbusError(
        'usage',
        `PromptSet: prompt '${name}': 'complete' names '${argument}', which is not one of its arguments (${names.join(', ') || 'none'})`,
      );
    }
  }
  return { ...entry };
}

function infoOf(entry: PromptEntry): PromptInfo {
  const info: PromptInfo = { name: entry.name };
  if (entry.title !== undefined) info.title = entry.title;
  if (entry.description !== undefined) info.description = entry.description;
  if (entry.arguments !== undefined) info.arguments = entry.arguments.map((a) => ({ ...a }));
  return info;
}

/**
 * An in-memory {@link PromptProvider}. `set` and `delete` change it and tell the listeners (so the MCP
 * bridge sends `notifications/prompts/list_changed`).
 *
 * @example
 * ```ts
 * const prompts = new PromptSet([{
 *   name: 'review', description: 'Review code',
 *   arguments: [{ name: 'language', required: true }],
 *   complete: { language: ['go', 'python', 'typescript'] },
 *   get: ({ language }) => `Review this ${language} code.`,
 * }]);
 * createMcpServer(tools, { prompts });
 * ```
 */
export class PromptSet implements PromptProvider {
  readonly #prompts = new Map<string, PromptEntry>();
  readonly #listeners = new Set<() => void>();

  /** @throws ToolbusError `usage` for an entry that is not well-formed. */
  constructor(prompts: readonly PromptEntry[] = []) {
    for (const entry of prompts) this.#prompts.set(entry.name, checkEntry(entry));
  }

  list(): readonly PromptInfo[] {
    return [...this.#prompts.values()].map(infoOf);
  }

  async get(
    name: string,
    args: Readonly<Record<string, string>>,
    options: PromptGetOptions,
  ): Promise<PromptResult | undefined> {
    const entry = this.#prompts.get(name);
    if (entry === undefined) return undefined;
    const missing = missingPromptArgument(entry, args);
    if (missing !== undefined) {
      throw new ToolbusError('invalid-arguments', `prompt '${name}': argument '${missing}' is required`);
    }
    return toPromptResult(name, await entry.get(args, options));
  }

  async complete(
    name: string,
    argument: string,
    value: string,
    context: Readonly<Record<string, string>>,
  ): Promise<readonly string[]> {
    const source = this.#prompts.get(name)?.complete;
    return completeWith(
      source !== undefined && Object.hasOwn(source, argument) ? source[argument] : undefined,
      value,
      context,
    );
  }

  onChange(listener: () => void): () => void {
    this.#listeners.add(listener);
    return () => void this.#listeners.delete(listener);
  }

  /** Adds a prompt, or replaces the one of its name. */
  set(entry: PromptEntry): void {
    this.#prompts.set(entry.name, checkEntry(entry));
    this.#emit();
  }

  /** Removes a prompt; returns whether there was one. */
  delete(name: string): boolean {
    const had = this.#prompts.delete(name);
    if (had) this.#emit();
    return had;
  }

  #emit(): void {
    for (const listener of [...this.#listeners]) {
      try {
        listener();
      } catch {
        // A listener's failure is its own.
      }
    }
  }
}
