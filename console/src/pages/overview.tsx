/**
 * @module Overview: the bus, the store, readiness part by part, the counts, and the call and error
 * rates of the last minutes (`GET /api/v1/system`, every 5 s).
 */
import { Badge, ErrorNotice, PageHeader } from '../components/notice.js';
import { RateChart } from '../components/rate-chart.js';
import { duration } from '../format.js';
import { useResource, useTitle } from '../hooks.js';
import type { SystemInfo } from '../types.js';

const REFRESH_MS = 5000;

/** `GET /api/v1/health` with the token, as far as the overview reads it. */
interface HealthInfo {
  problems?: { key: string; message: string; severity?: string }[];
}

function Count({ label, value, href }: { label: string; value: number; href?: string }) {
  return (
    <div class="stat">
      <dt>{href ? <a href={href}>{label}</a> : label}</dt>
      <dd>{value}</dd>
    </div>
  );
}

/** The overview page. */
export function OverviewPage() {
  useTitle('Overview');
  const system = useResource<SystemInfo>('/api/v1/system', REFRESH_MS);
  const info = system.data;
  // The problems themselves (the registry's, by config item) are in the health answer.
  const health = useResource<HealthInfo>(
    info && info.counts.problems > 0 ? '/api/v1/health' : undefined,
    REFRESH_MS,
  );
  const problems = info && info.counts.problems > 0 ? (health.data?.problems ?? []) : [];
  return (
    <section aria-labelledby="page-title">
      <PageHeader title="Overview">
        {info && (
          <span class="muted">
            toolbus {info.version} · up {duration(info.uptimeMs)}
          </span>
        )}
      </PageHeader>
      <ErrorNotice error={system.error} prefix="Could not load the system status" />
      {!info && !system.error && <p class="muted">Loading…</p>}
      {info && (
        <>
          <div class="grid cards">
            <section class="card" aria-labelledby="bus-title">
              <h2 id="bus-title">Bus</h2>
              <p>
                <Badge kind={info.bus.kind === 'nats' ? 'accent' : undefined}>
                  {info.bus.kind === 'nats' ? 'NATS' : info.bus.kind === 'memory' ? 'Memory' : info.bus.kind}
                </Badge>{' '}
                <Badge kind={info.bus.connected ? 'ok' : 'error'}>
                  {info.bus.connected ? 'connected' : 'disconnected'}
                </Badge>
              </p>
              <p class="muted">{info.bus.description}</p>
            </section>
            <section class="card" aria-labelledby="store-title">
              <h2 id="store-title">Config store</h2>
              <p>{info.store.description}</p>
            </section>
            <section class="card" aria-labelledby="agent-title">
              <h2 id="agent-title">Agent</h2>
              <p>
                <Badge kind={info.agent ? 'ok' : undefined}>{info.agent ? 'running' : 'off'}</Badge>
              </p>
              <p class="muted">
                {info.agent ? <a href="#/agent">Chat with the agent</a> : 'No model is configured.'}
              </p>
            </section>
            <section class="card" aria-labelledby="counts-title">
              <h2 id="counts-title">Counts</h2>
              <dl class="stats">
                <Count label="Tools" value={info.counts.tools} href="#/tools" />
                <Count label="Services" value={info.counts.services} href="#/services" />
                <Count label="Problems" value={info.counts.problems} />
                <Count label="Calls in flight" value={info.counts.callsInFlight} href="#/calls" />
              </dl>
            </section>
          </div>

          {problems.length > 0 && (
            <section class="card" aria-labelledby="problems-title">
              <h2 id="problems-title">Problems</h2>
              <ul class="problems">
                {problems.map((p, i) => {
                  const [type, ...key] = p.key.split('/');
                  return (
                    <li key={i}>
                      <Badge kind={p.severity === 'error' ? 'error' : 'warn'}>
                        {p.severity ?? 'problem'}
                      </Badge>{' '}
                      <a
                        href={`#/config/${encodeURIComponent(type ?? '')}/${encodeURIComponent(key.join('/'))}`}
                      >
                        <code>{p.key}</code>
                      </a>
                      : {p.message}
                    </li>
                  );
                })}
              </ul>
            </section>
          )}

          <section class="card" aria-labelledby="rates-title">
            <h2 id="rates-title">Calls and errors</h2>
            <RateChart points={info.rates.points} bucketMs={info.rates.bucketMs} />
          </section>

          <section class="card" aria-labelledby="ready-title">
            <h2 id="ready-title">
              Readiness{' '}
              <Badge kind={info.ready.status === 'ready' ? 'ok' : 'error'}>{info.ready.status}</Badge>
            </h2>
            <table class="table">
              <thead>
                <tr>
                  <th scope="col">Part</th>
                  <th scope="col">State</th>
                  <th scope="col">Required</th>
                  <th scope="col">Detail</th>
                </tr>
              </thead>
              <tbody>
                {Object.entries(info.ready.parts).map(([name, part]) => (
                  <tr key={name}>
                    <th scope="row">{name}</th>
                    <td>
                      <Badge kind={part.ok ? 'ok' : 'error'}>{part.ok ? 'ok' : 'not ok'}</Badge>
                    </td>
                    <td>{part.required === false ? 'no' : 'yes'}</td>
                    <td class="muted">{detailOf(part)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </section>
        </>
      )}
    </section>
  );
}

/** A part's detail and any other fields it has, as text. */
function detailOf(part: Record<string, unknown>): string {
  const rest = Object.entries(part).filter(([k]) => k !== 'ok' && k !== 'required');
  return rest.map(([k, v]) => (k === 'detail' ? String(v) : `${k}: ${JSON.stringify(v)}`)).join(' · ');
}
