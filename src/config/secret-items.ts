/**
 * @module Config items that hold secrets toolbus writes itself: an MCP server's OAuth state
 * (`mcp-oauth/<id>`: tokens, a dynamically registered client's secret). Whatever shows config
 * (`toolbus config`, the gateway's `/api/v1/config`, the web console) shows them with those secrets
 * withheld, and only toolbus writes them: people may delete one (to log out), never put one.
 */
import type { JsonObject, JsonValue } from '../schema/index.js';

/** What of one secret-holding type may be shown: top-level fields, and fields of nested objects. */
interface ShownFields {
  /** Top-level fields shown as they are. */
  readonly fields: readonly string[];
  /** Top-level objects of which only the listed fields are shown. */
  readonly objects: Readonly<Record<string, readonly string[]>>;
  /** The command that writes an item, followed by its key. */
  readonly writtenBy: string;
  /** The command that deletes an item (besides `toolbus config delete`), followed by its key. */
  readonly deletedBy: string;
}

/**
 * The types whose items hold secrets, and what of them may be shown. Anything not listed is withheld,
 * so a field added later is secret until it is listed here.
 */
const SECRET_TYPES: ReadonlyMap<string, ShownFields> = new Map([
  [
    'mcp-oauth',
    {
      fields: ['server', 'expires-at', 'obtained-at', 'discovery', 'refreshing'],
      objects: {
        // RFC 7591 client metadata that is not a credential (client_secret, registration_access_token).
        client: [
          'client_id',
          'issuer',
          'client_name',
          'redirect_uris',
          'grant_types',
          'response_types',
          'token_endpoint_auth_method',
          'application_type',
          'scope',
          'client_id_issued_at',
          'client_secret_expires_at',
        ],
        tokens: ['token_type', 'scope', 'expires_in', 'issuer'],
        pending: ['redirect-url', 'started-at'],
      },
      writtenBy: 'toolbus mcp login',
      deletedBy: 'toolbus mcp logout',
    },
  ],
]);

/** The placeholder shown instead of a withheld value. */
export const WITHHELD = '(withheld)';

/** An item's value as it may be shown, and the fields withheld from it (`tokens.access_token`, …). */
export interface ShownConfigValue {
  value: JsonValue;
  /** Empty for an item of a type without secrets. */
  withheld: string[];
}

function isObject(value: JsonValue | undefined): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * The value of an item of `type` as it may be shown: unchanged for a type without secrets; otherwise
 * every field not known to be safe replaced by {@link WITHHELD} and named in `withheld`.
 */
export function showConfigValue(type: string, value: JsonValue): ShownConfigValue {
  const shown = SECRET_TYPES.get(type);
  if (shown === undefined) return { value, withheld: [] };
  if (!isObject(value)) return { value: WITHHELD, withheld: ['(value)'] };
  const out: JsonObject = {};
  const withheld: string[] = [];
  for (const [field, item] of Object.entries(value)) {
    const allowed = shown.objects[field];
    if (allowed !== undefined && isObject(item)) {
      const inner: JsonObject = {};
      for (const [name, innerValue] of Object.entries(item)) {
        if (allowed.includes(name)) inner[name] = innerValue;
        else {
          inner[name] = WITHHELD;
          withheld.push(`${field}.${name}`);
        }
      }
      out[field] = inner;
    } else if (shown.fields.includes(field)) {
      out[field] = item;
    } else {
      out[field] = WITHHELD;
      withheld.push(field);
    }
  }
  return { value: out, withheld };
}

/**
 * Why nobody but toolbus may write an item of `type`, or undefined when anyone allowed to write config
 * may. `key` names the item in the message.
 */
export function configWriteRefusal(type: string, key: string): string | undefined {
  const shown = SECRET_TYPES.get(type);
  if (shown === undefined) return undefined;
  return (
    `config '${type}/${key}' holds secrets that only toolbus writes ('${shown.writtenBy} ${key}'); ` +
    `it can only be deleted ('${shown.deletedBy} ${key}' or 'toolbus config delete ${type}/${key}')`
  );
}
