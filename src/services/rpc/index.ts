/**
 * @module services/rpc: request/response over any `MessageBus`, once for every protocol on it. Tool
 * services (`services/wire.ts`) and the agent service (`agents/wire.ts`) are codecs over it. Internal to
 * toolbus: reached through `services/index.ts`, not part of the root API.
 */
export {
  WireProperty,
  cancelTopicOf,
  checkQueuePair,
  readId,
  readDeadline,
  readTraceparent,
  readCancelReason,
  echoPropertiesOf,
  cancelReasonOf,
} from './envelope.js';
export { RpcServer, RpcServerCall, DEADLINE_GRACE_MS } from './rpc-server.js';
export type {
  RpcServerProtocol,
  RpcServerOptions,
  RpcServerStats,
  RpcServerEvent,
  RpcCallOwner,
} from './rpc-server.js';
export { RpcClient, RpcClientCall } from './rpc-client.js';
export type {
  RpcClientProtocol,
  RpcClientOptions,
  RpcCallOptions,
  RpcClientCounters,
  DroppedResponseReason,
} from './rpc-client.js';
export { StreamCall } from './stream-call.js';
export type { StreamOwner, StreamCallOptions } from './stream-call.js';
