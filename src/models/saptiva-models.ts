/**
 * @module Saptiva model names and what each can do (plain data; the client is in `toolbus/openai`).
 */
import type { ModelInfo } from './chat-completion-client.js';

/** The Saptiva API's OpenAI-compatible base URL. */
export const SAPTIVA_BASE_URL = 'https://api.saptiva.com/v1';

/** The environment variable `saptivaClient` reads the API key from. */
export const SAPTIVA_API_KEY_ENV = 'SAPTIVA_API_KEY';

/**
 * Saptiva model names, exactly as the API expects them (spaces and capitals matter).
 *
 * @example
 * ```ts
 * const client = saptivaClient({ model: SaptivaModel.Turbo });
 * ```
 */
export const SaptivaModel = {
  /** Fast general chat (qwen3). */
  Turbo: 'Saptiva Turbo',
  /** Reasoning (qwen3 with thinking). */
  Cortex: 'Saptiva Cortex',
  /** llama3.3 70B; the Saptiva-Agents default. */
  Legacy: 'Saptiva Legacy',
  /** GPT-OSS-20B, for operational tasks with tools. */
  Ops: 'Saptiva Ops',
  /** Code generation; no function calling. */
  Coder: 'Saptiva Coder',
  /** Document OCR; vision, no function calling. */
  OCR: 'Saptiva OCR',
  /** Embeddings. */
  Embed: 'Saptiva Embed',
  /** Content moderation. */
  Guard: 'Saptiva Guard',
  /** Text and images (gemma3). */
  Multimodal: 'Saptiva Multimodal',
} as const;
/** One of {@link SaptivaModel}'s values. */
export type SaptivaModel = (typeof SaptivaModel)[keyof typeof SaptivaModel];

/** The default model of the Saptiva-Agents client. */
export const DEFAULT_SAPTIVA_MODEL: SaptivaModel = SaptivaModel.Legacy;

function info(functionCalling: boolean, vision: boolean): Readonly<ModelInfo> {
  // As the Saptiva-Agents fork declares them: every model takes JSON and structured output and several
  // system messages; the family is not published.
  return Object.freeze({
    functionCalling,
    jsonOutput: true,
    vision,
    family: 'unknown',
    structuredOutput: true,
    multipleSystemMessages: true,
  });
}

/**
 * The capabilities of each Saptiva model, as the Saptiva-Agents fork declares them: function calling on
 * every model except Coder and OCR, vision only on Multimodal and OCR.
 */
export const SAPTIVA_MODEL_INFO: Readonly<Record<SaptivaModel, Readonly<ModelInfo>>> = Object.freeze({
  [SaptivaModel.Turbo]: info(true, false),
  [SaptivaModel.Cortex]: info(true, false),
  [SaptivaModel.Legacy]: info(true, false),
  [SaptivaModel.Ops]: info(true, false),
  [SaptivaModel.Coder]: info(false, false),
  [SaptivaModel.OCR]: info(false, true),
  [SaptivaModel.Embed]: info(true, false),
  [SaptivaModel.Guard]: info(true, false),
  [SaptivaModel.Multimodal]: info(true, true),
});

/** The model info of a Saptiva model name, or `undefined` for a name toolbus does not know. */
export function saptivaModelInfo(model: string): Readonly<ModelInfo> | undefined {
  return Object.hasOwn(SAPTIVA_MODEL_INFO, model) ? SAPTIVA_MODEL_INFO[model as SaptivaModel] : undefined;
}
