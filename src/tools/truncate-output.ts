/**
 * @module Caps a tool's output: head and tail kept, a notice in the middle.
 */

/** The outcome of {@link truncateOutput}. */
export interface TruncatedOutput {
  /** The text to send (at most `maxBytes` UTF-8 bytes). */
  text: string;
  /** How many bytes of the original were cut; 0 when it fit. */
  cutBytes: number;
}

/**
 * Keeps the first and last parts of `text` so the result is at most `maxBytes` UTF-8 bytes, with a
 * notice in the middle saying how many bytes were cut. Cuts fall on character boundaries.
 */
export function truncateOutput(text: string, maxBytes: number): TruncatedOutput {
  // A UTF-16 code unit is at most 3 UTF-8 bytes: short strings need no byte count.
  if (text.length * 3 <= maxBytes) return { text, cutBytes: 0 };
  const bytes = Buffer.from(text, 'utf8');
  if (bytes.length <= maxBytes) return { text, cutBytes: 0 };
  const total = bytes.length;
  // The notice's own length depends on the number in it; reserve for the widest.
  const noticeFor = (cut: number): string =>
    `\n\n[... ${cut} of ${total} bytes cut: the output exceeded the ${maxBytes}-byte limit; the start and the end are shown ...]\n\n`;
  const reserve = Buffer.byteLength(noticeFor(total));
  const budget = Math.max(0, maxBytes - reserve);
  let headEnd = Math.ceil(budget / 2);
  let tailStart = total - (budget - headEnd);
  while (headEnd > 0 && ((bytes[headEnd] as number) & 0xc0) === 0x80) headEnd--;
  while (tailStart < total && ((bytes[tailStart] as number) & 0xc0) === 0x80) tailStart++;
  const cut = tailStart - headEnd;
  const head = bytes.subarray(0, headEnd).toString('utf8');
  const tail = bytes.subarray(tailStart).toString('utf8');
  return { text: `${head}${noticeFor(cut)}${tail}`, cutBytes: cut };
}
