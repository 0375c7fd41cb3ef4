import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ExpiryHeap, type Expiring } from './expiry-heap.js';

interface Item extends Expiring {
  id: number;
}

/** A deterministic pseudo-random sequence (the test must not depend on luck). */
function random(seed: number): () => number {
  return () => (seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31;
}

describe('ExpiryHeap', () => {
  test('pops what expired, earliest first, through adds, renewals and removals', () => {
    const next = random(7);
    const heap = new ExpiryHeap<Item>();
    const live = new Map<number, Item>();
    for (let step = 0; step < 5_000; step++) {
      const r = next();
      const id = Math.floor(next() * 300);
      const item = live.get(id);
      if (r < 0.5) {
        const entry = item ?? { id, expiresAt: 0, heapIndex: -1 };
        entry.expiresAt = Math.floor(next() * 10_000);
        heap.set(entry); // adds it, or moves it when renewed
        live.set(id, entry);
      } else if (r < 0.7 && item) {
        heap.delete(item);
        live.delete(id);
      } else if (r < 0.8) {
        const now = Math.floor(next() * 10_000);
        const popped: number[] = [];
        for (let e; (e = heap.popExpired(now));) {
          popped.push(e.expiresAt);
          live.delete(e.id);
          assert.equal(e.heapIndex, -1);
        }
        assert.deepEqual(
          popped,
          [...popped].sort((a, b) => a - b),
          'earliest first',
        );
        for (const left of live.values()) assert.ok(left.expiresAt > now, 'nothing expired is left');
      }
      assert.equal(heap.size, live.size);
      const earliest = Math.min(...[...live.values()].map((i) => i.expiresAt));
      assert.equal(heap.peek()?.expiresAt ?? Infinity, earliest);
    }
  });

  test('deleting an entry that is not in the heap changes nothing; clear empties it', () => {
    const heap = new ExpiryHeap<Item>();
    const a: Item = { id: 1, expiresAt: 5, heapIndex: -1 };
    const b: Item = { id: 2, expiresAt: 3, heapIndex: -1 };
    heap.set(a);
    heap.delete(b);
    assert.equal(heap.size, 1);
    heap.set(b);
    assert.equal(heap.peek(), b);
    heap.clear();
    assert.equal(heap.size, 0);
    assert.equal(a.heapIndex, -1);
    assert.equal(heap.popExpired(Infinity), undefined);
  });
});
