/**
 * @module URI templates of RFC 6570 level 1 (`test://template/{id}/data`): the form MCP resource
 * templates take. A variable stands for one path segment's worth of text: it matches a run of
 * characters without `/`, `?` or `#`, and is percent-decoded; expanding percent-encodes every character
 * but the unreserved ones.
 */
import { ToolbusError } from '../errors/index.js';

const VARIABLE_NAME = /^[A-Za-z0-9_]+$/;

/** A parsed level-1 URI template. */
export interface UriTemplate {
  /** The template text. */
  readonly template: string;
  /** Its variables, in order. */
  readonly variables: readonly string[];
  /** The variables' values when `uri` matches the template (percent-decoded), else undefined. */
  match(uri: string): Record<string, string> | undefined;
  /** The URI for `values` (each percent-encoded); a missing variable expands to nothing, as RFC 6570 says. */
  expand(values: Readonly<Record<string, string>>): string;
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/**
 * Parses a level-1 URI template (`{name}` expressions only).
 *
 * @throws ToolbusError `usage` naming what is wrong: an unclosed brace, an operator or modifier of a
 * higher level (`{+path}`, `{id*}`), several variables in one expression, a repeated variable.
 * @example
 * ```ts
 * parseUriTemplate('test://template/{id}/data').match('test://template/123/data'); // { id: '123' }
 * ```
 */
export function parseUriTemplate(template: string): UriTemplate {
  if (typeof template !== 'string' || template === '') {
    throw new ToolbusError('usage', `URI template: expected a non-empty string, got ${typeof template}`);
  }
  const where = `URI template '${template.length > 80 ? `${template.slice(0, 80)}…` : template}'`;
  const literals: string[] = [];
  const variables: string[] = [];
  let rest = template;
  for (;;) {
    const open = rest.indexOf('{');
    const close = rest.indexOf('}');
    if (open === -1) {
      if (close !== -1) throw new ToolbusError('usage', `${where}: a '}' without its '{'`);
      literals.push(rest);
      break;
    }
    if (close !== -1 && close < open) throw new ToolbusError('usage', `${where}: a '}' without its '{'`);
    const end = rest.indexOf('}', open);
    if (end === -1) throw new ToolbusError('usage', `${where}: a '{' without its '}'`);
    const name = rest.slice(open + 1, end);
    if (!VARIABLE_NAME.test(name)) {
      throw new ToolbusError(
        'usage',
        `${where}: '{${name}}' is not a level-1 expression; write one variable name of letters, digits ` +
          'and _ in each {}, without operators (+ # . / ; ? &), modifiers (* :n) or commas',
      );
    }
    if (variables.includes(name)) {
      throw new ToolbusError('usage', `${where}: variable '${name}' appears twice; each may appear once`);
    }
    literals.push(rest.slice(0, open));
    variables.push(name);
    rest = rest.slice(end + 1);
  }
  const pattern = new RegExp(
    `^${literals.map(escapeRegExp).reduce((acc, literal, i) => (i === 0 ? literal : `${acc}([^/?#]+)${literal}`), '')}$`,
  );
  return {
    template,
    variables,
    match(uri) {
      const found = pattern.exec(uri);
      if (found === null) return undefined;
      // Own properties even for a variable called __proto__.
      return Object.fromEntries(
        variables.map((name, i) => {
          const raw = found[i + 1]!;
          try {
            return [name, decodeURIComponent(raw)];
          } catch {
            return [name, raw]; // not valid percent-encoding: the text as it came
          }
        }),
      ) as Record<string, string>;
    },
    expand(values) {
      let uri = literals[0]!;
      for (let i = 0; i < variables.length; i++) {
        const value = Object.hasOwn(values, variables[i]!) ? values[variables[i]!] : undefined;
        uri += (value === undefined ? '' : encodeURIComponent(value)) + literals[i + 1]!;
      }
      return uri;
    },
  };
}
