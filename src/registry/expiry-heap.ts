/**
 * @module `ExpiryHeap`: a binary min-heap of entries ordered by when they expire. Each entry carries its
 * own position, so renewing or removing one costs O(log n): no scan over every entry, and no stale
 * copies left behind for a flood of renewals to pile up.
 */

/** The fields an entry carries for {@link ExpiryHeap}; start with `heapIndex: -1`. */
export interface Expiring {
  /** When it expires, in the clock's milliseconds. */
  expiresAt: number;
  /** Its position in the heap; -1 when it is not in one. */
  heapIndex: number;
}

/** The entries that expire, earliest first at {@link peek}. */
export class ExpiryHeap<T extends Expiring> {
  readonly #items: T[] = [];

  /** How many entries it holds. */
  get size(): number {
    return this.#items.length;
  }

  /** The entry that expires first. */
  peek(): T | undefined {
    return this.#items[0];
  }

  /** Adds `item`, or moves it to its place when it is in the heap already (its `expiresAt` changed). */
  set(item: T): void {
    if (item.heapIndex < 0) {
      item.heapIndex = this.#items.length;
      this.#items.push(item);
      this.#up(item.heapIndex);
    } else {
      this.#down(this.#up(item.heapIndex));
    }
  }

  /** Removes `item` if it is in the heap. */
  delete(item: T): void {
    const index = item.heapIndex;
    if (index < 0 || this.#items[index] !== item) return;
    item.heapIndex = -1;
    const last = this.#items.pop()!;
    if (last === item) return;
    this.#items[index] = last;
    last.heapIndex = index;
    this.#down(this.#up(index));
  }

  /** Removes and returns the entry that expires first, when it expires by `now`. */
  popExpired(now: number): T | undefined {
    const first = this.#items[0];
    if (first === undefined || first.expiresAt > now) return undefined;
    this.delete(first);
    return first;
  }

  /** Empties the heap. */
  clear(): void {
    for (const item of this.#items) item.heapIndex = -1;
    this.#items.length = 0;
  }

  /** Moves the entry at `index` towards the root while it expires before its parent; its new index. */
  #up(index: number): number {
    const items = this.#items;
    const item = items[index]!;
    while (index > 0) {
      const parentIndex = (index - 1) >> 1;
      const parent = items[parentIndex]!;
      if (parent.expiresAt <= item.expiresAt) break;
      items[index] = parent;
      parent.heapIndex = index;
      index = parentIndex;
    }
    items[index] = item;
    item.heapIndex = index;
    return index;
  }

  /** Moves the entry at `index` towards the leaves while a child expires before it. */
  #down(index: number): void {
    const items = this.#items;
    const item = items[index]!;
    const n = items.length;
    for (;;) {
      const left = 2 * index + 1;
      if (left >= n) break;
      const right = left + 1;
      const child = right < n && items[right]!.expiresAt < items[left]!.expiresAt ? right : left;
      const next = items[child]!;
      if (next.expiresAt >= item.expiresAt) break;
      items[index] = next;
      next.heapIndex = index;
      index = child;
    }
    items[index] = item;
    item.heapIndex = index;
  }
}
