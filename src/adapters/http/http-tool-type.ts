/**
 * @module The config tool type `http`: a factory the `ToolRegistry` calls for each `tool` config item
 * whose `type` is `"http"`.
 */
import { isToolbusError, ToolbusError } from '../../errors/index.js';
import type { JsonObject } from '../../schema/index.js';
import type { HeaderEnvironment } from './header-value.js';
import type { HttpTool } from './http-tool.js';
import { httpToolFromConfig } from './http-tool-config.js';

/** Options of {@link httpToolType}. */
export interface HttpToolTypeOptions {
  /** Where `{ "env": ... }` header values are read at call time. @default process.env */
  env?: HeaderEnvironment;
  /**
   * A deployment-wide host allowlist applied to every HTTP tool from config; an item's own
   * `allowed_hosts` can narrow it, never widen it.
   * @default undefined (each item's `allowed_hosts`, else any host)
   */
  allowedHosts?: readonly string[];
}

/**
 * The factory signature {@link httpToolType} returns. It only needs the item's key from the registry's
 * context, so it is assignable to the registry's `ToolTypeFactory`.
 */
export type HttpToolTypeFactory = (descriptor: JsonObject, ctx: { key: string }) => HttpTool;

/**
 * The `http` tool type for the `ToolRegistry`. The descriptor has {@link HttpToolConfig}'s fields
 * (AutoGen's names: `scheme`, `host`, `port`, `path`, `method`, `json_schema`, `headers`, `return_type`,
 * `timeout` in seconds, or a single `url`; and the explicit locations `query_params`, `header_params`
 * and `body_param`, as `toolbus openapi import` writes them); `name` defaults to the item's key.
 *
 * Throws ToolbusError `invalid-config` naming the item (`config 'tool/<key>'`), the field and what was
 * expected, so the registry can report and skip that item alone.
 *
 * @example
 * ```ts
 * const registry = new ToolRegistry(store, { toolTypes: { http: httpToolType({ allowedHosts: ['api.example.com'] }) } });
 * await store.put('tool', 'get-weather', {
 *   type: 'http', url: 'https://api.example.com/weather/{city}', method: 'GET', return_type: 'json',
 *   headers: { Authorization: { env: 'WEATHER_TOKEN', prefix: 'Bearer ' } },
 * });
 * ```
 */
export function httpToolType(options: HttpToolTypeOptions = {}): HttpToolTypeFactory {
  const env = options.env;
  const allowedHosts = options.allowedHosts === undefined ? undefined : [...options.allowedHosts];
  return (descriptor, ctx) => {
    const owner = `config 'tool/${ctx.key}'`;
    if (typeof descriptor !== 'object' || descriptor === null || Array.isArray(descriptor)) {
      throw new ToolbusError('invalid-config', `${owner}: an http tool must be a JSON object`);
    }
    const config = descriptor['name'] === undefined ? { ...descriptor, name: ctx.key } : descriptor;
    try {
      return httpToolFromConfig(config, {
        owner,
        ...(env === undefined ? {} : { env }),
        ...(allowedHosts === undefined ? {} : { allowedHosts }),
      });
    } catch (error) {
      // HttpTool names itself `tool '<name>'`; name the config item too so the report points at it.
      if (isToolbusError(error) && !error.message.startsWith(owner)) {
        throw new ToolbusError(error.code, `${owner}: ${error.message}`, { cause: error });
      }
      throw error;
    }
  };
}
