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
 * Runs each function in order, awaiting it. As `'veto'` (gatekeepers), the first that throws or rejects
 * stops the rest and its error propagates; as `'observe'`, errors are absorbed and every function runs.
 */
export async function runHooks<E>(
  hooks: readonly HookFn<E>[],
  event: E,
  mode: 'veto' | 'observe',
): Promise<void> {
  for (const fn of hooks) {
    if (mode === 'veto') await fn(event);
    else {
      try {
        await fn(event);
      } catch {
        // The outcome is decided; a failing observer must not change it.
      }
    }
  }
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
