/**
 * @module gateway: the HTTP API over tools, config and the agent.
 */
export { createGateway, isLoopbackHost, DEFAULT_MAX_BODY_BYTES } from './http-gateway.js';
export type {
  Gateway,
  GatewayOptions,
  GatewayListenOptions,
  GatewayAgent,
  GatewayAgentEvent,
  GatewayHistoryItem,
  GatewayProblem,
} from './http-gateway.js';
