/**
 * @module Service modules: files whose default export makes a tool service from a bus. Loaded the same
 * way by `toolbus service` (its own process, on NATS) and `toolbus up --service` (in-process), which
 * can also reload them when the file changes (`--watch`).
 */
import { watch, type FSWatcher } from 'node:fs';
import { stat } from 'node:fs/promises';
import * as nodeModule from 'node:module';
import { basename, dirname, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { MessageBus } from '../bus/index.js';
import type { DynamicToolService, DynamicToolServiceHooks } from '../services/index.js';
import { resolveSelfImportsToSources } from './self-import.js';

/**
 * What the CLI uses of the service a module makes. A `DynamicToolService`, checked by shape rather than
 * `instanceof`: a consumer's module may import its own installed copy of toolbus.
 */
export type ServiceInstance = Pick<DynamicToolService, 'id' | 'start' | 'stop'> &
  Partial<Pick<DynamicToolService, 'stats' | 'addHooks'>>;

/** A service module's default export: makes one service (not yet started) on the given bus. */
export type ServiceFactory = (bus: MessageBus) => ServiceInstance | Promise<ServiceInstance>;

/** How long a file must stay quiet after a change before it is reloaded (editors write in bursts). */
export const SERVICE_RELOAD_DEBOUNCE_MS = 150;

/** The query parameter that makes the module loader import a fresh copy of a changed module. */
const RELOAD_KEY = 'toolbus-reload';

/**
 * What to tell the user when a service module does not load: one line, naming the module as they wrote
 * it rather than the absolute paths the loader reports. The built CLI runs on plain Node, which cannot
 * import TypeScript (Node 20 only says 'Unknown file extension ".ts"'), so that case names the fix.
 *
 * @param specifier the module as the user gave it, e.g. `./echo-service.ts`
 * @param error what the import threw
 * @param path the module's absolute path, replaced by `specifier` in the message
 */
export function serviceLoadErrorMessage(specifier: string, error: unknown, path?: string): string {
  let text = error instanceof Error ? error.message : String(error);
  // esbuild (through tsx): "Transform failed with 1 error:\n/abs/x.ts:2:0: ERROR: Unexpected end of file"
  text = text.replace(/^Transform failed with \d+ errors?:\s*/, '');
  if (path) text = text.split(path).join(specifier);
  text = text
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '')
    .join('; ');
  const message = `cannot load the service module '${specifier}': ${text}`;
  if ((error as { code?: unknown }).code === 'ERR_UNKNOWN_FILE_EXTENSION' && /\.[cm]?ts$/.test(specifier)) {
    return (
      `${message}. Node cannot run TypeScript by itself: compile the module to JavaScript, ` +
      `or load a TypeScript loader, e.g. npm install -D tsx and NODE_OPTIONS='--import tsx' npx toolbus service ${specifier}`
    );
  }
  return message;
}

// Runs in the module loader's thread. A module imported with `?toolbus-reload=N` passes N on to the
// local files it imports, so a reload re-reads the user's own helpers too. Packages (node_modules) and
// toolbus itself stay shared, so the fresh module gets the same classes as the CLI.
const RELOAD_HOOK = `
let exclude = [];
export function initialize(data) { exclude = data.exclude; }
export async function resolve(specifier, context, next) {
  const result = await next(specifier, context);
  const parent = context.parentURL;
  if (!parent || !parent.includes('${RELOAD_KEY}=') || !result.url.startsWith('file:')) return result;
  const version = new URL(parent).searchParams.get('${RELOAD_KEY}');
  if (!version || result.url.includes('/node_modules/') || exclude.some((p) => result.url.startsWith(p))) return result;
  const url = new URL(result.url);
  if (url.searchParams.has('${RELOAD_KEY}')) return result;
  url.searchParams.set('${RELOAD_KEY}', version);
  return { ...result, url: url.href };
}`;

let reloadHookRegistered = false;

function registerReloadHook(): void {
  if (reloadHookRegistered) return;
  reloadHookRegistered = true;
  // Missing before Node 20.6: then only the module's own file is re-read on a reload.
  const register = (nodeModule as { register?: typeof nodeModule.register }).register;
  if (typeof register !== 'function') return;
  const root = new URL('../../', import.meta.url);
  register(`data:text/javascript,${encodeURIComponent(RELOAD_HOOK)}`, {
    data: { exclude: [new URL('src/', root).href, new URL('dist/', root).href] },
  });
}

/**
 * Imports a service module and returns its factory. `version` > 0 imports a fresh copy (a reload): the
 * module loader caches by URL, so the URL gets a version query. Each version stays in memory, which is
 * fine for a development loop.
 *
 * Rejects with a one-line message: the file is missing, does not load (the loader's reason), or has no
 * default export function.
 */
export async function importServiceFactory(
  specifier: string,
  cwd: string,
  version = 0,
): Promise<ServiceFactory> {
  const path = resolve(cwd, specifier);
  // Checked first: the loader's "Cannot find module" names the CLI's own file as the importer.
  const found = await stat(path).then(
    (s) => s.isFile(),
    () => false,
  );
  if (!found) throw new Error(`cannot find the service module '${specifier}'`);
  resolveSelfImportsToSources(); // so `import … from 'toolbus'` works in a checkout without a build
  let url = pathToFileURL(path).href;
  if (version > 0) {
    registerReloadHook();
    url += `?${RELOAD_KEY}=${version}`;
  }
  let mod: { default?: unknown };
  try {
    mod = (await import(url)) as { default?: unknown };
  } catch (error) {
    throw new Error(serviceLoadErrorMessage(specifier, error, path), { cause: error });
  }
  if (typeof mod.default !== 'function') {
    throw new Error(
      `the module '${specifier}' has no default export function; export default (bus) => new DynamicToolService({...})`,
    );
  }
  return mod.default as ServiceFactory;
}

/**
 * Makes `count` services with `factory` and starts them. If one fails, stops those that started and
 * rejects with a message naming the module.
 */
export async function startServices(
  factory: ServiceFactory,
  bus: MessageBus,
  specifier: string,
  count = 1,
  hooks?: DynamicToolServiceHooks,
): Promise<ServiceInstance[]> {
  const started: ServiceInstance[] = [];
  try {
    for (let i = 0; i < count; i++) {
      let service: ServiceInstance;
      try {
        service = await factory(bus);
      } catch (error) {
        throw new Error(`the service module '${specifier}' failed to make its service: ${errorText(error)}`, {
          cause: error,
        });
      }
      if (typeof service?.start !== 'function' || typeof service.stop !== 'function') {
        throw new Error(
          `the default export of '${specifier}' must return a DynamicToolService, got ${describe(service)}`,
        );
      }
      // The host's own hooks (its log), on top of the module's.
      if (hooks) service.addHooks?.(hooks);
      try {
        await service.start();
      } catch (error) {
        throw new Error(`the service of '${specifier}' failed to start: ${errorText(error)}`, {
          cause: error,
        });
      }
      started.push(service);
    }
  } catch (error) {
    await Promise.all(started.map((s) => s.stop().catch(() => undefined)));
    throw error;
  }
  return started;
}

/** What a watched service module reports. */
export type ServiceModuleEvent =
  | { type: 'reloaded'; specifier: string; ids: readonly string[] }
  | { type: 'reload-failed'; specifier: string; message: string }
  | { type: 'stop-failed'; specifier: string; message: string };

/** Options of {@link startServiceModule}. */
export interface ServiceModuleOptions {
  /** The folder `specifier` is relative to. */
  cwd: string;
  /** Reload the module when its file changes. @default false */
  watch?: boolean;
  /** Quiet time after a change before reloading. @default SERVICE_RELOAD_DEBOUNCE_MS (150) */
  debounceMs?: number;
  /** Told about reloads and their failures. @default none */
  onEvent?: (event: ServiceModuleEvent) => void;
  /** Hooks added to every service the module makes (e.g. the host's log). @default none */
  hooks?: DynamicToolServiceHooks;
}

/** A service module running in this process; see {@link startServiceModule}. */
export interface RunningServiceModule {
  /** The module as the user gave it. */
  readonly specifier: string;
  /** Whether it reloads when its file changes. */
  readonly watching: boolean;
  /** The ids of the current instance's service. */
  ids(): readonly string[];
  /** The current instance's services (a reload swaps them), e.g. for their `stats()` in metrics. */
  services(): readonly ServiceInstance[];
  /**
   * Loads the module again and swaps in its service: the new one starts first, then the old one stops
   * gracefully (its calls in flight finish on it). If the new one does not load or start, the old one
   * keeps running. Resolves false then (the reason went to `onEvent`). Reloads run one at a time.
   */
  reload(): Promise<boolean>;
  /** Stops watching and stops the service, waiting for calls in flight (also on old instances). Idempotent. */
  close(): Promise<void>;
}

/**
 * Loads a service module, starts its service on `bus`, and with `watch` reloads it whenever the file
 * changes. Rejects as {@link importServiceFactory} and {@link startServices} do.
 */
export async function startServiceModule(
  specifier: string,
  bus: MessageBus,
  options: ServiceModuleOptions,
): Promise<RunningServiceModule> {
  let current = await startServices(
    await importServiceFactory(specifier, options.cwd),
    bus,
    specifier,
    1,
    options.hooks,
  );
  const onEvent = options.onEvent ?? (() => undefined);
  const draining = new Set<Promise<void>>();
  let version = 0;
  let closed = false;
  let chain: Promise<boolean> = Promise.resolve(true);

  const stopOld = (services: ServiceInstance[]): void => {
    const stopping = Promise.all(services.map((s) => s.stop())).then(
      () => undefined,
      (error: unknown) => onEvent({ type: 'stop-failed', specifier, message: errorText(error) }),
    );
    draining.add(stopping);
    void stopping.finally(() => draining.delete(stopping));
  };

  const reloadOnce = async (): Promise<boolean> => {
    if (closed) return false;
    let next: ServiceInstance[];
    try {
      next = await startServices(
        await importServiceFactory(specifier, options.cwd, ++version),
        bus,
        specifier,
        1,
        options.hooks,
      );
    } catch (error) {
      onEvent({ type: 'reload-failed', specifier, message: errorText(error) });
      return false;
    }
    if (closed) {
      stopOld(next); // closed while loading: close() waits for this one too
      return false;
    }
    const old = current;
    current = next;
    stopOld(old);
    onEvent({ type: 'reloaded', specifier, ids: next.map((s) => s.id) });
    return true;
  };

  const reload = (): Promise<boolean> => (chain = chain.then(reloadOnce, reloadOnce));

  let watcher: FSWatcher | undefined;
  let timer: NodeJS.Timeout | undefined;
  if (options.watch) {
    const path = resolve(options.cwd, specifier);
    const name = basename(path);
    // The folder, not the file: an editor that saves by writing a new file and renaming it over the old
    // one would end a watch on the file itself after the first save.
    watcher = watch(dirname(path), (_event, filename) => {
      if (filename !== null && filename !== name) return;
      clearTimeout(timer);
      timer = setTimeout(() => void reload(), options.debounceMs ?? SERVICE_RELOAD_DEBOUNCE_MS);
    });
    watcher.on('error', (error) => onEvent({ type: 'reload-failed', specifier, message: errorText(error) }));
  }

  let closing: Promise<void> | undefined;
  return {
    specifier,
    watching: watcher !== undefined,
    ids: () => current.map((s) => s.id),
    services: () => current,
    reload,
    close() {
      closing ??= (async () => {
        closed = true;
        clearTimeout(timer);
        watcher?.close();
        await chain;
        stopOld(current);
        while (draining.size > 0) await Promise.all(draining);
      })();
      return closing;
    },
  };
}

function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

function describe(value: unknown): string {
  if (value === null || value === undefined) return String(value);
  if (typeof value === 'object') return `an object without start() and stop()`;
  return `a ${typeof value}`;
}
