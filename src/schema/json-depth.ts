/**
 * @module How deeply JSON text nests, measured before it is parsed: `JSON.parse` copes with any depth,
 * but `JSON.stringify`, `structuredClone` and every recursive walk after it overflow the stack at about
 * 10,000 levels, so a deep payload must be refused while it is still text.
 */

/** The deepest nesting of arrays and objects toolbus accepts in a JSON payload. */
export const MAX_JSON_DEPTH = 512;

/**
 * The nesting depth of JSON text: 0 for a scalar, 1 for `[]` or `{}`, 2 for `[[]]`, and so on. Brackets
 * inside strings do not count. Scanning stops as soon as `stopAbove` is exceeded (the result is then
 * `stopAbove + 1`), so a hostile payload costs no more than reading it once.
 */
export function jsonDepth(text: string, stopAbove = Infinity): number {
  let depth = 0;
  let deepest = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c /* \ */) i++;
      else if (c === 0x22 /* " */) inString = false;
      continue;
    }
    if (c === 0x22) inString = true;
    else if (c === 0x5b /* [ */ || c === 0x7b /* { */) {
      depth++;
      if (depth > deepest) {
        deepest = depth;
        if (deepest > stopAbove) return deepest;
      }
    } else if (c === 0x5d /* ] */ || c === 0x7d /* } */) depth--;
  }
  return deepest;
}
