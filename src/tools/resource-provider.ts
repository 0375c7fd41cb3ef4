/**
 * @module Resources: content a client reads by URI beside calling tools (MCP's resources), and the
 * provider contract the MCP bridge serves them from. `ResourceSet` is the in-memory provider for code;
 * the registry provides the config-backed one (`resource/<id>` items).
 */
import { ToolbusError } from '../errors/index.js';
import { base64Bytes, isBase64 } from './content-parts.js';
import { completeWith, type CompletionSource } from './completion.js';
import { parseUriTemplate, type UriTemplate } from './uri-template.js';

/** A resource a client can list and read. */
export interface ResourceInfo {
  /** Its URI (`docs://readme`, `file:///notes.txt`); unique in its provider. */
  uri: string;
  /** A short name (MCP requires one). */
  name: string;
  /** A name for people. @default none */
  title?: string;
  /** What it holds. @default none */
  description?: string;
  /** `text/plain`, `image/png`, … @default none */
  mimeType?: string;
  /** Its size in bytes, when known. @default none */
  size?: number;
}

/** A family of resources whose URIs match a URI template (`weather://city/{name}`). */
export interface ResourceTemplateInfo {
  /** An RFC 6570 level-1 template (`{name}` expressions; see `parseUriTemplate`). */
  uriTemplate: string;
  name: string;
  title?: string;
  description?: string;
  mimeType?: string;
}

/** What a read returns: the contents of a URI, as text or as base64 bytes (`blob`). */
export interface ResourceContents {
  uri: string;
  mimeType?: string;
  /** The contents as text; or */
  text?: string;
  /** the contents' bytes, base64-encoded. */
  blob?: string;
}

/** What a read knows of its caller. */
export interface ResourceReadOptions {
  /** Aborted when the client cancels the read. Always present. */
  signal: AbortSignal;
  /** The end user the read is for, when the caller says. @default none */
  user?: string;
  /** Who reads (`mcp:…`), for logs and messages. @default none */
  caller?: string;
}

/** What changed in a provider's resources. */
export interface ResourceChange {
  /** The list of resources or templates changed (one came, went, or was renamed). */
  listChanged: boolean;
  /** URIs whose contents changed (clients subscribed to them hear `notifications/resources/updated`). */
  updated: readonly string[];
}

/**
 * Where the MCP bridge finds resources (`createMcpServer(tools, { resources })`). `read` resolves with
 * the contents, or undefined for a URI the provider does not have (MCP's -32002 "Resource not found");
 * a failure rejects, with a `ToolbusError` whose message may be shown to the client.
 */
export interface ResourceProvider {
  list(): readonly ResourceInfo[];
  /** The templates, when the provider has any. @default none */
  templates?(): readonly ResourceTemplateInfo[];
  read(uri: string, options: ResourceReadOptions): Promise<readonly ResourceContents[] | undefined>;
  /**
   * The name of the entry a read of `uri` is served by: the resource of that URI, else the first
   * template that matches it (the entry `read` uses), or undefined for none. The MCP bridge's
   * `resourceFilter` decides by this name, so a hidden template is never read through a shown one that
   * matches the same URI. @default the bridge applies that rule to `list()`, then `templates()` in order
   */
  resolve?(uri: string): string | undefined;
  /**
   * Values a template variable may take that start with `value` (the bridge answers at most
   * `MAX_COMPLETION_VALUES` of them). `context` holds the variables already filled. @default none
   */
  complete?(
    uriTemplate: string,
    variable: string,
    value: string,
    context: Readonly<Record<string, string>>,
  ): readonly string[] | Promise<readonly string[]>;
  /** Registers a change listener; returns its removal. @default no changes */
  onChange?(listener: (change: ResourceChange) => void): () => void;
}

/** What a resource's `read` may return: text, contents, several contents, or undefined (not found). */
export type ResourceValue = string | ResourceContents | readonly ResourceContents[] | undefined;

/** One resource of a {@link ResourceSet}: fixed `text` or `blob`, or a `read` function. */
export interface ResourceEntry extends ResourceInfo {
  /** Its contents as text. */
  text?: string;
  /** Its contents' bytes, base64-encoded. */
  blob?: string;
  /** Reads it when asked (text, or contents), for contents that change. */
  read?(options: ResourceReadOptions): ResourceValue | Promise<ResourceValue>;
}

/** One template of a {@link ResourceSet}. */
export interface ResourceTemplateEntry extends ResourceTemplateInfo {
  /** Reads the resource at `uri`, whose variables are `variables`; undefined: there is none. */
  read(
    uri: string,
    variables: Readonly<Record<string, string>>,
    options: ResourceReadOptions,
  ): ResourceValue | Promise<ResourceValue>;
  /** Completion of each variable: a list of values, or a function. @default none */
  complete?: Readonly<Record<string, CompletionSource>>;
}

/** Options of {@link ResourceSet}. */
export interface ResourceSetOptions {
  /** @default [] */
  resources?: readonly ResourceEntry[];
  /** @default [] */
  templates?: readonly ResourceTemplateEntry[];
}

function checkInfo(
  what: string,
  entry: { name?: unknown; title?: unknown; description?: unknown; mimeType?: unknown },
): void {
  if (typeof entry.name !== 'string' || entry.name === '') {
    throw new ToolbusError('usage', `${what}: 'name' must be a non-empty string`);
  }
  for (const field of ['title', 'description', 'mimeType'] as const) {
    if (entry[field] !== undefined && typeof entry[field] !== 'string') {
      throw new ToolbusError('usage', `${what}: '${field}' must be a string`);
    }
  }
}

function checkEntry(entry: ResourceEntry): ResourceEntry {
  const uri = (entry as { uri?: unknown }).uri;
  if (typeof uri !== 'string' || uri === '') {
    throw new ToolbusError('usage', "ResourceSet: a resource's 'uri' must be a non-empty string");
  }
  const what = `ResourceSet: resource '${uri}'`;
  checkInfo(what, entry);
  const given = [entry.text !== undefined, entry.blob !== undefined, entry.read !== undefined].filter(
    Boolean,
  );
  if (given.length !== 1) {
    throw new ToolbusError('usage', `${what}: give exactly one of 'text', 'blob' (base64) or 'read'`);
  }
  if (entry.text !== undefined && typeof entry.text !== 'string') {
    throw new ToolbusError('usage', `${what}: 'text' must be a string`);
  }
  if (entry.blob !== undefined && (typeof entry.blob !== 'string' || !isBase64(entry.blob))) {
    throw new ToolbusError('usage', `${what}: 'blob' must be base64 (A-Z, a-z, 0-9, +, /, padded with =)`);
  }
  if (entry.read !== undefined && typeof entry.read !== 'function') {
    throw new ToolbusError('usage', `${what}: 'read' must be a function`);
  }
  return { ...entry };
}

/** A resource's listing: its info without contents or functions. */
function infoOf(entry: ResourceEntry): ResourceInfo {
  const info: ResourceInfo = { uri: entry.uri, name: entry.name };
  if (entry.title !== undefined) info.title = entry.title;
  if (entry.description !== undefined) info.description = entry.description;
  if (entry.mimeType !== undefined) info.mimeType = entry.mimeType;
  const size =
    entry.size ??
    (entry.text !== undefined
      ? Buffer.byteLength(entry.text)
      : entry.blob !== undefined
        ? base64Bytes(entry.blob)
        : undefined);
  if (size !== undefined) info.size = size;
  return info;
}

function templateInfoOf(entry: ResourceTemplateEntry): ResourceTemplateInfo {
  const info: ResourceTemplateInfo = { uriTemplate: entry.uriTemplate, name: entry.name };
  if (entry.title !== undefined) info.title = entry.title;
  if (entry.description !== undefined) info.description = entry.description;
  if (entry.mimeType !== undefined) info.mimeType = entry.mimeType;
  return info;
}

/**
 * The contents a read returns for `value`: text becomes one text contents of `uri` (with `mimeType`);
 * contents are kept, each with a URI.
 *
 * @throws ToolbusError `tool-error` for a value that is none of those.
 */
export function toResourceContents(
  uri: string,
  mimeType: string | undefined,
  value: ResourceValue,
): ResourceContents[] | undefined {
  if (value === undefined) return undefined;
  if (typeof value === 'string')
    return [mimeType === undefined ? { uri, text: value } : { uri, mimeType, text: value }];
  const list = Array.isArray(value) ? (value as readonly ResourceContents[]) : [value as ResourceContents];
  return list.map((contents) => {
    if (
      typeof contents !== 'object' ||
      contents === null ||
      (typeof contents.text !== 'string') === (typeof contents.blob !== 'string')
    ) {
      throw new ToolbusError(
        'tool-error',
        `resource '${uri}': a read must return text, or contents with exactly one of 'text' or 'blob'`,
      );
    }
    const out: ResourceContents = { uri: typeof contents.uri === 'string' ? contents.uri : uri };
    const mime = contents.mimeType ?? mimeType;
    if (mime !== undefined) out.mimeType = mime;
    if (typeof contents.text === 'string') out.text = contents.text;
    else out.blob = contents.blob!;
    return out;
  });
}

/**
 * An in-memory {@link ResourceProvider}: fixed resources, resources read by a function, and templates.
 * `set`, `delete` and `updated` change it and tell the listeners (so the MCP bridge sends
 * `notifications/resources/list_changed` and `notifications/resources/updated`).
 *
 * @example
 * ```ts
 * const resources = new ResourceSet({
 *   resources: [{ uri: 'docs://readme', name: 'readme', mimeType: 'text/markdown', text: '# Hello' }],
 *   templates: [{
 *     uriTemplate: 'users://{id}/profile', name: 'profile', mimeType: 'application/json',
 *     read: (uri, { id }) => JSON.stringify({ id }),
 *     complete: { id: ['1', '2', '3'] },
 *   }],
 * });
 * createMcpServer(tools, { resources });
 * ```
 */
export class ResourceSet implements ResourceProvider {
  readonly #resources = new Map<string, ResourceEntry>();
  readonly #templates = new Map<string, { entry: ResourceTemplateEntry; parsed: UriTemplate }>();
  readonly #listeners = new Set<(change: ResourceChange) => void>();

  /** @throws ToolbusError `usage` for an entry that is not well-formed (which, and why). */
  constructor(options: ResourceSetOptions = {}) {
    for (const entry of options.resources ?? []) this.#resources.set(entry.uri, checkEntry(entry));
    for (const entry of options.templates ?? []) this.#addTemplate(entry);
  }

  list(): readonly ResourceInfo[] {
    return [...this.#resources.values()].map(infoOf);
  }

  templates(): readonly ResourceTemplateInfo[] {
    return [...this.#templates.values()].map(({ entry }) => templateInfoOf(entry));
  }

  async read(uri: string, options: ResourceReadOptions): Promise<readonly ResourceContents[] | undefined> {
    const entry = this.#resources.get(uri);
    if (entry !== undefined) {
      if (entry.text !== undefined) return toResourceContents(uri, entry.mimeType, entry.text);
      if (entry.blob !== undefined) {
        return [
          { uri, ...(entry.mimeType !== undefined ? { mimeType: entry.mimeType } : {}), blob: entry.blob },
        ];
      }
      return toResourceContents(uri, entry.mimeType, await entry.read!(options));
    }
    const found = this.#matchTemplate(uri);
    if (found === undefined) return undefined;
    const { template, variables } = found;
    return toResourceContents(uri, template.mimeType, await template.read(uri, variables, options));
  }

  resolve(uri: string): string | undefined {
    return this.#resources.get(uri)?.name ?? this.#matchTemplate(uri)?.template.name;
  }

  async complete(
    uriTemplate: string,
    variable: string,
    value: string,
    context: Readonly<Record<string, string>>,
  ): Promise<readonly string[]> {
    const source = this.#templates.get(uriTemplate)?.entry.complete;
    return completeWith(
      source !== undefined && Object.hasOwn(source, variable) ? source[variable] : undefined,
      value,
      context,
    );
  }

  onChange(listener: (change: ResourceChange) => void): () => void {
    this.#listeners.add(listener);
    return () => void this.#listeners.delete(listener);
  }

  /** Adds a resource, or replaces the one with its URI (its subscribers hear that it was updated). */
  set(entry: ResourceEntry): void {
    const checked = checkEntry(entry);
    const before = this.#resources.get(checked.uri);
    this.#resources.set(checked.uri, checked);
    const listed = before === undefined || JSON.stringify(infoOf(before)) !== JSON.stringify(infoOf(checked));
    this.#emit({ listChanged: listed, updated: before === undefined ? [] : [checked.uri] });
  }

  /** Removes the resource at `uri`; returns whether there was one. */
  delete(uri: string): boolean {
    const had = this.#resources.delete(uri);
    if (had) this.#emit({ listChanged: true, updated: [uri] });
    return had;
  }

  /** Says that the contents of `uri` changed (for a resource read by a function, or a template's). */
  updated(uri: string): void {
    this.#emit({ listChanged: false, updated: [uri] });
  }

  /** Adds a template, or replaces the one with its `uriTemplate`. */
  setTemplate(entry: ResourceTemplateEntry): void {
    this.#addTemplate(entry);
    this.#emit({ listChanged: true, updated: [] });
  }

  /** Removes a template; returns whether there was one. */
  deleteTemplate(uriTemplate: string): boolean {
    const had = this.#templates.delete(uriTemplate);
    if (had) this.#emit({ listChanged: true, updated: [] });
    return had;
  }

  /** The first template matching `uri`, in the order they were added: the one `read` and `resolve` use. */
  #matchTemplate(
    uri: string,
  ): { template: ResourceTemplateEntry; variables: Record<string, string> } | undefined {
    for (const { entry, parsed } of this.#templates.values()) {
      const variables = parsed.match(uri);
      if (variables !== undefined) return { template: entry, variables };
    }
    return undefined;
  }

  #addTemplate(entry: ResourceTemplateEntry): void {
    const what = `ResourceSet: template '${String(entry.uriTemplate)}'`;
    checkInfo(what, entry);
    if (typeof entry.read !== 'function')
      throw new ToolbusError('usage', `${what}: 'read' must be a function`);
    const parsed = parseUriTemplate(entry.uriTemplate);
    for (const variable of Object.keys(entry.complete ?? {})) {
      if (!parsed.variables.includes(variable)) {
        throw new ToolbusError(
          'usage',
          `${what}: 'complete' names '${variable}', which is not one of its variables (${parsed.variables.join(', ') || 'none'})`,
        );
      }
    }
    this.#templates.set(entry.uriTemplate, { entry: { ...entry }, parsed });
  }

  #emit(change: ResourceChange): void {
    for (const listener of [...this.#listeners]) {
      try {
        listener(change);
      } catch {
        // A listener's failure is its own.
      }
    }
  }
}
