/**
 * @module How the console writes times, durations and JSON.
 */

/** "just now", "3 s ago", "4 min ago", "2 h ago", "3 d ago". */
export function ago(at: number, now: number = Date.now()): string {
  const s = Math.max(0, Math.round((now - at) / 1000));
  if (s < 1) return 'just now';
  if (s < 60) return `${s} s ago`;
  const min = Math.floor(s / 60);
  if (min < 60) return `${min} min ago`;
  const h = Math.floor(min / 60);
  if (h < 48) return `${h} h ago`;
  return `${Math.floor(h / 24)} d ago`;
}

/** "850 ms", "1.2 s", "3 min 4 s". */
export function duration(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(ms < 10_000 ? 1 : 0)} s`;
  const min = Math.floor(ms / 60_000);
  if (min < 60) return `${min} min ${Math.round((ms % 60_000) / 1000)} s`;
  return `${Math.floor(min / 60)} h ${min % 60} min`;
}

/** A local clock time, e.g. "14:03:27". */
export function clock(at: number | string): string {
  return new Date(at).toLocaleTimeString(undefined, { hour12: false });
}

/** A local date and time, e.g. "2024-12-04 14:03:27". */
export function dateTime(at: number | string): string {
  const d = new Date(at);
  const pad = (n: number): string => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${clock(at)}`;
}

/** The value as indented JSON. */
export function pretty(value: unknown): string {
  return JSON.stringify(value, null, 2) ?? String(value);
}

/** JSON text indented when it parses, else as it is. */
export function prettyText(text: string): string {
  try {
    return pretty(JSON.parse(text));
  } catch {
    return text;
  }
}
