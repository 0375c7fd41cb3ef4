/**
 * @module Notices: an error (the gateway's message and code), a note, and the page heading.
 */
import type { ComponentChildren } from 'preact';
import { errorText } from '../api.js';

/** The error of a failed request, or nothing. */
export function ErrorNotice({ error, prefix }: { error: unknown; prefix?: string }) {
  if (error === undefined || error === null) return null;
  return (
    <p class="notice error" role="alert">
      {prefix ? `${prefix}: ` : ''}
      {errorText(error)}
    </p>
  );
}

/** A plain note. */
export function Note({ children, kind = 'info' }: { children: ComponentChildren; kind?: 'info' | 'warn' }) {
  return (
    <p class={`notice ${kind}`} role="status">
      {children}
    </p>
  );
}

/** The page's `h1`, with actions beside it. */
export function PageHeader({ title, children }: { title: string; children?: ComponentChildren }) {
  return (
    <div class="page-header">
      <h1 id="page-title">{title}</h1>
      {children && <div class="page-actions">{children}</div>}
    </div>
  );
}

/** Indented JSON in a `<pre>`. */
export function JsonBlock({ value, label }: { value: unknown; label?: string }) {
  return (
    <pre class="code" aria-label={label} tabIndex={0}>
      {JSON.stringify(value, null, 2) ?? 'undefined'}
    </pre>
  );
}

/** A small coloured label. */
export function Badge({ children, kind }: { children: ComponentChildren; kind?: string }) {
  return <span class={`badge${kind ? ` ${kind}` : ''}`}>{children}</span>;
}
