/**
 * @module services: request/response on any MessageBus (`rpc/`), and the tool-service protocol over it:
 * wire codec, DynamicToolService (server), ToolServiceClient (caller), descriptors and the `tool-service`
 * tool type.
 */
export {
  WireProperty,
  WireErrorType,
  encodeRequest,
  decodeRequest,
  decodeEnvelopeObject,
  encodeResponse,
  decodeResponse,
  toWireError,
  fromWireError,
  cancelTopicOf,
  serviceGroupOf,
} from './wire.js';
export type { ToolServiceRequest, ToolServiceResponse, WireError } from './wire.js';
// The RPC layer under both bus protocols; for agents/ (the agent service), not part of the root API.
export {
  RpcServer,
  RpcServerCall,
  RpcClient,
  RpcClientCall,
  StreamCall,
  checkQueuePair,
  DEADLINE_GRACE_MS,
} from './rpc/index.js';
export type {
  RpcServerProtocol,
  RpcServerOptions,
  RpcServerStats,
  RpcServerEvent,
  RpcCallOwner,
  RpcClientProtocol,
  RpcClientOptions,
  RpcCallOptions,
  RpcClientCounters,
  StreamOwner,
  StreamCallOptions,
} from './rpc/index.js';
export { RemoteToolError } from './remote-tool-error.js';
export type { RemoteToolErrorOptions } from './remote-tool-error.js';
export {
  DynamicToolService,
  DEFAULT_TOOL_SERVICE_CONCURRENCY,
  DEFAULT_TOOL_SERVICE_MAX_QUEUED,
  DEFAULT_TOOL_SERVICE_TOPIC,
} from './dynamic-tool-service.js';
export type {
  DynamicToolServiceOptions,
  DynamicToolServiceHooks,
  DynamicToolServiceStats,
  ToolServiceInvoke,
  ToolServiceInvokeContext,
  MalformedMessageContext,
  CallErrorContext,
} from './dynamic-tool-service.js';
export {
  ToolServiceClient,
  DEFAULT_TOOL_SERVICE_TIMEOUT_MS,
  DEFAULT_MAX_BUFFERED_CHUNKS,
} from './tool-service-client.js';
export type {
  ToolServiceClientOptions,
  ToolServiceCallOptions,
  ToolServiceClientStats,
  ToolServiceClientHooks,
  DroppedResponseContext,
  DroppedResponseReason,
} from './tool-service-client.js';
export { ToolServiceClientCache } from './tool-service-client-cache.js';
export type { ToolServiceClientCacheOptions } from './tool-service-client-cache.js';
export {
  parseToolServiceDescriptor,
  parseToolServiceToolDescriptor,
  formatToolServiceDescriptor,
  formatToolServiceToolDescriptor,
  ToolArgumentType,
  TOOL_DESCRIPTOR_KEYS,
  describeConfigValue,
} from './descriptors.js';
export type {
  ToolServiceDescriptor,
  ToolServiceConfigParam,
  ToolServiceToolDescriptor,
  ToolServiceToolArgument,
} from './descriptors.js';
export { createToolServiceTool, ToolServiceTool, argumentsToJsonSchema } from './tool-service-tool.js';
export type {
  CreateToolServiceToolOptions,
  ToolServiceToolResult,
  ToolServiceToolOptions,
} from './tool-service-tool.js';
export {
  startAnnouncer,
  requestAnnouncements,
  decodeAnnouncement,
  TOOL_DESCRIPTORS_TOPIC,
  DEFAULT_ANNOUNCE_TTL_MS,
  DEFAULT_ANNOUNCE_HEARTBEAT_MS,
  AnnouncementKind,
} from './announcements.js';
export { startServiceAnnouncer } from './announcements.js';
export type {
  Announcement,
  Announcer,
  AnnouncerOptions,
  DynamicToolServiceAnnounceOptions,
} from './announcements.js';
export { CallTasks } from './call-tasks.js';
export { cancelStoredCall, LOCAL_TASK_SERVICE } from './call-state.js';
export type { CallTaskStartOptions, CallTasksOptions } from './call-tasks.js';
export {
  DEFAULT_DURABLE_ACK_WAIT_MS,
  DEFAULT_DURABLE_MAX_ATTEMPTS,
  MAX_STORED_CHUNKS,
} from './durable-intake.js';
export type { DurableServiceOptions } from './dynamic-tool-service.js';
export type { ToolServiceStartOptions } from './tool-service-client.js';
export type { ToolServiceDelivery } from './descriptors.js';
export type { CallRecord, CallStatus, CallStore, StoredCall, DurableCalls } from '../bus/index.js';
