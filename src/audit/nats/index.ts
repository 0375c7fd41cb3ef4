/**
 * @module audit/nats: the distributed audit log on a JetStream stream (`@nats-io/jetstream`). A leaf of
 * the NATS family: only cli/ loads it, with `--nats`.
 */
export {
  JetStreamAuditLog,
  DEFAULT_AUDIT_STREAM,
  DEFAULT_AUDIT_SUBJECT_PREFIX,
} from './jetstream-audit-log.js';
export type { JetStreamAuditLogOptions, JetStreamAuditLogConnectOptions } from './jetstream-audit-log.js';
