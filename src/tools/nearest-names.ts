/**
 * @module The tool names nearest to a misspelled one, found in time independent of how many tools there
 * are: a symmetric-delete index (each name filed under itself and every one-character deletion of it),
 * built once per set on its first miss.
 */

/** Names longer than this are filed under their first so many characters only (bounds the index). */
const MAX_INDEXED_LENGTH = 40;

/** The names of a set, indexed for {@link NearestNames.find}. */
export class NearestNames {
  readonly #names: readonly string[];
  readonly #lower: readonly string[];
  /** A key's hash (a lower-cased name, or one deletion of it) → the indexes of the names filed under it. */
  readonly #index = new Map<number, number | number[]>();

  constructor(names: readonly string[]) {
    this.#names = names;
    this.#lower = names.map((name) => name.toLowerCase());
    this.#lower.forEach((name, i) => {
      for (const key of deletionHashes(name)) this.#file(key, i);
    });
  }

  /**
   * Up to `limit` names within two edits of `name` (case aside), nearest first, ties in set order. Two
   * names sharing a one-character deletion are at most two edits apart (a substitution, a
   * transposition, or an insertion and a deletion), so this finds every name one edit away and many
   * two away, in time independent of the set's size.
   */
  find(name: string, limit: number): string[] {
    const lower = name.toLowerCase();
    const seen = new Set<number>();
    for (const key of deletionHashes(lower)) {
      const entry = this.#index.get(key);
      if (entry === undefined) continue;
      if (typeof entry === 'number') seen.add(entry);
      else for (const i of entry) seen.add(i);
    }
    const ranked: { i: number; distance: number }[] = [];
    for (const i of seen) {
      // Hashes can collide: the distance decides.
      const distance = withinTwo(lower, this.#lower[i]!);
      if (distance <= 2) ranked.push({ i, distance });
    }
    ranked.sort((a, b) => a.distance - b.distance || a.i - b.i);
    return ranked.slice(0, limit).map((r) => this.#names[r.i]!);
  }

  #file(key: number, i: number): void {
    const entry = this.#index.get(key);
    if (entry === undefined) this.#index.set(key, i);
    else if (typeof entry === 'number') {
      if (entry !== i) this.#index.set(key, [entry, i]);
    } else if (entry[entry.length - 1] !== i) entry.push(i);
  }
}

const BASE = 0x01000193;
const HASH_MASK = 0x3fffffff; // small integers: map keys V8 stores unboxed
const prefix = new Int32Array(MAX_INDEXED_LENGTH + 2);
const suffix = new Int32Array(MAX_INDEXED_LENGTH + 2);
const powers = new Int32Array(MAX_INDEXED_LENGTH + 2);
powers[0] = 1;
for (let k = 1; k < powers.length; k++) powers[k] = Math.imul(powers[k - 1]!, BASE);

/**
 * Hashes of `word` and of every string made by deleting one of its characters (of its first
 * MAX_INDEXED_LENGTH), computed from prefix and suffix hashes without building those strings.
 */
function deletionHashes(word: string): number[] {
  const n = Math.min(word.length, MAX_INDEXED_LENGTH);
  prefix[0] = 0;
  for (let k = 0; k < n; k++) prefix[k + 1] = Math.imul(prefix[k]!, BASE) + word.charCodeAt(k);
  suffix[n] = 0;
  for (let k = n - 1; k >= 0; k--)
    suffix[k] = Math.imul(word.charCodeAt(k), powers[n - 1 - k]!) + suffix[k + 1]!;
  const out = [prefix[n]! & HASH_MASK];
  for (let i = 0; i < n; i++) {
    out.push((Math.imul(prefix[i]!, powers[n - 1 - i]!) + suffix[i + 1]!) & HASH_MASK);
  }
  return out;
}
/** Rows of {@link withinTwo}, kept between calls: a miss allocates nothing per candidate. */
const ROW_LENGTH = 130;
let rows: Int32Array[] = [new Int32Array(ROW_LENGTH), new Int32Array(ROW_LENGTH), new Int32Array(ROW_LENGTH)];

/**
 * The edit distance of `a` and `b` (adjacent transpositions count one) when it is at most 2, else 3:
 * the same as `editDistance` of errors/did-you-mean.ts for the names that matter here, without its table, stopping as soon as a
 * row shows nothing within two.
 */
function withinTwo(a: string, b: string): number {
  if (Math.abs(a.length - b.length) > 2) return 3;
  if (b.length + 1 > ROW_LENGTH || a.length + 1 > ROW_LENGTH) return 3;
  let [older, previous, current] = rows as [Int32Array, Int32Array, Int32Array];
  for (let j = 0; j <= b.length; j++) previous[j] = j;
  for (let i = 1; i <= a.length; i++) {
    current[0] = i;
    let best = i;
    for (let j = 1; j <= b.length; j++) {
      const cost = a.charCodeAt(i - 1) === b.charCodeAt(j - 1) ? 0 : 1;
      let v = Math.min(previous[j]! + 1, current[j - 1]! + 1, previous[j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1])
        v = Math.min(v, older[j - 2]! + 1);
      current[j] = v;
      if (v < best) best = v;
    }
    if (best > 2) return 3;
    [older, previous, current] = [previous, current, older];
  }
  rows = [older, previous, current];
  return Math.min(previous[b.length]!, 3);
}
