/**
 * @module `toolbus ask`: ask the agent a question through a running `toolbus up`.
 */
import type { CliCommand, CliIO } from '../command.js';
import { ExitCode, UsageError } from '../command.js';
import { GATEWAY_FLAGS, GATEWAY_FLAGS_HELP, parseCommandArgs } from '../args.js';
import { openBus } from '../connect.js';
import { AgentClient } from '../../agents/index.js';
import { isToolbusError } from '../../errors/index.js';
import { GatewayRequestError, gatewayFetch, gatewayTarget, readServerSentEvents } from '../gateway-client.js';
import { startSpinner } from '../spinner.js';
import { NATS_SECURITY_FLAGS, NATS_SECURITY_HELP, NatsSecurity, displayNatsUrl } from '../nats-security.js';

const help = `Usage: toolbus ask "question" [--stream] [--user NAME] [--url URL | --nats URL]

Ask the agent a question. The agent decides which tools to call and answers in text.
It needs a model: start 'toolbus up' with one of these set in its environment:
  OPENAI_API_KEY (and optionally OPENAI_BASE_URL, TOOLBUS_MODEL) for OpenAI or any
                 OpenAI-compatible server (Ollama, vLLM, llama.cpp: set OPENAI_BASE_URL)
  SAPTIVA_API_KEY (and optionally TOOLBUS_MODEL) for Saptiva

Options:
  --stream           print the agent's thoughts and tool observations as they arrive
  --user NAME        the end user the agent acts for (passed to tool services; default: anonymous)
${GATEWAY_FLAGS_HELP}
  --nats URL         ask the agent service on a NATS bus directly (started by 'toolbus up --nats URL')
  -h, --help         show this help

${NATS_SECURITY_HELP}

Examples:
  toolbus ask "Tell me a joke about cats"
  toolbus ask "Tell me a dad joke about dogs" --stream --user alice
`;

/**
 * Asks through the gateway's event stream, also without --stream (then only the answer or the error is
 * printed): a stream with the gateway's keep-alive comments survives long runs (slow local models) that
 * a plain JSON request loses to fetch's 300 s header timeout.
 */
async function askStreaming(
  io: CliIO,
  values: { url?: string; token?: string },
  body: object,
  printEvents: boolean,
): Promise<number> {
  const response = await gatewayFetch(gatewayTarget(values, io), '/api/v1/agent', {
    method: 'POST',
    body,
    accept: 'text/event-stream',
    signal: io.signal,
  });
  if (!response.body)
    throw new GatewayRequestError('the gateway sent an empty stream', response.status, 'internal');
  const spinner = startSpinner(io);
  let code: number = ExitCode.Ok;
  try {
    for await (const { event, data } of readServerSentEvents(response.body)) {
      const payload = JSON.parse(data) as { content?: string };
      const content = payload.content ?? '';
      spinner.clear();
      if (event === 'thought' && printEvents) io.stdout.write(`thought: ${content}\n`);
      else if (event === 'observation' && printEvents) io.stdout.write(`observation: ${content}\n`);
      else if (event === 'answer') io.stdout.write(`${content}\n`);
      else if (event === 'error') {
        io.stderr.write(printEvents ? `error: ${content}\n` : `toolbus ask: ${content}\n`);
        code = ExitCode.Error;
      }
    }
  } finally {
    spinner.stop();
  }
  return code;
}

/** Asks the agent service on a NATS bus directly, printing events as they arrive. */
async function askOverBus(
  io: CliIO,
  nats: string,
  natsSecurity: NatsSecurity,
  question: string,
  user: string | undefined,
  stream: boolean,
): Promise<number> {
  const bus = await openBus({ nats, natsSecurity }, io);
  const client = new AgentClient(bus);
  const spinner = startSpinner(io);
  try {
    const answer = await client.ask(question, {
      user: user ?? 'anonymous',
      signal: io.signal,
      onEvent: (event) => {
        if (!stream || event.type === 'answer') return;
        spinner.clear();
        io.stdout.write(`${event.type}: ${event.content}\n`);
      },
    });
    spinner.stop();
    io.stdout.write(`${answer}\n`);
    return ExitCode.Ok;
  } catch (error) {
    spinner.stop();
    if (isToolbusError(error) && error.code === 'unavailable') {
      io.stderr.write(
        `toolbus ask: no agent is listening on ${displayNatsUrl(nats)}. Start one with a model configured, e.g. ` +
          `OPENAI_API_KEY=sk-... toolbus up --nats ${displayNatsUrl(nats)}\n`,
      );
      return ExitCode.Error;
    }
    throw error;
  } finally {
    await client.close();
    await bus.close();
  }
}

/** The `ask` command. */
export const command: CliCommand = {
  name: 'ask',
  summary: 'ask the agent a question (needs a model)',
  help,
  async run(argv, io) {
    const { values, positionals } = parseCommandArgs(argv, {
      stream: { type: 'boolean' },
      user: { type: 'string' },
      ...GATEWAY_FLAGS,
      nats: { type: 'string' },
      ...NATS_SECURITY_FLAGS,
    });
    const question = positionals.join(' ').trim();
    if (!question) throw new UsageError('write the question, e.g. toolbus ask "Tell me a joke about cats"');
    if (values.nats !== undefined) {
      const natsSecurity = NatsSecurity.fromFlags(values, io);
      return askOverBus(io, values.nats, natsSecurity, question, values.user, values.stream ?? false);
    }
    const body = { question, ...(values.user ? { user: values.user } : {}) };
    try {
      return await askStreaming(io, values, body, values.stream ?? false);
    } catch (error) {
      if (error instanceof GatewayRequestError) {
        io.stderr.write(`toolbus ask: ${error.message}\n`);
        return ExitCode.Error;
      }
      throw error;
    }
  },
};
