/**
 * @module The one place where topic names are mapped.
 *
 * Rule: a topic can be written three ways, and all name the same topic.
 *
 * | written as                          | parts                       | canonical form     |
 * |-------------------------------------|-----------------------------|--------------------|
 * | `non-persistent://tg/request/joke`  | tenant tg, namespace request, name joke | `request:tg:joke` |
 * | `persistent://tg/request/joke`      | same, persistence noted     | `request:tg:joke`  |
 * | `request:tg:joke`                   | namespace:tenant:name       | `request:tg:joke`  |
 * | `tool-descriptors` (a bare name)    | one part                    | `tool-descriptors` |
 *
 * Buses key subscriptions by the canonical form. A bus whose native names differ (NATS subjects) derives
 * them from {@link topicParts}, e.g. `request:tg:joke` → subject `request.tg.joke`.
 */
import { ToolbusError } from '../errors/index.js';

/** A parsed topic name. */
export interface TopicName {
  /** The canonical, backend-neutral form: `namespace:tenant:name` or a bare name. */
  canonical: string;
  /** The canonical form split on `:`. Each part matches `[A-Za-z0-9_-]+` (plus `.` inside a name part). */
  parts: string[];
  /** True for `persistent://`; false for `non-persistent://` and logical names. */
  persistent: boolean;
}

const PULSAR = /^(persistent|non-persistent):\/\/([^/\s]+)\/([^/\s]+)\/([^/\s]+)$/;
const PART = /^[A-Za-z0-9_.-]+$/;

/** How many parsed names {@link parseTopic} remembers, and the longest it remembers. */
const PARSED_KEPT = 1_024;
const PARSED_MAX_LENGTH = 256;

/**
 * Names parsed before, oldest first: a registry parses the same few queue names for every tool of a
 * service (six times per tool). A pure cache of a pure function (entries are never handed out, only
 * copies), bounded, which is why this module-level map does not break the no-mutable-state rule.
 */
const parsed = new Map<string, TopicName>();

/**
 * Parses a topic written in any of the accepted forms.
 * @throws ToolbusError `invalid-config` when the name is empty or has characters outside `[A-Za-z0-9_.-]`.
 */
export function parseTopic(name: string): TopicName {
  const known = remembered(name);
  return { canonical: known.canonical, parts: [...known.parts], persistent: known.persistent };
}

/** The canonical form of a topic name (see the module table). */
export function canonicalTopic(name: string): string {
  return remembered(name).canonical;
}

function remembered(name: string): TopicName {
  let known = parsed.get(name);
  if (known === undefined) {
    known = parse(name);
    if (name.length > PARSED_MAX_LENGTH) return known;
    if (parsed.size >= PARSED_KEPT) parsed.delete(parsed.keys().next().value!);
    parsed.set(name, known);
  }
  return known;
}

function parse(name: string): TopicName {
  const pulsar = PULSAR.exec(name);
  let parts: string[];
  let persistent = false;
  if (pulsar) {
    const [, kind, tenant, namespace, local] = pulsar as unknown as [string, string, string, string, string];
    parts = [namespace, tenant, local];
    persistent = kind === 'persistent';
  } else {
    parts = name.split(':');
  }
  if (parts.length === 0 || parts.some((p) => !PART.test(p))) {
    throw new ToolbusError(
      'invalid-config',
      `topic '${name}' is not a valid topic name: expected 'non-persistent://tenant/namespace/name', ` +
        `'persistent://tenant/namespace/name', 'namespace:tenant:name' or a bare name of [A-Za-z0-9_.-]`,
    );
  }
  return { canonical: parts.join(':'), parts, persistent };
}

/** The parts of a topic name, e.g. `['request', 'tg', 'joke']`. */
export function topicParts(name: string): string[] {
  return parseTopic(name).parts;
}

/**
 * The default queues of a tool service with the given topic, as TrustGraph's `DynamicToolService`
 * builds them: `non-persistent://tg/request/{topic}` and `non-persistent://tg/response/{topic}`.
 */
export function defaultServiceQueues(topic: string): { requestQueue: string; responseQueue: string } {
  return {
    requestQueue: `non-persistent://tg/request/${topic}`,
    responseQueue: `non-persistent://tg/response/${topic}`,
  };
}
