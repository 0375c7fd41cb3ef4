/**
 * @module The `MessageBus` contract: publish, subscribe, close. Request/response correlation lives above
 * it, once, in `services/`.
 */
import type { ToolbusError } from '../errors/index.js';
import type { Hook } from '../tools/index.js';
import type { DurableCalls } from './durable.js';

/** Message properties: string keys and values (Pulsar properties, NATS headers). `id` correlates calls. */
export type BusProperties = Readonly<Record<string, string>>;

/** A message as a subscriber receives it. */
export interface BusMessage {
  /** The topic as the subscriber named it. */
  readonly topic: string;
  /** The raw body bytes. */
  readonly body: Uint8Array;
  /**
   * The body as text, when the bus has it at no cost (`MemoryBus` given a string): readers may use it
   * instead of decoding `body`. Optional; `undefined` on buses that carry bytes.
   */
  readonly text?: string;
  readonly properties: BusProperties;
}

/**
 * Receives messages. A rejected promise or a thrown error is caught and reported by the bus; it never
 * stops the subscription or crashes the process.
 */
export type BusHandler = (message: BusMessage) => void | Promise<void>;

/** Options of {@link MessageBus.subscribe}. */
export interface SubscribeOptions {
  /**
   * Subscribers sharing a group compete: each message reaches exactly one of them. Without a group, every
   * subscriber gets every message. @default undefined (broadcast)
   */
  group?: string;
}

/** Options of {@link MessageBus.publish}. */
export interface PublishOptions {
  /**
   * Called at most once, possibly after `publish` has resolved, when the bus learns that nobody was
   * subscribed to the topic (NATS: the no-responders signal). Lets a caller fail fast with `unavailable`.
   * @default undefined
   */
  onUnavailable?: (error: ToolbusError) => void;
}

/** A live subscription. */
export interface BusSubscription {
  /**
   * Stops delivery; resolves once nothing more will be delivered. A message already on its way to this
   * subscriber (routed to it by the broker) is still delivered, or, in a group, given to another member:
   * it is never lost. Idempotent.
   */
  unsubscribe(): Promise<void>;
}

/** What {@link BusHooks.onHandlerError} sees: the handler's error and the message it was handling. */
export interface BusHandlerErrorEvent {
  error: unknown;
  message: BusMessage;
}

/** Hooks a bus calls to report problems it absorbed instead of crashing. Each takes one function or a list. */
export interface BusHooks {
  /** A handler threw or rejected; delivery goes on. @default none */
  onHandlerError?: Hook<BusHandlerErrorEvent>;
}

/**
 * The small transport the tool-service protocol runs on. Implemented by `MemoryBus` (in-process) and
 * `NatsBus` (`toolbus/nats`). Topic names follow `topics.ts`: `non-persistent://tg/request/joke`,
 * `persistent://…` and `request:tg:joke` name the same topic.
 */
export interface MessageBus {
  /** Sends a message. Rejects with code `closed` after {@link close}. */
  publish(
    topic: string,
    body: Uint8Array | string,
    properties?: BusProperties,
    options?: PublishOptions,
  ): Promise<void>;
  /** Registers a handler; resolves once the subscription is active. */
  subscribe(topic: string, handler: BusHandler, options?: SubscribeOptions): Promise<BusSubscription>;
  /** Closes the bus and every subscription. Idempotent. */
  close(): Promise<void>;
  /**
   * False while the bus has lost its broker (a `NatsBus` between a disconnect and the reconnect) or once
   * it closed; true when connected. A bus without a broker (`MemoryBus`) may leave it out: read `undefined`
   * as connected.
   */
  readonly connected?: boolean;
  /**
   * Durable calls on this bus: a work queue per service and a store of call states (see `durable.ts`).
   * `MemoryBus` and `NatsBus` have it; a bus without it serves request/response only.
   */
  readonly durable?: DurableCalls;
}
