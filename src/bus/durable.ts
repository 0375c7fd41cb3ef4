/**
 * @module The durable-delivery contract: a work queue whose requests outlive the process that runs them
 * ({@link DurableQueue}), and a store of call states that outlive their caller ({@link CallStore}).
 * A bus offers both as {@link MessageBus.durable}: `MemoryBus` in process (results in memory or SQLite,
 * no crash recovery), `NatsBus` on JetStream (a work-queue stream per service, results in a KV bucket).
 */
import type { BusMessage, BusProperties, BusSubscription } from './message-bus.js';
import type { ContentPart } from '../tools/index.js';

/** Where a durable call is. `queued` and `running` are live; the other three are final. */
export type CallStatus = 'queued' | 'running' | 'completed' | 'failed' | 'cancelled';

/** The final statuses of a call. */
export const FINAL_CALL_STATUSES: ReadonlySet<CallStatus> = new Set(['completed', 'failed', 'cancelled']);

/** The state of one durable call, as a {@link CallStore} keeps it (JSON-safe). */
export interface CallRecord {
  /** The call id (the `id` property of its request). */
  id: string;
  /** The canonical request queue of the service, e.g. `request:tg:joke`. */
  service: string;
  /** The tool the call is for, when the caller said. */
  tool?: string;
  /** The request's `user`. */
  user?: string;
  status: CallStatus;
  /** Deliveries so far: 0 while queued, 1 on the first run, more after redeliveries. */
  attempt: number;
  /** The idempotency key: the caller's, or the call id. */
  idempotencyKey: string;
  /** Streamed chunks so far (the latest ones, at most `MAX_STORED_CHUNKS`); `[]` once final. */
  chunks: string[];
  /** Chunks streamed in all, kept or not. */
  chunkCount: number;
  /** The whole response text, once `completed` (streamed chunks and the last response joined). */
  response?: string;
  /** The result's content parts, once `completed`, when the service sent them (`response` is their text). */
  parts?: ContentPart[];
  /** What went wrong, once `failed` or `cancelled`: the tool-service wire error. */
  error?: { type: string; message: string };
  /** A caller asked to cancel the call. */
  cancelRequested?: boolean;
  /**
   * Set while a process holds the call that cannot hand it on if it dies (a memory queue, a task run in
   * the gateway): its id. Such a process refreshes `updatedAt` at least every `CALL_LEASE_MS / 3`, so a
   * reader can tell a call whose process is gone from one still running.
   */
  holder?: string;
  /** Epoch milliseconds. */
  createdAt: number;
  updatedAt: number;
}

/** A record with the store's revision of it (for compare-and-set). */
export interface StoredCall {
  readonly record: CallRecord;
  readonly revision: number;
}

/**
 * Keeps call states for a while (`ttlMs`): results and errors outlive the caller, and any process can
 * read them. Writes are compare-and-set on the record's revision.
 */
export interface CallStore {
  /** How long a record is kept after its last write, in ms. */
  readonly ttlMs: number;
  /** The record of `id`, or undefined when there is none (never written, or expired). */
  get(id: string): Promise<StoredCall | undefined>;
  /**
   * Writes `record` (under `record.id`) if its stored revision is `revision`: 0 means it must not exist.
   * Resolves with the new revision, or `undefined` when the revision did not match (another writer
   * came first: read it again).
   */
  put(record: CallRecord, revision: number): Promise<number | undefined>;
  /**
   * Claims an idempotency key of a service for `id`: the first claim wins. Resolves with the id of the
   * call that holds the key (`id` itself when this claim won).
   */
  claim(service: string, key: string, id: string): Promise<string>;
  /**
   * Yields the record of `id` now (when it exists) and after every change, until it is final or `signal`
   * aborts. Ends without error on abort.
   */
  watch(id: string, signal: AbortSignal): AsyncIterable<StoredCall>;
  /** Releases what the store holds (timers, connections it owns). Idempotent. */
  close(): Promise<void>;
}

/** One delivery of a durable request. */
export interface DurableMessage extends BusMessage {
  /** 1 on the first delivery, more after redeliveries. */
  readonly attempt: number;
  /** Done: the request is never delivered again. Resolves once the queue has been told. */
  ack(): Promise<void>;
  /** Still running: restarts the ack wait, so the request is not redelivered meanwhile. */
  working(): void;
  /** Gives the request back now, for another consumer (a stopping replica). */
  release(): void;
}

/** Options of {@link DurableQueue.consume}. */
export interface DurableConsumeOptions {
  /** Consumers sharing a group share the queue: each request goes to one of them at a time. */
  group: string;
  /** Requests this consumer holds at once (delivered and not yet acked or released). */
  concurrency: number;
  /** How long a delivered request may go without `ack` or `working` before it is redelivered. */
  ackWaitMs: number;
  /** Deliveries of one request at most; past it the request is dropped from the queue. */
  maxAttempts: number;
}

/** A work queue per topic: requests wait until a consumer takes them, and come back if it dies. */
export interface DurableQueue {
  /**
   * True when a request survives the crash of the process running it (JetStream); false for a queue in
   * process memory, where a crash loses what was queued or running.
   */
  readonly crashRecovery: boolean;
  /**
   * On a queue without crash recovery: an id of this process, written as the `holder` of the calls it
   * queues and runs. @default undefined (the queue hands calls on)
   */
  readonly holder?: string;
  /**
   * Puts a request on `topic`'s queue; resolves once the queue holds it. A second enqueue with the same
   * `dedupeId` (a retry) is stored once.
   */
  enqueue(
    topic: string,
    body: string,
    properties: BusProperties,
    options: { dedupeId: string },
  ): Promise<void>;
  /** Takes requests from `topic`'s queue, one `handler` call per delivery. */
  consume(
    topic: string,
    handler: (message: DurableMessage) => void,
    options: DurableConsumeOptions,
  ): Promise<BusSubscription>;
}

/**
 * How long a call's `holder` may go without refreshing its state before readers take its process for
 * gone (30 s).
 */
export const CALL_LEASE_MS = 30_000;

/** What a bus offers for durable calls ({@link MessageBus.durable}). */
export interface DurableCalls {
  readonly queue: DurableQueue;
  readonly store: CallStore;
}
