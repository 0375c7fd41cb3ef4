/**
 * @module A JSON editor: a textarea with line numbers beside it and the parse error under it (line and
 * column). No heavy editor: the page stays small and works under the strict CSP.
 */
import { useRef } from 'preact/hooks';

/** Where JSON text fails to parse, or undefined when it parses. */
export function jsonError(text: string): string | undefined {
  if (text.trim() === '') return 'empty: enter a JSON value';
  try {
    JSON.parse(text);
    return undefined;
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    // V8 says "… at position 12" (and sometimes "(line 2 column 3)"): turn the position into a line.
    const position = /position (\d+)/.exec(message);
    if (position && !/line \d+/.test(message)) {
      const before = text.slice(0, Number(position[1]));
      const line = before.split('\n').length;
      const column = before.length - before.lastIndexOf('\n');
      return `${message} (line ${line}, column ${column})`;
    }
    return message;
  }
}

/** Props of {@link JsonEditor}. */
export interface JsonEditorProps {
  id: string;
  label: string;
  value: string;
  onInput(text: string): void;
  rows?: number;
  /** Shows the parse error under the editor. @default true */
  validate?: boolean;
}

/** A textarea for JSON with line numbers and validation. */
export function JsonEditor({ id, label, value, onInput, rows = 16, validate = true }: JsonEditorProps) {
  const gutter = useRef<HTMLPreElement>(null);
  const error = validate ? jsonError(value) : undefined;
  const lines = Math.max(value.split('\n').length, 1);
  const numbers = Array.from({ length: lines }, (_, i) => String(i + 1)).join('\n');
  return (
    <div class="field">
      <label for={id}>{label}</label>
      <div class={`json-editor${error ? ' invalid' : ''}`}>
        <pre class="gutter" ref={gutter} aria-hidden="true">
          {numbers}
        </pre>
        <textarea
          id={id}
          rows={rows}
          spellcheck={false}
          autocapitalize="off"
          autocomplete="off"
          value={value}
          aria-invalid={error ? true : undefined}
          aria-describedby={error ? `${id}-error` : undefined}
          onInput={(e) => onInput(e.currentTarget.value)}
          onScroll={(e) => {
            if (gutter.current) gutter.current.scrollTop = e.currentTarget.scrollTop;
          }}
          onKeyDown={(e) => {
            // Tab indents (two spaces) instead of leaving the field; Escape then Tab still leaves it.
            if (e.key !== 'Tab' || e.shiftKey || e.ctrlKey || e.altKey || e.metaKey) return;
            const area = e.currentTarget;
            if (area.dataset.escaped === '1') return;
            e.preventDefault();
            const { selectionStart: start, selectionEnd: end } = area;
            const next = `${area.value.slice(0, start)}  ${area.value.slice(end)}`;
            onInput(next);
            requestAnimationFrame(() => area.setSelectionRange(start + 2, start + 2));
          }}
          onKeyUp={(e) => {
            if (e.key === 'Escape') e.currentTarget.dataset.escaped = '1';
          }}
          onFocus={(e) => delete e.currentTarget.dataset.escaped}
        />
      </div>
      {error ? (
        <p id={`${id}-error`} class="field-error" role="status">
          Not valid JSON: {error}
        </p>
      ) : (
        validate && <p class="hint">Valid JSON. Tab indents; press Escape, then Tab, to leave the editor.</p>
      )}
    </div>
  );
}
