/**
 * @module Finds where JSON text stops being valid, with a reason: Node 20's `JSON.parse` messages do not
 * always carry a position. Used for tool arguments and config values alike.
 */

/** Where JSON text went wrong: 1-based line and column, 0-based character offset. */
export interface JsonErrorPosition {
  line: number;
  column: number;
  /** The 0-based offset into the text (UTF-16 code units, as `String.prototype.slice` counts). */
  position: number;
  /** What was wrong at that point, e.g. `unexpected '}'` or `unterminated string`. */
  reason: string;
}

/**
 * Scans JSON text and returns where the first error is, or undefined when the text is valid JSON.
 * A small recursive-descent checker: Node 20's `JSON.parse` messages no longer carry a position.
 */
export function findJsonError(text: string): JsonErrorPosition | undefined {
  let i = 0;
  const fail = (reason: string, at = i): never => {
    throw new JsonScanError(reason, at);
  };
  const describe = (at: number): string =>
    at >= text.length ? 'end of input' : `'${JSON.stringify(text[at]).slice(1, -1)}'`;
  const ws = (): void => {
    while (i < text.length && (text[i] === ' ' || text[i] === '\t' || text[i] === '\n' || text[i] === '\r')) {
      i++;
    }
  };
  const literal = (word: string): void => {
    if (text.startsWith(word, i)) i += word.length;
    else fail(`unexpected ${describe(i)}; expected a value`);
  };
  const string = (): void => {
    const start = i;
    i++; // opening quote
    for (;;) {
      if (i >= text.length) fail('unterminated string', start);
      const c = text.charCodeAt(i);
      if (c === 0x22) {
        i++;
        return;
      }
      if (c < 0x20) fail('control character in string; escape it (e.g. \\n)');
      if (c === 0x5c) {
        const e = text[i + 1];
        if (e === 'u') {
          if (!/^[0-9a-fA-F]{4}$/.test(text.slice(i + 2, i + 6)))
            fail('bad \\u escape; expected 4 hex digits');
          i += 6;
        } else if (e !== undefined && '"\\/bfnrt'.includes(e)) i += 2;
        else fail(`bad escape ${describe(i + 1)} in string`, i + 1);
      } else i++;
    }
  };
  const number = (): void => {
    const m = /^-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?/.exec(text.slice(i, i + 400));
    if (!m || m[0] === '-' || m[0] === '') fail(`unexpected ${describe(i)}; expected a value`);
    i += m![0].length;
    if (i < text.length && /[.eE\d]/.test(text[i]!)) fail(`malformed number`);
  };
  const value = (depth: number): void => {
    if (depth > 512) fail('nested too deeply (more than 512 levels)');
    ws();
    const c = text[i];
    if (c === '{') {
      i++;
      ws();
      if (text[i] === '}') {
        i++;
        return;
      }
      for (;;) {
        ws();
        if (text[i] !== '"') fail(`unexpected ${describe(i)}; expected a property name in double quotes`);
        string();
        ws();
        if (text[i] !== ':') fail(`unexpected ${describe(i)}; expected ':' after the property name`);
        i++;
        value(depth + 1);
        ws();
        if (text[i] === ',') {
          const comma = i++;
          ws();
          if (text[i] === '}') fail("trailing comma; remove the ',' before '}'", comma);
          continue;
        }
        if (text[i] === '}') {
          i++;
          return;
        }
        fail(`unexpected ${describe(i)}; expected ',' or '}'`);
      }
    }
    if (c === '[') {
      i++;
      ws();
      if (text[i] === ']') {
        i++;
        return;
      }
      for (;;) {
        value(depth + 1);
        ws();
        if (text[i] === ',') {
          const comma = i++;
          ws();
          if (text[i] === ']') fail("trailing comma; remove the ',' before ']'", comma);
          continue;
        }
        if (text[i] === ']') {
          i++;
          return;
        }
        fail(`unexpected ${describe(i)}; expected ',' or ']'`);
      }
    }
    if (c === '"') return string();
    if (c === 't') return literal('true');
    if (c === 'f') return literal('false');
    if (c === 'n') return literal('null');
    if (c === '-' || (c !== undefined && c >= '0' && c <= '9')) return number();
    if (c === "'") fail('unexpected "\'"; JSON strings use double quotes');
    fail(`unexpected ${describe(i)}; expected a value`);
  };
  try {
    // JSON.parse rejects a leading byte order mark; say so here too, or the scan finds nothing wrong and
    // the caller points at "the end". Callers that accept one (tool arguments) strip it before parsing.
    if (text.charCodeAt(0) === 0xfeff) fail('unexpected byte order mark (U+FEFF) at the start; remove it', 0);
    value(0);
    ws();
    if (i < text.length) fail(`unexpected ${describe(i)} after the end of the value`);
    return undefined;
  } catch (error) {
    if (!(error instanceof JsonScanError)) throw error;
    const before = text.slice(0, error.at);
    const line = before.split('\n').length;
    const column = error.at - (before.lastIndexOf('\n') + 1) + 1;
    return { line, column, position: error.at, reason: error.reason };
  }
}

class JsonScanError extends Error {
  constructor(
    readonly reason: string,
    readonly at: number,
  ) {
    super(reason);
  }
}
