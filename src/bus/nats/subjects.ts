/**
 * @module How a toolbus topic becomes a NATS subject.
 *
 * The topic is parsed by `topicParts()` (src/bus/topics.ts), so every written form of one topic maps to
 * one subject; the parts are joined with `.`, behind an optional prefix:
 *
 * | topic                                  | subject (no prefix)  | subject (prefix `tb`)   |
 * |----------------------------------------|----------------------|-------------------------|
 * | `non-persistent://tg/request/joke`     | `request.tg.joke`    | `tb.request.tg.joke`    |
 * | `persistent://tg/request/joke`         | `request.tg.joke`    | `tb.request.tg.joke`    |
 * | `request:tg:joke`                      | `request.tg.joke`    | `tb.request.tg.joke`    |
 * | `request:tg:agent:ws1:flow1`           | `request.tg.agent.ws1.flow1` | `tb.request…`   |
 * | `tool-descriptors`                     | `tool-descriptors`   | `tb.tool-descriptors`   |
 *
 * A `.` inside a topic part stays a subject token separator, so `request:tg:joke.v2` and
 * `request:tg:joke:v2` are the same subject. Parts never contain `*`, `>` or whitespace (topics.ts rejects
 * them), and an empty token (`a..b`, a leading or trailing dot) is rejected here, so a topic can never
 * become a wildcard or an invalid subject.
 */
import { ToolbusError } from '../../errors/index.js';
import { topicParts } from '../index.js';

const TOKEN = /^[A-Za-z0-9_-]+$/;
const PREFIX = /^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$/;

/**
 * Maps a topic in any accepted form to its NATS subject.
 * @param prefix subject tokens put in front, e.g. `tb` or `acme.prod`; `''` for none.
 * @throws ToolbusError `invalid-config` when the topic or the prefix cannot form a subject.
 * @example
 * ```ts
 * topicToSubject('non-persistent://tg/request/joke'); // 'request.tg.joke'
 * ```
 */
export function topicToSubject(topic: string, prefix = ''): string {
  const tokens = topicParts(topic).flatMap((part) => part.split('.'));
  if (!tokens.every((token) => TOKEN.test(token))) {
    throw new ToolbusError(
      'invalid-config',
      `topic '${topic}' cannot be a NATS subject: a dot inside a part must separate two non-empty names`,
    );
  }
  const subject = tokens.join('.');
  return prefix === '' ? subject : `${checkSubjectPrefix(prefix)}.${subject}`;
}

/**
 * Validates a subject prefix (dot-separated tokens of `[A-Za-z0-9_-]`) and returns it.
 * @throws ToolbusError `invalid-config`.
 */
export function checkSubjectPrefix(prefix: string): string {
  if (!PREFIX.test(prefix)) {
    throw new ToolbusError(
      'invalid-config',
      `subject prefix '${prefix}' is not valid: expected dot-separated names of [A-Za-z0-9_-], e.g. 'toolbus'`,
    );
  }
  return prefix;
}
