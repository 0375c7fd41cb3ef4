/**
 * @module `saptivaClient`: the OpenAI-compatible client preset for the Saptiva API.
 */
import { ToolbusError } from '../../errors/index.js';
import type { ModelInfo } from '../index.js';
import {
  DEFAULT_SAPTIVA_MODEL,
  SAPTIVA_API_KEY_ENV,
  SAPTIVA_BASE_URL,
  SaptivaModel,
  saptivaModelInfo,
} from '../index.js';
import { OpenAIChatCompletionClient } from './openai-chat-completion-client.js';
import type { OpenAIChatCompletionClientOptions } from './openai-chat-completion-client.js';

/** Options of {@link saptivaClient}: those of the OpenAI client, with Saptiva defaults. */
export interface SaptivaClientOptions extends Omit<OpenAIChatCompletionClientOptions, 'model' | 'modelInfo'> {
  /** A {@link SaptivaModel} name, or another model the API serves (then give `modelInfo`). @default 'Saptiva Legacy' */
  model?: SaptivaModel | (string & {});
  /** @default process.env.SAPTIVA_API_KEY */
  apiKey?: string;
  /** @default SAPTIVA_BASE_URL ('https://api.saptiva.com/v1') */
  baseURL?: string;
  /** Required for a model not in {@link SaptivaModel}; overrides the known info otherwise. @default the model's entry in SAPTIVA_MODEL_INFO */
  modelInfo?: Partial<ModelInfo>;
  /** @default 0.7 (as Saptiva-Agents) */
  temperature?: number;
  /** @default 0.9 (as Saptiva-Agents) */
  topP?: number;
}

/**
 * A model client for the Saptiva API: base URL `https://api.saptiva.com/v1`, the key from
 * `SAPTIVA_API_KEY`, and each Saptiva model's capabilities (so tools are refused on Saptiva Coder and
 * Saptiva OCR, which cannot call functions).
 *
 * @throws {ToolbusError} `authentication` when no key is given or set; `invalid-arguments` for a model
 * name toolbus does not know and no `modelInfo`.
 * @example
 * ```ts
 * import { saptivaClient } from 'toolbus/openai';
 * import { SaptivaModel } from 'toolbus';
 * const model = saptivaClient({ model: SaptivaModel.Turbo });
 * ```
 */
export function saptivaClient(options: SaptivaClientOptions = {}): OpenAIChatCompletionClient {
  const model = options.model ?? DEFAULT_SAPTIVA_MODEL;
  const apiKey = options.apiKey ?? process.env[SAPTIVA_API_KEY_ENV];
  if (!apiKey) {
    throw new ToolbusError(
      'authentication',
      `saptivaClient: no API key for model '${model}': pass { apiKey } or set ${SAPTIVA_API_KEY_ENV} ` +
        `(keys are issued at https://lab.saptiva.com)`,
    );
  }
  const known = saptivaModelInfo(model);
  if (!known && !options.modelInfo) {
    throw new ToolbusError(
      'invalid-arguments',
      `saptivaClient: model '${model}' is not a known Saptiva model; expected one of ` +
        `${Object.values(SaptivaModel)
          .map((m) => `'${m}'`)
          .join(', ')}, or pass { modelInfo } for another model`,
    );
  }
  return new OpenAIChatCompletionClient({
    ...options,
    model,
    apiKey,
    apiKeyEnvVar: SAPTIVA_API_KEY_ENV,
    baseURL: options.baseURL ?? SAPTIVA_BASE_URL,
    modelInfo: { ...known, ...options.modelInfo },
    temperature: options.temperature ?? 0.7,
    topP: options.topP ?? 0.9,
  });
}
