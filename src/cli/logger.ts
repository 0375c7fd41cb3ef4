/**
 * @module The CLI's structured log: pino, as JSON lines when stdout is not a terminal (a log shipper, a
 * container runtime) and as readable lines on a terminal (pino-pretty, loaded only then). Each line
 * has an `event` naming what happened (`start`, `bus.disconnected`, …) besides its message, so logs can
 * be filtered without parsing sentences.
 *
 * The library layers log nothing themselves; they report through hooks, and the functions here turn
 * those hooks into log lines for `toolbus up` and `toolbus service`.
 */
import type { Writable } from 'node:stream';
import type { Logger, LevelWithSilent } from 'pino';
import type { NatsBusStatus } from '../bus/nats/index.js';
import type { GatewayDeniedEvent } from '../gateway/index.js';
import type { ToolRegistry } from '../registry/index.js';
import type { DynamicToolServiceHooks } from '../services/index.js';
import { UsageError, type CliIO } from './command.js';

/** The levels `--log-level` takes, most verbose first. */
export const LOG_LEVELS: readonly LevelWithSilent[] = [
  'trace',
  'debug',
  'info',
  'warn',
  'error',
  'fatal',
  'silent',
];

/** A level a line is logged at. */
export type CliLogLevel = Exclude<LevelWithSilent, 'silent'>;

/** pino's number for each level (what a JSON line's `level` is). */
const LEVEL_VALUES: Readonly<Record<LevelWithSilent, number>> = {
  trace: 10,
  debug: 20,
  info: 30,
  warn: 40,
  error: 50,
  fatal: 60,
  silent: Number.POSITIVE_INFINITY,
};

/** Writes one line at a level: its fields (`event` first of all) and its message. */
export type CliLogMethod = (fields: Readonly<Record<string, unknown>>, message: string) => void;

/**
 * The CLI's logger. pino (some 40 files) is loaded at the first line at or above the level, or with
 * `hold` at {@link CliLogger.load}; lines logged before it is loaded keep their order and their time.
 */
export interface CliLogger extends Readonly<Record<CliLogLevel, CliLogMethod>> {
  /** The least severe level written. */
  readonly level: LevelWithSilent;
  /** Loads pino now and writes the lines held so far. */
  load(): Promise<void>;
  /** Resolves once every line logged so far has been handed to the stream (loading pino if need be). */
  flush(): Promise<void>;
}

/** Options of {@link createCliLogger}. */
export interface CliLoggerOptions {
  /** @default 'info' */
  level?: LevelWithSilent;
  /** Where lines go. @default process.stdout */
  stream?: Writable & { isTTY?: boolean };
  /** Readable lines instead of JSON. @default whether `stream` is a terminal */
  pretty?: boolean;
  /**
   * Hold lines (at most {@link MAX_HELD_LINES}) until `load()` or `flush()`, instead of loading pino at
   * the first one: `toolbus up` serves its first requests before it loads. @default false
   */
  hold?: boolean;
}

/** Lines a held logger keeps; one more loads pino at once. */
export const MAX_HELD_LINES = 1_000;

/** A line logged before pino was loaded. */
interface QueuedLine {
  level: CliLogLevel;
  time: number;
  fields: Readonly<Record<string, unknown>>;
  message: string;
}

/** Makes the CLI's logger; pino-pretty is imported only for a terminal. */
export function createCliLogger(options: CliLoggerOptions = {}): CliLogger {
  const stream = options.stream ?? process.stdout;
  const level = options.level ?? 'info';
  const threshold = LEVEL_VALUES[level];
  let logger: Logger | undefined;
  let loading: Promise<void> | undefined;
  let queue: QueuedLine[] = [];
  // The time a replayed line was logged at, for pino's timestamp (undefined: now).
  let replayTime: number | undefined;
  // pino could not be loaded: lines are dropped (the stream was told once).
  let off = false;
  const load = async (): Promise<void> => {
    try {
      logger = await makePino(stream, level, options.pretty ?? stream.isTTY === true, () => replayTime);
    } catch (error) {
      queue = [];
      off = true;
      stream.write(`toolbus: logging is off: ${error instanceof Error ? error.message : String(error)}\n`);
      return;
    }
    for (const line of queue) {
      replayTime = line.time;
      logger[line.level](line.fields, line.message);
    }
    replayTime = undefined;
    queue = [];
  };
  const method =
    (at: CliLogLevel): CliLogMethod =>
    (fields, message) => {
      if (LEVEL_VALUES[at] < threshold || off) return;
      if (logger !== undefined) return logger[at](fields, message);
      const held = queue.push({ level: at, time: Date.now(), fields, message });
      if (options.hold !== true || held >= MAX_HELD_LINES) loading ??= load();
    };
  return {
    level,
    trace: method('trace'),
    debug: method('debug'),
    info: method('info'),
    warn: method('warn'),
    error: method('error'),
    fatal: method('fatal'),
    load: () => (threshold === LEVEL_VALUES.silent ? Promise.resolve() : (loading ??= load())),
    flush: async () => {
      if (queue.length > 0) loading ??= load();
      await loading;
      const made = logger;
      if (made !== undefined) await new Promise<void>((done) => made.flush(() => done()));
    },
  };
}

/** pino (and pino-pretty for readable lines), loaded now, with `time()` as the time of the next line. */
async function makePino(
  stream: Writable,
  level: LevelWithSilent,
  pretty: boolean,
  time: () => number | undefined,
): Promise<Logger> {
  const { pino } = await import('pino');
  const options = {
    level,
    base: { name: 'toolbus' },
    timestamp: () => `,"time":${time() ?? Date.now()}`,
  };
  if (!pretty) return pino(options, stream);
  const { default: prettyStream } = await import('pino-pretty');
  return pino(
    options,
    prettyStream({
      destination: stream,
      sync: true,
      colorize: (stream as { isTTY?: boolean }).isTTY === true,
      ignore: 'pid,hostname,name,event',
      translateTime: 'HH:MM:ss.l',
    }),
  );
}

/**
 * The logger of a command: `--log-level` (else `$TOOLBUS_LOG_LEVEL`, else `info`), to the command's
 * stdout, readable on a terminal and JSON lines otherwise.
 * @throws UsageError for a level that is not one of {@link LOG_LEVELS}
 */
export function cliLogger(
  io: Pick<CliIO, 'stdout' | 'env'>,
  flag: string | undefined,
  options: Pick<CliLoggerOptions, 'hold'> = {},
): CliLogger {
  const text = flag ?? (io.env.TOOLBUS_LOG_LEVEL || 'info');
  if (!(LOG_LEVELS as readonly string[]).includes(text)) {
    const from = flag === undefined ? 'TOOLBUS_LOG_LEVEL' : '--log-level';
    throw new UsageError(`${from} '${text}' is not a log level: use one of ${LOG_LEVELS.join(', ')}`);
  }
  return createCliLogger({ ...options, level: text as LevelWithSilent, stream: io.stdout });
}

/** A gateway `onDenied` hook that logs each refused request (never its token). */
export function logDenied(logger: CliLogger): (event: GatewayDeniedEvent) => void {
  return (event) => {
    const who = event.principal
      ? ` (principal ${event.principal}${event.user ? `, user ${event.user}` : ''})`
      : '';
    const what = event.tool ? ` tool ${event.tool}` : '';
    logger.warn(
      {
        event: 'request.denied',
        status: event.status,
        code: event.code,
        ...(event.rule ? { rule: event.rule } : {}),
        ...(event.surface ? { surface: event.surface } : {}),
        method: event.method,
        path: event.path,
        remote: event.remote,
        ...(event.principal ? { principal: event.principal } : {}),
        ...(event.user ? { user: event.user } : {}),
        ...(event.tool ? { tool: event.tool } : {}),
      },
      `denied ${event.method} ${event.path}${what} from ${event.remote}${who}: ${event.status} ${event.code}` +
        (event.rule ? ` (rule ${event.rule})` : ''),
    );
  };
}

/** How often {@link logRegistry} looks for new registry problems (they may come without a set change). */
const PROBLEM_CHECK_MS = 2_000;

/**
 * Logs each change of a registry's tool set, and its problems whenever they change (looked for at each
 * change and every {@link PROBLEM_CHECK_MS}: a broken item or a failing store leaves the set as it was).
 * Returns a function that stops it.
 */
export function logRegistry(logger: CliLogger, registry: ToolRegistry): () => void {
  let reported = new Set<string>();
  const reportProblems = (): void => {
    const now = new Set<string>();
    for (const problem of registry.problems()) {
      const id = `${problem.key}\n${problem.message}`;
      now.add(id);
      if (!reported.has(id)) {
        logger.warn(
          { event: 'registry.problem', key: problem.key },
          `registry: ${problem.key}: ${problem.message}`,
        );
      }
    }
    for (const id of reported) {
      if (!now.has(id)) {
        const key = id.slice(0, id.indexOf('\n'));
        logger.info({ event: 'registry.problem-resolved', key }, `registry: ${key}: resolved`);
      }
    }
    reported = now;
  };
  reportProblems();
  const timer = setInterval(reportProblems, PROBLEM_CHECK_MS);
  timer.unref();
  const unsubscribe = registry.onChange((change) => {
    logger.info(
      {
        event: 'registry.changed',
        added: change.added,
        removed: change.removed,
        tools: change.tools.list().length,
      },
      `registry: ${change.tools.list().length} tools` +
        (change.added.length ? `; added ${change.added.join(', ')}` : '') +
        (change.removed.length ? `; removed ${change.removed.join(', ')}` : ''),
    );
    reportProblems();
  });
  return () => {
    clearInterval(timer);
    unsubscribe();
  };
}

/** `DynamicToolService` hooks that log failed calls and malformed requests of the service `id`. */
export function logServiceErrors(logger: CliLogger): DynamicToolServiceHooks {
  return {
    onCallError: (event) => {
      // A tool's own failure is the service's error; refusals and cancellations are the caller's business.
      const level = event.error.type === 'tool-service-error' ? 'error' : 'debug';
      logger[level](
        { event: 'service.call-failed', service: event.service, id: event.id, type: event.error.type },
        `service '${event.service}': call '${event.id}' failed (${event.error.type}): ${event.error.message}`,
      );
    },
    onMalformedMessage: (event) =>
      logger.warn(
        { event: 'service.malformed-request', service: event.service, id: event.id },
        `service '${event.service}': ${event.reason}`,
      ),
    onPublishError: (event) =>
      logger.error(
        { event: 'service.publish-failed', service: event.service, id: event.id },
        `service '${event.service}': could not send the answer to '${event.id}': ${String((event.error as Error)?.message ?? event.error)}`,
      ),
  };
}

/** A NatsBus `onStatus` hook that logs the disconnects and reconnects (with the outage's length). */
export function logBusStatus(logger: CliLogger, what: string): (status: NatsBusStatus) => void {
  return (status) => {
    switch (status.type) {
      case 'disconnect':
        logger.warn(
          { event: 'bus.disconnected', bus: what, server: status.server },
          `${what} lost its connection to NATS${status.server ? ` at ${status.server}` : ''}; reconnecting`,
        );
        break;
      case 'reconnect':
        logger.info(
          { event: 'bus.reconnected', bus: what, server: status.server, outageMs: status.outageMs },
          `${what} reconnected to NATS` +
            (status.outageMs === undefined ? '' : ` after ${(status.outageMs / 1000).toFixed(1)} s`),
        );
        break;
      case 'error':
        logger.error(
          { event: 'bus.error', bus: what, error: status.error?.message },
          `${what}: NATS error: ${status.error?.message ?? 'unknown'}`,
        );
        break;
      case 'ldm':
        logger.warn(
          { event: 'bus.lame-duck', bus: what, server: status.server },
          `NATS server going away (lame duck)`,
        );
        break;
    }
  };
}
