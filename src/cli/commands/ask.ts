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
import { writeApprovalNeeded } from './approvals.js';
import { NATS_SECURITY_FLAGS, NATS_SECURITY_HELP, NatsSecurity, displayNatsUrl } from '../nats-security.js';
import { CONFIG_NAME_PATTERN } from '../../config/index.js';
import type { ToolProgress } from '../../tools/index.js';

const help = `Usage: toolbus ask "question" [--stream] [--user NAME] [--profile ID] [--url URL | --nats URL]
       toolbus ask --attach RUN_ID [--stream] [--url URL]

Ask the agent a question. The agent decides which tools to call and answers in text.
It needs a model: start 'toolbus up' with one of these set in its environment:
  OPENAI_API_KEY (and optionally OPENAI_BASE_URL, TOOLBUS_MODEL) for OpenAI or any
                 OpenAI-compatible server (Ollama, vLLM, llama.cpp: set OPENAI_BASE_URL)
  SAPTIVA_API_KEY (and optionally TOOLBUS_MODEL) for Saptiva

When the agent calls a tool that needs a person's approval, the run pauses and ask prints the
approval's ID and how to decide it (toolbus approvals approve ID, or deny ID); the run goes on after
the decision. If ask ends before the run does, follow the run again with --attach RUN_ID.

Options:
  --stream           print the agent's thoughts, tool progress and observations as they arrive
  --user NAME        the end user the agent acts for (passed to tool services; default: anonymous)
  --profile ID       offer the agent only the tools of the profile profile/ID
  --attach RUN_ID    follow a run that is already going (e.g. paused for an approval) until it ends
${GATEWAY_FLAGS_HELP}
  --nats URL         ask the agent service on a NATS bus directly (started by 'toolbus up --nats URL')
  -h, --help         show this help

${NATS_SECURITY_HELP}

Examples:
  toolbus ask "Tell me a joke about cats"
  toolbus ask "Tell me a dad joke about dogs" --stream --user alice
  toolbus ask "What is the weather in Paris?" --profile weather
  toolbus ask --attach run-0123456789abcdef --stream
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
  // Kept so a run that paused for an approval can be followed again after this stream is gone.
  const runId = response.headers.get('toolbus-run') ?? undefined;
  return printRunEvents(io, response, printEvents, runId);
}

/** Follows a run that is already going (`--attach`), from its event stream, until it ends. */
async function attach(
  io: CliIO,
  values: { url?: string; token?: string },
  runId: string,
  printEvents: boolean,
): Promise<number> {
  const response = await gatewayFetch(
    gatewayTarget(values, io),
    `/api/v1/runs/${encodeURIComponent(runId)}/events`,
    { accept: 'text/event-stream', signal: io.signal },
  );
  return printRunEvents(io, response, printEvents, runId);
}

/**
 * Prints a run's event stream until it ends: with `printEvents`, thoughts and observations on stdout;
 * always the answer (stdout), the error and any approval the run waits for (stderr). A stream that
 * breaks or ends without an answer or an error is an error too. After an error of a run that waited
 * for an approval, it says how to follow the run again: it is kept on the gateway.
 */
async function printRunEvents(
  io: CliIO,
  response: Response,
  printEvents: boolean,
  runId: string | undefined,
): Promise<number> {
  if (!response.body)
    throw new GatewayRequestError('the gateway sent an empty stream', response.status, 'internal');
  const spinner = startSpinner(io);
  let code: number = ExitCode.Ok;
  let ended = false;
  let sawApproval = false;
  const fail = (message: string): void => {
    io.stderr.write(printEvents ? `error: ${message}\n` : `toolbus ask: ${message}\n`);
    code = ExitCode.Error;
  };
  try {
    for await (const { event, data } of readServerSentEvents(response.body)) {
      const payload = JSON.parse(data) as {
        content?: string;
        approval?: { runId?: unknown };
        toolName?: string;
        progress?: ToolProgress;
      };
      const content = payload.content ?? '';
      spinner.clear();
      if (event === 'thought' && printEvents) io.stdout.write(`thought: ${content}\n`);
      else if (event === 'observation' && printEvents) io.stdout.write(`observation: ${content}\n`);
      else if (event === 'progress' && printEvents && payload.progress) {
        io.stdout.write(progressLine(payload.toolName, payload.progress));
      } else if (event === 'approval') {
        sawApproval = true;
        if (runId === undefined && typeof payload.approval?.runId === 'string')
          runId = payload.approval.runId;
        writeApprovalNeeded(io, payload.approval, runId);
      } else if (event === 'answer') {
        io.stdout.write(`${content}\n`);
        ended = true;
      } else if (event === 'error') {
        fail(content);
        ended = true;
      }
    }
    if (!ended) fail('the event stream ended before the answer');
  } catch (error) {
    // Ctrl-C: main says "cancelled". A dropped connection is an error of this run, with the hint below.
    if (io.signal.aborted || error instanceof SyntaxError) throw error;
    fail(`the event stream broke off (${(error as Error).message})`);
  } finally {
    spinner.stop();
  }
  if (code !== ExitCode.Ok && sawApproval && runId !== undefined) {
    io.stderr.write(`  the run is kept: toolbus ask --attach ${runId}\n`);
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
  profile: string | undefined,
  stream: boolean,
): Promise<number> {
  const bus = await openBus({ nats, natsSecurity }, io);
  const client = new AgentClient(bus);
  const spinner = startSpinner(io);
  try {
    const answer = await client.ask(question, {
      user: user ?? 'anonymous',
      ...(profile !== undefined ? { profile } : {}),
      signal: io.signal,
      progress: stream,
      onEvent: (event) => {
        if (!stream || event.type === 'answer') return;
        spinner.clear();
        if (event.type === 'progress' && event.progress)
          io.stdout.write(progressLine(event.toolName, event.progress));
        else io.stdout.write(`${event.type}: ${event.content}\n`);
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
      profile: { type: 'string' },
      attach: { type: 'string' },
      ...GATEWAY_FLAGS,
      nats: { type: 'string' },
      ...NATS_SECURITY_FLAGS,
    });
    const question = positionals.join(' ').trim();
    const runId = values.attach;
    if (runId !== undefined) {
      if (question) throw new UsageError('give a question or --attach RUN_ID, not both');
      if (runId.trim() === '') throw new UsageError('--attach needs the id of a run, e.g. --attach run-0123');
      if (values.nats !== undefined) {
        throw new UsageError('--attach follows a run through the gateway of toolbus up; drop --nats');
      }
      // The run was started for its user; a --user here could only be ignored.
      if (values.user !== undefined) throw new UsageError('--user is for a new question, not --attach');
      if (values.profile !== undefined) {
        throw new UsageError('--profile is for a new question, not --attach (the run keeps its own)');
      }
    } else if (!question) {
      throw new UsageError('write the question, e.g. toolbus ask "Tell me a joke about cats"');
    }
    const profile = values.profile;
    if (profile !== undefined && !CONFIG_NAME_PATTERN.test(profile)) {
      throw new UsageError(
        `--profile needs a profile id (1-128 characters of [A-Za-z0-9_.=-]), got '${profile.slice(0, 80)}'`,
      );
    }
    if (values.nats !== undefined) {
      const natsSecurity = NatsSecurity.fromFlags(values, io);
      return askOverBus(
        io,
        values.nats,
        natsSecurity,
        question,
        values.user,
        profile,
        values.stream ?? false,
      );
    }
    const body = {
      question,
      ...(values.user ? { user: values.user } : {}),
      ...(profile !== undefined ? { profile } : {}),
    };
    try {
      if (runId !== undefined) return await attach(io, values, runId, values.stream ?? false);
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

/** A tool's progress report as one line: `progress: report 2/3 writing section 2`. */
function progressLine(toolName: string | undefined, report: ToolProgress): string {
  const count = report.total !== undefined ? `${report.progress}/${report.total}` : String(report.progress);
  const message = report.message ? ` ${report.message.replace(/\s+/g, ' ').slice(0, 200)}` : '';
  return `progress: ${toolName ?? 'tool'} ${count}${message}\n`;
}
