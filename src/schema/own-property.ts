/**
 * @module The one way toolbus writes a key that came from outside (a model's arguments, a remote schema,
 * a config item) into a fresh object.
 */

/**
 * Sets `key` on `target` as an own, enumerable data property, as `JSON.parse` and object spread do. A
 * plain `target[key] = value` with the key `__proto__` would replace the object's prototype instead: the
 * key would vanish and the value's properties would look inherited.
 *
 * @example
 * ```ts
 * const out: Record<string, unknown> = {};
 * setOwn(out, '__proto__', { a: 1 }); // Object.keys(out) is ['__proto__']
 * ```
 */
export function setOwn<T>(target: Record<string, T>, key: string, value: T): void {
  // A key the target does not have, not even inherited, has no setter to run: a plain assignment
  // creates the own property, several times faster than defineProperty (a registry start copies
  // thousands of schemas). `__proto__`, `toString` or anything added to Object.prototype is defined.
  if (key in target) {
    Object.defineProperty(target, key, { value, writable: true, enumerable: true, configurable: true });
  } else {
    target[key] = value;
  }
}
