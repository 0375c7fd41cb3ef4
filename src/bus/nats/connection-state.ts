/**
 * @module Whether a NATS connection is up right now, read from its status stream: shared by `NatsBus`
 * and `NatsKvConfigStore`, which both refuse work at once while the broker is gone instead of letting
 * nats.js buffer it until a reconnect that may come after the caller has given up.
 */
import type { NatsConnection, Status } from '@nats-io/transport-node';

/** What {@link ConnectionState} passes on for each status change of the connection. */
export interface ConnectionStatusEvent {
  /** The nats.js status. */
  status: Status;
  /** For a `reconnect`: how long the connection was down, in milliseconds. */
  outageMs?: number;
}

/** Follows one connection's disconnects and reconnects. */
export class ConnectionState {
  #disconnectedAt: number | undefined;

  /** Starts following `connection`; `onStatus` sees every status change after the state is updated. */
  constructor(connection: NatsConnection, onStatus?: (event: ConnectionStatusEvent) => void) {
    void this.#follow(connection, onStatus);
  }

  /** How long the connection has been down, in milliseconds; undefined while it is up. */
  get downForMs(): number | undefined {
    return this.#disconnectedAt === undefined ? undefined : Date.now() - this.#disconnectedAt;
  }

  /** `disconnected from NATS (for 1.2 s)`, for messages about work refused while down. */
  describeOutage(): string {
    return `disconnected from NATS (for ${((this.downForMs ?? 0) / 1000).toFixed(1)} s)`;
  }

  async #follow(
    connection: NatsConnection,
    onStatus: ((event: ConnectionStatusEvent) => void) | undefined,
  ): Promise<void> {
    try {
      for await (const status of connection.status()) {
        const event: ConnectionStatusEvent = { status };
        if (status.type === 'disconnect') this.#disconnectedAt ??= Date.now();
        else if (status.type === 'reconnect') {
          if (this.#disconnectedAt !== undefined) event.outageMs = Date.now() - this.#disconnectedAt;
          this.#disconnectedAt = undefined;
        }
        onStatus?.(event);
      }
    } catch {
      // The status iterator ends when the connection closes.
    }
  }
}
