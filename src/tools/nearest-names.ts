/**
 * @module The tool names nearest to a misspelled one, found in time independent of how many tools there
 * are: a symmetric-delete index (each name filed under itself and every one-character deletion of it),
 * built once per set on its first miss.
 */
import { editDistance } from '../errors/index.js';

/** Names longer than this are filed under their first so many characters only (bounds the index). */
const MAX_INDEXED_LENGTH = 40;

/** The names of a set, indexed for {@link NearestNames.find}. */
export class NearestNames {
  readonly #names: readonly string[];
  /** A key (a lower-cased name or one deletion of it) → the indexes of the names filed under it. */
  readonly #index = new Map<string, number | number[]>();

  constructor(names: readonly string[]) {
    this.#names = names;
    names.forEach((name, i) => {
      for (const key of deletions(name.toLowerCase())) this.#file(key, i);
    });
  }

  /**
   * Up to `limit` names within two edits of `name` (case aside), nearest first, ties in set order. Two
   * names sharing a one-character deletion are at most two edits apart (a substitution, a
   * transposition, or an insertion and a deletion), so this finds every name one edit away; when that
   * gives fewer than `limit`, names two deletions away are looked up too.
   */
  find(name: string, limit: number): string[] {
    const lower = name.toLowerCase();
    const seen = new Set<number>();
    const collect = (key: string): void => {
      const entry = this.#index.get(key);
      if (entry === undefined) return;
      if (typeof entry === 'number') seen.add(entry);
      else for (const i of entry) seen.add(i);
    };
    const first = deletions(lower);
    for (const key of first) collect(key);
    // Too few: also two deletions of the name (a name two characters shorter, and its neighbours).
    if (seen.size < limit && lower.length <= MAX_INDEXED_LENGTH) {
      for (let k = 1; k < first.length; k++) for (const key of deletions(first[k]!).slice(1)) collect(key);
    }
    const ranked: { i: number; distance: number }[] = [];
    for (const i of seen) {
      const candidate = this.#names[i]!;
      const distance = editDistance(lower, candidate.toLowerCase());
      if (distance <= 2) ranked.push({ i, distance });
    }
    ranked.sort((a, b) => a.distance - b.distance || a.i - b.i);
    return ranked.slice(0, limit).map((r) => this.#names[r.i]!);
  }

  #file(key: string, i: number): void {
    const entry = this.#index.get(key);
    if (entry === undefined) this.#index.set(key, i);
    else if (typeof entry === 'number') {
      if (entry !== i) this.#index.set(key, [entry, i]);
    } else if (entry[entry.length - 1] !== i) entry.push(i);
  }
}

/** `word` and every string made by deleting one of its characters (of its first MAX_INDEXED_LENGTH). */
function deletions(word: string): string[] {
  const w = word.length > MAX_INDEXED_LENGTH ? word.slice(0, MAX_INDEXED_LENGTH) : word;
  const out = [w];
  for (let i = 0; i < w.length; i++) out.push(w.slice(0, i) + w.slice(i + 1));
  return out;
}
