/**
 * @module `toolbus service <module>`: run a tool service in its own process.
 */
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { CliCommand, CliIO } from '../command.js';
import { ExitCode, UsageError } from '../command.js';
import { parseCommandArgs } from '../args.js';
import { openBus } from '../connect.js';
import { resolveSelfImportsToSources } from '../self-import.js';
import type { DynamicToolService } from '../../services/index.js';
import type { MessageBus } from '../../bus/index.js';

const help = `Usage: toolbus service <module> --nats URL [--replicas N]

Run a tool service in this process, on a shared bus. The module's default export is a function
that takes the bus and returns a DynamicToolService:

  // my-service.ts
  import { DynamicToolService, type MessageBus } from 'toolbus';
  export default (bus: MessageBus) =>
    new DynamicToolService({
      bus,
      topic: 'echo',
      invoke: async (user, config, args) => \`\${user} said \${String(args.text)}\`,
    });

Then tell agents about it with two config items (see README, "Write your own tool service"),
or let it announce itself.

Options:
  --nats URL         the NATS server the agents use (a service in its own process needs a
                     shared bus; 'toolbus up' runs the example service in-process instead)
                     (default: $TOOLBUS_NATS)
  --replicas N       run N copies in this process, sharing the load (default: 1)
  -h, --help         show this help

Example:
  toolbus service examples/joke-service/service.ts --nats nats://127.0.0.1:4222
`;

type ServiceFactory = (bus: MessageBus) => DynamicToolService | Promise<DynamicToolService>;

/**
 * What to tell the user when the service module does not load. The built CLI runs on plain Node, which
 * cannot import TypeScript (Node 20 only says 'Unknown file extension ".ts"'), so that case names the fix.
 */
export function serviceLoadErrorMessage(specifier: string, error: unknown): string {
  const message = `cannot load the service module '${specifier}': ${(error as Error).message}`;
  if ((error as { code?: unknown }).code === 'ERR_UNKNOWN_FILE_EXTENSION' && /\.[cm]?ts$/.test(specifier)) {
    return (
      `${message}. Node cannot run TypeScript by itself: compile the module to JavaScript, ` +
      `or load a TypeScript loader, e.g. npm install -D tsx and NODE_OPTIONS='--import tsx' npx toolbus service ${specifier}`
    );
  }
  return message;
}

async function loadFactory(specifier: string, io: CliIO): Promise<ServiceFactory> {
  const url = pathToFileURL(resolve(io.cwd, specifier)).href;
  resolveSelfImportsToSources(); // so `import … from 'toolbus'` works in a checkout without a build
  let mod: { default?: unknown };
  try {
    mod = (await import(url)) as { default?: unknown };
  } catch (error) {
    throw new Error(serviceLoadErrorMessage(specifier, error), { cause: error });
  }
  if (typeof mod.default !== 'function') {
    throw new Error(
      `the module '${specifier}' has no default export function; export default (bus) => new DynamicToolService({...})`,
    );
  }
  return mod.default as ServiceFactory;
}

/** The `service` command. */
export const command: CliCommand = {
  name: 'service',
  summary: 'run a tool service module in its own process (on NATS)',
  help,
  async run(argv, io) {
    const { values, positionals } = parseCommandArgs(argv, {
      nats: { type: 'string' },
      replicas: { type: 'string' },
    });
    const [specifier] = positionals;
    if (!specifier)
      throw new UsageError('name the service module, e.g. toolbus service ./my-service.ts --nats URL');
    const nats = values.nats ?? io.env.TOOLBUS_NATS;
    if (!nats) {
      throw new UsageError(
        'a tool service in its own process needs a shared bus: pass --nats nats://HOST:PORT (or set TOOLBUS_NATS)',
      );
    }
    const replicas = Number(values.replicas ?? '1');
    if (!Number.isInteger(replicas) || replicas < 1)
      throw new UsageError(`--replicas must be a positive integer`);
    const factory = await loadFactory(specifier, io);
    const bus = await openBus({ nats }, io);
    const services: DynamicToolService[] = [];
    try {
      for (let i = 0; i < replicas; i++) {
        const service = await factory(bus);
        await service.start();
        services.push(service);
      }
      io.stdout.write(
        `service '${specifier}' running (${replicas} replica${replicas > 1 ? 's' : ''}) on ${nats}\n`,
      );
      if (!io.signal.aborted) {
        await new Promise<void>((r) => io.signal.addEventListener('abort', () => r(), { once: true }));
      }
      io.stdout.write('stopping: finishing calls in flight...\n');
    } finally {
      await Promise.all(services.map((s) => s.stop()));
      await bus.close();
    }
    return ExitCode.Ok;
  },
};
