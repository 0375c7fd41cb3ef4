/**
 * @module The `text-completion` and `prompt` tool types: tools that call the registry's model, with
 * TrustGraph's semantics.
 */
import type { ChatCompletionClient, LLMMessage } from '../models/index.js';
import { SystemMessage, UserMessage } from '../models/index.js';
import type { JsonObject, JsonValue } from '../schema/index.js';
import { argumentsToJsonSchema, parseToolServiceToolDescriptor } from '../services/index.js';
import type { ToolServiceToolArgument } from '../services/index.js';
import { BaseTool, ToolError } from '../tools/index.js';
import { ToolbusError } from '../errors/index.js';
import type { Tool, ToolCallContext } from '../tools/index.js';
import type { ToolTypeContext, ToolTypeFactory } from './tool-type.js';

const VARIABLE = /\{\{\s*([A-Za-z_][A-Za-z0-9_-]*)\s*\}\}/g;

/** A tool whose call renders messages from its arguments and returns the model's text answer. */
class ModelTool extends BaseTool implements Tool {
  readonly #model: ChatCompletionClient;
  readonly #render: (args: Record<string, unknown>) => LLMMessage[];

  constructor(
    options: { name: string; description: string; args: ToolServiceToolArgument[] },
    model: ChatCompletionClient,
    render: (args: Record<string, unknown>) => LLMMessage[],
  ) {
    super({
      name: options.name,
      description: options.description,
      parameters: argumentsToJsonSchema(options.args),
    });
    this.#model = model;
    this.#render = render;
  }

  protected async run(args: Record<string, unknown>, ctx: ToolCallContext): Promise<unknown> {
    const result = await this.#model.create(this.#render(args), { signal: ctx.signal });
    if (typeof result.content !== 'string') {
      throw new ToolError(
        'tool-error',
        `tool '${this.name}': the model answered with function calls, expected text`,
        {
          toolName: this.name,
        },
      );
    }
    return result.content.trim();
  }
}

function needModel(type: string, ctx: ToolTypeContext): ChatCompletionClient {
  if (ctx.model) return ctx.model;
  // The item of a prompt tool is still an MCP prompt: only the tool needs the model.
  const still = type === 'prompt' ? ' (MCP clients still get it as a prompt)' : '';
  throw new ToolbusError(
    'invalid-config',
    `config 'tool/${ctx.key}': a '${type}' tool calls the registry's model, and none was given${still}; ` +
      `pass { model } to ToolRegistry (e.g. an OpenAIChatCompletionClient from toolbus/openai)`,
  );
}

function stringField(
  descriptor: JsonObject,
  field: string,
  ctx: Pick<ToolTypeContext, 'key'>,
  fallback?: string,
): string {
  const value = descriptor[field] ?? fallback;
  if (typeof value !== 'string' || value === '') {
    throw new ToolbusError(
      'invalid-config',
      `config 'tool/${ctx.key}': field '${field}' must be a non-empty string, got ${describe(value)}`,
    );
  }
  return value;
}

function optionalString(
  descriptor: JsonObject,
  field: string,
  ctx: Pick<ToolTypeContext, 'key'>,
): string | undefined {
  const value = descriptor[field];
  if (value === undefined) return undefined;
  if (typeof value !== 'string') {
    throw new ToolbusError(
      'invalid-config',
      `config 'tool/${ctx.key}': field '${field}' must be a string, got ${describe(value)}`,
    );
  }
  return value;
}

function describe(value: JsonValue | undefined): string {
  if (value === undefined) return 'nothing';
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  return typeof value === 'string'
    ? `'${value.length > 40 ? value.slice(0, 40) + '…' : value}'`
    : typeof value;
}

/**
 * `text-completion` (TrustGraph's `TextCompletionImpl`): one fixed argument `question`, sent to the model
 * as the user message; the tool returns the model's text. Descriptor: `{ "type": "text-completion",
 * "name", "description", "system"? }` (`name` defaults to the item key).
 */
export const textCompletionToolType: ToolTypeFactory = (descriptor, ctx) => {
  const model = needModel('text-completion', ctx);
  const name = stringField(descriptor, 'name', ctx, ctx.key);
  const description = stringField(
    descriptor,
    'description',
    ctx,
    'Ask a language model a question and get its answer.',
  );
  const system = optionalString(descriptor, 'system', ctx);
  const args: ToolServiceToolArgument[] = [
    {
      name: 'question',
      type: 'string',
      description: 'The question or instruction for the model',
      required: true,
    },
  ];
  return new ModelTool({ name, description, args }, model, (a) => [
    ...(system ? [new SystemMessage({ content: system })] : []),
    new UserMessage({ content: String(a['question'] ?? '') }),
  ]);
};

/** A `prompt` tool item, read: what the tool and the MCP prompt of the same name are made of. */
export interface PromptItem {
  name: string;
  description: string;
  arguments: ToolServiceToolArgument[];
  /** The template text, `{{name}}` placeholders and all. */
  template: string;
  /** The system message, when there is one. */
  system: string | undefined;
}

/**
 * Reads a `prompt` tool item (see {@link promptToolType}), looking up a `prompt/<id>` template through
 * `ctx.lookup`.
 *
 * @throws ToolbusError `invalid-config` naming the item and the field: a missing name or template, an
 * argument list that is not well-formed, a placeholder that is not an argument.
 */
export function parsePromptItem(
  descriptor: JsonObject,
  ctx: Pick<ToolTypeContext, 'key' | 'lookup'>,
): PromptItem {
  const owner = `config 'tool/${ctx.key}'`;
  const name = stringField(descriptor, 'name', ctx, ctx.key);
  const description = stringField(descriptor, 'description', ctx);
  // The argument list has the tool-service descriptor's shape; reuse its parser and messages.
  const { arguments: args } = parseToolServiceToolDescriptor({
    ...descriptor,
    name,
    type: 'tool-service',
    service: 'prompt',
  });
  const ref = stringField(descriptor, 'template', ctx);
  let template = ref;
  let system = optionalString(descriptor, 'system', ctx);
  if (!ref.includes('{{')) {
    const stored = ctx.lookup('prompt', ref);
    if (stored !== undefined) {
      if (typeof stored === 'string') template = stored;
      else if (
        stored &&
        typeof stored === 'object' &&
        !Array.isArray(stored) &&
        typeof stored['template'] === 'string'
      ) {
        template = stored['template'];
        if (system === undefined && typeof stored['system'] === 'string') system = stored['system'];
      } else {
        throw new ToolbusError(
          'invalid-config',
          `${owner}: config item 'prompt/${ref}' must be a string or { "template": string, "system"?: string }`,
        );
      }
    } else if (/^[A-Za-z0-9][A-Za-z0-9_.=-]*$/.test(ref) && args.length > 0) {
      throw new ToolbusError(
        'invalid-config',
        `${owner}: template '${ref}' has no {{placeholders}} and there is no config item 'prompt/${ref}'; ` +
          `write the template inline (e.g. "Tell a joke about {{${args[0]!.name}}}") or add 'prompt/${ref}'`,
      );
    }
  }
  const declared = new Set(args.map((a) => a.name));
  for (const match of template.matchAll(VARIABLE)) {
    if (!declared.has(match[1]!)) {
      throw new ToolbusError(
        'invalid-config',
        `${owner}: the template uses {{${match[1]}}}, which is not one of its arguments ` +
          `(${[...declared].map((n) => `'${n}'`).join(', ') || 'none'}); declare it in 'arguments'`,
      );
    }
  }
  return { name, description, arguments: args, template, system };
}

/**
 * `prompt` (TrustGraph's `PromptImpl`): fills a template with the model's arguments and returns the
 * model's answer. Descriptor: `{ "type": "prompt", "name", "description", "template", "system"?,
 * "arguments": [{ "name", "type", "description", "enum"? }] }`. `template` is the text itself, with
 * `{{name}}` placeholders, or the id of a `prompt/<id>` config item whose value is that text or
 * `{ "template", "system"? }`. Every placeholder must be a declared argument. A string argument is
 * inserted as is; any other value as JSON. The item is also served to MCP clients as a prompt
 * (`registry.prompts`), with or without a model.
 */
export const promptToolType: ToolTypeFactory = (descriptor, ctx) => {
  // Read first: a mistake in the item is reported as such, with or without a model.
  const item = parsePromptItem(descriptor, ctx);
  const model = needModel('prompt', ctx);
  const { name, description, arguments: args, template, system } = item;
  return new ModelTool({ name, description, args }, model, (a) => [
    ...(system ? [new SystemMessage({ content: system })] : []),
    new UserMessage({ content: renderTemplate(template, a) }),
  ]);
};

/** Replaces `{{name}}` with the argument: strings as is, other values as JSON, absent ones as ''. */
export function renderTemplate(template: string, args: Record<string, unknown>): string {
  return template.replace(VARIABLE, (_, name: string) => {
    const value = args[name];
    if (value === undefined || value === null) return '';
    return typeof value === 'string' ? value : JSON.stringify(value);
  });
}
