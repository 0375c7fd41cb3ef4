#!/usr/bin/env node
/**
 * @module `toolbus` command-line entry: dispatches to one module per command in `commands/`.
 */
import { readFileSync, realpathSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { didYouMean } from '../errors/index.js';
import { ExitCode, UsageError, type CliCommand, type CliIO } from './command.js';

/** Commands, loaded lazily so `toolbus config` does not load the MCP SDK; summaries for `--help`. */
const COMMANDS: Record<string, { summary: string; load: () => Promise<CliCommand> }> = {
  up: {
    summary: 'start toolbus: example service, registry, agent and HTTP gateway',
    load: async () => (await import('./commands/up.js')).command,
  },
  tools: {
    summary: 'list the tools the agent can use',
    load: async () => (await import('./commands/tools.js')).command,
  },
  call: {
    summary: 'call one tool and print its result',
    load: async () => (await import('./commands/call.js')).command,
  },
  ask: {
    summary: 'ask the agent a question (needs a model)',
    load: async () => (await import('./commands/ask.js')).command,
  },
  config: {
    summary: 'put, get, list and delete config items (tool descriptors and more)',
    load: async () => (await import('./commands/config.js')).command,
  },
  principal: {
    summary: 'add, list and remove API keys (principals) with roles, tool globs and rates',
    load: async () => (await import('./commands/principal.js')).command,
  },
  audit: {
    summary: 'show the audit log: tool calls and denied requests',
    load: async () => (await import('./commands/audit.js')).command,
  },
  approvals: {
    summary: 'list, approve and deny tool calls that wait for approval',
    load: async () => (await import('./commands/approvals.js')).command,
  },
  service: {
    summary: 'run a tool service module in its own process (on NATS)',
    load: async () => (await import('./commands/service.js')).command,
  },
  mcp: {
    summary: "serve the tools over MCP, import an MCP server's tools, or log in to one (OAuth)",
    load: async () => (await import('./commands/mcp.js')).command,
  },
  openapi: {
    summary: 'import the operations of an OpenAPI spec as http tools',
    load: async () => (await import('./commands/openapi.js')).command,
  },
  init: {
    summary: 'create a project with your own tool, tool service and tests',
    load: async () => (await import('./commands/init.js')).command,
  },
};

async function loadCommand(name: string): Promise<CliCommand | undefined> {
  const entry = COMMANDS[name];
  return entry ? entry.load() : undefined;
}

function mainHelp(): string {
  const lines = [
    'Usage: toolbus <command> [options]',
    '',
    'toolbus runs pluggable agent tools: typed functions, HTTP endpoints, MCP servers and tool',
    'services on a message bus, behind one registry, one agent and one HTTP gateway.',
    '',
    'Commands:',
  ];
  for (const [name, entry] of Object.entries(COMMANDS)) lines.push(`  ${name.padEnd(9)} ${entry.summary}`);
  lines.push('', "Run 'toolbus <command> --help' for a command's options.");
  return lines.join('\n') + '\n';
}

/** Runs the CLI with the given arguments; resolves with the exit code. */
export async function main(argv: string[], io: CliIO): Promise<number> {
  const [name, ...rest] = argv;
  if (!name || name === '--help' || name === '-h' || name === 'help') {
    io.stdout.write(mainHelp());
    return name ? ExitCode.Ok : ExitCode.Usage;
  }
  if (name === '--version' || name === '-v') {
    const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
      version: string;
    };
    io.stdout.write(`${pkg.version}\n`);
    return ExitCode.Ok;
  }
  const command = await loadCommand(name);
  if (!command) {
    io.stderr.write(
      `toolbus: unknown command '${name}'${didYouMean(name, Object.keys(COMMANDS))}.\n\n${mainHelp()}`,
    );
    return ExitCode.Usage;
  }
  if (rest.includes('--help') || rest.includes('-h')) {
    io.stdout.write(command.help.endsWith('\n') ? command.help : command.help + '\n');
    return ExitCode.Ok;
  }
  try {
    return await command.run(rest, io);
  } catch (error) {
    if (io.signal.aborted) {
      // Ctrl-C (or SIGTERM/SIGHUP) while waiting: say so, not "This operation was aborted", and exit
      // 130 as shells expect of an interrupted command.
      io.stderr.write(`toolbus ${name}: cancelled (${errorText(io.signal.reason)})\n`);
      return ExitCode.Interrupted;
    }
    if (error instanceof UsageError) {
      io.stderr.write(`toolbus ${name}: ${error.message}\nRun 'toolbus ${name} --help' for usage.\n`);
      return ExitCode.Usage;
    }
    const message = error instanceof Error ? error.message : String(error);
    io.stderr.write(`toolbus ${name}: ${message}\n`);
    if (io.env.TOOLBUS_DEBUG && error instanceof Error && error.stack) io.stderr.write(error.stack + '\n');
    return ExitCode.Error;
  }
}

/** True when node runs this file as its main script; through a symlinked path too (argv[1] keeps the link). */
function isMainScript(): boolean {
  const script = process.argv[1];
  if (script === undefined) return false;
  try {
    return realpathSync(script) === realpathSync(fileURLToPath(import.meta.url));
  } catch {
    return false;
  }
}

function errorText(value: unknown): string {
  return value instanceof Error ? value.message : String(value);
}

/** Signals closer together than this are one event delivered twice (see {@link signalHandler}). */
export const DUPLICATE_SIGNAL_MS = 500;

/**
 * What the CLI does on SIGINT, SIGTERM and SIGHUP: the first aborts `controller` (commands stop
 * cleanly); a second one, later, exits 130 at once. One Ctrl-C can arrive twice, from the terminal (to
 * the whole process group) and passed on by bin/toolbus.js, so a repeat within
 * {@link DUPLICATE_SIGNAL_MS} counts as the same press.
 */
export function signalHandler(
  controller: AbortController,
  exit: (code: number) => void,
  now: () => number = Date.now,
): (signal: NodeJS.Signals) => void {
  let firstAt: number | undefined;
  return (signal) => {
    const at = now();
    if (firstAt === undefined) {
      firstAt = at;
      controller.abort(new Error(`received ${signal}`));
    } else if (at - firstAt >= DUPLICATE_SIGNAL_MS) {
      exit(130);
    }
  };
}

const isEntry = isMainScript();
if (isEntry) {
  const controller = new AbortController();
  const onSignal = signalHandler(controller, (code) => process.exit(code));
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  // A closed terminal or SSH session (and bin/toolbus.js passing it on): stop cleanly too, instead of
  // Node's default of dying at once with calls in flight and no goodbye from announced services.
  process.on('SIGHUP', onSignal);
  const code = await main(process.argv.slice(2), {
    stdin: process.stdin,
    stdout: process.stdout,
    stderr: process.stderr,
    env: process.env,
    cwd: process.cwd(),
    signal: controller.signal,
  });
  process.exitCode = code;
  // Commands close what they opened; this only guards against a stray handle keeping the CLI alive.
  setTimeout(() => process.exit(code), 2000).unref();
}
