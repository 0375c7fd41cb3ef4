/**
 * @module Tool profiles: a named subset of the tools (`profile/<id>` config items), chosen by name
 * globs and tags, minus exclusions. An agent request, an MCP endpoint (`/mcp/<id>`) or a principal
 * names one, and sees only those tools.
 */
import { ToolbusError } from '../errors/index.js';
import { anyGlobMatches } from '../schema/index.js';
import type { Tool } from './tool.js';

/** The config type of profiles. */
export const PROFILE_CONFIG_TYPE = 'profile';

/**
 * A profile as stored (`profile/<id>`). A tool belongs to it when it matches one of `tools` or carries
 * one of `tags` (with neither given, every tool does), and matches none of `exclude`.
 *
 * @example
 * ```json
 * { "description": "Read-only weather tools", "tools": ["weather-*"], "tags": ["forecast"], "exclude": ["weather-admin-*"] }
 * ```
 */
export interface ToolProfile {
  /** Name globs (`*` for any run of characters). @default none */
  tools?: readonly string[];
  /** Tags; a tool with any of them is in. @default none */
  tags?: readonly string[];
  /** Name globs of tools left out, whatever `tools` and `tags` say. @default none */
  exclude?: readonly string[];
  /** What the profile is for. @default none */
  description?: string;
}

const FIELDS = ['tools', 'tags', 'exclude', 'description'];

/**
 * Reads a profile item.
 *
 * @param owner how messages name it, e.g. `config 'profile/weather'`.
 * @throws ToolbusError `invalid-config` naming the field and what was expected.
 */
export function parseToolProfile(value: unknown, owner: string): ToolProfile {
  if (!value || typeof value !== 'object' || Array.isArray(value)) {
    throw new ToolbusError(
      'invalid-config',
      `${owner}: a profile must be a JSON object like {"tools": ["weather-*"], "tags": [...], "exclude": [...]}`,
    );
  }
  const item = value as Record<string, unknown>;
  for (const key of Object.keys(item)) {
    if (!FIELDS.includes(key)) {
      throw new ToolbusError(
        'invalid-config',
        `${owner}: unknown field '${key.slice(0, 60)}'; expected ${FIELDS.map((f) => `'${f}'`).join(', ')}`,
      );
    }
  }
  const profile: ToolProfile = {};
  for (const field of ['tools', 'tags', 'exclude'] as const) {
    const list = item[field];
    if (list === undefined) continue;
    if (!Array.isArray(list) || !list.every((x): x is string => typeof x === 'string' && x !== '')) {
      throw new ToolbusError(
        'invalid-config',
        `${owner}: field '${field}' must be an array of non-empty strings` +
          (field === 'tags' ? '' : ' (name globs, e.g. "weather-*")'),
      );
    }
    profile[field] = Object.freeze([...list]);
  }
  const description = item['description'];
  if (description !== undefined) {
    if (typeof description !== 'string') {
      throw new ToolbusError('invalid-config', `${owner}: field 'description' must be a string`);
    }
    profile.description = description;
  }
  return profile;
}

/** Whether `tool` belongs to `profile` (see {@link ToolProfile}). */
export function profileAccepts(profile: ToolProfile, tool: Tool): boolean {
  if (profile.exclude && anyGlobMatches(profile.exclude, tool.name)) return false;
  if (!profile.tools && !profile.tags) return true;
  if (profile.tools && anyGlobMatches(profile.tools, tool.name)) return true;
  const tags = tool.tags;
  return profile.tags !== undefined && tags !== undefined && profile.tags.some((tag) => tags.includes(tag));
}
