/**
 * @module `GET /api/v1/ready`: readiness, part by part. 200 when every required part is ready, else 503,
 * so a load balancer or an orchestrator sends no traffic to a gateway that cannot serve it. Liveness
 * (`/api/v1/health`) stays trivial: a process that is alive but not ready must not be restarted for it.
 */
import type { ConfigStore } from '../config/index.js';
import { sendJson } from './http-error.js';
import type { RouteContext } from './route-context.js';

/** What one readiness check found. */
export interface ReadinessPart {
  /** True when the part can serve now. */
  ok: boolean;
  /** What was found, for an operator (shown only to a caller with the token). @default none */
  detail?: string;
  /**
   * Whether the gateway is not ready without it. A part that is only informative (no model configured:
   * tools are still served) says false. @default true
   */
  required?: boolean;
}

/** One readiness check; may be async. A check that throws or takes longer than 2 s is not ready. */
export type ReadinessCheck = () => ReadinessPart | Promise<ReadinessPart>;

/** How long one check may take before it counts as not ready. */
export const READINESS_CHECK_TIMEOUT_MS = 2_000;

/** The checks every gateway has: its config store (when it has one) answers a read; a model is configured. */
export function defaultReadinessChecks(
  store: ConfigStore | undefined,
  agentConfigured: boolean,
  agentUnavailableMessage: string | undefined,
): Record<string, ReadinessCheck> {
  return {
    ...(store
      ? {
          store: async (): Promise<ReadinessPart> => {
            await store.revision();
            return { ok: true, detail: 'the config store answers' };
          },
        }
      : {}),
    model: () =>
      agentConfigured
        ? { ok: true, required: false, detail: 'a model is configured; the agent answers' }
        : {
            ok: false,
            required: false,
            detail: agentUnavailableMessage ?? 'no model is configured; tools are served, the agent is not',
          },
  };
}

/** Runs one check, bounded by {@link READINESS_CHECK_TIMEOUT_MS}; a failure is a part that is not ready. */
async function runCheck(check: ReadinessCheck): Promise<ReadinessPart> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<ReadinessPart>((resolve) => {
    timer = setTimeout(
      () => resolve({ ok: false, detail: `no answer within ${READINESS_CHECK_TIMEOUT_MS} ms` }),
      READINESS_CHECK_TIMEOUT_MS,
    );
  });
  try {
    return await Promise.race([Promise.resolve().then(check), timeout]);
  } catch (error) {
    return { ok: false, detail: error instanceof Error ? error.message : String(error) };
  } finally {
    clearTimeout(timer);
  }
}

/** What the readiness route answers: whether the gateway is ready, and each part's state. */
export interface ReadinessReport {
  status: 'ready' | 'not-ready' | 'stopping';
  parts: Record<string, { ok: boolean; required: boolean; detail?: string }>;
}

/**
 * Runs every check: `{ status, parts: { name: { ok, required } } }`, with each part's `detail` only
 * when `authenticated` (details name stores and services).
 */
export async function readinessReport(
  checks: Readonly<Record<string, ReadinessCheck>>,
  authenticated: boolean,
  closing: boolean,
): Promise<ReadinessReport> {
  const names = Object.keys(checks);
  const results = await Promise.all(names.map((name) => runCheck(checks[name]!)));
  const parts: ReadinessReport['parts'] = {};
  let ready = !closing;
  names.forEach((name, i) => {
    const part = results[i]!;
    const required = part.required !== false;
    if (required && !part.ok) ready = false;
    parts[name] = {
      ok: part.ok,
      required,
      ...(authenticated && part.detail !== undefined ? { detail: part.detail } : {}),
    };
  });
  return { status: ready ? 'ready' : closing ? 'stopping' : 'not-ready', parts };
}

/** Answers the readiness route with {@link readinessReport}: 200 when ready, else 503. */
export async function sendReadiness(
  ctx: RouteContext,
  checks: Readonly<Record<string, ReadinessCheck>>,
  authenticated: boolean,
  closing: boolean,
): Promise<void> {
  const report = await readinessReport(checks, authenticated, closing);
  sendJson(ctx.res, report.status === 'ready' ? 200 : 503, report, ctx.headers);
}
