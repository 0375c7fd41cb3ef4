/**
 * @module A run's tool-call progress as `progress` events, coalesced: a tool may report per row or per
 * chunk, and each report would otherwise become an event, a bus message and an SSE frame. Both agents
 * use it.
 */
import type { ToolProgress } from '../tools/index.js';
import type { AgentEvent, AgentRunOptions } from './agent.js';
import { encodeAgentProgress } from './wire.js';

/** The least time between two progress events of one call. */
export const PROGRESS_EVENT_INTERVAL_MS = 100;
/** The longest `message` an event carries: a tool service's chunk (its message) can be megabytes. */
export const MAX_PROGRESS_MESSAGE_CHARS = 2000;

/** The call whose progress is reported. */
export interface ProgressCall {
  iteration: number;
  toolName: string;
  callId: string;
}

/** One call's progress events (see {@link callProgress}). */
export interface CallProgress {
  /** The call's `onProgress`: emits the report now, or holds it back as the latest. */
  readonly report: (update: ToolProgress) => void;
  /** Emits the report still held back, if any; later reports are ignored. Call it before the observation. */
  end(): void;
}

/**
 * The progress events of one tool call, or undefined when the run does not want them (no `onEvent`, or
 * `progress: false`): then the call gets no `onProgress` and the tool sees no `ctx.progress`.
 *
 * The first report is emitted at once; after an event, reports within `intervalMs` are held back, the
 * latest replacing the one before, and the one held is emitted when the interval is over or at
 * {@link CallProgress.end}: the last report the tool sent is never lost.
 */
export function callProgress(
  options: Pick<AgentRunOptions, 'onEvent' | 'progress'>,
  emit: (event: AgentEvent) => void,
  call: ProgressCall,
  intervalMs: number = PROGRESS_EVENT_INTERVAL_MS,
): CallProgress | undefined {
  if (!options.onEvent || options.progress === false) return undefined;
  let last = -Infinity;
  let pending: ToolProgress | undefined;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let ended = false;
  const send = (update: ToolProgress): void => {
    last = Date.now();
    emit({
      type: 'progress',
      content: encodeAgentProgress({ callId: call.callId, toolName: call.toolName, progress: update }),
      endOfMessage: true,
      iteration: call.iteration,
      toolName: call.toolName,
      callId: call.callId,
      progress: update,
    });
  };
  const flush = (): void => {
    timer = undefined;
    const update = pending;
    pending = undefined;
    if (update) send(update);
  };
  return {
    report(update) {
      const copy = ended ? undefined : normalize(update);
      if (!copy) return;
      const now = Date.now();
      if (timer === undefined && now - last >= intervalMs) return send(copy);
      pending = copy;
      // Clamped: a clock set back must not hold a report for longer than one interval.
      timer ??= setTimeout(flush, Math.min(intervalMs, Math.max(0, last + intervalMs - now)));
    },
    end() {
      if (ended) return;
      ended = true;
      clearTimeout(timer);
      flush();
    },
  };
}

/**
 * A copy of the report (a tool may reuse its object) with a cut message; undefined for one that is not
 * a report, from a tool written in JavaScript, which no client could decode.
 */
function normalize(update: ToolProgress): ToolProgress | undefined {
  const { progress, total, message } = update as Partial<Record<keyof ToolProgress, unknown>>;
  if (typeof progress !== 'number' || !Number.isFinite(progress)) return undefined;
  return {
    progress,
    ...(typeof total === 'number' && Number.isFinite(total) ? { total } : {}),
    ...(typeof message === 'string' ? { message: clip(message) } : {}),
  };
}

function clip(text: string): string {
  if (text.length <= MAX_PROGRESS_MESSAGE_CHARS) return text;
  let end = MAX_PROGRESS_MESSAGE_CHARS;
  const code = text.charCodeAt(end - 1);
  if (code >= 0xd800 && code <= 0xdbff) end--; // never half a surrogate pair
  return `${text.slice(0, end)}…`;
}
