/**
 * @module `toolbus service <module>`: run a tool service in its own process.
 */
import type { CliCommand } from '../command.js';
import { ExitCode, UsageError } from '../command.js';
import { parseCommandArgs, parsePortFlag } from '../args.js';
import { openBus } from '../connect.js';
import { cliLogger, logBusStatus, logServiceErrors } from '../logger.js';
import { createMetricsListener, type MetricsListener } from '../../gateway/index.js';
import { ToolbusMetrics } from '../../observability/index.js';
import { importServiceFactory, startServices, type ServiceInstance } from '../service-module.js';
import { startTracingSdk } from '../tracing-sdk.js';
import { NATS_SECURITY_FLAGS, NATS_SECURITY_HELP, NatsSecurity, displayNatsUrl } from '../nats-security.js';

const help = `Usage: toolbus service <module> --nats URL [--replicas N] [--metrics-port PORT]
                       [--log-level LEVEL]

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

Without NATS, run the module inside 'toolbus up' instead, on its in-process bus (and with
--watch, reloaded when you save it): toolbus up --service ./my-service.ts --watch

Options:
  --nats URL         the NATS server the agents use, the one 'toolbus up --nats URL' runs on
                     (a service in its own process needs a shared bus) (default: $TOOLBUS_NATS)
  --replicas N       run N copies in this process, sharing the load (default: 1)
  --metrics-port PORT
                     serve this process's Prometheus metrics (requests and queue depth per
                     service, bus connection, process) on 127.0.0.1:PORT/metrics, without a
                     token, for a scraper on this host (0 picks a free port; README: "Metrics")
  --log-level LEVEL  trace, debug, info (default; or $TOOLBUS_LOG_LEVEL), warn, error, fatal or
                     silent. The log (start and stop, NATS outages with their length, failed
                     calls) goes to stdout: JSON lines when stdout is not a terminal, readable
                     lines on one
  -h, --help         show this help

${NATS_SECURITY_HELP}

Environment:
  OTEL_EXPORTER_OTLP_ENDPOINT
                     export OpenTelemetry traces over OTLP (npm install @opentelemetry/sdk-node;
                     the other OTEL_* variables apply; README: "Traces"). TOOLBUS_TRACE_CONTENT=1
                     also records tool arguments and results and error texts

Example:
  toolbus service examples/joke-service/service.ts --nats nats://127.0.0.1:4222
`;

/** The `service` command. */
export const command: CliCommand = {
  name: 'service',
  summary: 'run a tool service module in its own process (on NATS)',
  help,
  async run(argv, io) {
    const { values, positionals } = parseCommandArgs(argv, {
      nats: { type: 'string' },
      replicas: { type: 'string' },
      'metrics-port': { type: 'string' },
      'log-level': { type: 'string' },
      ...NATS_SECURITY_FLAGS,
    });
    const [specifier] = positionals;
    if (!specifier)
      throw new UsageError('name the service module, e.g. toolbus service ./my-service.ts --nats URL');
    const nats = values.nats ?? io.env.TOOLBUS_NATS;
    if (!nats) {
      throw new UsageError(
        'a tool service in its own process needs a shared bus. Either run it inside toolbus up, on its ' +
          `in-process bus: toolbus up --service ${specifier}; or give the NATS server that toolbus up --nats ` +
          `uses: toolbus service ${specifier} --nats nats://HOST:PORT (or set TOOLBUS_NATS)`,
      );
    }
    const replicas = Number(values.replicas ?? '1');
    if (!Number.isInteger(replicas) || replicas < 1)
      throw new UsageError(`--replicas must be a positive integer`);
    const metricsText = values['metrics-port'];
    const metricsPort = metricsText === undefined ? undefined : parsePortFlag('--metrics-port', metricsText);
    const natsSecurity = NatsSecurity.fromFlags(values, io);
    const logger = cliLogger(io, values['log-level']);
    try {
      // Before the module loads and serves: a no-op without OTEL_EXPORTER_OTLP_ENDPOINT.
      const tracing = await startTracingSdk(io, 'toolbus-service');
      const factory = await importServiceFactory(specifier, io.cwd);
      const bus = await openBus({ nats, natsSecurity }, io, logBusStatus(logger, 'the bus'));
      let services: ServiceInstance[] = [];
      let metricsListener: MetricsListener | undefined;
      try {
        services = await startServices(factory, bus, specifier, replicas, logServiceErrors(logger));
        if (metricsPort !== undefined) {
          const metrics = new ToolbusMetrics();
          await metrics.load();
          metrics.observeBus(bus);
          metrics.observeServices(() => services);
          metricsListener = createMetricsListener({
            metrics: () => metrics.scrape(),
            onError: (error) =>
              void io.stderr.write(`toolbus service: metrics: ${error.stack ?? error.message}\n`),
          });
          const url = await metricsListener
            .listen({ host: '127.0.0.1', port: metricsPort })
            .catch((error: unknown) => {
              if ((error as { code?: string }).code !== 'EADDRINUSE') throw error;
              throw new Error(`127.0.0.1:${metricsPort} is already in use: pick another --metrics-port`, {
                cause: error,
              });
            });
          io.stdout.write(`metrics at ${url}/metrics\n`);
        }
        if (tracing) io.stdout.write(`traces: ${tracing.description}\n`);
        io.stdout.write(
          `service '${specifier}' running (${replicas} replica${replicas > 1 ? 's' : ''}) on ${displayNatsUrl(nats)}\n`,
        );
        logger.info(
          { event: 'start', module: specifier, replicas, services: services.map((s) => s.id) },
          `toolbus service started: '${specifier}' (${replicas} replica${replicas > 1 ? 's' : ''})`,
        );
        if (!io.signal.aborted) {
          await new Promise<void>((r) => io.signal.addEventListener('abort', () => r(), { once: true }));
        }
        logger.info({ event: 'stop', module: specifier }, 'toolbus service stopping');
        io.stdout.write('toolbus service: stopping (calls in flight finish)...\n');
      } finally {
        await metricsListener?.close();
        await Promise.all(services.map((s) => s.stop()));
        await bus.close();
        await tracing?.shutdown();
      }
      io.stdout.write('toolbus service: stopped\n');
      return ExitCode.Ok;
    } finally {
      // Lines logged while pino was still loading are written before the command returns.
      await logger.flush();
    }
  },
};
