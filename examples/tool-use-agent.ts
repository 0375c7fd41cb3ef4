/**
 * @module The Saptiva-Agents guide's "agent equipped with tools", ported line for line. The model is the
 * scripted client, so it runs offline; swap in `OpenAIChatCompletionClient` (`toolbus/openai`) for a real
 * model.
 *
 * ```sh
 * node --import tsx examples/tool-use-agent.ts
 * ```
 */
import { pathToFileURL } from 'node:url';
import { z } from 'zod';
import {
  AssistantMessage,
  FunctionExecutionResult,
  FunctionExecutionResultMessage,
  FunctionTool,
  SystemMessage,
  UserMessage,
} from '../src/index.js';
import type {
  CancellationToken,
  ChatCompletionClient,
  FunctionCall,
  LLMMessage,
  Tool,
  ToolSchema,
} from '../src/index.js';
import { AgentId, RoutedAgent, SingleThreadedAgentRuntime } from '../src/runtime/index.js';
import type { MessageContext } from '../src/runtime/index.js';
import { ScriptedChatCompletionClient } from '../src/testing/index.js';

// Returns a random stock price, for demonstration.
async function getStockPrice(_args: { ticker: string; date: string }): Promise<number> {
  return 10 + Math.random() * 190;
}

class Message {
  constructor(public content: string) {}
}

class ToolUseAgent extends RoutedAgent {
  readonly #systemMessages: LLMMessage[];
  readonly #modelClient: ChatCompletionClient;
  readonly #tools: readonly (Tool | ToolSchema)[];

  constructor(modelClient: ChatCompletionClient, toolSchema: readonly Tool[]) {
    super('An agent with tools');
    this.#systemMessages = [new SystemMessage({ content: 'You are a helpful AI assistant.' })];
    this.#modelClient = modelClient;
    this.#tools = toolSchema;
    this.messageHandler(Message, (message, ctx) => this.handleUserMessage(message, ctx));
  }

  async handleUserMessage(message: Message, ctx: MessageContext): Promise<Message> {
    // Create a session of messages.
    const session: LLMMessage[] = [
      ...this.#systemMessages,
      new UserMessage({ content: message.content, source: 'user' }),
    ];

    // Run the chat completion with the tools.
    let createResult = await this.#modelClient.create(session, {
      tools: this.#tools,
      signal: ctx.cancellationToken.signal,
    });

    // If there are no tool calls, return the result.
    if (typeof createResult.content === 'string') {
      return new Message(createResult.content);
    }
    const calls: FunctionCall[] = createResult.content;

    // Add the first model result to the session.
    session.push(new AssistantMessage({ content: calls, source: 'assistant' }));

    // Execute the tool calls.
    const results = await Promise.all(
      calls.map((call) => this.#executeToolCall(call, ctx.cancellationToken)),
    );

    // Add the function execution results to the session.
    session.push(new FunctionExecutionResultMessage({ content: results }));

    // Run the chat completion again to reflect on the history and the results.
    createResult = await this.#modelClient.create(session, { signal: ctx.cancellationToken.signal });
    if (typeof createResult.content !== 'string') throw new Error('expected a text reflection');

    // Return the result as a message.
    return new Message(createResult.content);
  }

  async #executeToolCall(
    call: FunctionCall,
    cancellationToken: CancellationToken,
  ): Promise<FunctionExecutionResult> {
    // Find the tool by name.
    const tool = this.#tools.find((tool) => tool.name === call.name);
    if (!tool || !('runJson' in tool)) throw new Error(`tool '${call.name}' not found`);

    // Run the tool and capture the result.
    try {
      const args: unknown = JSON.parse(call.arguments);
      const result = await tool.runJson(args, cancellationToken);
      return new FunctionExecutionResult({
        callId: call.id,
        content: tool.returnValueAsString(result),
        isError: false,
        name: tool.name,
      });
    } catch (e) {
      return new FunctionExecutionResult({
        callId: call.id,
        content: e instanceof Error ? e.message : String(e),
        isError: true,
        name: tool.name,
      });
    }
  }
}

/**
 * The scripted stand-in for the guide's model: it asks for `get_stock_price`, then reflects on the
 * tool's result the way the guide's output reads.
 */
export function createModelClient(): ScriptedChatCompletionClient {
  return new ScriptedChatCompletionClient([
    [{ id: 'call_1', name: 'get_stock_price', arguments: '{"ticker":"NVDA","date":"2025/04/01"}' }],
    (messages) => {
      const last = messages[messages.length - 1];
      const price = last instanceof FunctionExecutionResultMessage ? Number(last.content[0]?.content) : NaN;
      return `The stock price of NVIDIA on 2025/04/01, was approximately $${price.toFixed(2)}.`;
    },
  ]);
}

/** Runs the guide's example and returns the agent's reply. */
export async function main(modelClient: ChatCompletionClient = createModelClient()): Promise<string> {
  // Create a runtime.
  const runtime = new SingleThreadedAgentRuntime();
  // Create the tools.
  const tools: Tool[] = [
    new FunctionTool(getStockPrice, {
      name: 'get_stock_price',
      description: 'Get the stock price.',
      parameters: z.object({ ticker: z.string(), date: z.string().describe('Date in YYYY/MM/DD') }),
    }),
  ];
  // Register the agents.
  await ToolUseAgent.register(runtime, 'tool_use_agent', () => new ToolUseAgent(modelClient, tools));

  // Start processing messages.
  runtime.start();
  // Send a direct message to the tool agent.
  const toolUseAgent = new AgentId('tool_use_agent', 'default');
  const response = await runtime.sendMessage<Message>(
    new Message('What is the stock price of NVIDIA on 2025/04/01?'),
    toolUseAgent,
  );
  // Stop processing messages.
  await runtime.stop();
  await modelClient.close();
  return response.content;
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  console.log(await main());
}
