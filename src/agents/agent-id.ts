/**
 * @module Agent and topic identities of the runtime: `AgentId { type, key }`, `AgentType`, `TopicId`.
 */
import { ToolbusError } from '../errors/index.js';

const AGENT_TYPE = /^[\w.-]+$/;
const TOPIC_TYPE = /^[\w.:=-]+$/;

/**
 * Names one agent instance: its registered `type` and a `key` (one instance per key, created lazily).
 * The string form is `type/key`.
 *
 * @example
 * ```ts
 * const id = new AgentId('tool_use_agent', 'default');
 * await runtime.sendMessage(new Message('hi'), id);
 * ```
 */
export class AgentId {
  /** The registered agent type, matching `[A-Za-z0-9_.-]+`. */
  readonly type: string;
  /** The instance key. @default 'default' */
  readonly key: string;

  /** @throws ToolbusError `invalid-name` when `type` has characters outside `[A-Za-z0-9_.-]`. */
  constructor(type: string, key = 'default') {
    if (!AGENT_TYPE.test(type)) {
      throw new ToolbusError(
        'invalid-name',
        `agent type '${type}' is not valid: expected letters, digits, '_', '-' or '.'`,
      );
    }
    this.type = type;
    this.key = key;
  }

  /** True when both name the same instance. */
  equals(other: AgentId | undefined): boolean {
    return other !== undefined && other.type === this.type && other.key === this.key;
  }

  /** `type/key`. */
  toString(): string {
    return `${this.type}/${this.key}`;
  }
}

/** A registered agent type, as `register` returns it. */
export interface AgentType {
  readonly type: string;
}

/**
 * A topic messages are published to: its `type` (what kind of event) and `source` (the context, e.g. a
 * session id). A type subscription maps the source onto the key of the receiving agent.
 */
export class TopicId {
  readonly type: string;
  /** @default 'default' */
  readonly source: string;

  /** @throws ToolbusError `invalid-name` when `type` has characters outside `[A-Za-z0-9_.:=-]`. */
  constructor(type: string, source = 'default') {
    if (!TOPIC_TYPE.test(type)) {
      throw new ToolbusError(
        'invalid-name',
        `topic type '${type}' is not valid: expected letters, digits, '_', '-', '.', ':' or '='`,
      );
    }
    this.type = type;
    this.source = source;
  }

  /** `type/source`. */
  toString(): string {
    return `${this.type}/${this.source}`;
  }
}
