/**
 * @module Approvals: the agent's requests to call a tool that needs a person's approval
 * (`GET /api/v1/approvals`), with approve and deny buttons (`POST /api/v1/approvals/{id}`). A gateway
 * without an agent with a run store answers 404, shown as such.
 */
import { useState } from 'preact/hooks';
import { ApiError, errorText } from '../api.js';
import { Badge, ErrorNotice, JsonBlock, Note, PageHeader } from '../components/notice.js';
import { ago, dateTime } from '../format.js';
import { useApi, useNow, useResource, useTitle } from '../hooks.js';
import type { Approval } from '../types.js';

function ApprovalCard({ approval, onDecided }: { approval: Approval; onDecided(): void }) {
  const api = useApi();
  const now = useNow(5000);
  const [reason, setReason] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | undefined>(undefined);
  const decide = async (decision: 'approve' | 'deny'): Promise<void> => {
    setBusy(true);
    setError(undefined);
    try {
      await api.json(`/api/v1/approvals/${encodeURIComponent(approval.id)}`, {
        method: 'POST',
        body: { decision, ...(reason.trim() ? { reason: reason.trim() } : {}) },
      });
      onDecided();
    } catch (e) {
      setError(errorText(e));
    } finally {
      setBusy(false);
    }
  };
  const reasonId = `reason-${approval.id}`;
  return (
    <article class="card approval" aria-labelledby={`approval-${approval.id}`} data-approval={approval.id}>
      <h2 id={`approval-${approval.id}`}>
        <code>{approval.tool}</code>{' '}
        <Badge
          kind={approval.status === 'pending' ? 'warn' : approval.status === 'approved' ? 'ok' : 'error'}
        >
          {approval.status}
        </Badge>
      </h2>
      <dl class="pairs">
        <dt>Request</dt>
        <dd>
          <code>{approval.id}</code>
        </dd>
        <dt>Run</dt>
        <dd>
          <code>{approval.runId}</code>
        </dd>
        <dt>User</dt>
        <dd>{approval.user ?? '—'}</dd>
        <dt>Principal</dt>
        <dd>{approval.principal ?? '—'}</dd>
        <dt>Asked</dt>
        <dd>
          {dateTime(approval.time)} ({ago(Date.parse(approval.time), now)})
        </dd>
        {approval.expiresAt && (
          <>
            <dt>Expires</dt>
            <dd>{dateTime(approval.expiresAt)}</dd>
          </>
        )}
        {approval.decision && (
          <>
            <dt>Decided</dt>
            <dd>
              by {approval.decision.by} at {dateTime(approval.decision.time)}
              {approval.decision.timedOut ? ' (timed out)' : ''}
              {approval.decision.reason ? `: ${approval.decision.reason}` : ''}
            </dd>
          </>
        )}
      </dl>
      <h3>Arguments</h3>
      <JsonBlock value={approval.arguments} label={`Arguments of ${approval.tool}`} />
      {approval.status === 'pending' && (
        <div class="stack">
          <div class="field">
            <label for={reasonId}>Reason (optional)</label>
            <input id={reasonId} value={reason} onInput={(e) => setReason(e.currentTarget.value)} />
          </div>
          <div class="row">
            <button
              type="button"
              class="button primary"
              disabled={busy}
              onClick={() => void decide('approve')}
            >
              Approve
              <span class="visually-hidden">
                {' '}
                {approval.tool} request {approval.id}
              </span>
            </button>
            <button type="button" class="button danger" disabled={busy} onClick={() => void decide('deny')}>
              Deny
              <span class="visually-hidden">
                {' '}
                {approval.tool} request {approval.id}
              </span>
            </button>
          </div>
          {error && (
            <p class="notice error" role="alert">
              {error}
            </p>
          )}
        </div>
      )}
    </article>
  );
}

/** The approvals page. */
export function ApprovalsPage() {
  useTitle('Approvals');
  const [status, setStatus] = useState('pending');
  const approvals = useResource<{ approvals: Approval[] }>(
    `/api/v1/approvals?status=${encodeURIComponent(status)}`,
    5000,
  );
  const missing = approvals.error instanceof ApiError && approvals.error.status === 404;
  const list = approvals.data?.approvals;
  return (
    <section aria-labelledby="page-title">
      <PageHeader title="Approvals">
        <div class="field inline">
          <label for="approval-status">Show</label>
          <select id="approval-status" value={status} onChange={(e) => setStatus(e.currentTarget.value)}>
            <option value="pending">pending</option>
            <option value="approved">approved</option>
            <option value="denied">denied</option>
            <option value="all">all</option>
          </select>
        </div>
      </PageHeader>
      {missing ? (
        <Note kind="warn">
          Approvals need the agent with a run store, and this gateway has none (
          {(approvals.error as ApiError).message}).
        </Note>
      ) : (
        <>
          <ErrorNotice error={approvals.error} prefix="Could not load the approvals" />
          {list && list.length === 0 && (
            <Note>No {status === 'all' ? '' : `${status} `}approval requests.</Note>
          )}
          {list?.map((a) => (
            <ApprovalCard key={a.id} approval={a} onDecided={approvals.reload} />
          ))}
        </>
      )}
    </section>
  );
}
