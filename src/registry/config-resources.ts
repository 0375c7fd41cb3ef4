/**
 * @module The registry's resources: `resource/<id>` config items as a `ResourceProvider`
 * (`registry.resources`), which the MCP bridge serves. An item is static (its `text` or base64 `blob`
 * in the item), or read through a tool service: a `uri-template` whose variables become the arguments
 * of a call of that `service` (with the item's values for the service's config params, as a tool item
 * gives them), or a fixed `uri` read the same way with no arguments. Each item is checked on its own: a
 * bad one is reported under its key and left out, the others stay served.
 */
import { createHash } from 'node:crypto';
import { ToolbusError, isToolbusError } from '../errors/index.js';
import { setOwn, type JsonObject, type JsonValue } from '../schema/index.js';
import {
  TOOL_DESCRIPTOR_KEYS,
  describeConfigValue as describe,
  type ToolServiceClientCache,
} from '../services/index.js';
import {
  ToolSet,
  base64Bytes,
  completeFrom,
  isBase64,
  parseUriTemplate,
  type ResourceChange,
  type ResourceContents,
  type ResourceInfo,
  type ResourceProvider,
  type ResourceReadOptions,
  type ResourceTemplateInfo,
  type Tool,
  type ToolResult,
  type ToolSetOptions,
  type UriTemplate,
} from '../tools/index.js';
import { toolServiceToolType } from './builtin-tool-types.js';
import type { RegistryProblem } from './tool-type.js';
import type { Lookup } from './tool-set-plan.js';

/** The config type of resource items. */
export const RESOURCE_CONFIG_TYPE = 'resource';

/** The fields of a resource item; any other key of a service-backed item is a config value. */
const RESOURCE_ITEM_FIELDS: readonly string[] = [
  'uri',
  'uri-template',
  'name',
  'title',
  'description',
  'mime-type',
  'text',
  'blob',
  'service',
  'variables',
];

/** One variable of a template item (`variables[]`). */
export interface ResourceItemVariable {
  name: string;
  description?: string;
  /** The values it takes: checked on read, offered as completions. */
  enum?: string[];
}

/** A `resource/<id>` item, read. */
export interface ResourceItem {
  /** The item's key. */
  key: string;
  /** `uri`, for a fixed resource. */
  uri?: string;
  /** `uri-template`, parsed, for a family of resources read through a service. */
  template?: UriTemplate;
  name: string;
  title?: string;
  description?: string;
  /** `mime-type`. */
  mimeType?: string;
  text?: string;
  blob?: string;
  /** The id of the tool service reads go to. */
  service?: string;
  variables: ResourceItemVariable[];
  /** Every other key with its value: the config values for the service. */
  values: Record<string, JsonValue>;
}

/** The fields of a static item. */
const STATIC_FIELDS = ['uri', 'name', 'title', 'description', 'mime-type', 'text', 'blob'];
const SCHEME = /^[A-Za-z][A-Za-z0-9+.-]*:/;

function isObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * Reads a `resource/<key>` item: `{ "uri" | "uri-template", "name"?, "title"?, "description"?,
 * "mime-type"?, "text" | "blob" | "service", "variables"?, ...config values }`.
 *
 * @throws ToolbusError `invalid-config` naming the item, the field, what was wrong and what was expected.
 * @example
 * ```ts
 * parseResourceItem('readme', { uri: 'docs://readme', 'mime-type': 'text/markdown', text: '# Hi' });
 * ```
 */
export function parseResourceItem(key: string, value: unknown): ResourceItem {
  const owner = `config 'resource/${key}'`;
  const fail = (message: string): never => {
    throw new ToolbusError('invalid-config', `${owner}: ${message}`);
  };
  if (!isObject(value)) {
    return fail(
      `must be a JSON object such as {"uri": "docs://readme", "mime-type": "text/plain", "text": "…"}, got ${describe(value)}`,
    );
  }
  const optionalString = (field: string): string | undefined => {
    const v = value[field];
    if (v === undefined) return undefined;
    if (typeof v !== 'string') fail(`field '${field}' must be a string, got ${describe(v)}`);
    return v as string;
  };
  const uri = optionalString('uri');
  const templateText = optionalString('uri-template');
  if ((uri === undefined) === (templateText === undefined)) {
    fail(
      "give exactly one of 'uri' (one resource, e.g. \"docs://readme\") and 'uri-template' (a family read " +
        'through a service, e.g. "weather://city/{name}")',
    );
  }
  if (uri !== undefined && !SCHEME.test(uri)) {
    fail(`field 'uri' must be a URI with a scheme, such as "docs://readme", got ${describe(uri)}`);
  }
  let template: UriTemplate | undefined;
  if (templateText !== undefined) {
    try {
      template = parseUriTemplate(templateText);
    } catch (error) {
      fail(`field 'uri-template': ${(error as Error).message}`);
    }
    if (!SCHEME.test(templateText))
      fail(`field 'uri-template' must start with a scheme, such as "weather://"`);
    if (template!.variables.length === 0) {
      fail(`field 'uri-template' has no {variables}; use 'uri' for one fixed resource`);
    }
  }
  const name = optionalString('name') ?? key;
  if (name === '') fail("field 'name' must not be empty");
  const text = optionalString('text');
  const blob = optionalString('blob');
  const service = optionalString('service');
  const given = [text, blob, service].filter((v) => v !== undefined).length;
  if (template !== undefined && service === undefined) {
    fail("a 'uri-template' item is read through a tool service: give 'service' (a tool-service id)");
  }
  if (given !== 1) {
    fail("give exactly one of 'text', 'blob' (base64) and 'service' (a tool-service id to read it through)");
  }
  if (service === '') fail("field 'service' must name a tool service");
  if (blob !== undefined && !isBase64(blob)) {
    fail("field 'blob' must be base64 (A-Z, a-z, 0-9, +, /, padded with =)");
  }
  const variables = parseVariables(value['variables'], template, fail);
  const values: Record<string, JsonValue> = {};
  for (const [field, v] of Object.entries(value)) {
    if (RESOURCE_ITEM_FIELDS.includes(field)) continue;
    if (service === undefined || TOOL_DESCRIPTOR_KEYS.includes(field)) {
      fail(
        service === undefined
          ? `unknown field '${field}'; a static resource takes ${STATIC_FIELDS.join(', ')}`
          : `unknown field '${field}'; a resource read through a service takes ${RESOURCE_ITEM_FIELDS.filter((f) => f !== 'text' && f !== 'blob').join(', ')} and values for the service's config params`,
      );
    }
    setOwn(values, field, v);
  }
  const item: ResourceItem = { key, name, variables, values };
  if (uri !== undefined) item.uri = uri;
  if (template !== undefined) item.template = template;
  const title = optionalString('title');
  if (title !== undefined) item.title = title;
  const description = optionalString('description');
  if (description !== undefined) item.description = description;
  const mimeType = optionalString('mime-type');
  if (mimeType !== undefined) item.mimeType = mimeType;
  if (text !== undefined) item.text = text;
  if (blob !== undefined) item.blob = blob;
  if (service !== undefined) item.service = service;
  return item;
}

function parseVariables(
  raw: JsonValue | undefined,
  template: UriTemplate | undefined,
  fail: (message: string) => never,
): ResourceItemVariable[] {
  if (raw === undefined) return [];
  if (template === undefined) fail("field 'variables' is for a 'uri-template' item");
  if (!Array.isArray(raw)) fail(`field 'variables' must be an array, got ${describe(raw)}`);
  const seen = new Set<string>();
  return (raw as JsonValue[]).map((entry, i) => {
    if (!isObject(entry))
      fail(`'variables[${i}]' must be {"name", "description"?, "enum"?}, got ${describe(entry)}`);
    const v = entry as JsonObject;
    const name = v['name'];
    if (typeof name !== 'string' || !template!.variables.includes(name)) {
      fail(
        `'variables[${i}].name' must be a variable of the template (${template!.variables.join(', ')}), got ${describe(name)}`,
      );
    }
    if (seen.has(name as string)) fail(`variable '${String(name)}' is listed twice`);
    seen.add(name as string);
    const out: ResourceItemVariable = { name: name as string };
    const description = v['description'];
    if (description !== undefined) {
      if (typeof description !== 'string') fail(`variable '${String(name)}': 'description' must be a string`);
      out.description = description as string;
    }
    const values = v['enum'];
    if (values !== undefined) {
      if (!Array.isArray(values) || values.length === 0 || !values.every((x) => typeof x === 'string')) {
        fail(
          `variable '${String(name)}': 'enum' must be a non-empty array of strings, got ${describe(values)}`,
        );
      }
      out.enum = [...(values as string[])];
    }
    return out;
  });
}

/** How the tool-service factory's messages start: the hidden tool, or the `tool/<key>` item it would be. */
const OWNER_PREFIX = /^(?:tool '[^']*'|config 'tool\/[^']*')/;

/** A key that is a tool name's worth as it is (a config key starts with a letter or digit). */
const PLAIN_KEY = /^[A-Za-z0-9][A-Za-z0-9_-]{0,54}$/;

/**
 * The name of the hidden tool a service-backed item reads through: `resource_<key>`, or for a key that
 * is no tool name's worth (a `.` or `=`, over 55 characters) a hash of it first (`resource_-<hash>-…`),
 * so that no two items share a name in the set their reads run in.
 */
function readerName(key: string): string {
  if (PLAIN_KEY.test(key)) return `resource_${key}`;
  const hash = createHash('sha256').update(key).digest('hex').slice(0, 16);
  return `resource_-${hash}-${key.replace(/[^A-Za-z0-9_-]/g, '_')}`.slice(0, 64);
}

/** The result of a read through the service, as contents of `uri`: its parts, else its (capped) text. */
function contentsOf(uri: string, mimeType: string | undefined, result: ToolResult): ResourceContents[] {
  const mime = mimeType !== undefined ? { mimeType } : {};
  if (result.parts === undefined) return [{ uri, ...mime, text: result.content }];
  return result.parts.map((part): ResourceContents => {
    switch (part.type) {
      case 'text':
        return { uri, ...mime, text: part.text };
      case 'image':
      case 'audio':
        return { uri, mimeType: part.mimeType, blob: part.data };
      default: {
        const own = part.mimeType !== undefined ? { mimeType: part.mimeType } : mime;
        return part.blob !== undefined
          ? { uri: part.uri, ...own, blob: part.blob }
          : { uri: part.uri, ...own, text: part.text ?? '' };
      }
    }
  });
}

/** One served item: its listing and how to read it. */
interface ServedItem {
  readonly item: ResourceItem;
  /** The item's value and its service's, as JSON: what decides whether it must be built again. */
  readonly signature: string;
  /** The hidden tool a service-backed item reads through. */
  readonly reader: Tool | undefined;
  /** Aborted when the item goes: releases the reader's tool-service client. */
  readonly controller: AbortController;
  readonly warnings: readonly string[];
}

/** What {@link ConfigResources} needs of the registry. */
export interface ConfigResourcesOptions {
  /** The registry's tool-service clients; undefined without a bus. */
  clients: () => ToolServiceClientCache | undefined;
  /**
   * Options of the set reads through a service run in as tool calls (the registry's `toolSetOptions`):
   * its hooks (audit, metrics) see them, and its timeout, output cap and concurrency apply. @default {}
   */
  toolSetOptions?: ToolSetOptions;
}

/**
 * The `resource/<id>` items of the config as a {@link ResourceProvider}. {@link update} reads them
 * again (the registry calls it after each change), builds only the items whose value or service
 * changed, and tells the listeners what changed: the list, and the URIs of fixed items whose contents
 * did.
 */
export class ConfigResources implements ResourceProvider {
  /** Builds the hidden tool a service-backed item reads through. */
  readonly #readerType: ReturnType<typeof toolServiceToolType>;
  readonly #toolSetOptions: ToolSetOptions;
  /** The readers of the served items, the set their reads run in (one cap over all of them). */
  #readers: ToolSet;
  #served = new Map<string, ServedItem>();
  /** The served items with a fixed URI, by URI; those with a template, in key order (the one to match). */
  #byUri = new Map<string, ServedItem>();
  #templated: ServedItem[] = [];
  #problems: RegistryProblem[] = [];
  #listing = '';
  readonly #listeners = new Set<(change: ResourceChange) => void>();

  constructor(options: ConfigResourcesOptions) {
    this.#readerType = toolServiceToolType(options.clients);
    this.#toolSetOptions = options.toolSetOptions ?? {};
    this.#readers = new ToolSet([], this.#toolSetOptions);
  }

  /** Reads the items again from `entries`, looking services up with `lookup`; tells the listeners. */
  update(entries: Iterable<readonly [string, JsonValue]>, lookup: Lookup): void {
    const before = this.#served;
    const served = new Map<string, ServedItem>();
    const problems: RegistryProblem[] = [];
    const byUri = new Map<string, string>();
    const sorted = [...entries].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    for (const [key, value] of sorted) {
      const source = `${RESOURCE_CONFIG_TYPE}/${key}`;
      try {
        const item = parseResourceItem(key, value);
        const address = item.uri ?? item.template!.template;
        const other = byUri.get(address);
        if (other !== undefined) {
          throw new ToolbusError(
            'invalid-config',
            `config '${source}': ${item.uri !== undefined ? 'uri' : 'uri-template'} '${address}' is already served by config '${other}'; give each resource its own`,
          );
        }
        const service = item.service === undefined ? undefined : lookup('tool-service', item.service);
        const signature = JSON.stringify([value, service ?? null]);
        const previous = before.get(key);
        const entry =
          previous !== undefined && previous.signature === signature
            ? previous
            : this.#build(item, signature, lookup);
        served.set(key, entry);
        byUri.set(address, source);
        for (const message of entry.warnings) problems.push({ key: source, message, severity: 'warning' });
      } catch (error) {
        const message = error instanceof Error ? error.message : String(error);
        problems.push({
          key: source,
          message,
          severity: 'error',
          ...(isToolbusError(error) ? { code: error.code } : {}),
        });
      }
    }
    const updated: string[] = [];
    for (const [key, old] of before) {
      const now = served.get(key);
      if (now !== old) old.controller.abort(new Error(`resource item '${key}' changed or went`));
      // The contents of a fixed resource changed (or it went): its subscribers hear so.
      if (old.item.uri !== undefined && now !== old) updated.push(old.item.uri);
    }
    this.#served = served;
    this.#byUri = new Map();
    this.#templated = [];
    const readers: Tool[] = [];
    for (const entry of served.values()) {
      if (entry.item.uri !== undefined) this.#byUri.set(entry.item.uri, entry);
      else this.#templated.push(entry);
      if (entry.reader !== undefined) readers.push(entry.reader);
    }
    // A new set only when a reader came or went; reads in flight finish on the one they started on.
    const current = this.#readers.list();
    if (readers.length !== current.length || readers.some((reader, i) => reader !== current[i])) {
      this.#readers = new ToolSet(readers, this.#toolSetOptions);
    }
    this.#problems = problems;
    const listing = JSON.stringify([this.list(), this.templates()]);
    const listChanged = listing !== this.#listing;
    this.#listing = listing;
    if (listChanged || updated.length > 0) this.#emit({ listChanged, updated });
  }

  /** What is wrong with the items now (errors: the item is not served; warnings: it is). */
  problems(): RegistryProblem[] {
    return this.#problems.map((p) => ({ ...p }));
  }

  list(): readonly ResourceInfo[] {
    const out: ResourceInfo[] = [];
    for (const { item } of this.#served.values()) {
      if (item.uri === undefined) continue;
      const info: ResourceInfo = { uri: item.uri, name: item.name };
      if (item.title !== undefined) info.title = item.title;
      if (item.description !== undefined) info.description = item.description;
      if (item.mimeType !== undefined) info.mimeType = item.mimeType;
      if (item.text !== undefined) info.size = Buffer.byteLength(item.text);
      else if (item.blob !== undefined) info.size = base64Bytes(item.blob);
      out.push(info);
    }
    return out;
  }

  templates(): readonly ResourceTemplateInfo[] {
    const out: ResourceTemplateInfo[] = [];
    for (const { item } of this.#served.values()) {
      if (item.template === undefined) continue;
      const info: ResourceTemplateInfo = { uriTemplate: item.template.template, name: item.name };
      if (item.title !== undefined) info.title = item.title;
      if (item.description !== undefined) info.description = item.description;
      if (item.mimeType !== undefined) info.mimeType = item.mimeType;
      out.push(info);
    }
    return out;
  }

  resolve(uri: string): string | undefined {
    return this.#find(uri)?.entry.item.name;
  }

  async read(uri: string, options: ResourceReadOptions): Promise<readonly ResourceContents[] | undefined> {
    const found = this.#find(uri);
    if (found === undefined) return undefined;
    const { item, reader } = found.entry;
    const mime = item.mimeType !== undefined ? { mimeType: item.mimeType } : {};
    if (item.text !== undefined) return [{ uri, ...mime, text: item.text }];
    if (item.blob !== undefined) return [{ uri, ...mime, blob: item.blob }];
    // A call of the registry's kind: its hooks, deadline, concurrency slot and output cap.
    const result = await this.#readers.call(reader!.name, found.variables, {
      signal: options.signal,
      ...(options.user !== undefined ? { user: options.user } : {}),
      ...(options.caller !== undefined ? { caller: options.caller } : {}),
    });
    if (result.isError) {
      // The hidden reader's name means nothing to the client: say which resource, keep the reason.
      throw new ToolbusError(
        result.error?.code ?? 'tool-error',
        `resource '${uri}' (config 'resource/${item.key}', read through tool service '${item.service}'): ${result.content.replace(/^tool '[^']*'(?::)?\s*/, '')}`,
        { cause: result.error },
      );
    }
    return contentsOf(uri, item.mimeType, result);
  }

  /**
   * The item a read of `uri` is served by: the one with that URI, else the first template (in key order)
   * that matches it. `read` and `resolve` both use it, so the bridge's filter sees what a read serves.
   */
  #find(uri: string): { entry: ServedItem; variables: Record<string, string> } | undefined {
    const fixed = this.#byUri.get(uri);
    if (fixed !== undefined) return { entry: fixed, variables: {} };
    for (const entry of this.#templated) {
      const variables = entry.item.template!.match(uri);
      if (variables !== undefined) return { entry, variables };
    }
    return undefined;
  }

  /** A template variable's `enum` values that start with `value`. */
  complete(uriTemplate: string, variable: string, value: string): readonly string[] {
    for (const { item } of this.#served.values()) {
      if (item.template?.template !== uriTemplate) continue;
      const values = item.variables.find((v) => v.name === variable)?.enum;
      return values === undefined ? [] : completeFrom(values, value);
    }
    return [];
  }

  onChange(listener: (change: ResourceChange) => void): () => void {
    this.#listeners.add(listener);
    return () => void this.#listeners.delete(listener);
  }

  /** Stops every reader (their tool-service clients are released). */
  close(): void {
    for (const entry of this.#served.values()) entry.controller.abort(new Error('the registry closed'));
  }

  #build(item: ResourceItem, signature: string, lookup: Lookup): ServedItem {
    const controller = new AbortController();
    if (item.service === undefined) return { item, signature, reader: undefined, controller, warnings: [] };
    const where = `config 'resource/${item.key}'`;
    // The factory's messages name the hidden tool (or its would-be 'tool/<key>' item): name the item.
    const own = (message: string): string =>
      OWNER_PREFIX.test(message) ? message.replace(OWNER_PREFIX, where) : `${where}: ${message}`;
    const warnings: string[] = [];
    try {
      // A hidden tool-service tool, built as a `tool` item of type tool-service is: the service's config
      // params, deadline, cancellation and replies as for any tool; the template's variables are its
      // arguments.
      const reader = this.#readerType(
        {
          ...item.values,
          type: 'tool-service',
          name: readerName(item.key),
          description: `Reads resource ${item.uri ?? item.template!.template}`,
          service: item.service,
          arguments:
            item.template !== undefined
              ? item.template.variables.map((name) => {
                  const variable = item.variables.find((v) => v.name === name);
                  return {
                    name,
                    type: 'string',
                    description: variable?.description ?? '',
                    ...(variable?.enum !== undefined ? { enum: variable.enum } : {}),
                  };
                })
              : [],
        },
        {
          key: item.key,
          bus: undefined,
          model: undefined,
          lookup,
          warn: (message) => void warnings.push(own(message)),
          signal: controller.signal,
        },
      );
      return { item, signature, reader, controller, warnings };
    } catch (error) {
      controller.abort();
      if (isToolbusError(error)) throw new ToolbusError(error.code, own(error.message), { cause: error });
      throw error;
    }
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
