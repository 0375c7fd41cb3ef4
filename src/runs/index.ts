/**
 * @module toolbus/runs: approval requests and saved agent runs, in the config store (SQLite embedded,
 * NATS KV distributed), so a paused run survives a restart and resumes on any replica. Give a
 * `RunStore` to `ToolUseAgent({ runs })` (and `AgentService({ runs })` to resume orphaned runs).
 */
export { approvalId, approvalFromJson, denialText } from './approval-request.js';
export type { ApprovalDecision, ApprovalRequest, ApprovalStatus } from './approval-request.js';
export {
  MAX_RUN_EVENTS,
  MAX_RUN_EVENT_CHARS,
  messageFromJson,
  messageToJson,
  pendingApprovals,
  runFromJson,
} from './run-state.js';
export type {
  RunCall,
  RunCallResult,
  RunEvent,
  RunOwner,
  RunState,
  RunStatus,
  RunStep,
} from './run-state.js';
export {
  APPROVAL_CONFIG_TYPE,
  APPROVAL_REQUESTS_TOPIC,
  DEFAULT_RUN_LEASE_MS,
  DEFAULT_RUN_RETENTION_MS,
  RUN_CONFIG_TYPE,
  RunHandle,
  RunStore,
} from './run-store.js';
export type { DecideInput, NewApproval, RunStoreOptions } from './run-store.js';
