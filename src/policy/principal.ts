/**
 * @module Principals: who a request is, once its key or token is verified. A principal has roles (what
 * it may do), an optional user (whom its calls are for), tool globs (which tools it sees) and quotas.
 * Named keys live in the config store as `principal/NAME` with only the SHA-256 of their token.
 */
import { createHash, randomBytes } from 'node:crypto';
import { ToolbusError } from '../errors/index.js';
import type { JsonValue } from '../schema/index.js';
import { parseRate, type Rate } from './rate-limit.js';
import { CONFIG_NAME_PATTERN } from '../config/index.js';

/** The roles a principal can hold. */
export const Role = {
  /** Everything: config (read and write), the audit log, metrics, every tool. */
  Admin: 'admin',
  /** Lists and calls tools (within its globs), asks the agent, uses `/mcp`. */
  Caller: 'caller',
  /** Sees the tools and decides on approvals; calls no tool unless it is also a caller. */
  Approver: 'approver',
  /** May name the `user` its calls are for (`X-Toolbus-User`, `?user=`, a body's `user`). */
  Impersonate: 'impersonate',
} as const;
/** One of {@link Role}'s values. */
export type Role = (typeof Role)[keyof typeof Role];

const ROLES = new Set<string>(Object.values(Role));

/** True for a role name toolbus knows. */
export function isRole(value: string): value is Role {
  return ROLES.has(value);
}

/** Who a request is. */
export interface Principal {
  /** The principal's name: `admin` for the default token, NAME of `principal/NAME`, `jwt:<user>` for a JWT. */
  readonly name: string;
  readonly roles: readonly Role[];
  /** Whom its calls are for when it names no user. @default the gateway's default user */
  readonly user?: string | undefined;
  /** Globs of the tools it may see and call (`tell-*`). @default every tool */
  readonly tools?: readonly string[] | undefined;
  /**
   * The tool profile it is bound to (`profile/<id>`): it sees and calls only that profile's tools, on
   * every surface (REST, `/mcp`, the agent). @default none
   */
  readonly profile?: string | undefined;
  /** Its own call rate. @default none */
  readonly rate?: Rate | undefined;
  /** Most of its calls in flight at once. @default DEFAULT_MAX_IN_FLIGHT */
  readonly maxInFlight?: number | undefined;
  /** How it proved who it is. */
  readonly via: 'token' | 'key' | 'jwt' | 'none';
}

/** The cap on one principal's calls in flight when its item sets none. */
export const DEFAULT_MAX_IN_FLIGHT = 64;

/** The config type of named keys. */
export const PRINCIPAL_CONFIG_TYPE = 'principal';
/** The config type of per-role settings (`role/caller`: tools, rate, max-in-flight). */
export const ROLE_CONFIG_TYPE = 'role';
/** The config type of per-tool quotas (`quota/tell-joke`: rate, burst). */
export const QUOTA_CONFIG_TYPE = 'quota';

/** A profile id: a config key. */
const PROFILE_ID = CONFIG_NAME_PATTERN;

/** Principal names: what config keys and log lines can carry. */
const NAME_SHAPE = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

/** A new key's token: a prefix saying what it is, then 32 random bytes (256 bits), base64url. */
export function newPrincipalToken(): string {
  return `tbk_${randomBytes(32).toString('base64url')}`;
}

/** How a token is stored: `sha256:` and the base64url digest. Tokens are random, so no slow hash is needed. */
export function hashToken(token: string): string {
  return `sha256:${createHash('sha256').update(token).digest('base64url')}`;
}

/**
 * Checks a principal name.
 * @throws ToolbusError `invalid-name` naming the allowed shape.
 */
export function checkPrincipalName(name: string): string {
  if (!NAME_SHAPE.test(name) || name === 'admin') {
    throw new ToolbusError(
      'invalid-name',
      name === 'admin'
        ? "'admin' is the default token's principal; pick another name"
        : `principal name '${name.slice(0, 80)}' must be 1–64 letters, digits, '.', '_' or '-', starting with a letter or digit`,
    );
  }
  return name;
}

/** The JSON of a `principal/NAME` item. */
export interface PrincipalItem {
  roles: Role[];
  /** `sha256:<base64url>` of the token. */
  tokenHash: string;
  user?: string;
  tools?: string[];
  /** The tool profile it is bound to. */
  profile?: string;
  /** e.g. `20/s`. */
  rate?: string;
  burst?: number;
  maxInFlight?: number;
  /** ISO time of `principal add`. */
  created?: string;
}

/** Settings a `role/NAME` item gives every principal with that role. */
export interface RoleSettings {
  tools?: readonly string[] | undefined;
  rate?: Rate | undefined;
  maxInFlight?: number | undefined;
}

/** A `quota/TOOL` item: a rate for one tool, per principal (the default) or shared by all. */
export interface ToolQuota {
  rate: Rate;
  /** `principal`: each principal has its own bucket for the tool; `all`: one bucket for everyone. */
  per: 'principal' | 'all';
}

function invalid(what: string, message: string): ToolbusError {
  return new ToolbusError('invalid-config', `${what}: ${message}`);
}

function isObject(value: JsonValue | undefined): value is { [key: string]: JsonValue } {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function stringList(value: JsonValue | undefined, what: string, field: string): string[] | undefined {
  if (value === undefined) return undefined;
  if (typeof value === 'string') return splitList(value);
  if (!Array.isArray(value) || !value.every((v) => typeof v === 'string' && v.trim() !== '')) {
    throw invalid(what, `'${field}' must be a list of non-empty strings (or one comma-separated string)`);
  }
  return (value as string[]).map((v) => v.trim());
}

/** `'a, b,c'` → `['a', 'b', 'c']`. */
export function splitList(text: string): string[] {
  return text
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
}

function rateOf(value: { [key: string]: JsonValue }, what: string): Rate | undefined {
  const rate = value['rate'];
  const burst = value['burst'];
  if (rate === undefined) return undefined;
  if (typeof rate !== 'string') throw invalid(what, "'rate' must be a string such as '20/s'");
  if (burst !== undefined && typeof burst !== 'number') throw invalid(what, "'burst' must be a number");
  try {
    return parseRate(rate, burst);
  } catch (error) {
    throw invalid(what, (error as Error).message);
  }
}

function maxInFlightOf(value: { [key: string]: JsonValue }, what: string): number | undefined {
  const max = value['maxInFlight'];
  if (max === undefined) return undefined;
  if (typeof max !== 'number' || !Number.isInteger(max) || max < 1) {
    throw invalid(what, "'maxInFlight' must be a whole number ≥ 1");
  }
  return max;
}

/** A stored principal: the principal and the hash its token must match. */
export interface StoredPrincipal {
  principal: Principal;
  tokenHash: string;
}

/**
 * Reads a `principal/NAME` item.
 * @throws ToolbusError `invalid-config` naming the field that is wrong.
 */
export function decodePrincipalItem(name: string, value: JsonValue | undefined): StoredPrincipal {
  const what = `principal/${name}`;
  if (!isObject(value)) throw invalid(what, 'expected a JSON object with roles and tokenHash');
  // A key named `admin` would pass for the owner's token in logs, audit and in-flight counts.
  if (name === 'admin') throw invalid(what, "'admin' is the default token's principal; pick another name");
  const tokenHash = value['tokenHash'];
  if (typeof tokenHash !== 'string' || !/^sha256:[A-Za-z0-9_-]{43}$/.test(tokenHash)) {
    throw invalid(
      what,
      "'tokenHash' must be 'sha256:' and a base64url SHA-256 digest (toolbus principal add writes it)",
    );
  }
  const roles = stringList(value['roles'], what, 'roles') ?? [];
  const unknown = roles.filter((r) => !isRole(r));
  if (roles.length === 0 || unknown.length > 0) {
    throw invalid(
      what,
      `'roles' must list one or more of ${[...ROLES].join(', ')}${unknown.length ? `, got '${unknown.join("', '")}'` : ''}`,
    );
  }
  const user = value['user'];
  if (user !== undefined && (typeof user !== 'string' || user === '')) {
    throw invalid(what, "'user' must be a non-empty string");
  }
  const profile = value['profile'];
  if (profile !== undefined && (typeof profile !== 'string' || !PROFILE_ID.test(profile))) {
    throw invalid(what, "'profile' must be a profile id (1-128 characters of [A-Za-z0-9_.=-])");
  }
  return {
    tokenHash,
    principal: {
      name,
      roles: roles as Role[],
      user: (user as string | undefined) ?? name,
      tools: stringList(value['tools'], what, 'tools'),
      ...(profile !== undefined ? { profile: profile as string } : {}),
      rate: rateOf(value, what),
      maxInFlight: maxInFlightOf(value, what),
      via: 'key',
    },
  };
}

/**
 * Reads a `role/NAME` item (`{ "tools": [...], "rate": "20/s", "maxInFlight": 8 }`).
 * @throws ToolbusError `invalid-config`.
 */
export function decodeRoleItem(name: string, value: JsonValue | undefined): RoleSettings {
  const what = `role/${name}`;
  if (!isObject(value)) throw invalid(what, 'expected a JSON object with tools, rate or maxInFlight');
  return {
    tools: stringList(value['tools'], what, 'tools'),
    rate: rateOf(value, what),
    maxInFlight: maxInFlightOf(value, what),
  };
}

/**
 * Reads a `quota/TOOL` item (`{ "rate": "5/s", "burst": 10, "per": "principal" | "all" }`).
 * @throws ToolbusError `invalid-config`.
 */
export function decodeQuotaItem(tool: string, value: JsonValue | undefined): ToolQuota {
  const what = `quota/${tool}`;
  if (!isObject(value)) throw invalid(what, 'expected a JSON object such as { "rate": "5/s" }');
  const rate = rateOf(value, what);
  if (!rate) throw invalid(what, "'rate' is required, e.g. '5/s'");
  const per = value['per'] ?? 'principal';
  if (per !== 'principal' && per !== 'all') throw invalid(what, "'per' must be 'principal' or 'all'");
  return { rate, per };
}
