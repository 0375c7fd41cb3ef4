/**
 * @module `onAbort`: many listeners on one caller's signal through a single EventTarget listener.
 *
 * A caller commonly hands one signal (an agent run's, a request's) to many concurrent calls: twenty
 * parallel tool calls, a thousand tool-service calls. One `addEventListener` per call makes Node warn
 * `MaxListenersExceededWarning: Possible EventTarget memory leak detected` past ten, about a pattern
 * that is no leak, and each add and remove walks the signal's listener list. Here each signal gets one
 * listener that fans out to a set of callbacks; a call joins and leaves the set.
 */

/** A callback run when the signal aborts: a function or an object with `handleEvent` (no closure). */
export type AbortCallback = (() => void) | { handleEvent(): void };

interface Fanout {
  readonly callbacks: Set<AbortCallback>;
  readonly dispatch: () => void;
}

const fanouts = new WeakMap<AbortSignal, Fanout>();

/**
 * Runs `callback` once when `signal` aborts; returns the function that stops it (idempotent). Like
 * `addEventListener`, nothing runs for a signal already aborted (check `signal.aborted` first), and a
 * callback added twice runs once. Callbacks run in the order they were added; one that throws does not
 * stop the others, and its error is rethrown on its own, as an EventTarget listener's would be.
 */
export function onAbort(signal: AbortSignal, callback: AbortCallback): () => void {
  let fanout = fanouts.get(signal);
  if (fanout === undefined) {
    const callbacks = new Set<AbortCallback>();
    const dispatch = (): void => {
      fanouts.delete(signal);
      for (const cb of callbacks) {
        try {
          if (typeof cb === 'function') cb();
          else cb.handleEvent();
        } catch (error) {
          queueMicrotask(() => {
            throw error;
          });
        }
      }
      callbacks.clear();
    };
    fanout = { callbacks, dispatch };
    fanouts.set(signal, fanout);
    signal.addEventListener('abort', dispatch, { once: true });
  }
  const own = fanout;
  own.callbacks.add(callback);
  return () => {
    if (!own.callbacks.delete(callback) || own.callbacks.size > 0) return;
    // The last one left: detach, so a long-lived signal keeps nothing of finished calls.
    if (fanouts.get(signal) === own) {
      fanouts.delete(signal);
      signal.removeEventListener('abort', own.dispatch);
    }
  };
}
