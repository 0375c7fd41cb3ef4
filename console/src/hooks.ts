/**
 * @module Small hooks the pages share: the API client of the session, a polled JSON resource, the
 * hash route and a clock for "3 s ago" labels.
 */
import { createContext } from 'preact';
import { useCallback, useContext, useEffect, useRef, useState } from 'preact/hooks';
import { isAbort, type Api } from './api.js';

/** The session's API client (given by the app once logged in). */
export const ApiContext = createContext<Api | undefined>(undefined);

/** The session's API client. */
export function useApi(): Api {
  const api = useContext(ApiContext);
  if (!api) throw new Error('useApi() outside a logged-in session');
  return api;
}

/** A resource's state: the last answer, the last error, and a way to load it again. */
export interface Resource<T> {
  data: T | undefined;
  error: unknown;
  loading: boolean;
  reload(): void;
}

/** Options of {@link useResource}. */
export interface ResourceOptions {
  /** The path of the first load (e.g. with `fresh=1`); the refreshes load `path`. @default path */
  firstPath?: string;
}

/**
 * GETs `path` (none while it is undefined), again every `intervalMs` when given. A failed refresh keeps
 * the last answer and sets `error`.
 */
export function useResource<T>(
  path: string | undefined,
  intervalMs?: number,
  options: ResourceOptions = {},
): Resource<T> {
  const { firstPath } = options;
  const api = useApi();
  const [data, setData] = useState<T | undefined>(undefined);
  const [error, setError] = useState<unknown>(undefined);
  const [loading, setLoading] = useState(path !== undefined);
  const [tick, setTick] = useState(0);
  const reload = useCallback(() => setTick((n) => n + 1), []);
  const lastPath = useRef(path);

  useEffect(() => {
    if (path === undefined) return undefined;
    if (lastPath.current !== path) {
      lastPath.current = path;
      setData(undefined);
    }
    const controller = new AbortController();
    let timer: ReturnType<typeof setTimeout> | undefined;
    let first = true;
    const load = async (): Promise<void> => {
      setLoading(true);
      try {
        const answer = await api.json<T>(first ? (firstPath ?? path) : path, { signal: controller.signal });
        first = false;
        setData(answer);
        setError(undefined);
      } catch (e) {
        if (isAbort(e)) return;
        setError(e);
      } finally {
        if (!controller.signal.aborted) setLoading(false);
      }
      if (intervalMs !== undefined && !controller.signal.aborted) timer = setTimeout(load, intervalMs);
    };
    void load();
    return () => {
      controller.abort();
      clearTimeout(timer);
    };
  }, [api, path, firstPath, intervalMs, tick]);

  return { data, error, loading, reload };
}

/** The current hash route, e.g. `/tools/tell-joke` for `#/tools/tell-joke` (`/overview` by default). */
export function useRoute(): string {
  const read = (): string | undefined =>
    location.hash.startsWith('#/') ? location.hash.slice(1) : undefined;
  const [route, setRoute] = useState<string>(read() ?? '/overview');
  useEffect(() => {
    // Only `#/…` hashes are routes: any other fragment leaves the page as it is.
    const onChange = (): void => {
      const next = read();
      if (next !== undefined) setRoute(next);
    };
    addEventListener('hashchange', onChange);
    return () => removeEventListener('hashchange', onChange);
  }, []);
  return route;
}

/** `Date.now()`, updated every `everyMs`. */
export function useNow(everyMs = 1000): number {
  const [now, setNow] = useState(Date.now());
  useEffect(() => {
    const timer = setInterval(() => setNow(Date.now()), everyMs);
    return () => clearInterval(timer);
  }, [everyMs]);
  return now;
}

/** `document.title` while the page is shown. */
export function useTitle(title: string): void {
  useEffect(() => {
    document.title = `${title} · toolbus console`;
  }, [title]);
}
