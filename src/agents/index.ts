/**
 * @module agents: the agent runtime (AgentId, RoutedAgent, SingleThreadedAgentRuntime), the agents
 * (ToolUseAgent, ReActAgent), and the agent on the bus (AgentService, AgentClient).
 */
export { AgentId, TopicId } from './agent-id.js';
export type { AgentType } from './agent-id.js';
export type {
  Agent,
  AgentFactory,
  AgentRuntime,
  MessageContext,
  PublishMessageOptions,
  SendMessageOptions,
  Subscription,
} from './agent-runtime.js';
export { RoutedAgent, HandlerKind } from './routed-agent.js';
export type { MessageClass, MessageHandler, MessageHandlerOptions } from './routed-agent.js';
export { SingleThreadedAgentRuntime } from './single-threaded-agent-runtime.js';
export type {
  SingleThreadedAgentRuntimeOptions,
  RuntimeHooks,
  RuntimeStartOptions,
  HandlerErrorContext,
} from './single-threaded-agent-runtime.js';
export { TypeSubscription } from './type-subscription.js';
export { AgentEventType, AgentFinishReason, askAgent } from './agent.js';
export type { AgentEvent, AgentHistoryItem, AgentRunOptions, RunnableAgent } from './agent.js';
export {
  ToolUseAgent,
  DEFAULT_SYSTEM_MESSAGE,
  DEFAULT_MAX_ITERATIONS,
  DEFAULT_PARALLEL_TOOL_CALLS,
} from './tool-use-agent.js';
export type { ToolUseAgentOptions } from './tool-use-agent.js';
export { ReActAgent } from './react-agent.js';
export type { ReActAgentOptions } from './react-agent.js';
export { parseReActResponse, StreamingReActParser, REACT_FORMAT } from './react-parser.js';
export type { ReActStep, ReActAction, ReActFinal, ReActParseFailure, ReActChunk } from './react-parser.js';
export {
  AgentService,
  DEFAULT_AGENT_REQUEST_QUEUE,
  DEFAULT_AGENT_RESPONSE_QUEUE,
  DEFAULT_AGENT_SERVICE_CONCURRENCY,
  DEFAULT_AGENT_SERVICE_MAX_QUEUED,
} from './agent-service.js';
export type { AgentServiceOptions, AgentServiceHooks, AgentServiceProblem } from './agent-service.js';
export { AgentClient, DEFAULT_AGENT_TIMEOUT_MS, DEFAULT_MAX_BUFFERED_EVENTS } from './agent-client.js';
export type { AgentClientOptions, AgentAskOptions, AgentStreamEvent } from './agent-client.js';
export {
  AgentMessageType,
  AgentWireErrorType,
  encodeAgentRequest,
  decodeAgentRequest,
  encodeAgentResponse,
  decodeAgentResponse,
  encodeAgentProgress,
  decodeAgentProgress,
  toAgentWireError,
  fromAgentWireError,
} from './wire.js';
export type { AgentRequest, AgentResponse, AgentProgressContent, AgentWireError } from './wire.js';
