/**
 * @module Chooses the agent's model from the environment.
 *
 * | variable                 | effect                                                                 |
 * |--------------------------|------------------------------------------------------------------------|
 * | `SAPTIVA_API_KEY`        | Saptiva (`TOOLBUS_MODEL` picks the model, default Saptiva Turbo)       |
 * | `OPENAI_API_KEY`         | OpenAI (`TOOLBUS_MODEL`, default gpt-4o-mini; `OPENAI_BASE_URL` for others) |
 * | `OPENAI_BASE_URL` alone  | any OpenAI-compatible server without a key (Ollama, vLLM, llama.cpp)   |
 * | `TOOLBUS_MODEL_VISION`   | `1`/`0`: the OpenAI-compatible model reads images (tools' image results are sent to it); default: yes for gpt-4o, gpt-4.1, gpt-5, o3, o4 |
 * | `TOOLBUS_SCRIPTED_MODEL` | tests only: a JSON file of scripted replies (see below)                |
 */
import { readFileSync } from 'node:fs';
import type { ChatCompletionClient } from '../models/index.js';
import { importLeaf } from './import-leaf.js';

/** The text `ask` and the gateway show when no model is configured. */
export const NO_MODEL_MESSAGE =
  'no model is configured, so the agent is not running (tools, config and the rest work without one). ' +
  'To use the agent, restart `toolbus up` with one of: ' +
  'OPENAI_API_KEY=sk-... (OpenAI; add OPENAI_BASE_URL for another OpenAI-compatible server), ' +
  'OPENAI_BASE_URL=http://127.0.0.1:11434/v1 TOOLBUS_MODEL=llama3.2 (Ollama or any local server), ' +
  'or SAPTIVA_API_KEY=... (Saptiva); TOOLBUS_MODEL picks the model.';

/** A model and a line describing it for the start-up banner. */
export interface ModelChoice {
  model: ChatCompletionClient;
  /** The model's name (`TOOLBUS_MODEL` or the default), the `model` label of its token metrics. */
  name: string;
  description: string;
  /** Releases the client. */
  close(): Promise<void>;
}

/**
 * One step of a `TOOLBUS_SCRIPTED_MODEL` file: a text answer, or tool calls
 * (`{ "calls": [{ "name": "tell-joke", "arguments": { "topic": "cats" } }] }`).
 */
type ScriptFileStep = string | { calls: { name: string; arguments?: unknown }[]; thought?: string };

/** Builds the model the environment asks for, or undefined when none is configured. */
export async function modelFromEnv(env: NodeJS.ProcessEnv): Promise<ModelChoice | undefined> {
  if (env.TOOLBUS_SCRIPTED_MODEL) {
    const { ScriptedChatCompletionClient } = await import('../models/index.js');
    const steps = JSON.parse(readFileSync(env.TOOLBUS_SCRIPTED_MODEL, 'utf8')) as ScriptFileStep[];
    let n = 0;
    const script = steps.map((step) =>
      typeof step === 'string'
        ? step
        : {
            content: step.calls.map((c) => ({
              id: `call_${++n}`,
              name: c.name,
              arguments: JSON.stringify(c.arguments ?? {}),
            })),
            ...(step.thought ? { thought: step.thought } : {}),
          },
    );
    // The script is replayed in a loop so that a test can ask several times.
    const looped = Array.from({ length: 100 }, () => script).flat();
    return {
      model: new ScriptedChatCompletionClient(looped),
      name: 'scripted',
      description: `scripted model from ${env.TOOLBUS_SCRIPTED_MODEL} (testing only)`,
      // Unconsumed steps are expected here, so the double's leftover check is skipped.
      close: async () => {},
    };
  }
  if (env.SAPTIVA_API_KEY) {
    const { saptivaClient } = await importLeaf('openai', () => import('../models/openai/index.js'));
    const name = env.TOOLBUS_MODEL ?? 'Saptiva Turbo';
    const model = saptivaClient({ model: name, apiKey: env.SAPTIVA_API_KEY });
    return { model, name, description: `Saptiva ${name}`, close: () => model.close() };
  }
  if (env.OPENAI_API_KEY || env.OPENAI_BASE_URL) {
    const { OpenAIChatCompletionClient } = await importLeaf(
      'openai',
      () => import('../models/openai/index.js'),
    );
    const name = env.TOOLBUS_MODEL ?? 'gpt-4o-mini';
    const model = new OpenAIChatCompletionClient({
      model: name,
      apiKey: env.OPENAI_API_KEY ?? 'not-needed',
      ...(env.OPENAI_BASE_URL ? { baseURL: env.OPENAI_BASE_URL } : {}),
      modelInfo: { vision: visionOf(name, env.TOOLBUS_MODEL_VISION) },
    });
    return {
      model,
      name,
      description: `${name} at ${env.OPENAI_BASE_URL ?? 'api.openai.com'}`,
      close: () => model.close(),
    };
  }
  return undefined;
}

/** Whether the model reads images: `TOOLBUS_MODEL_VISION` when set, else known vision families. */
function visionOf(model: string, flag: string | undefined): boolean {
  if (flag !== undefined && flag !== '') return flag === '1' || flag.toLowerCase() === 'true';
  return /^(gpt-4o|gpt-4\.1|gpt-5|o3|o4)/.test(model);
}
