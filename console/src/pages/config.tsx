/**
 * @module Config: the store's types and their items; an item in a JSON editor, checked before it is
 * saved (`POST …/check`: a finding the registry would skip needs a confirm), saved with `?ifRevision=`
 * the revision loaded (a 409 offers to reload or overwrite), deleted after a confirm; and new items.
 */
import { useEffect, useState } from 'preact/hooks';
import { ApiError, errorText } from '../api.js';
import { JsonEditor, jsonError } from '../components/json-editor.js';
import { Badge, ErrorNotice, Note, PageHeader } from '../components/notice.js';
import { pretty } from '../format.js';
import { useApi, useResource, useTitle } from '../hooks.js';
import type { ConfigFinding, ConfigItem } from '../types.js';

/** Props of {@link ConfigPage}: the route's `#/config/<type>/<key>`. */
export interface ConfigPageProps {
  type: string | undefined;
  itemKey: string | undefined;
}

const TEMPLATES: Record<string, unknown> = {
  tool: {
    type: 'tool-service',
    name: 'my-tool',
    description: 'What the tool does, for the model',
    service: 'joke-service',
    arguments: [{ name: 'topic', type: 'string', description: 'The topic' }],
  },
  'tool-service': {
    id: 'my-service',
    'request-queue': 'non-persistent://tg/request/my-service',
    'response-queue': 'non-persistent://tg/response/my-service',
    'config-params': [],
  },
};

function itemPath(type: string, key: string): string {
  return `/api/v1/config/${encodeURIComponent(type)}/${encodeURIComponent(key)}`;
}

function itemHash(type: string, key?: string): string {
  return `#/config/${encodeURIComponent(type)}${key === undefined ? '' : `/${encodeURIComponent(key)}`}`;
}

/** The config page. */
export function ConfigPage({ type, itemKey }: ConfigPageProps) {
  useTitle(type ? `Config: ${type}` : 'Config');
  const types = useResource<{ types: string[] }>('/api/v1/config');
  const items = useResource<{ type: string; items: ConfigItem[] }>(
    type ? `/api/v1/config/${encodeURIComponent(type)}` : undefined,
  );
  const [creating, setCreating] = useState(false);
  // What "New item" saved: shown above the item once the page shows it.
  const [created, setCreated] = useState<{ type: string; key: string; text: string } | undefined>(undefined);
  useEffect(() => setCreating(false), [type, itemKey]);

  const saved = (savedType: string, key: string): void => {
    setCreating(false);
    types.reload();
    items.reload();
    location.hash = itemHash(savedType, key);
  };
  const made = (madeType: string, key: string, text: string): void => {
    setCreated({ type: madeType, key, text });
    saved(madeType, key);
  };
  const deleted = (): void => {
    items.reload();
    if (type) location.hash = itemHash(type);
  };

  const allTypes = types.data?.types ?? [];
  return (
    <section aria-labelledby="page-title">
      <PageHeader title="Config">
        <button type="button" class="button primary" onClick={() => setCreating(true)}>
          New item
        </button>
      </PageHeader>
      <ErrorNotice error={types.error} prefix="Could not load the config types" />
      <div class="split">
        <nav class="side" aria-label="Config types">
          <h2>Types</h2>
          <ul class="side-list">
            {allTypes.map((t) => (
              <li key={t}>
                <a href={itemHash(t)} aria-current={t === type ? 'page' : undefined}>
                  {t}
                </a>
              </li>
            ))}
          </ul>
        </nav>
        <div class="split-main">
          {creating ? (
            <NewItem
              types={allTypes}
              initialType={type ?? 'tool'}
              onSaved={made}
              onOpen={saved}
              onCancel={() => setCreating(false)}
            />
          ) : !type ? (
            <p class="muted">Choose a type to see its items, or make a new item.</p>
          ) : (
            <>
              <h2>
                Items of <code>{type}</code>
              </h2>
              <ErrorNotice error={items.error} prefix={`Could not load the items of '${type}'`} />
              {items.data && items.data.items.length === 0 && <p class="muted">No items.</p>}
              {items.data && items.data.items.length > 0 && (
                <ul class="item-list">
                  {items.data.items.map((item) => (
                    <li key={item.key}>
                      <a
                        href={itemHash(type, item.key)}
                        aria-current={item.key === itemKey ? 'page' : undefined}
                      >
                        {item.key}
                      </a>{' '}
                      <span class="muted">rev {item.revision}</span>
                    </li>
                  ))}
                </ul>
              )}
              {created && created.type === type && created.key === itemKey && (
                <p class="notice ok" role="status">
                  {created.text}
                </p>
              )}
              {itemKey !== undefined && (
                <ItemEditor
                  key={`${type}/${itemKey}`}
                  type={type}
                  itemKey={itemKey}
                  onSaved={saved}
                  onDeleted={deleted}
                />
              )}
            </>
          )}
        </div>
      </div>
    </section>
  );
}

/** Where a save is. */
type SavePhase =
  | { phase: 'idle' }
  | { phase: 'busy'; what: string }
  | { phase: 'confirm-skipped' }
  | { phase: 'conflict'; message: string }
  | { phase: 'confirm-delete' };

interface SaveFlow {
  findings: ConfigFinding[] | undefined;
  checkError: unknown;
  state: SavePhase;
  error: unknown;
  done: string | undefined;
}

const IDLE: SaveFlow = {
  findings: undefined,
  checkError: undefined,
  state: { phase: 'idle' },
  error: undefined,
  done: undefined,
};

function Findings({ findings, checkError }: { findings: ConfigFinding[] | undefined; checkError: unknown }) {
  if (checkError !== undefined) {
    return (
      <p class="notice warn" role="alert">
        The item could not be checked: {errorText(checkError)}
      </p>
    );
  }
  if (!findings) return null;
  if (findings.length === 0) {
    return (
      <p class="notice ok" role="status">
        Check passed: no findings.
      </p>
    );
  }
  return (
    <div class="findings" role="status">
      <h3>Findings</h3>
      <ul>
        {findings.map((f, i) => (
          <li key={i} class={f.skipped ? 'skipped' : 'note'}>
            <Badge kind={f.skipped ? 'error' : 'warn'}>{f.skipped ? 'would be skipped' : 'note'}</Badge>{' '}
            {f.message}
          </li>
        ))}
      </ul>
    </div>
  );
}

/** The check-then-save steps shared by the editor and "New item". */
function useSave(type: string, key: string) {
  const api = useApi();
  const [flow, setFlow] = useState<SaveFlow>(IDLE);
  const set = (patch: Partial<SaveFlow>): void => setFlow((f) => ({ ...f, ...patch }));

  /** PUTs the value; true once saved. */
  const put = async (value: unknown, ifRevision: number | undefined): Promise<number | undefined> => {
    set({ state: { phase: 'busy', what: 'Saving…' }, error: undefined });
    try {
      const query = ifRevision === undefined ? '' : `?ifRevision=${ifRevision}`;
      const answer = await api.json<{ revision: number }>(`${itemPath(type, key)}${query}`, {
        method: 'PUT',
        body: value,
      });
      set({ state: { phase: 'idle' }, done: `Saved ${type}/${key} (revision ${answer.revision}).` });
      return answer.revision;
    } catch (error) {
      if (error instanceof ApiError && error.status === 409) {
        const message =
          ifRevision === 0
            ? `${type}/${key} already exists: it was made since you started this item.`
            : `${type}/${key} changed since you loaded it.`;
        set({ state: { phase: 'conflict', message } });
      } else {
        set({ state: { phase: 'idle' }, error });
      }
      return undefined;
    }
  };

  /** Checks the value; true when it may be saved without a confirm. */
  const check = async (value: unknown): Promise<boolean> => {
    set({
      state: { phase: 'busy', what: 'Checking…' },
      error: undefined,
      done: undefined,
      findings: undefined,
      checkError: undefined,
    });
    try {
      const answer = await api.json<{ findings: ConfigFinding[] }>(`${itemPath(type, key)}/check`, {
        method: 'POST',
        body: value,
      });
      const findings = answer.findings ?? [];
      const skipped = findings.some((f) => f.skipped);
      set({ findings, state: skipped ? { phase: 'confirm-skipped' } : { phase: 'idle' } });
      return !skipped;
    } catch (error) {
      // The item is still savable: the person decides, having read why the check failed.
      set({ checkError: error, state: { phase: 'confirm-skipped' } });
      return false;
    }
  };

  return { flow, set, put, check, api };
}

/** The buttons and messages of a save in progress. */
function SaveStatus(props: {
  flow: SaveFlow;
  onSaveAnyway(): void;
  onReload?(): void;
  reloadLabel?: string;
  onOverwrite(): void;
  onCancel(): void;
}) {
  const { flow } = props;
  const { state } = flow;
  return (
    <div class="save-status" aria-live="polite">
      <Findings findings={flow.findings} checkError={flow.checkError} />
      {state.phase === 'busy' && <p class="muted">{state.what}</p>}
      {state.phase === 'confirm-skipped' && (
        <div class="confirm" role="alertdialog" aria-labelledby="confirm-skip-title">
          <p id="confirm-skip-title">
            {flow.checkError !== undefined
              ? 'Save it without a check?'
              : 'The registry would skip this item (see the findings). Save it anyway?'}
          </p>
          <div class="row">
            <button type="button" class="button danger" onClick={props.onSaveAnyway}>
              Save anyway
            </button>
            <button type="button" class="button" onClick={props.onCancel}>
              Keep editing
            </button>
          </div>
        </div>
      )}
      {state.phase === 'conflict' && (
        <div class="confirm" role="alertdialog" aria-labelledby="conflict-title">
          <p id="conflict-title" class="conflict">
            {state.message} Reload it (your edits are lost) or overwrite it with your version?
          </p>
          <div class="row">
            {props.onReload && (
              <button type="button" class="button" onClick={props.onReload}>
                {props.reloadLabel ?? 'Reload'}
              </button>
            )}
            <button type="button" class="button danger" onClick={props.onOverwrite}>
              Overwrite
            </button>
            <button type="button" class="button ghost" onClick={props.onCancel}>
              Cancel
            </button>
          </div>
        </div>
      )}
      <ErrorNotice error={flow.error} prefix="Not saved" />
      {flow.done && (
        <p class="notice ok" role="status">
          {flow.done}
        </p>
      )}
    </div>
  );
}

interface ItemEditorProps {
  type: string;
  itemKey: string;
  onSaved(type: string, key: string): void;
  onDeleted(): void;
}

function ItemEditor({ type, itemKey, onSaved, onDeleted }: ItemEditorProps) {
  const { flow, set, put, check, api } = useSave(type, itemKey);
  const [text, setText] = useState<string | undefined>(undefined);
  const [revision, setRevision] = useState<number | undefined>(undefined);
  const [loadError, setLoadError] = useState<unknown>(undefined);

  const load = async (): Promise<void> => {
    try {
      const item = await api.json<{ value: unknown; revision: number }>(itemPath(type, itemKey));
      setText(pretty(item.value));
      setRevision(item.revision);
      setLoadError(undefined);
    } catch (error) {
      setLoadError(error);
    }
  };
  useEffect(() => {
    void load();
    // Loaded once per item (the editor is keyed by it); a reload is the person's choice.
  }, []);

  if (loadError !== undefined)
    return <ErrorNotice error={loadError} prefix={`Could not load ${type}/${itemKey}`} />;
  if (text === undefined || revision === undefined) return <p class="muted">Loading…</p>;

  const invalid = jsonError(text);
  const saveChecked = async (confirmed: boolean): Promise<void> => {
    if (invalid) return;
    const value: unknown = JSON.parse(text);
    if (!confirmed && !(await check(value))) return;
    const next = await put(value, revision);
    if (next !== undefined) {
      setRevision(next);
      onSaved(type, itemKey);
    }
  };
  const overwrite = async (): Promise<void> => {
    // Over the current revision (0 if it was deleted meanwhile), so a third change is still caught.
    let current = 0;
    try {
      current = (await api.json<{ revision: number }>(itemPath(type, itemKey))).revision;
    } catch (error) {
      if (!(error instanceof ApiError && error.status === 404)) return set({ error });
    }
    if (invalid) return;
    const next = await put(JSON.parse(text), current);
    if (next !== undefined) {
      setRevision(next);
      onSaved(type, itemKey);
    }
  };
  const reload = async (): Promise<void> => {
    set(IDLE);
    await load();
  };
  const remove = async (): Promise<void> => {
    set({ state: { phase: 'busy', what: 'Deleting…' }, error: undefined });
    try {
      await api.json(`${itemPath(type, itemKey)}?ifRevision=${revision}`, { method: 'DELETE' });
      set(IDLE);
      onDeleted();
    } catch (error) {
      if (error instanceof ApiError && error.status === 409) {
        set({ state: { phase: 'conflict', message: `${type}/${itemKey} changed since you loaded it.` } });
      } else set({ state: { phase: 'idle' }, error });
    }
  };

  const busy = flow.state.phase === 'busy';
  return (
    <section class="card editor" aria-labelledby="editor-title">
      <h2 id="editor-title">
        <code>
          {type}/{itemKey}
        </code>{' '}
        <span class="muted">revision {revision}</span>
      </h2>
      <form
        onSubmit={(e) => {
          e.preventDefault();
          void saveChecked(false);
        }}
        class="stack"
      >
        <JsonEditor id="item-value" label={`Value of ${type}/${itemKey}`} value={text} onInput={setText} />
        <div class="row">
          <button type="submit" class="button primary" disabled={busy || invalid !== undefined}>
            Check and save
          </button>
          <button
            type="button"
            class="button"
            disabled={busy || invalid !== undefined}
            onClick={() => void check(JSON.parse(text))}
          >
            Check only
          </button>
          <button
            type="button"
            class="button"
            disabled={busy || invalid !== undefined}
            onClick={() => setText(pretty(JSON.parse(text)))}
          >
            Format
          </button>
          <button type="button" class="button" disabled={busy} onClick={() => void reload()}>
            Reload
          </button>
          <button
            type="button"
            class="button danger"
            disabled={busy}
            onClick={() => set({ state: { phase: 'confirm-delete' } })}
          >
            Delete
          </button>
        </div>
      </form>
      {flow.state.phase === 'confirm-delete' && (
        <div class="confirm" role="alertdialog" aria-labelledby="confirm-delete-title">
          <p id="confirm-delete-title">
            Delete{' '}
            <code>
              {type}/{itemKey}
            </code>
            ? This cannot be undone.
          </p>
          <div class="row">
            <button type="button" class="button danger" onClick={() => void remove()}>
              Yes, delete it
            </button>
            <button type="button" class="button" onClick={() => set({ state: { phase: 'idle' } })}>
              Cancel
            </button>
          </div>
        </div>
      )}
      <SaveStatus
        flow={flow}
        onSaveAnyway={() => void saveChecked(true)}
        onReload={() => void reload()}
        onOverwrite={() => void overwrite()}
        onCancel={() => set({ state: { phase: 'idle' } })}
      />
    </section>
  );
}

interface NewItemProps {
  types: string[];
  initialType: string;
  /** Saved, with the message saying so. */
  onSaved(type: string, key: string, text: string): void;
  /** Opens an existing item (the one a conflict found). */
  onOpen(type: string, key: string): void;
  onCancel(): void;
}

function NewItem({ types, initialType, onSaved, onOpen, onCancel }: NewItemProps) {
  const [type, setType] = useState(initialType);
  const [key, setKey] = useState('');
  const [text, setText] = useState(pretty(TEMPLATES[initialType] ?? {}));
  const [touched, setTouched] = useState(false);
  const { flow, set, put, check } = useSave(type.trim(), key.trim());

  const nameProblem =
    type.trim() === ''
      ? 'enter a type'
      : key.trim() === ''
        ? 'enter a key'
        : /[\s/]/.test(type.trim()) || /\s/.test(key.trim())
          ? 'the type has no slash, and neither has spaces'
          : undefined;
  const invalid = jsonError(text);

  const save = async (confirmed: boolean, ifRevision: number | undefined = 0): Promise<void> => {
    if (nameProblem || invalid) return;
    const value: unknown = JSON.parse(text);
    if (!confirmed && !(await check(value))) return;
    const revision = await put(value, ifRevision);
    if (revision !== undefined) {
      onSaved(type.trim(), key.trim(), `Saved ${type.trim()}/${key.trim()} (revision ${revision}).`);
    }
  };

  return (
    <section class="card editor" aria-labelledby="new-title">
      <h2 id="new-title">New config item</h2>
      <form
        class="stack"
        onSubmit={(e) => {
          e.preventDefault();
          void save(false);
        }}
      >
        <div class="row fields">
          <div class="field">
            <label for="new-type">Type</label>
            <input
              id="new-type"
              list="config-types"
              value={type}
              onInput={(e) => {
                const next = e.currentTarget.value;
                setType(next);
                if (!touched && TEMPLATES[next] !== undefined) setText(pretty(TEMPLATES[next]));
              }}
            />
            <datalist id="config-types">
              {types.map((t) => (
                <option key={t} value={t} />
              ))}
            </datalist>
          </div>
          <div class="field">
            <label for="new-key">Key</label>
            <input
              id="new-key"
              value={key}
              placeholder="e.g. my-tool"
              onInput={(e) => setKey(e.currentTarget.value)}
            />
          </div>
        </div>
        <JsonEditor
          id="new-value"
          label="Value"
          value={text}
          onInput={(next) => {
            setTouched(true);
            setText(next);
          }}
        />
        {nameProblem && (type !== '' || key !== '') && <p class="field-error">To save: {nameProblem}.</p>}
        <div class="row">
          <button
            type="submit"
            class="button primary"
            disabled={flow.state.phase === 'busy' || nameProblem !== undefined || invalid !== undefined}
          >
            Check and save
          </button>
          <button type="button" class="button" onClick={onCancel}>
            Cancel
          </button>
        </div>
      </form>
      <SaveStatus
        flow={flow}
        onSaveAnyway={() => void save(true)}
        onReload={() => onOpen(type.trim(), key.trim())}
        reloadLabel="Open the existing item"
        onOverwrite={() => void save(true, undefined)}
        onCancel={() => set({ state: { phase: 'idle' } })}
      />
      {types.length === 0 && <Note>No types are known yet.</Note>}
    </section>
  );
}
