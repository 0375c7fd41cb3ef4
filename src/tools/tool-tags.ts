/**
 * @module Tool tags: the words that group tools for search and profiles, and the one check of them.
 */
import { ToolbusError } from '../errors/index.js';

/** What a tag may look like: a word, or `scope:word` (`weather`, `openapi:petstore`, `team/data`). */
export const TOOL_TAG_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_.:/-]{0,63}$/;

/** Most tags one tool may carry. */
export const MAX_TOOL_TAGS = 32;

/**
 * Checks a tag list and returns it frozen, without duplicates, in the order given.
 *
 * @param owner how messages name the tool, e.g. `tool 'get-weather'` or `config 'tool/get-weather'`.
 * @throws ToolbusError `invalid-schema` naming the bad tag and the expected shape.
 */
export function checkToolTags(tags: unknown, owner: string): readonly string[] {
  if (!Array.isArray(tags)) {
    throw new ToolbusError(
      'invalid-schema',
      `${owner}: tags must be an array of strings, got ${typeof tags}`,
    );
  }
  if (tags.length > MAX_TOOL_TAGS) {
    throw new ToolbusError('invalid-schema', `${owner}: at most ${MAX_TOOL_TAGS} tags, got ${tags.length}`);
  }
  const seen = new Set<string>();
  for (const tag of tags as unknown[]) {
    if (typeof tag !== 'string' || !TOOL_TAG_PATTERN.test(tag)) {
      const shown = typeof tag === 'string' ? `'${tag.slice(0, 70)}'` : typeof tag;
      throw new ToolbusError(
        'invalid-schema',
        `${owner}: tag ${shown} is not a tag; expected 1–64 letters, digits or _ . : / - (starting with a letter or digit)`,
      );
    }
    seen.add(tag);
  }
  return Object.freeze([...seen]);
}
