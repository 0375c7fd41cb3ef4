/**
 * @module Agent: a chat over `POST /api/v1/agent`'s event stream: thoughts, tool calls (expandable,
 * with their progress and observation), approvals, the answer or the error. The conversation goes
 * back as `history`; Cancel aborts the request; a gateway without an agent (503) says why.
 */
import { useEffect, useRef, useState } from 'preact/hooks';
import { ApiError, errorText, isAbort } from '../api.js';
import { Badge, Note, PageHeader } from '../components/notice.js';
import { prettyText } from '../format.js';
import { useApi, useTitle } from '../hooks.js';
import type { AgentStreamEvent, Approval } from '../types.js';

interface ToolStep {
  kind: 'tool';
  toolName: string | undefined;
  callId: string | undefined;
  progress: { progress: number; total?: number; message?: string }[];
  observation?: string;
  isError?: boolean;
}

type Step =
  | { kind: 'thought'; text: string }
  | ToolStep
  | { kind: 'approval'; approval: Approval | undefined; text: string };

interface Turn {
  id: number;
  question: string;
  steps: Step[];
  answer?: string;
  error?: string;
  status: 'running' | 'done' | 'cancelled' | 'failed';
}

/** The turn after one stream event. */
function applyEvent(turn: Turn, event: AgentStreamEvent): Turn {
  const steps = [...turn.steps];
  const toolIndex = (callId: string | undefined): number =>
    callId !== undefined
      ? steps.findIndex((s) => s.kind === 'tool' && s.callId === callId)
      : // Without an id (the stream's observations may carry none): the oldest call still waiting.
        steps.findIndex((s) => s.kind === 'tool' && s.observation === undefined);
  switch (event.type) {
    case 'thought':
      return { ...turn, steps: [...steps, { kind: 'thought', text: event.content }] };
    case 'progress': {
      const report = event.progress ?? safeParse(event.content);
      const i = steps.findIndex((s) => s.kind === 'tool' && s.callId === event.callId);
      const step: ToolStep =
        i >= 0
          ? { ...(steps[i] as ToolStep) }
          : { kind: 'tool', toolName: event.toolName, callId: event.callId, progress: [] };
      step.progress = [...step.progress, report as ToolStep['progress'][number]];
      if (i >= 0) steps[i] = step;
      else steps.push(step);
      return { ...turn, steps };
    }
    case 'observation': {
      const i = toolIndex(event.callId);
      const base: ToolStep =
        i >= 0
          ? (steps[i] as ToolStep)
          : { kind: 'tool', toolName: event.toolName, callId: event.callId, progress: [] };
      const step: ToolStep = {
        ...base,
        toolName: base.toolName ?? event.toolName,
        observation: event.content,
        ...(event.isError !== undefined ? { isError: event.isError } : {}),
      };
      if (i >= 0) steps[i] = step;
      else steps.push(step);
      return { ...turn, steps };
    }
    case 'approval': {
      const approval = event.approval ?? (safeParse(event.content) as Approval | undefined);
      return { ...turn, steps: [...steps, { kind: 'approval', approval, text: event.content }] };
    }
    case 'answer':
      return { ...turn, answer: event.content, status: 'done' };
    case 'error':
      return { ...turn, error: event.content, status: 'failed' };
    default:
      return turn;
  }
}

function safeParse(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

function ToolStepView({ step }: { step: ToolStep }) {
  const last = step.progress[step.progress.length - 1];
  const state = step.observation === undefined ? 'running' : step.isError ? 'error' : 'done';
  return (
    <details class={`step tool ${state}`} open={step.observation === undefined}>
      <summary>
        Tool call
        {step.toolName ? (
          <>
            {' '}
            <code>{step.toolName}</code>
          </>
        ) : (
          ''
        )}{' '}
        <Badge kind={state === 'running' ? 'accent' : state === 'error' ? 'error' : 'ok'}>{state}</Badge>
        {last && (
          <span class="muted">
            {' '}
            progress {last.total !== undefined ? `${last.progress}/${last.total}` : last.progress}
          </span>
        )}
      </summary>
      {step.progress.some((p) => p.message) && (
        <ol class="chunks" aria-label="Progress">
          {step.progress
            .filter((p) => p.message)
            .map((p, i) => (
              <li key={i}>{p.message}</li>
            ))}
        </ol>
      )}
      {step.observation !== undefined && (
        <div class="observation">
          <h4>Observation</h4>
          <pre class="code" tabIndex={0}>
            {step.observation}
          </pre>
        </div>
      )}
    </details>
  );
}

function StepView({ step }: { step: Step }) {
  if (step.kind === 'thought') {
    return (
      <div class="step thought">
        <span class="step-label">Thought</span> {step.text}
      </div>
    );
  }
  if (step.kind === 'tool') return <ToolStepView step={step} />;
  const a = step.approval;
  return (
    <div class="step approval notice warn">
      <p>
        <strong>Approval needed</strong>
        {a ? (
          <>
            {' '}
            for <code>{a.tool}</code> (request <code>{a.id}</code>).{' '}
            <a href="#/approvals">Decide it on the approvals page</a>.
          </>
        ) : (
          '.'
        )}
      </p>
      <pre class="code" tabIndex={0}>
        {a ? JSON.stringify(a.arguments, null, 2) : prettyText(step.text)}
      </pre>
    </div>
  );
}

/** The agent page. */
export function AgentPage() {
  useTitle('Agent');
  const api = useApi();
  const [turns, setTurns] = useState<Turn[]>([]);
  const [question, setQuestion] = useState('');
  const [unavailable, setUnavailable] = useState<string | undefined>(undefined);
  const running = useRef<AbortController | undefined>(undefined);
  const [busy, setBusy] = useState(false);
  const log = useRef<HTMLOListElement>(null);
  useEffect(() => () => running.current?.abort(), []);
  useEffect(() => {
    log.current?.lastElementChild?.scrollIntoView({ block: 'nearest' });
  }, [turns]);

  const ask = async (event: Event): Promise<void> => {
    event.preventDefault();
    const text = question.trim();
    if (text === '' || busy) return;
    const history = turns
      .filter((t) => t.status === 'done' && t.answer !== undefined)
      .flatMap((t) => [
        { role: 'user' as const, content: t.question },
        { role: 'assistant' as const, content: t.answer ?? '' },
      ]);
    const id = Date.now();
    const update = (change: (turn: Turn) => Turn): void =>
      setTurns((all) => all.map((t) => (t.id === id ? change(t) : t)));
    setTurns((all) => [...all, { id, question: text, steps: [], status: 'running' }]);
    setQuestion('');
    setBusy(true);
    const controller = new AbortController();
    running.current = controller;
    try {
      await api.stream('/api/v1/agent', {
        method: 'POST',
        body: { question: text, ...(history.length > 0 ? { history } : {}) },
        signal: controller.signal,
        onEvent: (type, data) => {
          const e = (data && typeof data === 'object' ? data : { content: String(data) }) as AgentStreamEvent;
          update((turn) => applyEvent(turn, { ...e, type: e.type ?? type }));
        },
      });
      update((turn) =>
        turn.status === 'running'
          ? { ...turn, status: 'failed', error: 'the stream ended without an answer' }
          : turn,
      );
    } catch (error) {
      if (isAbort(error)) {
        update((turn) => ({ ...turn, status: 'cancelled' }));
      } else if (error instanceof ApiError && error.status === 503) {
        setUnavailable(error.message);
        setTurns((all) => all.filter((t) => t.id !== id));
        setQuestion(text);
      } else {
        update((turn) => ({ ...turn, status: 'failed', error: errorText(error) }));
      }
    } finally {
      running.current = undefined;
      setBusy(false);
    }
  };

  return (
    <section aria-labelledby="page-title" class="agent">
      <PageHeader title="Agent">
        <button
          type="button"
          class="button"
          disabled={busy || turns.length === 0}
          onClick={() => setTurns([])}
        >
          New conversation
        </button>
      </PageHeader>
      {unavailable && (
        <Note kind="warn">
          <strong>The agent is not running.</strong> {unavailable}
        </Note>
      )}
      <ol class="chat" ref={log} aria-label="Conversation" aria-live="polite">
        {turns.map((turn) => (
          <li key={turn.id} class={`turn ${turn.status}`} data-status={turn.status}>
            <div class="message user">
              <span class="step-label">You</span> {turn.question}
            </div>
            {turn.steps.map((step, i) => (
              <StepView key={i} step={step} />
            ))}
            {turn.answer !== undefined && (
              <div class="message answer">
                <span class="step-label">Answer</span>
                <div class="answer-text">{turn.answer}</div>
              </div>
            )}
            {turn.error !== undefined && (
              <p class="notice error" role="alert">
                {turn.error}
              </p>
            )}
            {turn.status === 'running' && <p class="muted">Thinking…</p>}
            {turn.status === 'cancelled' && <p class="muted">Cancelled.</p>}
          </li>
        ))}
      </ol>
      <form class="chat-form stack" onSubmit={ask}>
        <div class="field">
          <label for="agent-question">Your question</label>
          <textarea
            id="agent-question"
            rows={3}
            value={question}
            aria-describedby="agent-question-hint"
            onInput={(e) => setQuestion(e.currentTarget.value)}
            onKeyDown={(e) => {
              if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) {
                e.preventDefault();
                e.currentTarget.form?.requestSubmit();
              }
            }}
          />
          <p id="agent-question-hint" class="hint">
            Enter sends, Shift+Enter starts a new line. The conversation so far goes with each question.
          </p>
        </div>
        <div class="row">
          <button type="submit" class="button primary" disabled={busy || question.trim() === ''}>
            Send
          </button>
          {busy && (
            <button type="button" class="button danger" onClick={() => running.current?.abort()}>
              Cancel
            </button>
          )}
        </div>
      </form>
    </section>
  );
}
