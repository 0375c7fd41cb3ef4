/**
 * @module toolbus/wire: the wire formats, for peers that speak them without toolbus's classes (a
 * TrustGraph service, a process in another language, a test of the bytes). The tool-service envelope
 * and its codecs, the agent request/response, the config descriptors, the self-announcement messages and
 * the topic names. The shapes keep the seed's snake_case field names (`end_of_stream`, `request-queue`).
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
  parseToolServiceDescriptor,
  parseToolServiceToolDescriptor,
  formatToolServiceDescriptor,
  formatToolServiceToolDescriptor,
  argumentsToJsonSchema,
  ToolArgumentType,
  TOOL_DESCRIPTOR_KEYS,
  startAnnouncer,
  requestAnnouncements,
  decodeAnnouncement,
  TOOL_DESCRIPTORS_TOPIC,
  DEFAULT_ANNOUNCE_TTL_MS,
  DEFAULT_ANNOUNCE_HEARTBEAT_MS,
  AnnouncementKind,
} from '../services/index.js';
export type {
  ToolServiceRequest,
  ToolServiceResponse,
  WireError,
  ToolServiceDescriptor,
  ToolServiceConfigParam,
  ToolServiceToolDescriptor,
  ToolServiceToolArgument,
  Announcement,
  Announcer,
  AnnouncerOptions,
} from '../services/index.js';
export {
  AgentMessageType,
  AgentWireErrorType,
  encodeAgentRequest,
  decodeAgentRequest,
  encodeAgentResponse,
  decodeAgentResponse,
  toAgentWireError,
  fromAgentWireError,
} from '../agents/index.js';
export type { AgentRequest, AgentResponse, AgentWireError } from '../agents/index.js';
export { parseTopic, canonicalTopic, topicParts, defaultServiceQueues } from '../bus/index.js';
export type { TopicName } from '../bus/index.js';
