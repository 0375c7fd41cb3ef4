/**
 * @module A tool's page: its details and an invoke form generated from its JSON Schema (or the
 * arguments as raw JSON). While a call runs, the tool's progress reports from
 * `/api/v1/live-calls/events` show as they arrive; then the result: its text, images, structured JSON,
 * or the error with its code.
 */
import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { errorText, isAbort } from '../api.js';
import { JsonEditor, jsonError } from '../components/json-editor.js';
import { Badge, ErrorNotice, JsonBlock, Note, PageHeader } from '../components/notice.js';
import { draftToValue, SchemaFields, valueToDraft, type Draft } from '../components/schema-form.js';
import { duration, pretty } from '../format.js';
import { useApi, useTitle } from '../hooks.js';
import type { InvokeResult, LiveProgress, ToolInfo } from '../types.js';
import { Problems, Schemas, SourceBadge, useTools } from './tools.js';

/** Props of {@link ToolPage}. */
export interface ToolPageProps {
  name: string;
}

/** The page of one tool. */
export function ToolPage({ name }: ToolPageProps) {
  useTitle(name);
  const tools = useTools();
  const tool = tools.data?.tools.find((t) => t.name === name);
  return (
    <section aria-labelledby="page-title">
      <p class="breadcrumb">
        <a href="#/tools">Tools</a> /
      </p>
      <PageHeader title={name}>
        <SourceBadge source={tool?.source} />
        {tool?.needsApproval && <Badge kind="warn">needs approval</Badge>}
      </PageHeader>
      <ErrorNotice error={tools.error} prefix="Could not load the tools" />
      {!tools.data && !tools.error && <p class="muted">Loading…</p>}
      {tools.data && !tool && (
        <Note kind="warn">
          There is no tool named “{name}” now. <a href="#/tools">See the tools there are</a>.
        </Note>
      )}
      {tool && (
        <>
          <p>{tool.description}</p>
          {tool.key && (
            <p class="muted">
              Config item:{' '}
              <a href={`#/config/${tool.key.split('/').map(encodeURIComponent).join('/')}`}>
                <code>{tool.key}</code>
              </a>
            </p>
          )}
          <Problems problems={tool.problems} />
          <InvokeForm tool={tool} />
          <h2>Schemas</h2>
          <Schemas tool={tool} />
        </>
      )}
    </section>
  );
}

/** What the last call gave. */
type Outcome =
  { kind: 'result'; result: InvokeResult; ms: number } | { kind: 'failed'; error: unknown; ms: number };

function InvokeForm({ tool }: { tool: ToolInfo }) {
  const api = useApi();
  const schema = tool.parameters;
  const [draft, setDraft] = useState<Draft>(() => valueToDraft(schema, schema, undefined));
  const [asJson, setAsJson] = useState(false);
  const [jsonText, setJsonText] = useState('{}');
  const [toggleError, setToggleError] = useState<string | undefined>(undefined);
  const [errors, setErrors] = useState<string[]>([]);
  const [running, setRunning] = useState(false);
  const [progress, setProgress] = useState<LiveProgress[]>([]);
  const [outcome, setOutcome] = useState<Outcome | undefined>(undefined);
  const call = useRef<AbortController | undefined>(undefined);
  useEffect(() => () => call.current?.abort(), []);

  const formValue = useMemo(
    () => draftToValue(schema, schema, draft, { required: true, path: '' }),
    [schema, draft],
  );

  const toggle = (): void => {
    setToggleError(undefined);
    if (!asJson) {
      setJsonText(pretty(formValue.value ?? {}));
      setAsJson(true);
      return;
    }
    const problem = jsonError(jsonText);
    if (problem) return setToggleError(`Fix the JSON first: ${problem}`);
    const parsed: unknown = JSON.parse(jsonText);
    if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) {
      return setToggleError('The arguments must be a JSON object to show them in the form.');
    }
    setDraft(valueToDraft(schema, schema, parsed));
    setAsJson(false);
  };

  const submit = async (event: Event): Promise<void> => {
    event.preventDefault();
    let args: unknown;
    if (asJson) {
      const problem = jsonError(jsonText);
      if (problem) return setErrors([`arguments: not valid JSON: ${problem}`]);
      args = JSON.parse(jsonText);
    } else {
      if (formValue.errors.length > 0) return setErrors(formValue.errors);
      args = formValue.value ?? {};
    }
    setErrors([]);
    setOutcome(undefined);
    setProgress([]);
    setRunning(true);
    const controller = new AbortController();
    call.current = controller;
    const started = performance.now();
    // The live-call stream first, so that the first progress report is not missed; the call starts
    // once it is open (or could not be opened: progress is a nicety, not a condition).
    const events = new AbortController();
    let opened: () => void = () => undefined;
    const open = new Promise<void>((resolve) => (opened = resolve));
    const watch = api
      .stream('/api/v1/live-calls/events', {
        signal: AbortSignal.any([events.signal, controller.signal]),
        onOpen: opened,
        onEvent: (type, data) => {
          const report = data as LiveProgress;
          if (type === 'progress' && report.tool === tool.name) {
            setProgress((list) => [...list.slice(-199), report]);
          }
        },
      })
      .catch(() => undefined)
      .finally(opened);
    await Promise.race([open, new Promise((resolve) => setTimeout(resolve, 1500))]);
    try {
      const result = await api.json<InvokeResult>(`/api/v1/tools/${encodeURIComponent(tool.name)}/invoke`, {
        method: 'POST',
        body: args,
        signal: controller.signal,
      });
      setOutcome({ kind: 'result', result, ms: performance.now() - started });
    } catch (error) {
      if (!isAbort(error)) setOutcome({ kind: 'failed', error, ms: performance.now() - started });
      else setOutcome({ kind: 'failed', error: new Error('cancelled'), ms: performance.now() - started });
    } finally {
      events.abort();
      await watch;
      setRunning(false);
      call.current = undefined;
    }
  };

  const last = progress[progress.length - 1];
  const messages = progress.filter((p) => p.message);
  return (
    <section class="card invoke" aria-labelledby="invoke-title">
      <h2 id="invoke-title">Invoke</h2>
      <form onSubmit={submit} noValidate class="stack">
        <div class="row">
          <button
            type="button"
            class="button small"
            aria-pressed={asJson}
            onClick={toggle}
            disabled={running}
          >
            {asJson ? 'Edit in the form' : 'Edit as JSON'}
          </button>
          <span class="hint">Fields marked * are required; optional fields left empty are left out.</span>
        </div>
        {toggleError && (
          <p class="notice error" role="alert">
            {toggleError}
          </p>
        )}
        {asJson ? (
          <JsonEditor
            id="invoke-json"
            label="Arguments (JSON)"
            value={jsonText}
            onInput={setJsonText}
            rows={10}
          />
        ) : (
          <SchemaFields schema={schema} draft={draft} onChange={setDraft} disabled={running} />
        )}
        {errors.length > 0 && (
          <div class="notice error" role="alert">
            <p>The arguments are not complete:</p>
            <ul>
              {errors.map((e) => (
                <li key={e}>{e}</li>
              ))}
            </ul>
          </div>
        )}
        <div class="row">
          <button type="submit" class="button primary" disabled={running}>
            {running ? 'Running…' : `Invoke ${tool.name}`}
          </button>
          {running && (
            <button type="button" class="button" onClick={() => call.current?.abort()}>
              Cancel
            </button>
          )}
        </div>
      </form>
      <div aria-live="polite" class="invoke-status">
        {running && (
          <div class="progress-box">
            <p>
              Running…
              {last && last.total !== undefined && ` ${last.progress} of ${last.total}`}
              {last && last.total === undefined && ` (${last.progress})`}
            </p>
            {last && last.total !== undefined && last.total > 0 && (
              <progress max={last.total} value={last.progress} aria-label={`Progress of ${tool.name}`} />
            )}
            {messages.length > 0 && (
              <ol class="chunks" aria-label="Streamed output">
                {messages.map((p, i) => (
                  <li key={i}>{p.message}</li>
                ))}
              </ol>
            )}
          </div>
        )}
        {outcome && <OutcomeView outcome={outcome} progress={messages.length} />}
      </div>
    </section>
  );
}

function OutcomeView({ outcome, progress }: { outcome: Outcome; progress: number }) {
  if (outcome.kind === 'failed') {
    return (
      <div class="result error" data-outcome="failed">
        <h3>Call failed</h3>
        <p role="alert">{errorText(outcome.error)}</p>
      </div>
    );
  }
  const { result } = outcome;
  const images = (result.parts ?? []).filter((p) => p.type === 'image' && p.data);
  return (
    <div class={`result ${result.isError ? 'error' : 'ok'}`} data-outcome={result.isError ? 'error' : 'ok'}>
      <h3>
        {result.isError ? 'Error' : 'Result'} {result.code && <Badge kind="error">{result.code}</Badge>}{' '}
        <span class="muted">
          {duration(outcome.ms)} · call <code>{result.callId}</code>
          {progress > 0 && ` · ${progress} progress reports`}
        </span>
      </h3>
      <pre class="code result-text" tabIndex={0} aria-label="Result text">
        {result.content}
      </pre>
      {result.truncatedBytes !== undefined && (
        <p class="muted">The result was cut: {result.truncatedBytes} bytes were left out.</p>
      )}
      {images.map((part, i) => (
        <img
          key={i}
          class="result-image"
          src={`data:${part.mimeType ?? 'image/png'};base64,${part.data}`}
          alt={`Image ${i + 1} of the result of ${result.name}`}
        />
      ))}
      {result.structured !== undefined && (
        <>
          <h4>Structured result</h4>
          <JsonBlock value={result.structured} label="Structured result" />
        </>
      )}
    </div>
  );
}
