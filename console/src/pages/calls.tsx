/**
 * @module Live calls: the calls the gateway saw (`GET /api/v1/live-calls`), then each start and end as
 * it happens (`/api/v1/live-calls/events`): new rows at the top, running rows updated when they end;
 * a filter, and a detail view of a call.
 */
import { useEffect, useMemo, useState } from 'preact/hooks';
import { isAbort } from '../api.js';
import { Badge, ErrorNotice, Note, PageHeader } from '../components/notice.js';
import { ago, clock, duration, prettyText } from '../format.js';
import { useApi, useNow, useTitle } from '../hooks.js';
import type { LiveCall, LiveProgress } from '../types.js';

const MAX_ROWS = 500;
const RECONNECT_MS = 2000;

/** Adds or updates a call: an ended state wins over a running one that arrives late. */
function merge(calls: LiveCall[], call: LiveCall): LiveCall[] {
  const index = calls.findIndex((c) => c.callId === call.callId);
  if (index < 0) {
    const next = [call, ...calls];
    next.sort((a, b) => b.startedAt - a.startedAt);
    return next.slice(0, MAX_ROWS);
  }
  const old = calls[index]!;
  if (old.status !== 'running' && call.status === 'running') return calls;
  return calls.map((c, i) => (i === index ? { ...old, ...call } : c));
}

type Connection = 'connecting' | 'live' | 'reconnecting';

/** The calls, kept live. */
function useLiveCalls() {
  const api = useApi();
  const [calls, setCalls] = useState<LiveCall[]>([]);
  const [progress, setProgress] = useState<Record<string, LiveProgress>>({});
  const [error, setError] = useState<unknown>(undefined);
  const [connection, setConnection] = useState<Connection>('connecting');

  useEffect(() => {
    const controller = new AbortController();
    const { signal } = controller;
    const run = async (): Promise<void> => {
      while (!signal.aborted) {
        try {
          // The stream first, then the list: a call that starts in between is in one or the other.
          await api.stream('/api/v1/live-calls/events', {
            signal,
            onOpen: () => {
              setConnection('live');
              setError(undefined);
              void api
                .json<{ calls: LiveCall[] }>('/api/v1/live-calls?limit=200', { signal })
                .then((answer) => {
                  setCalls((current) => answer.calls.reduce(merge, current));
                })
                .catch((e: unknown) => {
                  if (!isAbort(e)) setError(e);
                });
            },
            onEvent: (type, data) => {
              if (type === 'call') setCalls((current) => merge(current, data as LiveCall));
              else if (type === 'progress') {
                const report = data as LiveProgress;
                setProgress((current) => ({ ...current, [report.callId]: report }));
              }
            },
          });
        } catch (e) {
          if (isAbort(e)) return;
          setError(e);
        }
        if (signal.aborted) return;
        setConnection('reconnecting');
        await new Promise((resolve) => setTimeout(resolve, RECONNECT_MS));
      }
    };
    void run();
    return () => controller.abort();
  }, [api]);

  return { calls, progress, error, connection };
}

function Outcome({ call }: { call: LiveCall }) {
  if (call.status === 'running') return <Badge kind="accent">running</Badge>;
  if (call.status === 'ok') return <Badge kind="ok">ok</Badge>;
  return <Badge kind="error">{call.code ?? 'error'}</Badge>;
}

/** The live calls page. */
export function CallsPage() {
  useTitle('Live calls');
  const { calls, progress, error, connection } = useLiveCalls();
  const now = useNow();
  const [tool, setTool] = useState('');
  const [user, setUser] = useState('');
  const [outcome, setOutcome] = useState('all');
  const [selected, setSelected] = useState<string | undefined>(undefined);

  const shown = useMemo(
    () =>
      calls.filter(
        (c) =>
          (tool === '' || c.tool.toLowerCase().includes(tool.toLowerCase())) &&
          (user === '' || (c.user ?? '').toLowerCase().includes(user.toLowerCase())) &&
          (outcome === 'all' || c.status === outcome),
      ),
    [calls, tool, user, outcome],
  );
  const detail = calls.find((c) => c.callId === selected);

  return (
    <section aria-labelledby="page-title">
      <PageHeader title="Live calls">
        <span class={`live-state ${connection}`} role="status">
          {connection === 'live' ? 'live' : connection === 'connecting' ? 'connecting…' : 'reconnecting…'}
        </span>
      </PageHeader>
      <ErrorNotice error={error} prefix="The live calls stream failed" />
      <form
        class="row fields filters"
        role="search"
        aria-label="Filter calls"
        onSubmit={(e) => e.preventDefault()}
      >
        <div class="field">
          <label for="calls-tool">Tool</label>
          <input id="calls-tool" type="search" value={tool} onInput={(e) => setTool(e.currentTarget.value)} />
        </div>
        <div class="field">
          <label for="calls-user">User</label>
          <input id="calls-user" type="search" value={user} onInput={(e) => setUser(e.currentTarget.value)} />
        </div>
        <div class="field">
          <label for="calls-outcome">Outcome</label>
          <select id="calls-outcome" value={outcome} onChange={(e) => setOutcome(e.currentTarget.value)}>
            <option value="all">all</option>
            <option value="running">running</option>
            <option value="ok">ok</option>
            <option value="error">error</option>
          </select>
        </div>
      </form>
      {shown.length === 0 ? (
        <Note>
          {calls.length === 0
            ? 'No calls yet: they appear here as they start.'
            : 'No call matches the filter.'}
        </Note>
      ) : (
        <div class="table-wrap">
          <table class="table calls" aria-describedby="calls-caption">
            <caption id="calls-caption" class="visually-hidden">
              Tool calls, newest first
            </caption>
            <thead>
              <tr>
                <th scope="col">Tool</th>
                <th scope="col">User</th>
                <th scope="col">Started</th>
                <th scope="col">Duration</th>
                <th scope="col">Outcome</th>
                <th scope="col">
                  <span class="visually-hidden">Details</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {shown.map((call) => {
                const report = progress[call.callId];
                return (
                  <tr
                    key={call.callId}
                    data-call={call.callId}
                    data-status={call.status}
                    class={call.callId === selected ? 'selected' : undefined}
                  >
                    <td>{call.tool}</td>
                    <td>{call.user ?? <span class="muted">—</span>}</td>
                    <td>
                      <time
                        dateTime={new Date(call.startedAt).toISOString()}
                        title={ago(call.startedAt, now)}
                      >
                        {clock(call.startedAt)}
                      </time>
                    </td>
                    <td>
                      {call.durationMs !== undefined
                        ? duration(call.durationMs)
                        : `${duration(Math.max(0, now - call.startedAt))}…`}
                      {call.status === 'running' && report && (
                        <span class="muted">
                          {' '}
                          {report.total !== undefined
                            ? `${report.progress}/${report.total}`
                            : report.progress}
                        </span>
                      )}
                    </td>
                    <td>
                      <Outcome call={call} />
                    </td>
                    <td>
                      <button
                        type="button"
                        class="button small"
                        aria-expanded={call.callId === selected}
                        aria-controls="call-detail"
                        onClick={() => setSelected(call.callId === selected ? undefined : call.callId)}
                      >
                        Details
                        <span class="visually-hidden">
                          {' '}
                          of {call.tool} call {call.callId}
                        </span>
                      </button>
                    </td>
                  </tr>
                );
              })}
            </tbody>
          </table>
        </div>
      )}
      {detail && (
        <section id="call-detail" class="card detail" aria-labelledby="call-detail-title">
          <div class="page-header">
            <h2 id="call-detail-title">
              {detail.tool} <Outcome call={detail} />
            </h2>
            <button type="button" class="button small" onClick={() => setSelected(undefined)}>
              Close
            </button>
          </div>
          <dl class="pairs">
            <dt>Call id</dt>
            <dd>
              <code>{detail.callId}</code>
            </dd>
            <dt>Caller</dt>
            <dd>{detail.caller ?? '—'}</dd>
            <dt>User</dt>
            <dd>{detail.user ?? '—'}</dd>
            <dt>Started</dt>
            <dd>
              {new Date(detail.startedAt).toLocaleString()} ({ago(detail.startedAt, now)})
            </dd>
            <dt>Duration</dt>
            <dd>{detail.durationMs !== undefined ? duration(detail.durationMs) : 'running'}</dd>
            {detail.code && (
              <>
                <dt>Code</dt>
                <dd>
                  <code>{detail.code}</code>
                </dd>
              </>
            )}
          </dl>
          <h3>Arguments</h3>
          <pre class="code" tabIndex={0}>
            {prettyText(detail.arguments)}
          </pre>
          <h3>Result</h3>
          {detail.content !== undefined ? (
            <pre class="code" tabIndex={0}>
              {detail.content}
            </pre>
          ) : (
            <p class="muted">{detail.status === 'running' ? 'Still running.' : 'No result text.'}</p>
          )}
        </section>
      )}
    </section>
  );
}
