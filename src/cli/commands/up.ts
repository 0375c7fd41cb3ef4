/**
 * @module `toolbus up`: the main job. One process with the bus, the config store, the example joke
 * service, the live registry, the agent service and the HTTP gateway.
 */
import type { CliCommand, CliIO } from '../command.js';
import { ExitCode, UsageError } from '../command.js';
import { parseCommandArgs } from '../args.js';
import { NO_MODEL_MESSAGE, modelFromEnv } from '../model-from-env.js';
import { startSystem, type RunningSystem } from '../system.js';

const help = `Usage: toolbus up [--host HOST] [--port PORT] [--nats URL] [--store PATH] [--no-examples]

Start toolbus in one process: the example joke tool service, the live tool registry (config in
SQLite under ./.toolbus/, or $TOOLBUS_HOME), the agent (when a model is configured) and the HTTP
gateway. Ctrl-C stops it cleanly.

Options:
  --host HOST        address for the HTTP gateway (default: 127.0.0.1). Anything but loopback
                     needs TOOLBUS_TOKEN set, so strangers cannot call your tools.
  --port PORT        port for the HTTP gateway (default: 8888; 0 picks a free one)
  --nats URL         run on a NATS server (bus and config) instead of the embedded default
                     (default: $TOOLBUS_NATS when set)
  --store PATH       SQLite config file (default: $TOOLBUS_HOME/config.db or ./.toolbus/config.db)
  --no-examples      do not start the example joke service or load its descriptors
  -h, --help         show this help

Environment:
  TOOLBUS_TOKEN      bearer token the gateway requires
  TOOLBUS_NATS       NATS server to run on, as --nats
  TOOLBUS_HOME       folder of the SQLite config (default: ./.toolbus)
  OPENAI_API_KEY, OPENAI_BASE_URL, TOOLBUS_MODEL, SAPTIVA_API_KEY
                     the agent's model (see 'toolbus ask --help')
`;

function banner(system: RunningSystem, url: string, modelLine: string | undefined): string {
  const tools = system.tools.list();
  const lines = [
    `toolbus is up`,
    `  gateway   ${url}   (MCP at ${url}/mcp)`,
    `  bus       ${system.busDescription}`,
    `  config    ${system.storeDescription}`,
    `  services  ${system.serviceNames.length ? system.serviceNames.join(', ') : '(none)'}`,
    `  tools     ${tools.length ? tools.map((t) => t.name).join(', ') : '(none)'}`,
    `  agent     ${modelLine ?? 'off: no model configured (see `toolbus ask --help`)'}`,
  ];
  for (const p of system.problems()) lines.push(`  problem   ${p.key}: ${p.message}`);
  const urlFlag = url === 'http://127.0.0.1:8888' ? '' : ` --url ${url}`;
  lines.push(
    '',
    'Try next:',
    `  npx toolbus tools${urlFlag}`,
    // Suggest a call that works here: with --no-examples the joke tools may not exist.
    tools.some((t) => t.name === 'tell-joke')
      ? `  npx toolbus call tell-joke topic=cats${urlFlag}`
      : tools[0]
        ? `  npx toolbus call ${tools[0].name} key=value ...${urlFlag}   (its arguments: npx toolbus tools)`
        : `  npx toolbus config put tool/<name> < tool.json   (README: "Write your own tool service")`,
    modelLine
      ? `  npx toolbus ask "Tell me a dad joke about dogs" --stream${urlFlag}`
      : `  OPENAI_API_KEY=sk-... npm start, then: npx toolbus ask "Tell me a joke about cats"${urlFlag}`,
    '',
    'Press Ctrl-C to stop.',
  );
  return lines.join('\n') + '\n';
}

function parsePort(text: string | undefined): number {
  if (text === undefined) return 8888;
  const port = Number(text);
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    throw new UsageError(`--port must be a number from 0 to 65535, got '${text}'`);
  }
  return port;
}

async function waitForSignal(io: CliIO): Promise<void> {
  if (io.signal.aborted) return;
  await new Promise<void>((resolve) => io.signal.addEventListener('abort', () => resolve(), { once: true }));
}

/** The `up` command. */
export const command: CliCommand = {
  name: 'up',
  summary: 'start toolbus: example service, registry, agent and HTTP gateway',
  help,
  async run(argv, io) {
    const { values, positionals } = parseCommandArgs(argv, {
      host: { type: 'string' },
      port: { type: 'string' },
      nats: { type: 'string' },
      store: { type: 'string' },
      'no-examples': { type: 'boolean' },
    });
    // A stray word (e.g. a port without --port) would otherwise be ignored and the defaults used.
    if (positionals.length > 0) {
      throw new UsageError(`unexpected argument '${positionals[0]}'; 'toolbus up' takes only options`);
    }
    const port = parsePort(values.port);
    const host = values.host ?? '127.0.0.1';
    const choice = await modelFromEnv(io.env);
    const system = await startSystem(
      {
        nats: values.nats,
        store: values.store,
        examples: !values['no-examples'],
        model: choice?.model,
        token: io.env.TOOLBUS_TOKEN,
        agentUnavailableMessage: NO_MODEL_MESSAGE,
      },
      io,
    );
    let url: string;
    try {
      url = await system.gateway.listen({ host, port });
    } catch (error) {
      await system.close();
      await choice?.close();
      if ((error as { code?: string }).code === 'EADDRINUSE') {
        throw new Error(
          `${host}:${port} is already in use: is another 'toolbus up' running? Stop it, or pick another port with --port`,
          { cause: error },
        );
      }
      throw error;
    }
    io.stdout.write(banner(system, url, choice?.description));
    await waitForSignal(io);
    io.stdout.write('toolbus: stopping (calls in flight finish or are cancelled)...\n');
    await system.close();
    await choice?.close();
    io.stdout.write('toolbus: stopped\n');
    return ExitCode.Ok;
  },
};
