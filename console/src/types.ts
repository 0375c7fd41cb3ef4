/**
 * @module The shapes the gateway's JSON routes answer, as the console reads them
 * (`/work/notes/console-contract.md`). Fields the console does not use are left out.
 */

/** A JSON Schema, as far as the invoke form reads it. */
export interface JsonSchema {
  type?: string | string[];
  title?: string;
  description?: string;
  properties?: Record<string, JsonSchema>;
  required?: string[];
  items?: JsonSchema | JsonSchema[];
  enum?: unknown[];
  const?: unknown;
  default?: unknown;
  minimum?: number;
  maximum?: number;
  minLength?: number;
  maxLength?: number;
  minItems?: number;
  maxItems?: number;
  pattern?: string;
  format?: string;
  anyOf?: JsonSchema[];
  oneOf?: JsonSchema[];
  allOf?: JsonSchema[];
  $ref?: string;
  $defs?: Record<string, JsonSchema>;
  definitions?: Record<string, JsonSchema>;
  additionalProperties?: boolean | JsonSchema;
}

/** `GET /api/v1/system`. */
export interface SystemInfo {
  version: string;
  uptimeMs: number;
  bus: { kind: 'memory' | 'nats' | string; description: string; connected: boolean };
  store: { description: string };
  agent: boolean;
  counts: { tools: number; services: number; problems: number; callsInFlight: number };
  ready: ReadyInfo;
  rates: { bucketMs: number; points: RatePoint[] };
}

/** `GET /api/v1/ready` (with the token). */
export interface ReadyInfo {
  status: 'ready' | 'not-ready' | 'stopping' | string;
  parts: Record<string, ReadyPart>;
}

/** One part of the readiness answer. */
export interface ReadyPart {
  ok: boolean;
  required?: boolean;
  detail?: string;
  [field: string]: unknown;
}

/** One bucket of the call-rate series. */
export interface RatePoint {
  at: number;
  calls: number;
  errors: number;
}

/** `GET /api/v1/services` item (the descriptor's fields are absent when it does not parse). */
export interface ServiceInfo {
  id: string;
  requestQueue?: string;
  responseQueue?: string;
  configParams?: { name: string; required: boolean }[];
  delivery?: string;
  source: string;
  instances: { id: string; lastSeen: number }[];
  tools: string[];
}

/** A registry problem of a tool. */
export interface ToolProblem {
  severity: string;
  message: string;
}

/** `GET /api/v1/tools?detail=1` item. */
export interface ToolInfo {
  name: string;
  description: string;
  parameters: JsonSchema;
  tags?: string[];
  source?: 'config' | 'announced' | 'mcp' | 'code' | string;
  key?: string;
  /** Null when strict mode cannot express the schema (`strictError` says why). */
  strictParameters?: JsonSchema | null;
  strictError?: string;
  outputSchema?: JsonSchema;
  annotations?: Record<string, unknown>;
  needsApproval?: boolean;
  problems?: ToolProblem[];
}

/** A content part of a tool result. */
export interface ContentPart {
  type: string;
  text?: string;
  data?: string;
  mimeType?: string;
  uri?: string;
}

/** `POST /api/v1/tools/{name}/invoke`. */
export interface InvokeResult {
  name: string;
  callId: string;
  content: string;
  isError: boolean;
  code?: string;
  structured?: unknown;
  parts?: ContentPart[];
  truncatedBytes?: number;
}

/** A call in `/api/v1/live-calls` and the `call` events of its stream. */
export interface LiveCall {
  callId: string;
  tool: string;
  user?: string;
  caller?: string;
  status: 'running' | 'ok' | 'error';
  code?: string;
  startedAt: number;
  durationMs?: number;
  arguments: string;
  content?: string;
}

/** A `progress` event of `/api/v1/live-calls/events`. */
export interface LiveProgress {
  callId: string;
  tool: string;
  progress: number;
  total?: number;
  message?: string;
}

/** A config item of `GET /api/v1/config/{type}`. */
export interface ConfigItem {
  key: string;
  value: unknown;
  revision: number;
}

/** A finding of `POST /api/v1/config/{type}/{key}/check`. */
export interface ConfigFinding {
  skipped: boolean;
  message: string;
}

/** An audit log entry. */
export interface AuditEntry {
  time: string;
  kind: string;
  caller: string;
  user: string | null;
  tool: string | null;
  callId: string | null;
  outcome: string;
  durationMs: number;
  argsBytes: number;
  args?: string;
}

/** An approval request. */
export interface Approval {
  id: string;
  runId: string;
  callId: string;
  tool: string;
  arguments: Record<string, unknown>;
  user?: string;
  principal?: string;
  time: string;
  expiresAt?: string;
  status: 'pending' | 'approved' | 'denied' | string;
  decision?: {
    by: string;
    reason?: string;
    time: string;
    timedOut?: boolean;
    arguments?: Record<string, unknown>;
  };
}

/** An event of the agent's stream (`POST /api/v1/agent`). */
export interface AgentStreamEvent {
  type: 'thought' | 'observation' | 'progress' | 'approval' | 'answer' | 'error' | string;
  content: string;
  toolName?: string;
  callId?: string;
  isError?: boolean;
  progress?: { progress: number; total?: number; message?: string };
  approval?: Approval;
}
