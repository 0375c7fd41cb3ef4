/**
 * @module The ReAct text protocol: `Thought:`, `Action:`, `Args: {json}`, `Final Answer:` (TrustGraph's
 * format), parsed whole or as a stream.
 */

/** The model chose a tool. `args` keeps the JSON types the model wrote (numbers stay numbers). */
export interface ReActAction {
  type: 'action';
  thought: string;
  action: string;
  args: Record<string, unknown>;
}

/** The model answered. */
export interface ReActFinal {
  type: 'final';
  thought: string;
  answer: string;
}

/** The text does not follow the protocol; `message` says what was wrong, for the model. */
export interface ReActParseFailure {
  type: 'error';
  thought: string;
  message: string;
}

/** The outcome of {@link parseReActResponse}. */
export type ReActStep = ReActAction | ReActFinal | ReActParseFailure;

/** The protocol, restated to a model after a parse failure and used in the system prompt. */
export const REACT_FORMAT = [
  'Answer in exactly this format:',
  'Thought: <your reasoning>',
  'then either',
  'Action: <the name of one tool>',
  'Args: <the arguments as one JSON object, e.g. {"topic": "cats"}>',
  'or, when you know the answer,',
  'Final Answer: <the answer>',
].join('\n');

const MARKERS = ['thought', 'action input', 'action', 'args', 'final answer', 'observation'] as const;
type Marker = (typeof MARKERS)[number];
const MARKER_LINE =
  /^[ \t]*(?:\*\*)?(thought|action input|action|args|final answer|observation)(?:\*\*)?[ \t]*:(?:\*\*)?[ \t]?/i;
const FENCE_LINE = /^[ \t]*```[\w-]*[ \t]*$/;

/** The marker a line starts with, and where its content starts. */
function markerOf(line: string): { marker: Marker; rest: number } | undefined {
  const m = MARKER_LINE.exec(line);
  if (!m) return undefined;
  return { marker: (m[1] as string).toLowerCase() as Marker, rest: m[0].length };
}

/** Removes a code fence wrapping the whole text. */
function stripOuterFence(text: string): string {
  const lines = text.trim().split(/\r?\n/);
  if (lines.length >= 2 && FENCE_LINE.test(lines[0] as string)) {
    lines.shift();
    if (lines.length > 0 && FENCE_LINE.test(lines[lines.length - 1] as string)) lines.pop();
  }
  return lines.join('\n');
}

/**
 * Collects one JSON value starting at `text` by counting braces and brackets outside strings, so JSON
 * split across lines (or followed by other text) is found. Returns undefined when it never closes.
 */
function collectJson(text: string): string | undefined {
  const start = text.search(/[{[]/);
  if (start < 0) return undefined;
  let depth = 0;
  let inString = false;
  let escaped = false;
  for (let i = start; i < text.length; i++) {
    const c = text[i];
    if (inString) {
      if (escaped) escaped = false;
      else if (c === '\\') escaped = true;
      else if (c === '"') inString = false;
      continue;
    }
    if (c === '"') inString = true;
    else if (c === '{' || c === '[') depth++;
    else if (c === '}' || c === ']') {
      depth--;
      if (depth === 0) return text.slice(start, i + 1);
    }
  }
  return undefined;
}

function unquote(name: string): string {
  return name
    .trim()
    .replace(/^[`'"*]+|[`'"*]+$/g, '')
    .trim();
}

/**
 * Parses one model reply in the ReAct format. Tolerates a code fence around the whole reply or around
 * the JSON, a thought or answer over several lines, JSON split across lines, `**bold**` markers, quoted
 * tool names, and a hallucinated `Observation:` after the action (ignored). `Action Input:` is accepted
 * for `Args:`. Never throws: a reply outside the protocol gives `{ type: 'error' }`.
 *
 * @example
 * ```ts
 * parseReActResponse('Thought: need a joke\nAction: tell-joke\nArgs: {"topic": "cats"}');
 * // { type: 'action', thought: 'need a joke', action: 'tell-joke', args: { topic: 'cats' } }
 * ```
 */
export function parseReActResponse(text: string): ReActStep {
  const lines = stripOuterFence(text).split(/\r?\n/);
  const thought: string[] = [];
  let section: Marker | 'none' = 'none';
  let action: string | undefined;
  let argsText: string[] | undefined;
  let answer: string[] | undefined;
  for (const line of lines) {
    if (answer !== undefined) {
      answer.push(line);
      continue;
    }
    const found = markerOf(line);
    if (found) {
      const rest = line.slice(found.rest);
      if (found.marker === 'observation') break;
      if (found.marker === 'final answer') {
        if (action !== undefined) break; // an action came first: the answer is hallucinated
        answer = [rest];
        continue;
      }
      if (found.marker === 'thought') {
        if (action !== undefined) break; // the next step, hallucinated
        section = 'thought';
        if (rest.trim()) thought.push(rest);
        continue;
      }
      if (found.marker === 'action') {
        if (action !== undefined) break;
        section = 'action';
        action = unquote(rest);
        continue;
      }
      // args / action input
      if (action === undefined && section !== 'action') {
        return {
          type: 'error',
          thought: thought.join('\n').trim(),
          message: "found 'Args:' before 'Action:'",
        };
      }
      section = 'args';
      argsText = [rest];
      continue;
    }
    if (section === 'args') argsText?.push(line);
    else if (section === 'thought' || section === 'none') {
      if (!FENCE_LINE.test(line)) thought.push(line);
    } else if (section === 'action' && action === '' && line.trim()) {
      action = unquote(line);
    }
  }
  const thoughtText = thought.join('\n').trim();
  if (answer !== undefined) {
    const answerText = stripOuterFence(answer.join('\n')).trim();
    return { type: 'final', thought: thoughtText, answer: answerText };
  }
  if (action === undefined) {
    return {
      type: 'error',
      thought: thoughtText,
      message: "the reply has neither an 'Action:' line nor a 'Final Answer:' line",
    };
  }
  if (action === '')
    return { type: 'error', thought: thoughtText, message: "the 'Action:' line names no tool" };
  let args: Record<string, unknown> = {};
  if (argsText !== undefined) {
    const raw = argsText.filter((l) => !FENCE_LINE.test(l)).join('\n');
    if (raw.trim() !== '') {
      const json = collectJson(raw);
      if (json === undefined) {
        return {
          type: 'error',
          thought: thoughtText,
          message: `the 'Args:' of action '${action}' is not a complete JSON object`,
        };
      }
      let value: unknown;
      try {
        value = JSON.parse(json);
      } catch (error) {
        return {
          type: 'error',
          thought: thoughtText,
          message: `the 'Args:' of action '${action}' is not valid JSON (${(error as Error).message.slice(0, 120)})`,
        };
      }
      if (value === null || typeof value !== 'object' || Array.isArray(value)) {
        return {
          type: 'error',
          thought: thoughtText,
          message: `the 'Args:' of action '${action}' must be a JSON object, got ${Array.isArray(value) ? 'an array' : typeof value}`,
        };
      }
      args = value as Record<string, unknown>;
    }
  }
  return { type: 'action', thought: thoughtText, action, args };
}

/** A piece of text emitted by {@link StreamingReActParser} as soon as it is known. */
export interface ReActChunk {
  /** `thought` text, or `answer` text (everything after `Final Answer:`). */
  kind: 'thought' | 'answer';
  text: string;
}

const MARKER_PREFIXES = MARKERS.map((m) => `${m}:`);

/** True while `line` could still become a fence line (an empty line too) once more text arrives. */
function partialFence(line: string): boolean {
  return /^[ \t]*(?:`{1,3}[\w-]*)?$/.test(line);
}

/** True while `line` could still become a marker line once more text arrives. */
function couldBeMarker(line: string): boolean {
  // `*` alone may become `**`, and `**Thought*` may become `**Thought**:`.
  const normalized = line.replace(/^[ \t]*\*{0,2}/, '').toLowerCase();
  if (normalized === '') return true;
  return MARKER_PREFIXES.some(
    (m) => m.startsWith(normalized) || m.startsWith(normalized.replace(/\*{1,2}$/, '')),
  );
}

/**
 * Parses a reply as it streams in: {@link push} returns the thought and answer text that became certain
 * with this chunk, so it can be shown at once; markers split across chunks (`Fin` + `al Answer:`) are held
 * back until they are decided. {@link finish} returns the complete {@link ReActStep}, as
 * {@link parseReActResponse} would for the whole text.
 *
 * @example
 * ```ts
 * const parser = new StreamingReActParser();
 * for await (const chunk of stream) for (const piece of parser.push(chunk)) show(piece);
 * const step = parser.finish();
 * ```
 */
export class StreamingReActParser {
  #text = '';
  #lineStart = 0;
  #emitted = 0;
  #classified = false;
  #section: Marker | 'none' = 'none';
  #sectionHasText = false;
  /**
   * Text held since the section's last emitted piece: line ends (so blank lines between paragraphs
   * stay) and, in the answer, fence lines (the reply's closing outer fence is not part of the answer).
   * Emitted before the section's next piece.
   */
  #pending = '';
  /** The current line is a code fence line. */
  #fenceLine = false;
  /** The answer opened with a fence line (dropped), so its closing fence is not part of it either. */
  #answerFenced = false;
  #done = false;

  /** The whole text received so far. */
  get text(): string {
    return this.#text;
  }

  /** Adds a chunk; returns the thought and answer pieces that are now certain. */
  push(chunk: string): ReActChunk[] {
    this.#text += chunk;
    return this.#scan(false);
  }

  /** Ends the stream: flushes held text (as {@link push} would) and parses the whole reply. */
  finish(): { chunks: ReActChunk[]; step: ReActStep } {
    const chunks = this.#scan(true);
    if (this.#section === 'final answer' && !this.#done && this.#pending.trim() !== '') {
      // Held fence lines end the answer, except the closing fence of a reply wrapped in one, which
      // parseReActResponse strips too.
      let held = this.#pending.trimEnd();
      let outer =
        (this.#answerFenced ? 1 : 0) +
        (FENCE_LINE.test(this.#text.trim().split(/\r?\n/)[0] as string) ? 1 : 0);
      for (; outer > 0 && FENCE_LINE.test(held.slice(held.lastIndexOf('\n') + 1)); outer--) {
        held = held.slice(0, Math.max(0, held.lastIndexOf('\n'))).trimEnd();
      }
      if (held.trim() !== '') chunks.push({ kind: 'answer', text: held });
      this.#pending = '';
    }
    return { chunks, step: parseReActResponse(this.#text) };
  }

  #scan(final: boolean): ReActChunk[] {
    const out: ReActChunk[] = [];
    while (!this.#done) {
      const newline = this.#text.indexOf('\n', this.#lineStart);
      const complete = newline >= 0;
      const lineEnd = complete ? newline : this.#text.length;
      const line = this.#text.slice(this.#lineStart, lineEnd).replace(/\r$/, '');
      if (!this.#classified) {
        const found = this.#section === 'final answer' ? undefined : markerOf(line);
        if (this.#section === 'final answer') {
          if (!complete && !final && partialFence(line)) break; // undecided: a fence may still be forming
          this.#fenceLine = FENCE_LINE.test(line);
          this.#emitted = this.#lineStart;
        } else if (found) {
          const rest = line.slice(found.rest);
          const answer = found.marker === 'final answer';
          // `**Thought:` may still get its closing `**`, which belongs to the marker, not the text.
          if (!complete && !final && /^\*?$/.test(rest) && /^[ \t]*\*\*/.test(line)) break;
          if (answer && !complete && !final && partialFence(rest)) break; // `Final Answer: ``` ` may follow
          this.#enter(found.marker);
          if (this.#done) break;
          this.#fenceLine = answer && FENCE_LINE.test(rest);
          this.#emitted = this.#lineStart + found.rest;
        } else if (!complete && !final && (couldBeMarker(line) || partialFence(line))) {
          break; // undecided: a marker or a fence may still be forming
        } else {
          this.#fenceLine = FENCE_LINE.test(line);
          this.#emitted = this.#fenceLine ? lineEnd : this.#lineStart; // a fence line is not content
        }
        this.#classified = true;
      }
      const kind =
        this.#section === 'thought' || this.#section === 'none'
          ? 'thought'
          : this.#section === 'final answer'
            ? 'answer'
            : undefined;
      let piece = this.#text.slice(this.#emitted, lineEnd).replace(/\r$/, '');
      if (!this.#sectionHasText && this.#pending === '') piece = piece.trimStart();
      if (kind === 'answer' && this.#fenceLine && !this.#sectionHasText && this.#pending.trim() === '') {
        this.#answerFenced = true; // a fence opening the answer is dropped, as parseReActResponse does
      } else if (kind === 'answer' && this.#fenceLine) {
        this.#pending += piece; // held until text follows it (see #pending)
      } else if (kind && piece !== '') {
        out.push({ kind, text: this.#pending + piece });
        this.#sectionHasText = true;
        this.#pending = '';
      }
      this.#emitted = lineEnd;
      if (!complete) break;
      this.#lineStart = newline + 1;
      this.#emitted = this.#lineStart;
      this.#classified = false;
      // A fence line skipped in a thought leaves no blank line behind (parseReActResponse drops it too).
      const skipped = this.#fenceLine && (kind !== 'answer' || (this.#answerFenced && !this.#sectionHasText));
      if (!skipped && (this.#sectionHasText || this.#pending !== '')) this.#pending += '\n';
      this.#fenceLine = false;
    }
    return out;
  }

  #enter(marker: Marker): void {
    const acted = this.#section === 'action' || this.#section === 'args' || this.#section === 'action input';
    if (
      marker === 'observation' ||
      (acted && (marker === 'thought' || marker === 'final answer' || marker === 'action'))
    ) {
      this.#done = true; // the rest is a hallucinated next step
      return;
    }
    this.#section = marker;
    this.#sectionHasText = false;
    this.#pending = '';
    this.#fenceLine = false;
  }
}
