/**
 * @module Tools: every tool with its source, schema, the strict schema the model sees and its problems
 * (`GET /api/v1/tools?detail=1`), with a filter box.
 */
import { useState } from 'preact/hooks';
import { Badge, ErrorNotice, JsonBlock, PageHeader } from '../components/notice.js';
import { useResource, useTitle } from '../hooks.js';
import type { ToolInfo } from '../types.js';

/** What the tools routes answer. */
export interface ToolList {
  tools: ToolInfo[];
}

/** The list of tools, loaded fresh (after the registry caught up with the store), then every 10 s. */
export function useTools() {
  return useResource<ToolList>('/api/v1/tools?detail=1', 10_000, {
    firstPath: '/api/v1/tools?detail=1&fresh=1',
  });
}

const SOURCE_LABELS: Record<string, string> = {
  config: 'config',
  announced: 'announced',
  mcp: 'MCP',
  code: 'code',
};

/** The tool's source as a badge. */
export function SourceBadge({ source }: { source: string | undefined }) {
  if (!source) return null;
  return <Badge kind={`source-${source}`}>{SOURCE_LABELS[source] ?? source}</Badge>;
}

/** The tool's problems as a list. */
export function Problems({ problems }: { problems: ToolInfo['problems'] }) {
  if (!problems || problems.length === 0) return null;
  return (
    <ul class="problems">
      {problems.map((p, i) => (
        <li key={i} class={`problem ${p.severity}`}>
          <Badge kind={p.severity === 'error' ? 'error' : 'warn'}>{p.severity}</Badge> {p.message}
        </li>
      ))}
    </ul>
  );
}

/** The tool's schemas, each in a disclosure. */
export function Schemas({ tool, open = false }: { tool: ToolInfo; open?: boolean }) {
  return (
    <div class="schemas">
      <details open={open}>
        <summary>Schema</summary>
        <JsonBlock value={tool.parameters} label={`Schema of ${tool.name}`} />
      </details>
      {tool.strictParameters ? (
        <details>
          <summary>Strict schema (what the model sees)</summary>
          <JsonBlock value={tool.strictParameters} label={`Strict schema of ${tool.name}`} />
        </details>
      ) : (
        tool.strictParameters === null && (
          <p class="muted">
            No strict schema: {tool.strictError ?? 'strict mode cannot express this schema'}.
          </p>
        )
      )}
      {tool.outputSchema && (
        <details>
          <summary>Output schema</summary>
          <JsonBlock value={tool.outputSchema} label={`Output schema of ${tool.name}`} />
        </details>
      )}
      {tool.annotations && Object.keys(tool.annotations).length > 0 && (
        <details>
          <summary>Annotations</summary>
          <JsonBlock value={tool.annotations} label={`Annotations of ${tool.name}`} />
        </details>
      )}
    </div>
  );
}

function matches(tool: ToolInfo, filter: string): boolean {
  const words = filter.toLowerCase().split(/\s+/).filter(Boolean);
  const text = [tool.name, tool.description, tool.source ?? '', ...(tool.tags ?? [])].join(' ').toLowerCase();
  return words.every((w) => text.includes(w));
}

/** The tools page. */
export function ToolsPage() {
  useTitle('Tools');
  const tools = useTools();
  const [filter, setFilter] = useState('');
  const all = tools.data?.tools;
  const shown = all?.filter((t) => matches(t, filter));
  return (
    <section aria-labelledby="page-title">
      <PageHeader title="Tools">
        <button type="button" class="button" onClick={tools.reload} disabled={tools.loading}>
          Refresh
        </button>
      </PageHeader>
      <div class="field filter">
        <label for="tool-filter">Filter tools</label>
        <input
          id="tool-filter"
          type="search"
          placeholder="name, description, tag or source"
          value={filter}
          onInput={(e) => setFilter(e.currentTarget.value)}
        />
      </div>
      <ErrorNotice error={tools.error} prefix="Could not load the tools" />
      {!all && !tools.error && <p class="muted">Loading…</p>}
      {shown && (
        <p class="muted" role="status">
          {shown.length === all?.length ? `${shown.length} tools` : `${shown.length} of ${all?.length} tools`}
        </p>
      )}
      <ul class="tool-list">
        {shown?.map((tool) => (
          <li key={tool.name} class="card tool" data-tool={tool.name}>
            <h2>
              <a href={`#/tools/${encodeURIComponent(tool.name)}`}>{tool.name}</a>{' '}
              <SourceBadge source={tool.source} />
              {tool.needsApproval && <Badge kind="warn">needs approval</Badge>}
              {tool.problems && tool.problems.length > 0 && (
                <Badge kind="error">
                  {tool.problems.length} problem{tool.problems.length === 1 ? '' : 's'}
                </Badge>
              )}
            </h2>
            <p>{tool.description}</p>
            {tool.tags && tool.tags.length > 0 && (
              <p class="tags">
                {tool.tags.map((tag) => (
                  <Badge key={tag}>{tag}</Badge>
                ))}
              </p>
            )}
            <Problems problems={tool.problems} />
            <Schemas tool={tool} />
          </li>
        ))}
      </ul>
    </section>
  );
}
