/**
 * @module `TypeSubscription`: topics of one type go to agents of one type, keyed by the topic's source.
 */
import { randomUUID } from 'node:crypto';
import { AgentId } from './agent-id.js';
import type { TopicId } from './agent-id.js';
import type { Subscription } from './agent-runtime.js';

/**
 * Delivers every message published on topics of `topicType` to the agent of `agentType` whose key is
 * the topic's `source`, so each session (source) gets its own instance.
 *
 * @example
 * ```ts
 * await runtime.addSubscription(new TypeSubscription('questions', 'tool_use_agent'));
 * await runtime.publishMessage(new Message('hi'), new TopicId('questions', 'session-1'));
 * ```
 */
export class TypeSubscription implements Subscription {
  readonly id: string;
  readonly topicType: string;
  readonly agentType: string;

  constructor(topicType: string, agentType: string, id: string = randomUUID()) {
    this.topicType = topicType;
    this.agentType = agentType;
    this.id = id;
  }

  isMatch(topic: TopicId): boolean {
    return topic.type === this.topicType;
  }

  mapToAgent(topic: TopicId): AgentId {
    return new AgentId(this.agentType, topic.source);
  }
}
