/**
 * @module toolbus/testing: test doubles. `ScriptedChatCompletionClient` replays a script of model
 * replies (text, tool calls, thoughts, errors) and records every request, so an agent or a tool set can
 * be tested without a model.
 */
export { ScriptedChatCompletionClient, DEFAULT_SCRIPTED_MODEL_INFO } from '../models/index.js';
export type {
  ScriptedCall,
  ScriptedChatCompletionClientOptions,
  ScriptedReply,
  ScriptedResult,
  ScriptedStep,
  ScriptedStepContext,
  ScriptedStepFunction,
} from '../models/index.js';
