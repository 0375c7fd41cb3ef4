/**
 * @module "Did you mean" hints for misspelled names (commands, options, config and tool types), shared by
 * every layer that reports an unknown name.
 */

/**
 * The candidate closest to `name` by edit distance, when it is close enough to be a likely typo: at
 * most 2 edits, and fewer than half of the name's length (so `x` does not suggest `up`).
 */
export function closestName(name: string, candidates: Iterable<string>): string | undefined {
  let best: string | undefined;
  let bestDistance = Infinity;
  const limit = Math.max(1, Math.min(2, Math.ceil(name.length / 2) - 1));
  for (const candidate of candidates) {
    if (candidate === name) return candidate;
    const distance = editDistance(name.toLowerCase(), candidate.toLowerCase());
    if (distance <= limit && distance < bestDistance) {
      best = candidate;
      bestDistance = distance;
    }
  }
  return best;
}

/** ` (did you mean 'x'?)` for a close candidate, else the empty string: ready to append to a message. */
export function didYouMean(name: string, candidates: Iterable<string>): string {
  const guess = closestName(name, candidates);
  return guess === undefined || guess === name ? '' : ` (did you mean '${guess}'?)`;
}

/** Levenshtein distance with adjacent transpositions counted as one edit (`tols`→`tools` is 1, `tooks` 1). */
function editDistance(a: string, b: string): number {
  const rows = a.length + 1;
  const cols = b.length + 1;
  const d: number[] = new Array<number>(rows * cols);
  for (let i = 0; i < rows; i++) d[i * cols] = i;
  for (let j = 0; j < cols; j++) d[j] = j;
  for (let i = 1; i < rows; i++) {
    for (let j = 1; j < cols; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let v = Math.min(
        d[(i - 1) * cols + j]! + 1,
        d[i * cols + j - 1]! + 1,
        d[(i - 1) * cols + j - 1]! + cost,
      );
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) {
        v = Math.min(v, d[(i - 2) * cols + j - 2]! + 1);
      }
      d[i * cols + j] = v;
    }
  }
  return d[rows * cols - 1]!;
}
