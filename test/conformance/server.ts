/**
 * The fixture server of the official MCP conformance suite (`@modelcontextprotocol/conformance`,
 * server mode), built from toolbus's public API only: FunctionTools (zod and raw JSON Schema), content
 * parts, `ctx.log` / `ctx.progress` / `ctx.elicit` / `ctx.sample`, a `ResourceSet` and a `PromptSet`,
 * served by toolbus's own MCP bridge behind toolbus's own gateway (so `Host`/`Origin` protection is the
 * real one). The gateway runs in its no-token mode, which it allows on loopback only: the suite sends
 * no token.
 *
 * Run from the repository root: `node --import tsx test/conformance/server.ts`. It binds 127.0.0.1 on
 * `PORT` (default: a free port), prints its MCP URL as the first line of stdout, and stops cleanly on
 * SIGTERM or SIGINT.
 */
import { z } from 'zod';
import { FunctionTool, LiveToolSet, type JsonObject, type Tool } from 'toolbus';
import { PromptSet, ResourceSet, createMcpHttpHandler } from 'toolbus/mcp';
import { createGateway } from 'toolbus/gateway';

/** A 1×1 red PNG. */
const PNG =
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==';
/** A minimal WAV file. */
const WAV = 'UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA=';

const sleep = (ms: number, signal: AbortSignal): Promise<void> =>
  new Promise((resolve, reject) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener(
      'abort',
      () => {
        clearTimeout(timer);
        reject(signal.reason);
      },
      { once: true },
    );
  });

const noArguments = z.object({});

/** An elicitation answer as the suite's tools report it. */
const answered = (prefix: string, answer: { action: string; content?: unknown }): string =>
  `${prefix}: action=${answer.action}, content=${JSON.stringify(answer.content ?? {})}`;

const tools: Tool[] = [
  new FunctionTool(() => ({ type: 'text', text: 'This is a simple text response for testing.' }), {
    name: 'test_simple_text',
    description: 'Tests simple text content response',
    parameters: noArguments,
  }),
  new FunctionTool(() => ({ type: 'image', data: PNG, mimeType: 'image/png' }), {
    name: 'test_image_content',
    description: 'Tests image content response',
    parameters: noArguments,
  }),
  new FunctionTool(() => ({ type: 'audio', data: WAV, mimeType: 'audio/wav' }), {
    name: 'test_audio_content',
    description: 'Tests audio content response',
    parameters: noArguments,
  }),
  new FunctionTool(
    () => ({
      type: 'resource',
      uri: 'test://embedded-resource',
      mimeType: 'text/plain',
      text: 'This is an embedded resource content.',
    }),
    {
      name: 'test_embedded_resource',
      description: 'Tests embedded resource content response',
      parameters: noArguments,
    },
  ),
  new FunctionTool(
    () => [
      { type: 'text', text: 'Multiple content types test:' },
      { type: 'image', data: PNG, mimeType: 'image/png' },
      {
        type: 'resource',
        uri: 'test://mixed-content-resource',
        mimeType: 'application/json',
        text: JSON.stringify({ test: 'data', value: 123 }),
      },
    ],
    {
      name: 'test_multiple_content_types',
      description: 'Tests response with multiple content types (text, image, resource)',
      parameters: noArguments,
    },
  ),
  new FunctionTool(
    async (_args, ctx) => {
      ctx.log('info', 'Tool execution started');
      await sleep(50, ctx.signal);
      ctx.log('info', 'Tool processing data');
      await sleep(50, ctx.signal);
      ctx.log('info', 'Tool execution completed');
      return 'Tool with logging executed successfully';
    },
    {
      name: 'test_tool_with_logging',
      description: 'Tests tool that emits log messages during execution',
      parameters: noArguments,
    },
  ),
  new FunctionTool(
    async (_args, ctx) => {
      for (const step of [0, 50, 100]) {
        if (step > 0) await sleep(50, ctx.signal);
        ctx.progress?.({ progress: step, total: 100, message: `Completed step ${step} of 100` });
      }
      return 'Tool with progress executed successfully';
    },
    {
      name: 'test_tool_with_progress',
      description: 'Tests tool that reports progress notifications',
      parameters: noArguments,
    },
  ),
  new FunctionTool(
    async (_args, ctx) => {
      // Outlives the server's closeStreamsAfterMs: its stream is closed and the client resumes it.
      await sleep(700, ctx.signal);
      return 'Reconnection test completed successfully. If you received this, the client properly reconnected after stream closure.';
    },
    {
      name: 'test_reconnection',
      description:
        'Tests SSE stream disconnection and client reconnection (SEP-1699): the server closes the stream mid-call and sends the result after the client reconnects.',
      parameters: noArguments,
    },
  ),
  new FunctionTool(
    () => {
      throw new Error('This tool intentionally returns an error for testing');
    },
    { name: 'test_error_handling', description: 'Tests error response handling', parameters: noArguments },
  ),
  new FunctionTool(
    async ({ prompt }, ctx) => {
      const answer = await ctx.sample({
        messages: [{ role: 'user', content: { type: 'text', text: prompt } }],
        maxTokens: 100,
      });
      const first = Array.isArray(answer.content) ? answer.content[0] : answer.content;
      return `LLM response: ${first?.type === 'text' ? first.text : `[${first?.type ?? 'no'} content]`}`;
    },
    {
      name: 'test_sampling',
      description: 'Tests server-initiated sampling (LLM completion request)',
      parameters: z.object({ prompt: z.string().describe('The prompt to send to the LLM') }),
    },
  ),
  new FunctionTool(
    async ({ message }, ctx) => {
      const answer = await ctx.elicit({
        message,
        requestedSchema: {
          type: 'object',
          properties: {
            username: { type: 'string', description: "User's response" },
            email: { type: 'string', description: "User's email address" },
          },
          required: ['username', 'email'],
        },
      });
      return answered('User response', answer);
    },
    {
      name: 'test_elicitation',
      description: 'Tests server-initiated elicitation (user input request)',
      parameters: z.object({ message: z.string().describe('The message to show the user') }),
    },
  ),
  new FunctionTool(
    async (_args, ctx) =>
      answered(
        'Elicitation completed',
        await ctx.elicit({
          message: 'Please review and update the form fields with defaults',
          requestedSchema: {
            type: 'object',
            properties: {
              name: { type: 'string', description: 'User name', default: 'John Doe' },
              age: { type: 'integer', description: 'User age', default: 30 },
              score: { type: 'number', description: 'User score', default: 95.5 },
              status: {
                type: 'string',
                description: 'User status',
                enum: ['active', 'inactive', 'pending'],
                default: 'active',
              },
              verified: { type: 'boolean', description: 'Verification status', default: true },
            },
            required: [],
          },
        }),
      ),
    {
      name: 'test_elicitation_sep1034_defaults',
      description: 'Tests elicitation with default values per SEP-1034',
      parameters: noArguments,
    },
  ),
  new FunctionTool(
    async (_args, ctx) =>
      answered(
        'Elicitation completed',
        await ctx.elicit({
          message: 'Please select options from the enum fields',
          requestedSchema: {
            type: 'object',
            properties: {
              untitledSingle: {
                type: 'string',
                description: 'Select one option',
                enum: ['option1', 'option2', 'option3'],
              },
              titledSingle: {
                type: 'string',
                description: 'Select one option with titles',
                oneOf: [
                  { const: 'value1', title: 'First Option' },
                  { const: 'value2', title: 'Second Option' },
                  { const: 'value3', title: 'Third Option' },
                ],
              },
              legacyEnum: {
                type: 'string',
                description: 'Select one option (legacy)',
                enum: ['opt1', 'opt2', 'opt3'],
                enumNames: ['Option One', 'Option Two', 'Option Three'],
              },
              untitledMulti: {
                type: 'array',
                description: 'Select multiple options',
                minItems: 1,
                maxItems: 3,
                items: { type: 'string', enum: ['option1', 'option2', 'option3'] },
              },
              titledMulti: {
                type: 'array',
                description: 'Select multiple options with titles',
                minItems: 1,
                maxItems: 3,
                items: {
                  anyOf: [
                    { const: 'value1', title: 'First Choice' },
                    { const: 'value2', title: 'Second Choice' },
                    { const: 'value3', title: 'Third Choice' },
                  ],
                },
              },
            },
            required: [],
          },
        }),
      ),
    {
      name: 'test_elicitation_sep1330_enums',
      description: 'Tests elicitation with enum schema improvements per SEP-1330',
      parameters: noArguments,
    },
  ),
  new FunctionTool(
    (args: Record<string, unknown>) => `JSON Schema 2020-12 tool called with: ${JSON.stringify(args)}`,
    {
      name: 'json_schema_2020_12_tool',
      description: 'Tool with JSON Schema 2020-12 features for conformance testing (SEP-1613)',
      // A raw JSON Schema: tools/list serves it with its $schema, $defs and additionalProperties.
      parameters: {
        $schema: 'https://json-schema.org/draft/2020-12/schema',
        type: 'object',
        $defs: {
          address: { type: 'object', properties: { street: { type: 'string' }, city: { type: 'string' } } },
        },
        properties: { name: { type: 'string' }, address: { $ref: '#/$defs/address' } },
        additionalProperties: false,
      } satisfies JsonObject,
    },
  ),
];

const resources = new ResourceSet({
  resources: [
    {
      uri: 'test://static-text',
      name: 'static-text',
      title: 'Static Text Resource',
      description: 'A static text resource for testing',
      mimeType: 'text/plain',
      text: 'This is the content of the static text resource.',
    },
    {
      uri: 'test://static-binary',
      name: 'static-binary',
      title: 'Static Binary Resource',
      description: 'A static binary resource (image) for testing',
      mimeType: 'image/png',
      blob: PNG,
    },
    {
      uri: 'test://watched-resource',
      name: 'watched-resource',
      title: 'Watched Resource',
      description: 'A resource clients may subscribe to',
      mimeType: 'text/plain',
      text: 'Watched resource content',
    },
  ],
  templates: [
    {
      uriTemplate: 'test://template/{id}/data',
      name: 'template',
      title: 'Resource Template',
      description: 'A resource template with parameter substitution',
      mimeType: 'application/json',
      read: (_uri, { id }) => JSON.stringify({ id, templateTest: true, data: `Data for ID: ${id}` }),
    },
  ],
});

const prompts = new PromptSet([
  {
    name: 'test_simple_prompt',
    title: 'Simple Test Prompt',
    description: 'A simple prompt without arguments',
    get: () => 'This is a simple prompt for testing.',
  },
  {
    name: 'test_prompt_with_arguments',
    title: 'Prompt With Arguments',
    description: 'A prompt with required arguments',
    arguments: [
      { name: 'arg1', description: 'First test argument', required: true },
      { name: 'arg2', description: 'Second test argument', required: true },
    ],
    get: ({ arg1, arg2 }) => `Prompt with arguments: arg1='${arg1}', arg2='${arg2}'`,
  },
  {
    name: 'test_prompt_with_embedded_resource',
    title: 'Prompt With Embedded Resource',
    description: 'A prompt that includes an embedded resource',
    arguments: [{ name: 'resourceUri', description: 'URI of the resource to embed', required: true }],
    get: ({ resourceUri }) => ({
      messages: [
        {
          role: 'user',
          content: {
            type: 'resource',
            uri: resourceUri!,
            mimeType: 'text/plain',
            text: 'Embedded resource content for testing.',
          },
        },
        { role: 'user', content: { type: 'text', text: 'Please process the embedded resource above.' } },
      ],
    }),
  },
  {
    name: 'test_prompt_with_image',
    title: 'Prompt With Image',
    description: 'A prompt that includes image content',
    get: () => ({
      messages: [
        { role: 'user', content: { type: 'image', data: PNG, mimeType: 'image/png' } },
        { role: 'user', content: { type: 'text', text: 'Please analyze the image above.' } },
      ],
    }),
  },
]);

const portText = process.env['PORT'] ?? '0';
const port = Number(portText);
if (!/^\d{1,5}$/.test(portText) || port > 65535) {
  process.stderr.write(`conformance server: PORT must be a port number (0-65535), got '${portText}'\n`);
  process.exit(2);
}

const live = new LiveToolSet(tools);
const mcp = createMcpHttpHandler(live, {
  name: 'toolbus-conformance',
  version: '1.0.0',
  resources,
  prompts,
  // The suite opens a session per scenario and leaves it open (its client never sends DELETE): room for
  // a few runs from one address, each session forgotten after a minute of silence.
  maxSessionsPerClient: 500,
  sessionIdleMs: 60_000,
  // SEP-1699: resumable streams; a call still running after 300 ms (test_reconnection) has its stream
  // closed, and the client resumes it with Last-Event-ID to get the result.
  resumability: { retryMs: 200, closeStreamsAfterMs: 300 },
  onError: (error) => process.stderr.write(`conformance server: ${error.message}\n`),
});
const gateway = createGateway({ tools: live, noAuth: true, mcpHandler: mcp });
const url = await gateway.listen({ host: '127.0.0.1', port });
process.stdout.write(`${url}/mcp\n`);

let stopping = false;
const stop = (signal: NodeJS.Signals): void => {
  if (stopping) return;
  stopping = true;
  process.stderr.write(`conformance server: ${signal}, stopping\n`);
  void (async () => {
    await gateway.close({ graceMs: 1_000 });
    await mcp.close();
    process.exit(0);
  })();
};
process.once('SIGTERM', stop);
process.once('SIGINT', stop);
