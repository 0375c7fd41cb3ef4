/**
 * @module `toolbus up`: the main job. One process with the bus, the config store, the example joke
 * service, the live registry, the agent service and the HTTP gateway.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { CliCommand, CliIO } from '../command.js';
import { ExitCode, UsageError } from '../command.js';
import { parseCommandArgs, parsePortFlag } from '../args.js';
import { NO_MODEL_MESSAGE, modelFromEnv } from '../model-from-env.js';
import { startSystem, type RunningSystem } from '../system.js';
import { consoleDir } from '../system-inspector.js';
import { createMetricsListener, isLoopbackHost, type MetricsListener } from '../../gateway/index.js';
import { ensureTokenFile } from '../token-file.js';
import { startTracingSdk } from '../tracing-sdk.js';
import { AUDIT_FLAGS, AUDIT_FLAGS_HELP, parseAuditFlags } from '../audit-setup.js';
import { cliLogger } from '../logger.js';
import { NATS_SECURITY_FLAGS, NATS_SECURITY_HELP, NatsSecurity } from '../nats-security.js';
import { splitList } from '../../policy/index.js';
import {
  JWT_ENV_HELP,
  JWT_FLAGS,
  JWT_FLAGS_HELP,
  parseJwtFlags,
  type JwtFlagSettings,
} from '../jwt-flags.js';
import { parseDuration } from '../../audit/index.js';

const help = `Usage: toolbus up [--host HOST] [--port PORT] [--nats URL] [--store PATH] [--no-examples]
                  [--service MODULE ... [--watch]] [--allowed-hosts NAMES]
                  [--allowed-origins ORIGINS] [--no-auth] [--metrics-port PORT]
                  [--log-level LEVEL] [--audit-args] [--audit-max-age AGE]
                  [--audit-max-mb MB] [--no-audit]
                  [--jwt-jwks URL --jwt-issuer ISS --jwt-audience AUD]
                  [--oauth [--oauth-issuer URL] [--oauth-scopes SCOPES]] [--public-url URL]
                  [--approval-timeout AGE] [--allow-self-approval]
                  [--tool-search auto|on|off]

Start toolbus in one process: the example joke tool service, your own tool services (--service),
the live tool registry (config in SQLite under ./.toolbus/, or $TOOLBUS_HOME), the agent (when a
model is configured) and the HTTP gateway, with the web console at its root (open
http://127.0.0.1:8888/ in a browser and log in with the token). Ctrl-C stops it cleanly.

The gateway requires a bearer token on every route but a bare liveness check. Without
TOOLBUS_TOKEN, toolbus up uses a random token kept in $TOOLBUS_HOME/token (./.toolbus/token; mode
0600, made at the first start), which the other toolbus commands read from the same folder. Give
it to MCP clients as the header "Authorization: Bearer <token>" (README: "Security"). That token
is the admin principal; give others their own keys with roles, tool globs and rates with
'toolbus principal add' (README: "Principals, roles and quotas").

Options:
  --host HOST        address for the HTTP gateway (default: 127.0.0.1). Anything but loopback
                     needs --allowed-hosts for the names clients use (see the README's "Security")
  --port PORT        port for the HTTP gateway (default: 8888; 0 picks a free one)
  --allowed-hosts NAMES
                     comma-separated host names the gateway answers to besides 127.0.0.1,
                     localhost and [::1], e.g. the name a reverse proxy forwards (Host header)
  --allowed-origins ORIGINS
                     comma-separated origins of web pages that may call the gateway, e.g.
                     https://app.example.com (they get CORS headers; other pages get 403)
  --no-auth          serve without a token; allowed on a loopback --host only (Host and Origin
                     are still checked, but any local program can call your tools)
  --metrics-port PORT
                     also serve Prometheus metrics without the token on 127.0.0.1:PORT/metrics,
                     for a scraper on this host (0 picks a free port). The gateway serves
                     GET /metrics with the token either way (README: "Metrics")
  --log-level LEVEL  trace, debug, info (default; or $TOOLBUS_LOG_LEVEL), warn, error, fatal or
                     silent. The log (start and stop, NATS outages with their length, registry
                     changes and problems, service errors, denied requests) goes to stdout: JSON
                     lines when stdout is not a terminal, readable lines on one
  --nats URL         run on a NATS server (bus and config) instead of the embedded default
                     (default: $TOOLBUS_NATS when set)
  --store PATH       SQLite config file (default: $TOOLBUS_HOME/config.db or ./.toolbus/config.db)
  --no-examples      do not start the example joke service or load its descriptors
  --service MODULE   run a tool service module in this process, on the same bus (repeatable).
                     The module is the one 'toolbus service' takes: its default export makes a
                     DynamicToolService from the bus (see 'toolbus service --help')
  --watch            reload each --service module when its file changes: the new instance
                     starts, then the old one stops once its calls in flight have finished. A
                     module that fails to load keeps the old instance running
${AUDIT_FLAGS_HELP}
${JWT_FLAGS_HELP}
  --approval-timeout AGE
                     how long a tool call that needs approval ("approval": "always") waits
                     for a decision before it is denied: 30s, 15m, 1h (default), 2d
  --allow-self-approval
                     let the principal that started an agent run approve its calls (by
                     default another principal with the role approver or admin must)
  --tool-search MODE  when the agent and /mcp show the model a search_tools tool instead of every
                     tool (the tools it finds join its next step): auto (default) once there are
                     more than 64 tools, on, or off. /mcp?search=1 or ?search=0 decides per session
  -h, --help         show this help

${NATS_SECURITY_HELP}

Environment:
  TOOLBUS_TOKEN      bearer token the gateway requires (default: the one in $TOOLBUS_HOME/token)
  TOOLBUS_NATS       NATS server to run on, as --nats
  TOOLBUS_HOME       folder of the SQLite config, the audit log and the token (default: ./.toolbus)
${JWT_ENV_HELP}
  TOOLBUS_ALLOW_COMMANDS
                     programs that config items (mcp/<id> with "command") may start, comma-
                     separated, e.g. npx; default none
  TOOLBUS_ALLOW_ENV  environment variables config items ({"env": NAME} header values) may read,
                     comma-separated names or globs, e.g. WEATHER_TOKEN,GITHUB_*; default none
  OPENAI_API_KEY, OPENAI_BASE_URL, TOOLBUS_MODEL, SAPTIVA_API_KEY
                     the agent's model (see 'toolbus ask --help')
  OTEL_EXPORTER_OTLP_ENDPOINT
                     export OpenTelemetry traces over OTLP (npm install @opentelemetry/sdk-node;
                     the other OTEL_* variables apply; README: "Traces")
  TOOLBUS_TRACE_CONTENT=1
                     also record tool arguments and results, model messages and error texts

Examples:
  toolbus up
  toolbus up --service ./echo-service.ts --watch
  toolbus up --nats nats://127.0.0.1:4222 --service ./echo-service.ts --service ./other-service.ts
  toolbus up --public-url https://tools.example.com \\
    --jwt-jwks https://idp.example.com/.well-known/jwks.json --jwt-issuer https://idp.example.com/ \\
    --oauth --oauth-scopes toolbus:caller
                     (MCP clients connecting to https://tools.example.com/mcp sign the user in at
                     idp.example.com; the token file still works for the CLI and scripts)
`;

function banner(
  system: RunningSystem,
  url: string,
  modelLine: string | undefined,
  tokenLine: string,
  metricsUrl: string | undefined,
  identity: JwtFlagSettings,
): string {
  const { jwt, oauth } = identity;
  const base = identity.publicUrl ?? url;
  const audiences = [
    ...(jwt?.audience !== undefined ? [jwt.audience] : []),
    ...(jwt?.resourceAudience ? [`${base}/mcp (the resource URL)`] : []),
  ];
  const tools = system.tools.list();
  const services = [
    ...system.serviceNames,
    ...system.serviceModules.map(
      (m) => `${m.ids().join(', ')} (${m.specifier}${m.watching ? ', reloaded on change' : ''})`,
    ),
  ];
  const lines = [
    `toolbus is up`,
    `  gateway   ${url}   (MCP at ${url}/mcp)`,
    `  console   ${existsSync(join(consoleDir(), 'index.html')) ? `${url}/ (open it in a browser, log in with the token)` : 'not built: run npm run build'}`,
    `  token     ${tokenLine}`,
    ...(jwt
      ? [`  jwt       tokens of ${jwt.issuer} for ${audiences.join(' or ')} (keys: ${jwt.jwksUrl})`]
      : []),
    ...(oauth
      ? [
          `  oauth     MCP clients sign in at ${oauth.authorizationServers.join(', ')} (metadata: ${base}/.well-known/oauth-protected-resource/mcp)`,
        ]
      : []),
    `  metrics   ${url}/metrics (with the token)${metricsUrl ? `, ${metricsUrl}/metrics (no token, this host only)` : ''}`,
    `  audit     ${system.auditDescription ?? 'off (--no-audit)'}`,
    `  bus       ${system.busDescription}`,
    `  config    ${system.storeDescription}`,
    `  services  ${services.length ? services.join(', ') : '(none)'}`,
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
  return text === undefined ? 8888 : parsePortFlag('--port', text);
}

function parseOrigins(text: string | undefined): string[] {
  const origins = splitList(text ?? '');
  for (const origin of origins) {
    let parsed: URL | undefined;
    try {
      parsed = new URL(origin);
    } catch {
      // reported below
    }
    if (
      !parsed ||
      (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') ||
      parsed.origin !== origin.replace(/\/+$/, '')
    ) {
      throw new UsageError(
        `--allowed-origins takes origins such as https://app.example.com (scheme, host and port only), got '${origin}'`,
      );
    }
  }
  return origins;
}

/** How the gateway authenticates: TOOLBUS_TOKEN, the home's token file, or (loopback only) nothing. */
function gatewayAuth(
  io: CliIO,
  host: string,
  noAuth: boolean,
  allowedHosts: readonly string[],
): { token: string | undefined; line: string; warning?: string } {
  if (noAuth) {
    if (!isLoopbackHost(host)) {
      throw new UsageError(
        `--no-auth is allowed only on a loopback --host (127.0.0.1, localhost, ::1), not on '${host}': ` +
          'anyone who can reach that address could run your tools and change your config',
      );
    }
    if (allowedHosts.includes('*')) {
      throw new UsageError(
        "--no-auth cannot be combined with --allowed-hosts '*': web pages could then reach the gateway",
      );
    }
    return {
      token: undefined,
      line: 'none (--no-auth): any program on this machine can call the gateway',
      warning:
        'toolbus: warning: --no-auth: the gateway takes requests without a token; any program or user on this ' +
        'machine can call your tools and change your config\n',
    };
  }
  if (io.env.TOOLBUS_TOKEN) return { token: io.env.TOOLBUS_TOKEN, line: 'from TOOLBUS_TOKEN' };
  const { token, path, created } = ensureTokenFile(io);
  return {
    token,
    line: `${created ? 'new, written to' : 'in'} ${path} (the CLI reads it; MCP clients send "Authorization: Bearer <token>")`,
  };
}

async function waitForSignal(io: CliIO): Promise<void> {
  if (io.signal.aborted) return;
  await new Promise<void>((resolve) => io.signal.addEventListener('abort', () => resolve(), { once: true }));
}

/** The `up` command. */
/**
 * How long after it serves `up` loads its logger and metrics libraries (about 150 ms of synchronous
 * module loading on a small machine), so the first requests are not held up by them.
 */
const LOAD_AFTER_START_MS = 250;

/** `--approval-timeout AGE` in ms. @throws UsageError for text that is not an age of at least 1s. */
function parseApprovalTimeout(text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  const ms = parseDuration(text);
  if (ms === undefined || ms < 1_000) {
    throw new UsageError(
      `--approval-timeout takes an age of at least 1s such as 90s, 15m or 1h, got '${text}'`,
    );
  }
  return ms;
}

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
      'no-auth': { type: 'boolean' },
      'allowed-hosts': { type: 'string' },
      'allowed-origins': { type: 'string' },
      service: { type: 'string', multiple: true },
      watch: { type: 'boolean' },
      'metrics-port': { type: 'string' },
      'log-level': { type: 'string' },
      'approval-timeout': { type: 'string' },
      'allow-self-approval': { type: 'boolean' },
      'tool-search': { type: 'string' },
      ...AUDIT_FLAGS,
      ...NATS_SECURITY_FLAGS,
      ...JWT_FLAGS,
    });
    // A stray word (e.g. a port without --port) would otherwise be ignored and the defaults used.
    if (positionals.length > 0) {
      throw new UsageError(`unexpected argument '${positionals[0]}'; 'toolbus up' takes only options`);
    }
    const serviceModules = values.service ?? [];
    if (values.watch && serviceModules.length === 0) {
      throw new UsageError(
        '--watch reloads the --service modules: name one, e.g. --service ./echo-service.ts',
      );
    }
    const port = parsePort(values.port);
    const metricsText = values['metrics-port'];
    const metricsPort = metricsText === undefined ? undefined : parsePortFlag('--metrics-port', metricsText);
    const host = values.host ?? '127.0.0.1';
    const allowedHosts = splitList(values['allowed-hosts'] ?? '');
    const allowedOrigins = parseOrigins(values['allowed-origins']);
    const approvalTimeoutMs = parseApprovalTimeout(values['approval-timeout']);
    const toolSearch = values['tool-search'];
    if (toolSearch !== undefined && toolSearch !== 'auto' && toolSearch !== 'on' && toolSearch !== 'off') {
      throw new UsageError(`--tool-search takes auto, on or off, got '${toolSearch.slice(0, 40)}'`);
    }
    const audit = parseAuditFlags(values); // before gatewayAuth, which may write the token file
    const natsSecurity = NatsSecurity.fromFlags(values, io);
    const identity = parseJwtFlags(values, io.env, allowedHosts);
    const jwt = identity.jwt;
    if (jwt && values['no-auth']) {
      throw new UsageError('--no-auth serves without authentication; it cannot be combined with --jwt-jwks');
    }
    const auth = gatewayAuth(io, host, values['no-auth'] === true, allowedHosts);
    const logger = cliLogger(io, values['log-level'], { hold: true });
    try {
      // Before anything serves: spans need the SDK registered (a no-op without OTEL_EXPORTER_OTLP_ENDPOINT).
      const tracing = await startTracingSdk(io, 'toolbus');
      const choice = await modelFromEnv(io.env);
      const system = await startSystem(
        {
          nats: values.nats,
          natsSecurity,
          store: values.store,
          examples: !values['no-examples'],
          serviceModules,
          watch: values.watch === true,
          model: choice?.model,
          modelName: choice?.name,
          ...(auth.token !== undefined ? { token: auth.token } : { noAuth: true }),
          jwt,
          ...(identity.oauth ? { oauth: identity.oauth } : {}),
          ...(identity.publicUrl !== undefined ? { publicUrl: identity.publicUrl } : {}),
          allowedHosts,
          allowedOrigins,
          agentUnavailableMessage: NO_MODEL_MESSAGE,
          logger,
          audit,
          ...(approvalTimeoutMs !== undefined ? { approvalTimeoutMs } : {}),
          allowSelfApproval: values['allow-self-approval'] === true,
          ...(toolSearch !== undefined ? { toolSearch } : {}),
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
      let metricsListener: MetricsListener | undefined;
      let metricsUrl: string | undefined;
      if (metricsPort !== undefined) {
        metricsListener = createMetricsListener({
          metrics: () => system.metrics.scrape(),
          onError: (error) => void io.stderr.write(`toolbus: metrics: ${error.stack ?? error.message}\n`),
        });
        try {
          metricsUrl = await metricsListener.listen({ host: '127.0.0.1', port: metricsPort });
        } catch (error) {
          await system.close();
          await choice?.close();
          if ((error as { code?: string }).code === 'EADDRINUSE') {
            throw new Error(`127.0.0.1:${metricsPort} is already in use: pick another --metrics-port`, {
              cause: error,
            });
          }
          throw error;
        }
      }
      if (auth.warning) io.stderr.write(auth.warning);
      if (tracing) io.stdout.write(`toolbus: traces: ${tracing.description}\n`);
      io.stdout.write(banner(system, url, choice?.description, auth.line, metricsUrl, identity));
      logger.info(
        {
          event: 'start',
          gateway: url,
          bus: system.busDescription,
          store: system.storeDescription,
          tools: system.tools.list().length,
          model: choice?.name,
          ...(metricsUrl ? { metrics: metricsUrl } : {}),
        },
        `toolbus up started: gateway ${url}, ${system.tools.list().length} tools`,
      );
      // Shortly after it serves, not before: the first requests (a health probe, a supervisor's check)
      // are answered before pino and prom-client load. Lines and calls meanwhile wait for them.
      const loadLater = setTimeout(() => {
        void logger.load();
        system.metrics.load().catch((error: unknown) => {
          io.stderr.write(`toolbus: metrics: ${error instanceof Error ? error.message : String(error)}\n`);
        });
      }, LOAD_AFTER_START_MS);
      loadLater.unref();
      await waitForSignal(io);
      clearTimeout(loadLater);
      logger.info({ event: 'stop' }, 'toolbus up stopping: calls in flight finish or are cancelled');
      io.stdout.write('toolbus: stopping (calls in flight finish or are cancelled)...\n');
      await metricsListener?.close();
      await system.close();
      await choice?.close();
      // Last: the spans of the stop itself are exported too.
      await tracing?.shutdown();
      io.stdout.write('toolbus: stopped\n');
      return ExitCode.Ok;
    } finally {
      // Lines logged while pino was still loading are written before the command returns.
      await logger.flush();
    }
  },
};
