/**
 * @module Approval requests: a tool call waiting for a person's decision, as stored (`approval/<id>`),
 * published on the bus (`approval-requests`) and served by the gateway (`/api/v1/approvals`).
 */
import { createHash } from 'node:crypto';
import type { JsonObject, JsonValue } from '../schema/index.js';

/** Where an approval stands. */
export type ApprovalStatus = 'pending' | 'approved' | 'denied';

/** A decision on an approval request. */
export interface ApprovalDecision {
  /** The principal that decided, or `toolbus` when the request timed out. */
  by: string;
  /** Why, as the decider put it. */
  reason?: string;
  /** The arguments the call runs with instead of the model's (an approver's edit, checked against the schema). */
  arguments?: Record<string, unknown>;
  /** ISO time of the decision. */
  time: string;
  /** True when nobody decided before `expiresAt`. */
  timedOut?: boolean;
}

/** A tool call that waits for a person's approval. */
export interface ApprovalRequest {
  /** `apr-` and 24 hex digits, derived from the run and the call: a resumed run finds its own request. */
  id: string;
  runId: string;
  /** The model's id of the call in the run. */
  callId: string;
  tool: string;
  /** The arguments the model gave. */
  arguments: Record<string, unknown>;
  /** The end user the run is for. */
  user?: string;
  /** The principal that started the run. */
  principal?: string;
  /** ISO time the request was made. */
  time: string;
  /** ISO time after which it is denied, when the run set a timeout. */
  expiresAt?: string;
  status: ApprovalStatus;
  decision?: ApprovalDecision;
}

/** The id of the approval request for call `callId` of run `runId`: the same on every replica and restart. */
export function approvalId(runId: string, callId: string): string {
  return `apr-${createHash('sha256').update(`${runId}\u0000${callId}`).digest('hex').slice(0, 24)}`;
}

/** The request as a JSON value for the store and the wire. */
export function approvalToJson(request: ApprovalRequest): JsonObject {
  return JSON.parse(JSON.stringify(request)) as JsonObject;
}

/**
 * Reads a stored approval. Undefined for a value that is not one (an item written by hand): it is
 * listed nowhere rather than breaking the list.
 */
export function approvalFromJson(value: JsonValue | undefined): ApprovalRequest | undefined {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return undefined;
  const v = value as Record<string, unknown>;
  const strings = ['id', 'runId', 'callId', 'tool', 'time'] as const;
  if (!strings.every((k) => typeof v[k] === 'string')) return undefined;
  if (v['status'] !== 'pending' && v['status'] !== 'approved' && v['status'] !== 'denied') return undefined;
  const args = v['arguments'];
  if (args === null || typeof args !== 'object' || Array.isArray(args)) return undefined;
  return value as unknown as ApprovalRequest;
}

/** The text a model gets for a denied call: `denied by NAME: reason`. */
export function denialText(decision: ApprovalDecision): string {
  return `denied by ${decision.by}${decision.reason ? `: ${decision.reason}` : ''}`;
}
