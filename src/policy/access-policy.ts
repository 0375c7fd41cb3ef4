/**
 * @module `AccessPolicy`: who a bearer token is (the owner's token, a named key from the config store,
 * or a JWT), what its roles let it do, which tools it sees, whom its calls are for, and how often it may
 * call. Every surface (REST, `/mcp`, the agent) asks the same policy, and every refusal is an event.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { ConfigStore } from '../config/index.js';
import { ToolbusError } from '../errors/index.js';
import { ConfigMirror } from '../registry/index.js';
import { anyGlobMatches } from '../schema/index.js';
import { notifyHooks, type Hook } from '../tools/index.js';
import {
  createJwtVerifier,
  looksLikeJwt,
  type JwtOptions,
  type JwtVerifier,
  type JwtVerifyOptions,
} from './jwt-verifier.js';
import {
  DEFAULT_MAX_IN_FLIGHT,
  PRINCIPAL_CONFIG_TYPE,
  QUOTA_CONFIG_TYPE,
  ROLE_CONFIG_TYPE,
  Role,
  decodePrincipalItem,
  decodeQuotaItem,
  decodeRoleItem,
  hashToken,
  type Principal,
  type RoleSettings,
  type ToolQuota,
} from './principal.js';
import { TokenBucket, type Rate } from './rate-limit.js';

/** What a principal may do besides calling tools; see {@link AccessPolicy.can}. */
export type Permission =
  'read-tools' | 'call-tools' | 'ask-agent' | 'decide-approvals' | 'config' | 'audit' | 'metrics';

const PERMISSIONS: Record<Permission, readonly Role[]> = {
  'read-tools': [Role.Admin, Role.Caller, Role.Approver],
  'call-tools': [Role.Admin, Role.Caller],
  'ask-agent': [Role.Admin, Role.Caller],
  'decide-approvals': [Role.Admin, Role.Approver],
  config: [Role.Admin],
  audit: [Role.Admin],
  metrics: [Role.Admin],
};

/** A request or call the policy refused. */
export interface AccessDeniedEvent {
  /** The HTTP status it means: 401, 403 or 429. */
  status: number;
  /** `unauthorized`, `forbidden`, `rate-limited` or `too-many-requests`. */
  code: string;
  /** What the caller was told. */
  reason: string;
  /** Which rule refused it, e.g. `role`, `tool-policy`, `impersonate`, `rate`, `quota`, `in-flight`. */
  rule?: string;
  /** Where: `http`, `mcp` or `agent`. */
  surface?: string;
  method: string;
  /** The path asked for (at most 200 characters). */
  path: string;
  /** The client's address. */
  remote: string;
  /** The principal, when it was authenticated. */
  principal?: string;
  /** The user the call was for. */
  user?: string;
  /** The tool asked for. */
  tool?: string;
}

/** Options of {@link AccessPolicy}. */
export interface AccessPolicyOptions {
  /** The owner's token: principal `admin` with roles admin, caller and impersonate. @default none */
  adminToken?: string;
  /**
   * No authentication: every request is principal `admin` (the gateway allows this on loopback only).
   * @default false
   */
  open?: boolean;
  /** Where `principal/NAME`, `role/NAME` and `quota/TOOL` items live; followed while running. @default none */
  store?: ConfigStore;
  /** Accept JWTs of an OpenID Connect provider. @default none */
  jwt?: JwtOptions | JwtVerifier;
  /** Told of every refusal. @default none */
  onDenied?: Hook<AccessDeniedEvent>;
}

/** The outcome of {@link AccessPolicy.admit}. */
export type Admission =
  | { ok: true; release: () => void }
  | {
      ok: false;
      /** `rate-limited` (a rate or quota) or `too-many-requests` (the cap on calls in flight). */
      code: 'rate-limited' | 'too-many-requests';
      rule: 'rate' | 'quota' | 'in-flight';
      message: string;
      /** When trying again may succeed. */
      retryAfterMs: number;
    };

/** A malformed policy item, skipped (its principal cannot log in; its role or quota does not apply). */
export interface PolicyProblem {
  key: string;
  message: string;
}

const ADMIN: Principal = {
  name: 'admin',
  roles: [Role.Admin, Role.Caller, Role.Impersonate],
  via: 'token',
};
const OPEN: Principal = { ...ADMIN, via: 'none' };

/** How often an unknown token may make the policy re-read the store (a key added a moment ago). */
const REFRESH_ON_MISS_MS = 1_000;
/** Buckets kept before full ones (idle principals) are dropped. */
const MAX_BUCKETS = 10_000;

function digest(text: string): Buffer {
  return createHash('sha256').update(text).digest();
}

/**
 * The access policy of a gateway.
 *
 * - A role gives permissions ({@link Permission}): admin everything; caller tools, the agent and `/mcp`;
 *   approver reads tools and decides approvals; impersonate names the user.
 * - A tool is visible and callable when the principal's own globs allow it (none: every tool) and one of
 *   its roles does (a `role/NAME` item's `tools`; a role without one allows every tool).
 * - Quotas: the principal's `rate` (else its roles' strictest), each tool's `quota/TOOL`, and at most
 *   `maxInFlight` calls at once (keys and JWTs: {@link DEFAULT_MAX_IN_FLIGHT} unless set).
 */
export class AccessPolicy {
  readonly #admin: Buffer | undefined;
  readonly #open: boolean;
  readonly #jwt: JwtVerifier | undefined;
  readonly #onDenied: Hook<AccessDeniedEvent> | undefined;
  readonly #mirror: ConfigMirror | undefined;
  readonly #controller = new AbortController();
  #keys = new Map<string, Principal>();
  #roles = new Map<string, RoleSettings>();
  #rolesRevision = 0;
  #quotas = new Map<string, ToolQuota>();
  #problems: PolicyProblem[] = [];
  #lastMissRefresh = 0;
  readonly #buckets = new Map<string, TokenBucket>();
  readonly #inFlight = new Map<string, number>();

  constructor(options: AccessPolicyOptions) {
    const token = options.adminToken === '' ? undefined : options.adminToken;
    this.#admin = token === undefined ? undefined : digest(token);
    this.#open = options.open === true;
    if (!this.#admin && !this.#open && !options.store && !options.jwt) {
      throw new ToolbusError(
        'usage',
        'AccessPolicy: give an admin token, a store with principal items, a JWT provider, or open: true',
      );
    }
    const jwt = options.jwt;
    this.#jwt = jwt === undefined ? undefined : 'verify' in jwt ? jwt : createJwtVerifier(jwt);
    this.#onDenied = options.onDenied;
    this.#mirror = options.store
      ? new ConfigMirror(options.store, {
          retryMs: 1_000,
          signal: this.#controller.signal,
          onChange: () => this.#reindex(),
        })
      : undefined;
  }

  /** True when requests need no credentials. */
  get open(): boolean {
    return this.#open;
  }

  /** Loads the policy items of the store and follows it. Resolves when they are in. */
  async start(): Promise<void> {
    if (!this.#mirror) return;
    await this.#mirror.follow();
    this.#reindex();
  }

  /** Stops following the store. Idempotent. */
  close(): void {
    this.#controller.abort();
  }

  /** Items that were skipped, and why. */
  problems(): readonly PolicyProblem[] {
    return this.#problems;
  }

  /**
   * Who `authorization` (an `Authorization` header value) is: undefined for no or an unknown token.
   * `request.resources` are the resource URLs of the endpoint asked for, which a JWT verifier with
   * `resourceAudience` accepts as the token's audience (RFC 8707); read only when such a verifier checks
   * a JWT (see {@link JwtVerifyOptions.resources}).
   * @throws ToolbusError `unauthorized` for a JWT that does not verify (the message says why), or
   * `unavailable` when the JWT provider cannot be reached.
   */
  async authenticate(
    authorization: string | undefined,
    request: JwtVerifyOptions = {},
  ): Promise<Principal | undefined> {
    if (this.#open) return OPEN;
    const match = authorization === undefined ? null : /^bearer +(.+)$/i.exec(authorization.trim());
    if (!match) return undefined;
    const token = match[1]!.trim();
    const given = digest(token);
    if (this.#admin && timingSafeEqual(given, this.#admin)) return ADMIN;
    const hash = hashToken(token);
    let key = this.#keys.get(hash);
    if (!key && this.#mirror && Date.now() - this.#lastMissRefresh >= REFRESH_ON_MISS_MS) {
      // A key added a moment ago by `toolbus principal add` works at once, not after the watch.
      this.#lastMissRefresh = Date.now();
      await this.#mirror.refresh();
      this.#reindex();
      key = this.#keys.get(hash);
    }
    if (key) return key;
    if (this.#jwt && looksLikeJwt(token)) return this.#jwt.verify(token, request);
    return undefined;
  }

  /** True when `principal` holds one of the roles that grant `permission`. */
  can(principal: Principal, permission: Permission): boolean {
    return PERMISSIONS[permission].some((role) => principal.roles.includes(role));
  }

  /** The roles that grant `permission`, for a message. */
  rolesFor(permission: Permission): readonly Role[] {
    return PERMISSIONS[permission];
  }

  /** A number that changes whenever the role settings are read again: views of the tools key their lists by it. */
  get rolesRevision(): number {
    return this.#rolesRevision;
  }

  /** True when `principal` may see and call tool `name`. */
  allows(principal: Principal, name: string): boolean {
    if (principal.tools && !anyGlobMatches(principal.tools, name)) return false;
    let restricted = false;
    for (const role of this.#settingRoles(principal)) {
      const tools = this.#roles.get(role)?.tools;
      if (!tools) return true;
      restricted = true;
      if (anyGlobMatches(tools, name)) return true;
    }
    return !restricted;
  }

  /**
   * The tool globs that sum up {@link allows} for `principal`, for a remote agent run; undefined when it
   * may use every tool. A principal restricted both by its own globs and by its roles' gets its own.
   */
  toolGlobs(principal: Principal): readonly string[] | undefined {
    if (principal.tools) return principal.tools;
    const lists = this.#settingRoles(principal).map((role) => this.#roles.get(role)?.tools);
    if (lists.length === 0 || lists.some((tools) => tools === undefined)) return undefined;
    return lists.flatMap((tools) => tools ?? []);
  }

  /**
   * The user the calls of `principal` are for: `requested` when given and it may impersonate (or it is
   * its own user), else its own user, else `defaultUser`.
   * @throws ToolbusError `forbidden` naming the rule, when it names another user without the role.
   */
  userFor(principal: Principal, requested: string | undefined, defaultUser: string): string {
    const own = principal.user ?? defaultUser;
    if (requested === undefined || requested === own) return own;
    if (principal.roles.includes(Role.Impersonate)) return requested;
    throw new ToolbusError(
      'forbidden',
      `principal '${principal.name}' may not act for another user ('${requested.slice(0, 100)}'): only ` +
        `principals with the '${Role.Impersonate}' role may set the user (X-Toolbus-User, ?user= or a ` +
        `body's "user"); drop it and the calls are for '${own}'`,
    );
  }

  /**
   * Reserves one call of `principal` (of tool `tool`, when given) against its quotas. On `ok`, call
   * `release` when the call ends.
   */
  admit(principal: Principal, tool?: string, now: number = Date.now()): Admission {
    const cap = this.#maxInFlight(principal);
    const running = this.#inFlight.get(principal.name) ?? 0;
    if (cap !== undefined && running >= cap) {
      return {
        ok: false,
        code: 'too-many-requests',
        rule: 'in-flight',
        message: `principal '${principal.name}' already has ${running} calls in flight, the most it may (maxInFlight ${cap}); wait for one to finish`,
        retryAfterMs: 1_000,
      };
    }
    const rate = this.#rate(principal);
    const own = rate ? this.#bucket(`p\0${principal.name}`, rate, now) : undefined;
    if (rate && own) {
      const wait = own.take(now);
      if (wait > 0)
        return this.#limited('rate', `principal '${principal.name}' is over its rate of ${rate.text}`, wait);
    }
    const quota = tool === undefined ? undefined : this.#quotas.get(tool);
    if (quota && tool !== undefined) {
      const id = quota.per === 'all' ? `t\0${tool}` : `t\0${tool}\0${principal.name}`;
      const wait = this.#bucket(id, quota.rate, now).take(now);
      if (wait > 0) {
        own?.giveBack(); // the call is not made, so it costs the principal nothing
        const whose = quota.per === 'all' ? 'all callers together' : `principal '${principal.name}'`;
        return this.#limited(
          'quota',
          `tool '${tool}' is over its quota of ${quota.rate.text} for ${whose}`,
          wait,
        );
      }
    }
    this.#inFlight.set(principal.name, running + 1);
    let released = false;
    return {
      ok: true,
      release: () => {
        if (released) return;
        released = true;
        const left = (this.#inFlight.get(principal.name) ?? 1) - 1;
        if (left > 0) this.#inFlight.set(principal.name, left);
        else this.#inFlight.delete(principal.name);
      },
    };
  }

  /** Tells the `onDenied` hooks. */
  denied(event: AccessDeniedEvent): void {
    notifyHooks(this.#onDenied, event);
  }

  #limited(rule: 'rate' | 'quota', what: string, waitMs: number): Admission {
    return {
      ok: false,
      code: 'rate-limited',
      rule,
      message: `${what}; try again in ${Math.ceil(waitMs / 1000)} s`,
      retryAfterMs: waitMs,
    };
  }

  /**
   * The roles whose `role/NAME` settings (tools, rate, in-flight cap) apply to `principal`. An admin's
   * are `role/admin`'s alone (the caller role it also holds does not limit it), and `impersonate` is no
   * set of tools: it only says who may name the user, so it never widens a caller's tools.
   */
  #settingRoles(principal: Principal): readonly Role[] {
    if (principal.roles.includes(Role.Admin)) return [Role.Admin];
    const roles = principal.roles.filter((role) => role !== Role.Impersonate);
    return roles.length > 0 ? roles : principal.roles;
  }

  #maxInFlight(principal: Principal): number | undefined {
    if (principal.maxInFlight !== undefined) return principal.maxInFlight;
    const caps = this.#settingRoles(principal)
      .map((role) => this.#roles.get(role)?.maxInFlight)
      .filter((n): n is number => n !== undefined);
    if (caps.length > 0) return Math.min(...caps);
    return principal.via === 'key' || principal.via === 'jwt' ? DEFAULT_MAX_IN_FLIGHT : undefined;
  }

  #rate(principal: Principal): Rate | undefined {
    if (principal.rate) return principal.rate;
    let strictest: Rate | undefined;
    for (const role of this.#settingRoles(principal)) {
      const rate = this.#roles.get(role)?.rate;
      if (rate && (!strictest || rate.tokens / rate.periodMs < strictest.tokens / strictest.periodMs)) {
        strictest = rate;
      }
    }
    return strictest;
  }

  #bucket(id: string, rate: Rate, now: number): TokenBucket {
    let bucket = this.#buckets.get(id);
    if (!bucket || bucket.rate.text !== rate.text || bucket.rate.burst !== rate.burst) {
      if (this.#buckets.size >= MAX_BUCKETS) {
        for (const [key, b] of this.#buckets) if (b.full(now)) this.#buckets.delete(key);
      }
      bucket = new TokenBucket(rate, now);
      this.#buckets.set(id, bucket);
    }
    return bucket;
  }

  /** Rebuilds the indexes from the mirror: token hash → principal, roles, quotas. */
  #reindex(): void {
    const mirror = this.#mirror;
    if (!mirror) return;
    const problems: PolicyProblem[] = [];
    const keys = new Map<string, Principal>();
    for (const [name, value] of mirror.entries(PRINCIPAL_CONFIG_TYPE)) {
      try {
        const stored = decodePrincipalItem(name, value);
        keys.set(stored.tokenHash, stored.principal);
      } catch (error) {
        problems.push({ key: `${PRINCIPAL_CONFIG_TYPE}/${name}`, message: (error as Error).message });
      }
    }
    const roles = new Map<string, RoleSettings>();
    for (const [name, value] of mirror.entries(ROLE_CONFIG_TYPE)) {
      try {
        roles.set(name, decodeRoleItem(name, value));
      } catch (error) {
        // Fails closed: a role whose item cannot be read allows no tool until it is fixed.
        roles.set(name, { tools: [] });
        problems.push({ key: `${ROLE_CONFIG_TYPE}/${name}`, message: (error as Error).message });
      }
    }
    const quotas = new Map<string, ToolQuota>();
    for (const [tool, value] of mirror.entries(QUOTA_CONFIG_TYPE)) {
      try {
        quotas.set(tool, decodeQuotaItem(tool, value));
      } catch (error) {
        problems.push({ key: `${QUOTA_CONFIG_TYPE}/${tool}`, message: (error as Error).message });
      }
    }
    this.#keys = keys;
    this.#roles = roles;
    this.#rolesRevision++;
    this.#quotas = quotas;
    this.#problems = problems;
  }
}
