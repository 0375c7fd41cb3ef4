/**
 * @module `DurableIntake`: how a durable tool service takes its calls. It sits between the bus's work
 * queue and the RPC server:
 *
 * - a delivery becomes a call; while it runs, the queue hears `working` every third of the ack wait, so
 *   only a dead replica's calls come back (after the ack wait, to another replica);
 * - every state of the call is written to the call store: `running` (with its attempt), the streamed
 *   chunks, then the result or error, before the delivery is acked;
 * - a delivery whose call is already final (a redelivery after a lost ack, or the same id again) is
 *   answered from the store and never runs twice; nor does a repeated idempotency key of a tool that
 *   declares itself idempotent, which gets the first call's outcome;
 * - a replica that is made to stop gives its running calls back (`release`) instead of failing them.
 */
import type {
  BusMessage,
  BusProperties,
  BusSubscription,
  CallRecord,
  DurableCalls,
  DurableMessage,
  MessageBus,
} from '../bus/index.js';
import { CALL_LEASE_MS, FINAL_CALL_STATUSES, canonicalTopic } from '../bus/index.js';
import { WireProperty, echoPropertiesOf, readDeadline, readId } from './rpc/index.js';
import { WireErrorType, decodeRequest, decodeResponse, encodeResponse } from './wire.js';
import { MAX_STORED_RESPONSE_CHARS, storedResultSize } from './call-state.js';

/** How long a delivered call may go without a sign of life before it is redelivered (30 s). */
export const DEFAULT_DURABLE_ACK_WAIT_MS = 30_000;
/** Deliveries of one durable call at most: past it a call that keeps killing its replica is dropped. */
export const DEFAULT_DURABLE_MAX_ATTEMPTS = 10;
/** Streamed chunks a call record keeps (the latest ones). */
export const MAX_STORED_CHUNKS = 256;
/** Characters of chunks a call record keeps. */
const MAX_STORED_CHUNK_CHARS = 256 * 1024;
/** How long a call runs before its `running` state is written. */
const RUNNING_WRITE_DELAY_MS = 20;
/** Tries of one write that keeps meeting another writer's revision. */
const MAX_WRITE_TRIES = 8;

/** Options of {@link DurableIntake}. */
export interface DurableIntakeOptions {
  bus: MessageBus;
  durable: DurableCalls;
  requestQueue: string;
  responseQueue: string;
  group: string;
  concurrency: number;
  ackWaitMs: number;
  maxAttempts: number;
  /** Every call of this service is idempotent (else the request's `idempotent` property says). */
  idempotent: boolean;
  /** Something went wrong in the background (a store write); the call goes on. */
  onProblem: (message: string, error: unknown) => void;
}

/** What the intake needs of the RPC server it feeds. */
export interface DurableCallCanceller {
  cancel(id: string, why?: string): boolean;
}

/** One call this replica holds: its deliveries and its record as last written. */
interface Held {
  readonly message: DurableMessage;
  /** Later deliveries of the same call that reached this replica while it ran: acked with it. */
  readonly extra: DurableMessage[];
  record: CallRecord;
  revision: number;
  /** The write under way, if any; `dirty` asks for one more after it. */
  writing: Promise<void> | undefined;
  dirty: boolean;
  chunkChars: number;
}

/** Takes a durable service's calls from its work queue and keeps their states (see the module). */
export class DurableIntake {
  readonly #options: DurableIntakeOptions;
  readonly #service: string;
  readonly #held = new Map<string, Held>();
  #onRequest: ((message: BusMessage) => void) | undefined;
  #server: DurableCallCanceller | undefined;
  #timer: ReturnType<typeof setInterval> | undefined;
  #stopping = false;

  constructor(options: DurableIntakeOptions) {
    this.#options = options;
    this.#service = canonicalTopic(options.requestQueue);
  }

  /** Calls held now (running, or waiting for their state to be stored). */
  get held(): number {
    return this.#held.size;
  }

  /** The server whose calls a cancellation found in the store aborts. */
  bind(server: DurableCallCanceller): void {
    this.#server = server;
  }

  /** The RPC server's `intake`: consumes the work queue. */
  subscribe(onRequest: (message: BusMessage) => void): Promise<BusSubscription> {
    this.#onRequest = onRequest;
    const o = this.#options;
    return o.durable.queue.consume(o.requestQueue, (m) => this.#onDelivery(m), {
      group: o.group,
      concurrency: o.concurrency,
      ackWaitMs: o.ackWaitMs,
      maxAttempts: o.maxAttempts,
    });
  }

  /** The service is stopping: a call aborted by the stop (`unavailable`) is given back, not failed. */
  stopping(): void {
    this.#stopping = true;
  }

  /** The RPC server's `respond`: stores, publishes, and acks once the last response is stored. */
  respond(id: string, body: string, properties: BusProperties, last: boolean): Promise<void> {
    const held = this.#held.get(id);
    if (held === undefined) return this.#publish(body, properties);
    let text = '';
    let parts: CallRecord['parts'];
    let error: { type: string; message: string } | null = null;
    try {
      const response = decodeResponse(body);
      text = response.response;
      parts = response.parts;
      error = response.error;
    } catch {
      // Our own encoding: never malformed.
    }
    if (!last) {
      this.#keepChunk(held, text);
      return this.#publish(body, properties);
    }
    if (error?.type === WireErrorType.Unavailable && this.#stopping) {
      this.#giveBack(held);
      return Promise.resolve();
    }
    const record = held.record;
    if (error === null) {
      const whole = record.chunkCount > 0 ? record.chunks.join('') + text : text;
      const size = storedResultSize(whole, parts);
      if (record.chunkCount > record.chunks.length || size > MAX_STORED_RESPONSE_CHARS) {
        record.status = 'failed';
        record.error = {
          type: 'too-large',
          message:
            `the result of call '${id}' was sent to its caller but is too large to keep ` +
            `(${size} characters, or more than ${MAX_STORED_CHUNKS} chunks; at most ${MAX_STORED_RESPONSE_CHARS})`,
        };
      } else {
        record.status = 'completed';
        record.response = whole;
        if (parts !== undefined) record.parts = parts;
      }
    } else {
      record.status = error.type === WireErrorType.Cancelled ? 'cancelled' : 'failed';
      record.error = { type: error.type, message: error.message };
    }
    record.chunks = [];
    const sent = this.#publish(body, properties);
    void this.#finish(held);
    return sent;
  }

  #onDelivery(message: DurableMessage): void {
    const onRequest = this.#onRequest;
    if (onRequest === undefined) return;
    const id = readId(message.properties);
    if (id === undefined) {
      // Nothing to answer or store: the server reports it; never delivered again.
      void message.ack();
      onRequest(message);
      return;
    }
    const running = this.#held.get(id);
    if (running !== undefined) {
      running.extra.push(message);
      message.working();
      return;
    }
    const properties = message.properties;
    const key = properties[WireProperty.IdempotencyKey] || id;
    const idempotent = this.#options.idempotent || properties[WireProperty.Idempotent] === 'true';
    const now = Date.now();
    const record: CallRecord = {
      id,
      service: this.#service,
      status: 'running',
      attempt: message.attempt,
      idempotencyKey: key,
      chunks: [],
      chunkCount: 0,
      createdAt: now,
      updatedAt: now,
    };
    const tool = properties[WireProperty.Tool];
    if (tool) record.tool = tool;
    const holder = this.#options.durable.queue.holder;
    if (holder !== undefined) record.holder = holder;
    try {
      const user = decodeRequest(message.text ?? message.body).user;
      if (user !== '') record.user = user;
    } catch {
      // The server answers a malformed request; its record says who only when it could be read.
    }
    const held: Held = {
      message,
      extra: [],
      record,
      revision: 0,
      writing: undefined,
      dirty: false,
      chunkChars: 0,
    };
    this.#hold(id, held);
    // A first delivery of a call nobody stored before runs at once; its `running` state is written
    // meanwhile. Anything that may have a history is looked up first, so it never runs twice.
    if (message.attempt > 1 || idempotent || key !== id || properties[WireProperty.Task] === '1') {
      void this.#lookUpThenRun(held, key, idempotent, onRequest);
    } else {
      onRequest(message);
      this.#saveRunning(held);
    }
  }

  /**
   * Writes the `running` state of a call that has not ended yet, a moment later: a short call (most)
   * then costs one write, its outcome, instead of two.
   */
  #saveRunning(held: Held): void {
    if (FINAL_CALL_STATUSES.has(held.record.status)) return;
    const timer = setTimeout(() => {
      if (this.#held.get(held.record.id) === held && !FINAL_CALL_STATUSES.has(held.record.status)) {
        this.#save(held);
      }
    }, RUNNING_WRITE_DELAY_MS);
    timer.unref?.();
  }

  async #lookUpThenRun(
    held: Held,
    key: string,
    idempotent: boolean,
    onRequest: (message: BusMessage) => void,
  ): Promise<void> {
    const store = this.#options.durable.store;
    const id = held.record.id;
    try {
      if (idempotent && key !== id) {
        const owner = await store.claim(this.#service, key, id);
        if (owner !== id) {
          await this.#answerFrom(held, owner);
          return;
        }
      }
      const stored = await store.get(id);
      if (stored !== undefined) {
        const before = stored.record;
        held.revision = stored.revision;
        if (FINAL_CALL_STATUSES.has(before.status)) {
          this.#replay(held, before);
          return;
        }
        held.record.createdAt = before.createdAt;
        if (before.tool !== undefined) held.record.tool ??= before.tool;
        if (before.cancelRequested) {
          held.record.cancelRequested = true;
          held.record.status = 'cancelled';
          held.record.error = {
            type: WireErrorType.Cancelled,
            message: `call '${id}' was cancelled by the caller before it ran`,
          };
          this.#replay(held, held.record);
          return;
        }
      }
    } catch (error) {
      // Without the store, run it anyway: at least once beats never.
      this.#options.onProblem(`durable call '${id}': reading its state failed; running it`, error);
    }
    onRequest(held.message);
    this.#saveRunning(held);
  }

  /** Answers with the outcome of call `owner`, which holds the same idempotency key, once it has one. */
  async #answerFrom(held: Held, owner: string): Promise<void> {
    const store = this.#options.durable.store;
    const deadline = readDeadline(held.message.properties);
    const signal =
      deadline === undefined ? undefined : AbortSignal.timeout(Math.max(0, deadline - Date.now()));
    let outcome: CallRecord | undefined;
    for await (const stored of store.watch(owner, signal ?? new AbortController().signal)) {
      if (FINAL_CALL_STATUSES.has(stored.record.status)) outcome = stored.record;
    }
    const id = held.record.id;
    const record: CallRecord = outcome
      ? { ...outcome, id, idempotencyKey: held.record.idempotencyKey, createdAt: held.record.createdAt }
      : {
          ...held.record,
          status: 'failed',
          error: {
            type: WireErrorType.DeadlineExceeded,
            message: `call '${id}' passed its deadline waiting for call '${owner}', which holds its idempotency key`,
          },
        };
    if (record.tool === undefined && held.record.tool !== undefined) record.tool = held.record.tool;
    record.updatedAt = Date.now();
    this.#replay(held, record);
  }

  /** Answers a call from a final record (stored now if it is not its own yet), then acks it. */
  #replay(held: Held, record: CallRecord): void {
    const body =
      record.status === 'completed'
        ? encodeResponse({
            error: null,
            response: record.response ?? '',
            end_of_stream: true,
            ...(record.parts !== undefined ? { parts: record.parts } : {}),
          })
        : encodeResponse({
            error: record.error ?? { type: WireErrorType.ToolServiceError, message: 'the call failed' },
            response: '',
            end_of_stream: true,
          });
    held.record = record;
    void this.#publish(body, echoPropertiesOf(record.id, held.message.properties)).catch((error: unknown) =>
      this.#options.onProblem(`durable call '${record.id}': sending its stored outcome failed`, error),
    );
    void this.#finish(held);
  }

  #keepChunk(held: Held, text: string): void {
    const record = held.record;
    record.chunkCount++;
    record.chunks.push(text);
    held.chunkChars += text.length;
    while (
      record.chunks.length > MAX_STORED_CHUNKS ||
      (held.chunkChars > MAX_STORED_CHUNK_CHARS && record.chunks.length > 1)
    ) {
      held.chunkChars -= record.chunks.shift()!.length;
    }
    this.#save(held);
  }

  /** Writes the record now, or once the write under way is done (writes of one call never overlap). */
  #save(held: Held): void {
    if (held.writing !== undefined) {
      held.dirty = true;
      return;
    }
    held.writing = this.#writeLoop(held).finally(() => (held.writing = undefined));
  }

  async #writeLoop(held: Held): Promise<void> {
    do {
      held.dirty = false;
      try {
        await this.#write(held);
      } catch (error) {
        this.#options.onProblem(`durable call '${held.record.id}': storing its state failed`, error);
      }
    } while (held.dirty);
  }

  /**
   * One compare-and-set write of the record. Another writer's revision (a caller asking to cancel) is
   * read and merged: a cancellation reaches the running call; a record already final stays as it is.
   */
  async #write(held: Held): Promise<void> {
    const store = this.#options.durable.store;
    for (let tries = 0; tries < MAX_WRITE_TRIES; tries++) {
      held.record.updatedAt = Date.now();
      const revision = await store.put(held.record, held.revision);
      if (revision !== undefined) {
        held.revision = revision;
        return;
      }
      const stored = await store.get(held.record.id);
      held.revision = stored?.revision ?? 0;
      if (stored === undefined) continue;
      if (FINAL_CALL_STATUSES.has(stored.record.status)) {
        // First outcome wins (a cancel while queued, or another delivery's): stop the run it outlived.
        if (!FINAL_CALL_STATUSES.has(held.record.status)) {
          this.#server?.cancel(held.record.id, `the call already ended as '${stored.record.status}'`);
        }
        return;
      }
      if (stored.record.cancelRequested && !held.record.cancelRequested) {
        held.record.cancelRequested = true;
        this.#server?.cancel(held.record.id, 'cancel requested');
      }
      held.record.createdAt = stored.record.createdAt;
    }
    throw new Error(`the record kept changing under ${MAX_WRITE_TRIES} writes`);
  }

  /** Stores the final record (after any write under way), then acks the deliveries and lets go. */
  async #finish(held: Held): Promise<void> {
    while (held.writing !== undefined) await held.writing;
    try {
      await this.#write(held);
    } catch (error) {
      // Acked anyway: the caller had its answer live, and a redelivery would only run it again.
      this.#options.onProblem(`durable call '${held.record.id}': storing its outcome failed`, error);
    }
    this.#let(held);
    await Promise.all([held.message, ...held.extra].map((m) => m.ack().catch(() => undefined)));
  }

  /** A stopping replica gives the call back to the queue, for another replica to run. */
  #giveBack(held: Held): void {
    this.#let(held);
    held.message.release();
    for (const m of held.extra) m.release();
    held.record.status = 'queued';
    this.#save(held);
  }

  #publish(body: string, properties: BusProperties): Promise<void> {
    return this.#options.bus.publish(this.#options.responseQueue, body, properties);
  }

  #hold(id: string, held: Held): void {
    this.#held.set(id, held);
    if (this.#timer !== undefined) return;
    // One timer for every call held: each delivery hears `working` a few times per ack wait.
    const tick = Math.max(50, Math.min(Math.floor(this.#options.ackWaitMs / 3), CALL_LEASE_MS / 3));
    this.#timer = setInterval(() => {
      const now = Date.now();
      for (const h of this.#held.values()) {
        h.message.working();
        for (const m of h.extra) m.working();
        // A call this process cannot hand on says it is still alive (see CallRecord.holder).
        if (h.record.holder !== undefined && now - h.record.updatedAt >= CALL_LEASE_MS / 3) this.#save(h);
      }
    }, tick);
    this.#timer.unref?.();
  }

  #let(held: Held): void {
    if (this.#held.get(held.record.id) === held) this.#held.delete(held.record.id);
    if (this.#held.size === 0 && this.#timer !== undefined) {
      clearInterval(this.#timer);
      this.#timer = undefined;
    }
  }
}
