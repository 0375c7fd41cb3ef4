/**
 * @module `StreamCall`: a call whose responses are read with `for await`, with a bounded buffer. Shared by
 * `ToolServiceClient.stream` and `AgentClient.stream`.
 */
import { ToolbusError } from '../../errors/index.js';
import { RpcClientCall } from './rpc-client.js';

/** What a {@link StreamCall} needs of its client (an `RpcClient`). */
export interface StreamOwner<Response> {
  abandon(call: RpcClientCall<Response>, error: ToolbusError, notify?: boolean): void;
}

/** Options of {@link StreamCall}. */
export interface StreamCallOptions {
  /** Names the service in messages. */
  name: string;
  /** Items held for a slow consumer; one more over it fails the stream with `too-large`. */
  maxBuffered: number;
  /** What the items are called in the overflow message, e.g. `chunks`. */
  unit: string;
}

/**
 * A call that is its own async iterator. A consumer that falls `maxBuffered` items behind fails with
 * `too-large` and the call is cancelled; the last response is always kept (it settled the call, so
 * nothing is left to cancel). Leaving early (`return()`) cancels the remote call. One consumer: a second
 * `next()` while one is waiting rejects with `usage`.
 */
export abstract class StreamCall<Response, Item>
  extends RpcClientCall<Response>
  implements AsyncIterator<Item>
{
  readonly #owner: StreamOwner<Response>;
  readonly #options: StreamCallOptions;
  #items: Item[] = [];
  #head = 0;
  #ended = false;
  #failure: ToolbusError | undefined;
  #waiter: { resolve: (r: IteratorResult<Item>) => void; reject: (e: unknown) => void } | undefined;

  constructor(owner: StreamOwner<Response>, options: StreamCallOptions) {
    super();
    this.#owner = owner;
    this.#options = options;
  }

  /** The `too-large` error of an overflow, in the protocol's error class. */
  protected abstract tooLarge(message: string): ToolbusError;

  /** Adds an item (none when `undefined`); `last` ends the stream after it. */
  protected push(item: Item | undefined, last: boolean): void {
    if (this.#ended || this.#failure) return;
    if (item !== undefined) {
      const { maxBuffered, name, unit } = this.#options;
      if (!last && this.#items.length - this.#head >= maxBuffered) {
        const message = `${name}: stream consumer fell more than ${maxBuffered} ${unit} behind; the call was cancelled`;
        this.#owner.abandon(this, this.tooLarge(message));
        return;
      }
      this.#items.push(item);
    }
    if (last) this.#ended = true;
    this.#wake();
  }

  fail(error: ToolbusError): void {
    if (this.#ended || this.#failure) return;
    this.#failure = error;
    this.#wake();
  }

  next(): Promise<IteratorResult<Item>> {
    return new Promise<IteratorResult<Item>>((resolve, reject) => {
      if (this.#waiter) {
        reject(new ToolbusError('usage', `${this.#options.name}: next() called concurrently`));
        return;
      }
      this.#waiter = { resolve, reject };
      this.#wake();
    });
  }

  return(): Promise<IteratorResult<Item>> {
    if (!this.#ended && !this.#failure) {
      this.#ended = true;
      this.#owner.abandon(
        this,
        new ToolbusError('cancelled', `${this.#options.name}: the stream consumer stopped early`),
        false,
      );
    }
    this.#items = [];
    this.#head = 0;
    return Promise.resolve({ value: undefined, done: true });
  }

  #wake(): void {
    const waiter = this.#waiter;
    if (!waiter) return;
    if (this.#head < this.#items.length) {
      this.#waiter = undefined;
      const item = this.#items[this.#head]!;
      this.#items[this.#head++] = undefined as Item;
      if (this.#head === this.#items.length) {
        this.#items.length = 0;
        this.#head = 0;
      }
      waiter.resolve({ value: item, done: false });
    } else if (this.#failure) {
      this.#waiter = undefined;
      waiter.reject(this.#failure);
    } else if (this.#ended) {
      this.#waiter = undefined;
      waiter.resolve({ value: undefined, done: true });
    }
  }
}
