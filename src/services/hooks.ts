/**
 * @module Hook lists: one function or an array, run in order, failures absorbed.
 */

/** One hook function or several, run in order. */
export type Hook<Context> = ((context: Context) => void) | readonly ((context: Context) => void)[];

/** Runs `hook` with `context`; a hook that throws is ignored so observability never breaks a call. */
export function runHook<Context>(hook: Hook<Context> | undefined, context: Context): void {
  if (hook === undefined) return;
  if (typeof hook === 'function') {
    try {
      hook(context);
    } catch {
      // Hooks observe; they must not change the outcome of a call.
    }
    return;
  }
  for (const fn of hook) {
    try {
      fn(context);
    } catch {
      // As above.
    }
  }
}
