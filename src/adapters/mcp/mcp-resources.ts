/**
 * @module Resources, prompts and completion served by the MCP bridge from toolbus providers
 * (`ResourceProvider`, `PromptProvider`): `resources/list`, `resources/templates/list`,
 * `resources/read`, `resources/subscribe` and `unsubscribe` (with `notifications/resources/updated`
 * and `list_changed`), `prompts/list` and `prompts/get` (with `list_changed`), and
 * `completion/complete` for prompt arguments and resource-template variables.
 */
import {
  ProtocolError,
  ProtocolErrorCode,
  type GetPromptResult,
  type Prompt,
  type Resource,
  type ResourceTemplateType,
  type ReadResourceResult,
} from '@modelcontextprotocol/server';
import { isToolbusError } from '../../errors/index.js';
import {
  MAX_COMPLETION_VALUES,
  missingPromptArgument,
  parseUriTemplate,
  type PromptInfo,
  type PromptProvider,
  type ResourceContents,
  type ResourceInfo,
  type ResourceProvider,
  type ResourceTemplateInfo,
} from '../../tools/index.js';
import type { McpBridgeServer } from './mcp-tasks.js';
import { partToContentBlock } from './mcp-result.js';

/** The most resources one session (or stdio connection) may subscribe to. */
export const MAX_RESOURCE_SUBSCRIPTIONS = 1000;

/** How one server serves resources and prompts. */
export interface McpContentServing {
  resources?: ResourceProvider | undefined;
  prompts?: PromptProvider | undefined;
  /** Which prompts this server shows (a caller's tool policy); the others are unknown to it. */
  promptFilter?: ((name: string) => boolean) | undefined;
  /**
   * Which resources and templates this server shows, by name (a caller's tool policy); the others are
   * unknown to it, and so is a URI none of the shown ones has.
   */
  resourceFilter?: ((name: string) => boolean) | undefined;
  /** Who reads (`ToolCallOptions.caller` style), passed to the resource provider. */
  caller: string;
  /** The end user reads are for, when known. */
  user?: string | undefined;
  /** Send `list_changed` and `resources/updated` notifications when the providers change. */
  followChanges: boolean;
}

function quote(text: string): string {
  const line = text.replace(/[\r\n]+/g, ' ');
  return `'${line.length > 120 ? `${line.slice(0, 120)}…` : line}'`;
}

/**
 * A provider's failure as a protocol error: a toolbus error keeps its message (written for the caller;
 * `invalid-arguments` is -32602), anything else says only that it failed, since its message may hold
 * internals.
 */
function providerError(what: string, error: unknown): ProtocolError {
  if (error instanceof ProtocolError) return error;
  if (isToolbusError(error)) {
    const code =
      error.code === 'invalid-arguments' ? ProtocolErrorCode.InvalidParams : ProtocolErrorCode.InternalError;
    return new ProtocolError(code, error.message);
  }
  return new ProtocolError(ProtocolErrorCode.InternalError, `${what} failed`);
}

function toMcpResource(info: ResourceInfo): Resource {
  const out: Resource = { uri: info.uri, name: info.name };
  if (info.title !== undefined) out.title = info.title;
  if (info.description !== undefined) out.description = info.description;
  if (info.mimeType !== undefined) out.mimeType = info.mimeType;
  if (info.size !== undefined) out.size = info.size;
  return out;
}

function toMcpTemplate(info: ResourceTemplateInfo): ResourceTemplateType {
  const out: ResourceTemplateType = { uriTemplate: info.uriTemplate, name: info.name };
  if (info.title !== undefined) out.title = info.title;
  if (info.description !== undefined) out.description = info.description;
  if (info.mimeType !== undefined) out.mimeType = info.mimeType;
  return out;
}

function toMcpContents(contents: ResourceContents): ReadResourceResult['contents'][number] {
  const mime = contents.mimeType !== undefined ? { mimeType: contents.mimeType } : {};
  return contents.blob !== undefined
    ? { uri: contents.uri, ...mime, blob: contents.blob }
    : { uri: contents.uri, ...mime, text: contents.text ?? '' };
}

function toMcpPrompt(info: PromptInfo): Prompt {
  const out: Prompt = { name: info.name };
  if (info.title !== undefined) out.title = info.title;
  if (info.description !== undefined) out.description = info.description;
  if (info.arguments !== undefined) {
    out.arguments = info.arguments.map((a) => ({
      name: a.name,
      ...(a.description !== undefined ? { description: a.description } : {}),
      ...(a.required !== undefined ? { required: a.required } : {}),
    }));
  }
  return out;
}

/**
 * The name of the entry a read of `uri` is served by (see `ResourceProvider.resolve`): the provider's
 * own answer, else the same rule applied to its listing (the resource of that URI, else the first
 * template that matches it, hidden or not). Undefined for a URI it lists nothing for.
 */
function servedBy(resources: ResourceProvider, uri: string): string | undefined {
  if (resources.resolve !== undefined) return resources.resolve(uri);
  const fixed = resources.list().find((r) => r.uri === uri);
  if (fixed !== undefined) return fixed.name;
  for (const template of resources.templates?.() ?? []) {
    try {
      if (parseUriTemplate(template.uriTemplate).match(uri) !== undefined) return template.name;
    } catch {
      // A provider's malformed template matches nothing.
    }
  }
  return undefined;
}

/** Registers the resources handlers (see the module) on `server`, before it connects. */
function serveResources(
  server: McpBridgeServer,
  resources: ResourceProvider,
  serving: McpContentServing,
): void {
  server.registerCapabilities({ resources: { subscribe: true, listChanged: true } });
  const subscriptions = new Set<string>();
  const filter = serving.resourceFilter;
  const shown = <T extends { name: string }>(items: readonly T[]): readonly T[] =>
    filter === undefined ? items : items.filter((item) => filter(item.name));
  // Decided by the entry a read serves, not by any shown one that matches: with overlapping templates a
  // shown one must not open the URI a hidden one serves. With a filter, a URI of no listed entry is
  // hidden too (a provider may serve more than it lists). The read follows in the same tick.
  const hidden = (uri: string): boolean => {
    if (filter === undefined) return false;
    const name = servedBy(resources, uri);
    return name === undefined || !filter(name);
  };
  server.setRequestHandler('resources/list', () => ({
    resources: shown(resources.list()).map(toMcpResource),
  }));
  server.setRequestHandler('resources/templates/list', () => ({
    resourceTemplates: shown(resources.templates?.() ?? []).map(toMcpTemplate),
  }));
  server.setRequestHandler('resources/read', async (request, ctx) => {
    const uri = request.params.uri;
    // A resource the caller may not see is one it cannot tell from one that does not exist.
    if (hidden(uri)) throw server.resourceNotFound(ctx.mcpReq.id, uri);
    let contents: readonly ResourceContents[] | undefined;
    try {
      contents = await resources.read(uri, {
        signal: ctx.mcpReq.signal,
        caller: serving.caller,
        ...(serving.user !== undefined ? { user: serving.user } : {}),
      });
    } catch (error) {
      throw providerError(`reading resource ${quote(uri)}`, error);
    }
    if (contents === undefined) throw server.resourceNotFound(ctx.mcpReq.id, uri);
    return { contents: contents.map(toMcpContents) };
  });
  server.setRequestHandler('resources/subscribe', (request, ctx) => {
    const uri = request.params.uri;
    if (hidden(uri)) throw server.resourceNotFound(ctx.mcpReq.id, uri);
    if (!subscriptions.has(uri) && subscriptions.size >= MAX_RESOURCE_SUBSCRIPTIONS) {
      throw new ProtocolError(
        ProtocolErrorCode.InvalidParams,
        `this session already follows ${MAX_RESOURCE_SUBSCRIPTIONS} resources, the most allowed; unsubscribe from one first`,
      );
    }
    subscriptions.add(uri);
    return {};
  });
  server.setRequestHandler('resources/unsubscribe', (request) => {
    subscriptions.delete(request.params.uri);
    return {};
  });
  if (serving.followChanges && resources.onChange) {
    const off = resources.onChange((change) => {
      if (change.listChanged) server.sendResourceListChanged().catch(() => undefined);
      for (const uri of change.updated) {
        if (subscriptions.has(uri)) server.sendResourceUpdated({ uri }).catch(() => undefined);
      }
    });
    server.whenClosed(off);
  }
}

/** Registers the prompts handlers (see the module) on `server`, before it connects. */
function servePrompts(server: McpBridgeServer, prompts: PromptProvider, serving: McpContentServing): void {
  server.registerCapabilities({ prompts: { listChanged: true } });
  const filter = serving.promptFilter;
  const visible = (): PromptInfo[] =>
    filter === undefined ? [...prompts.list()] : prompts.list().filter((p) => filter(p.name));
  server.setRequestHandler('prompts/list', () => ({ prompts: visible().map(toMcpPrompt) }));
  server.setRequestHandler('prompts/get', async (request, ctx): Promise<GetPromptResult> => {
    const { name } = request.params;
    const args = request.params.arguments ?? {};
    const all = visible();
    const info = all.find((p) => p.name === name);
    if (info === undefined) {
      const names = all.slice(0, 20).map((p) => `'${p.name}'`);
      throw new ProtocolError(
        ProtocolErrorCode.InvalidParams,
        `unknown prompt ${quote(name)}; ${names.length > 0 ? `available prompts: ${names.join(', ')}${all.length > 20 ? ', …' : ''}` : 'no prompts are available'}`,
      );
    }
    const missing = missingPromptArgument(info, args);
    if (missing !== undefined) {
      throw new ProtocolError(
        ProtocolErrorCode.InvalidParams,
        `prompt ${quote(name)}: argument '${missing}' is required`,
      );
    }
    let result;
    try {
      result = await prompts.get(name, args, { signal: ctx.mcpReq.signal });
    } catch (error) {
      throw providerError(`getting prompt ${quote(name)}`, error);
    }
    if (result === undefined) {
      throw new ProtocolError(ProtocolErrorCode.InvalidParams, `unknown prompt ${quote(name)}`);
    }
    return {
      ...(result.description !== undefined ? { description: result.description } : {}),
      messages: result.messages.map((m) => ({ role: m.role, content: partToContentBlock(m.content) })),
    };
  });
  if (serving.followChanges && prompts.onChange) {
    const off = prompts.onChange(() => server.sendPromptListChanged().catch(() => undefined));
    server.whenClosed(off);
  }
}

/** Answers `completion/complete` for prompt arguments and resource-template variables. */
function serveCompletion(server: McpBridgeServer, serving: McpContentServing): void {
  server.registerCapabilities({ completions: {} });
  const { prompts, resources, promptFilter, resourceFilter } = serving;
  server.setRequestHandler('completion/complete', async (request) => {
    const { ref, argument } = request.params;
    const context = request.params.context?.arguments ?? {};
    let values: readonly string[] = [];
    try {
      if (ref.type === 'ref/prompt') {
        const known =
          prompts?.complete !== undefined && (promptFilter === undefined || promptFilter(ref.name));
        if (known) values = await prompts!.complete!(ref.name, argument.name, argument.value, context);
      } else if (ref.type === 'ref/resource' && resources?.complete !== undefined) {
        const known =
          resourceFilter === undefined ||
          (resources.templates?.() ?? []).some((t) => t.uriTemplate === ref.uri && resourceFilter(t.name));
        if (known) values = await resources.complete(ref.uri, argument.name, argument.value, context);
      }
    } catch (error) {
      throw providerError('completion', error);
    }
    const strings = values.filter((v): v is string => typeof v === 'string');
    return {
      completion: {
        values: strings.slice(0, MAX_COMPLETION_VALUES),
        total: strings.length,
        hasMore: strings.length > MAX_COMPLETION_VALUES,
      },
    };
  });
}

/**
 * Serves `serving.resources` and `serving.prompts` on `server` (before it connects), and completion
 * when there is either. Declares the capabilities: `resources` (`subscribe`, `listChanged`),
 * `prompts` (`listChanged`), `completions`.
 */
export function serveMcpContent(server: McpBridgeServer, serving: McpContentServing): void {
  if (serving.resources !== undefined) serveResources(server, serving.resources, serving);
  if (serving.prompts !== undefined) servePrompts(server, serving.prompts, serving);
  if (serving.resources !== undefined || serving.prompts !== undefined) serveCompletion(server, serving);
}
