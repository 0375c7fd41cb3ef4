/**
 * @module Audit: the latest entries of the audit log (`GET /api/v1/audit`), filtered by tool, user and
 * time; a gateway without an audit log answers 404, shown as such.
 */
import { useState } from 'preact/hooks';
import { ApiError } from '../api.js';
import { Badge, ErrorNotice, Note, PageHeader } from '../components/notice.js';
import { dateTime, duration } from '../format.js';
import { useResource, useTitle } from '../hooks.js';
import type { AuditEntry } from '../types.js';

/** The audit page. */
export function AuditPage() {
  useTitle('Audit');
  const [tool, setTool] = useState('');
  const [user, setUser] = useState('');
  const [since, setSince] = useState('');
  const [query, setQuery] = useState('limit=200');
  const audit = useResource<{ entries: AuditEntry[] }>(`/api/v1/audit?${query}`);
  const missing = audit.error instanceof ApiError && audit.error.status === 404;

  const apply = (event: Event): void => {
    event.preventDefault();
    const params = new URLSearchParams({ limit: '200' });
    if (tool.trim()) params.set('tool', tool.trim());
    if (user.trim()) params.set('user', user.trim());
    if (since.trim()) params.set('since', since.trim());
    setQuery(params.toString());
  };
  // Newest first on the page (the route answers oldest first).
  const entries = audit.data ? [...audit.data.entries].reverse() : undefined;
  return (
    <section aria-labelledby="page-title">
      <PageHeader title="Audit">
        <button type="button" class="button" onClick={audit.reload}>
          Refresh
        </button>
      </PageHeader>
      {missing ? (
        <Note kind="warn">
          No audit log is configured on this gateway ({(audit.error as ApiError).message}).
        </Note>
      ) : (
        <>
          <form class="row fields filters" role="search" aria-label="Filter the audit log" onSubmit={apply}>
            <div class="field">
              <label for="audit-tool">Tool</label>
              <input id="audit-tool" value={tool} onInput={(e) => setTool(e.currentTarget.value)} />
            </div>
            <div class="field">
              <label for="audit-user">User</label>
              <input id="audit-user" value={user} onInput={(e) => setUser(e.currentTarget.value)} />
            </div>
            <div class="field">
              <label for="audit-since">Since</label>
              <input
                id="audit-since"
                value={since}
                placeholder="1h, 30m or an ISO time"
                onInput={(e) => setSince(e.currentTarget.value)}
              />
            </div>
            <div class="field">
              <button type="submit" class="button">
                Apply
              </button>
            </div>
          </form>
          <ErrorNotice error={audit.error} prefix="Could not load the audit log" />
          {entries && entries.length === 0 && <Note>No entries match.</Note>}
          {entries && entries.length > 0 && (
            <div class="table-wrap">
              <table class="table">
                <caption class="visually-hidden">Audit log entries, newest first</caption>
                <thead>
                  <tr>
                    <th scope="col">Time</th>
                    <th scope="col">Kind</th>
                    <th scope="col">Caller</th>
                    <th scope="col">User</th>
                    <th scope="col">Tool</th>
                    <th scope="col">Outcome</th>
                    <th scope="col">Duration</th>
                  </tr>
                </thead>
                <tbody>
                  {entries.map((e, i) => (
                    <tr key={`${e.time}-${e.callId ?? i}`}>
                      <td>
                        <time dateTime={e.time}>{dateTime(e.time)}</time>
                      </td>
                      <td>{e.kind}</td>
                      <td>{e.caller}</td>
                      <td>{e.user ?? '—'}</td>
                      <td>{e.tool ?? '—'}</td>
                      <td>
                        <Badge kind={e.outcome === 'ok' ? 'ok' : 'error'}>{e.outcome}</Badge>
                      </td>
                      <td>{duration(e.durationMs)}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          )}
        </>
      )}
    </section>
  );
}
