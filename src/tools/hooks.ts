/**
 * @module The one hook shape of toolbus: a function of one event, or a list of them run in order. Tool
 * sets, buses, tool services, their clients and the runtime all take hooks of this type.
 */

/**
 * One hook function: receives the event; may return a promise, awaited where the caller waits for its
 * hooks. What it returns is otherwise ignored, so `(e) => list.push(e)` fits.
 */
export type HookFn<E> = (event: E) => unknown;

/** A hook option: one function or several, run in the order given. */
export type Hook<E> = HookFn<E> | readonly HookFn<E>[];

const NONE: readonly never[] = Object.freeze([]);

/** The functions of a hook option as a list (empty for `undefined`), copied so later edits do not leak in. */
export function hookList<E>(hook: Hook<E> | undefined): readonly HookFn<E>[] {
  if (hook === undefined) return NONE;
  return typeof hook === 'function' ? [hook] : [...hook];
}

/**
 * Tells observers: runs each function with `event`, absorbing what it throws or rejects with, so an
 * observer never changes the outcome of the work it watches.
 */
export function notifyHooks<E>(hook: Hook<E> | undefined, event: E): void {
  if (hook === undefined) return;
  if (typeof hook === 'function') {
    notifyOne(hook, event);
    return;
  }
  for (const fn of hook) notifyOne(fn, event);
}

/**
 * Runs each function in order, waiting for one that returns a promise before the next. As `'veto'`
 * (gatekeepers), the first that throws or rejects stops the rest and its error propagates; as
 * `'observe'`, errors are absorbed and every function runs. Returns a promise only when a function
 * returned one: synchronous hooks cost no promise and no tick, which keeps hooked hot paths fast.
 */
export function runHooks<E>(
  hooks: readonly HookFn<E>[],
  event: E,
  mode: 'veto' | 'observe',
): Promise<void> | undefined {
  for (let i = 0; i < hooks.length; i++) {
    let returned: unknown;
    try {
      returned = hooks[i]!(event);
    } catch (error) {
      if (mode === 'veto') return Promise.reject(error);
      // The outcome is decided; a failing observer must not change it.
      continue;
    }
    if (isPromiseLike(returned)) {
      const settled = Promise.resolve(returned);
      const rest = hooks.slice(i + 1);
      return (mode === 'veto' ? settled : settled.catch(ignore)).then(() => runHooks(rest, event, mode));
    }
  }
  return undefined;
}

function isPromiseLike(value: unknown): value is PromiseLike<unknown> {
  return (
    (typeof value === 'object' || typeof value === 'function') &&
    value !== null &&
    typeof (value as { then?: unknown }).then === 'function'
  );
}

function notifyOne<E>(fn: HookFn<E>, event: E): void {
  try {
    const returned = fn(event);
    // A rejected promise from an observer is absorbed too, not left unhandled.
    if (returned instanceof Promise) returned.catch(ignore);
  } catch {
    // Observers must not break what they observe.
  }
}

function ignore(): void {}
