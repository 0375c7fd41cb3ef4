/**
 * @module The seed's joke service on toolbus: `style` from config (`pun`, `dad-joke`, `one-liner`),
 * `topic` from the model's arguments, and a reply that greets the user.
 *
 * Run it on its own (the module's default export is what `toolbus service` expects):
 * ```sh
 * toolbus service examples/joke-service/service.ts --nats nats://127.0.0.1:4222
 * ```
 * then load `joke-service.json` (config type `tool-service`) and `tell-joke.json` / `tell-dad-joke.json`
 * (config type `tool`).
 */
import { DynamicToolService, ToolbusError } from '../../src/index.js';
import type { MessageBus, ToolServiceInvokeContext } from '../../src/index.js';
import { JokeStyle, STYLE_LABELS, isJokeStyle, pickJoke } from './jokes.js';

/** Options of {@link createJokeService}. */
export interface JokeServiceOptions {
  /** The service id. @default 'joke-service' */
  id?: string;
  /** Queues `non-persistent://tg/request/{topic}` and `…/response/{topic}`. @default 'joke' */
  topic?: string;
  /** Send the reply in chunks (`ctx.write`) instead of one response. @default false */
  streaming?: boolean;
  /** Pause between chunks when streaming. @default 20 */
  chunkDelayMs?: number;
  /** Picks among the jokes; returns a number in [0, 1). @default Math.random */
  random?: () => number;
  /** @default 16 */
  concurrency?: number;
}

/**
 * Builds the reply: `Hey alice! Here's a pun for you:\n\n<joke>`.
 * @throws ToolbusError `invalid-arguments` for an unknown style or a non-string topic.
 */
export function tellJoke(
  user: string,
  config: Record<string, unknown>,
  args: Record<string, unknown>,
  random: () => number = Math.random,
): string {
  const rawStyle = config['style'];
  let style: JokeStyle;
  if (rawStyle === undefined || rawStyle === null || rawStyle === '') {
    // The seed picks a random style when the tool sets none.
    const styles = Object.values(JokeStyle);
    style = styles[Math.min(styles.length - 1, Math.floor(random() * styles.length))]!;
  } else if (isJokeStyle(rawStyle)) {
    style = rawStyle;
  } else {
    throw new ToolbusError(
      'invalid-arguments',
      `joke-service: config 'style' must be one of ${Object.values(JokeStyle).join(', ')}, got ${JSON.stringify(rawStyle)}`,
    );
  }
  const topic = args['topic'] ?? '';
  if (typeof topic !== 'string') {
    throw new ToolbusError(
      'invalid-arguments',
      `joke-service: argument 'topic' must be a string, got ${typeof topic}`,
    );
  }
  const greeting = user ? `Hey ${user}!` : 'Hey there!';
  return `${greeting} Here's a ${STYLE_LABELS[style]} for you:\n\n${pickJoke(style, topic, random)}`;
}

/** Splits text into chunks of a few words, keeping the spacing, so joining them gives the text back. */
export function chunkText(text: string, wordsPerChunk = 3): string[] {
  const tokens = text.match(/\S+\s*/g) ?? [text];
  const chunks: string[] = [];
  for (let i = 0; i < tokens.length; i += wordsPerChunk)
    chunks.push(tokens.slice(i, i + wordsPerChunk).join(''));
  return chunks;
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) {
      reject(signal.reason);
      return;
    }
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(signal.reason);
    };
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

/**
 * Creates the joke service (not started).
 * @example
 * ```ts
 * const service = createJokeService(bus, { streaming: true });
 * await service.start();
 * ```
 */
export function createJokeService(bus: MessageBus, options: JokeServiceOptions = {}): DynamicToolService {
  const random = options.random ?? Math.random;
  const chunkDelayMs = options.chunkDelayMs ?? 20;
  return new DynamicToolService({
    bus,
    id: options.id ?? 'joke-service',
    topic: options.topic ?? 'joke',
    concurrency: options.concurrency,
    invoke: options.streaming
      ? async (user, config, args, ctx: ToolServiceInvokeContext) => {
          const chunks = chunkText(tellJoke(user, config, args, random));
          for (const [i, chunk] of chunks.entries()) {
            if (i > 0) await sleep(chunkDelayMs, ctx.signal);
            await ctx.write(chunk);
          }
          return undefined;
        }
      : (user, config, args) => tellJoke(user, config, args, random),
  });
}

/** The contract of `toolbus service <module>`: take the bus, return the service. */
export default function jokeService(bus: MessageBus): DynamicToolService {
  return createJokeService(bus);
}
