/**
 * @module The guard on nats.js internals (`src/bus/nats/nats-internals.ts`) against a real nats-server:
 * the installed nats.js must be a checked version, the shortcuts must agree with the client's public API
 * on it, and the public-API path must work on its own (headers, tool calls, no-responders).
 */
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import {
  connect,
  MsgHdrsImpl,
  type Msg,
  type NatsConnection,
  type PublishOptions,
} from '@nats-io/transport-node';
import { NatsBus, type NatsBusOptions } from '../../src/bus/nats/index.js';
import { FAST_HEADERS, PUBLIC_HEADERS } from '../../src/bus/nats/headers.js';
import {
  CHECKED_NATS_CORE_VERSIONS,
  NATS_INTERNALS,
  NATS_PUBLIC_API_ONLY,
  rawHeaderBlock,
  type InternalNatsBusOptions,
} from '../../src/bus/nats/nats-internals.js';
import type { BusMessage } from '../../src/bus/index.js';
import { DynamicToolService, ToolServiceClient } from '../../src/services/index.js';
import type { ToolbusError } from '../../src/errors/index.js';
import { startNatsServer, type NatsServer } from '../support/nats-server.js';

/** Waits until `check()` is true, polling; fails after `ms`. */
async function until(check: () => boolean, ms = 5_000, what = 'condition'): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** Properties with the awkward parts: UTF-8, a colon and spaces inside a value, a long value. */
const PROPERTIES = { id: 'c-1', deadline: '1790000000000', reason: ' café: ☕ ', long: 'x'.repeat(300) };
/** What a receiver sees: NATS clients trim header values. */
const RECEIVED = { ...PROPERTIES, reason: 'café: ☕' };

/** Records the headers object of every publish made through `connection`. */
function spyOnHeaders(connection: NatsConnection): unknown[] {
  const seen: unknown[] = [];
  const publish = connection.publish.bind(connection);
  connection.publish = (subject: string, data?: Uint8Array | string, options?: PublishOptions) => {
    seen.push(options?.headers);
    publish(subject, data, options);
  };
  return seen;
}

test('the installed nats.js is a checked version, so buses use the header shortcuts', () => {
  // Fails after an upgrade of @nats-io/transport-node until the new version is checked: read MsgImpl
  // (core/src/msg.ts) and ProtocolHandler.publish (core/src/protocol.ts) at the new tag, then add the
  // version to CHECKED_NATS_CORE_VERSIONS in src/bus/nats/nats-internals.ts.
  assert.ok(
    NATS_INTERNALS.enabled,
    `NatsBus is taking its public-API fallback: ${NATS_INTERNALS.reason}. Check the nats.js internals ` +
      `for this version (see src/bus/nats/nats-internals.ts) and add it to CHECKED_NATS_CORE_VERSIONS.`,
  );
  assert.ok(CHECKED_NATS_CORE_VERSIONS.includes(NATS_INTERNALS.natsCoreVersion ?? ''));
  assert.match(NATS_INTERNALS.transportNodeVersion ?? '', /^\d+\.\d+\.\d+/);
});

describe('nats.js internals', () => {
  let server: NatsServer;
  let nc: NatsConnection;
  before(async () => {
    server = await startNatsServer({ jetstream: false });
    nc = await connect({ servers: server.url });
  });
  after(async () => {
    await nc.close();
    await server.stop();
  });

  /** Publishes through `bus` and returns the message as the raw client receives it. */
  async function receiveRaw(bus: NatsBus, properties?: Record<string, string>): Promise<Msg> {
    const got: Msg[] = [];
    const subscription = nc.subscribe('raw.check', { callback: (_error, msg) => void got.push(msg) });
    await nc.flush();
    await bus.publish('raw.check', 'body', properties);
    await until(() => got.length === 1, 5_000, 'the raw message');
    subscription.unsubscribe();
    return got[0]!;
  }

  test('on the installed version the shortcuts write and read what the public API does', async (t) => {
    const bus = new NatsBus(nc);
    t.after(() => bus.close());
    const published = spyOnHeaders(nc);
    t.after(() => delete (nc as Partial<NatsConnection>).publish);

    const msg = await receiveRaw(bus, PROPERTIES);
    // The bus published a pre-encoded block, not the client's header object...
    assert.ok(published[0] !== undefined && !(published[0] instanceof MsgHdrsImpl));
    // ...which the client's own parser reads as the properties.
    assert.deepEqual({ ...PUBLIC_HEADERS.decode(msg) }, RECEIVED);
    // The private fields are where the shortcut expects them, and reading them agrees with msg.headers.
    const block = rawHeaderBlock(msg);
    assert.ok(block instanceof Uint8Array, 'MsgImpl still keeps _msg.hdr and _rdata');
    assert.equal(new TextDecoder().decode(msg.data), 'body');
    assert.deepEqual({ ...FAST_HEADERS.decode(msg) }, RECEIVED);

    const bare = await receiveRaw(bus);
    assert.equal(rawHeaderBlock(bare), null);
    assert.equal(bare.headers, undefined);
    assert.deepEqual({ ...FAST_HEADERS.decode(bare) }, {});
  });

  test('with the public API only, properties round-trip both ways and the size check still counts headers', async (t) => {
    const options: NatsBusOptions & InternalNatsBusOptions = { [NATS_PUBLIC_API_ONLY]: true };
    const publicBus = new NatsBus(nc, options);
    const fastBus = await NatsBus.connect({ servers: server.url });
    t.after(() => Promise.all([publicBus.close(), fastBus.close()]));
    const published = spyOnHeaders(nc);
    t.after(() => delete (nc as Partial<NatsConnection>).publish);

    const msg = await receiveRaw(publicBus, PROPERTIES);
    assert.ok(published[0] instanceof MsgHdrsImpl, 'the public bus hands the client its own header object');
    assert.deepEqual({ ...PUBLIC_HEADERS.decode(msg) }, RECEIVED);

    // public → fast and fast → public.
    const atPublic: BusMessage[] = [];
    const atFast: BusMessage[] = [];
    await publicBus.subscribe('notify:tg:mixed', (m) => void atPublic.push(m));
    await fastBus.subscribe('notify:tg:mixed', (m) => void atFast.push(m));
    await publicBus.publish('notify:tg:mixed', 'from public', PROPERTIES);
    await fastBus.publish('notify:tg:mixed', 'from fast', PROPERTIES);
    await publicBus.publish('notify:tg:mixed', 'bare');
    await until(() => atPublic.length === 3 && atFast.length === 3, 5_000, 'six deliveries');
    for (const got of [atPublic, atFast]) {
      // Two connections: the order between them is not defined.
      const seen = got.map((m) => [new TextDecoder().decode(m.body), { ...m.properties }] as const);
      assert.deepEqual(
        seen.sort(([a], [b]) => a.localeCompare(b)),
        [
          ['bare', {}],
          ['from fast', RECEIVED],
          ['from public', RECEIVED],
        ],
      );
    }

    // The same size check as the fast path: the header block counts against max_payload.
    const max = nc.info!.max_payload;
    const properties = { id: '1' }; // `NATS/1.0\r\nid: 1\r\n\r\n`: 19 bytes
    await assert.rejects(publicBus.publish('big', new Uint8Array(max - 10), properties), {
      code: 'too-large',
      message: /topic 'big'.*max_payload/,
    });
    await assert.rejects(publicBus.publish('ok', 'x', { 'bad key': 'v' }), {
      code: 'invalid-request',
      message: /property 'bad key'/,
    });
  });

  test('with the public API only, a tool call completes and no-responders still reports unavailable', async (t) => {
    const options = { servers: server.url, [NATS_PUBLIC_API_ONLY]: true };
    const serviceBus = await NatsBus.connect(options);
    const clientBus = await NatsBus.connect(options);
    t.after(() => Promise.all([serviceBus.close(), clientBus.close()]));
    const service = new DynamicToolService({
      bus: serviceBus,
      topic: 'internals',
      invoke: (user, config, args, ctx) =>
        JSON.stringify({ user, config, args, traceparent: ctx.traceparent ?? null }),
    });
    await service.start();
    t.after(() => service.stop());
    const client = new ToolServiceClient(clientBus, {
      requestQueue: 'non-persistent://tg/request/internals',
      responseQueue: 'non-persistent://tg/response/internals',
      timeoutMs: 5_000,
    });
    t.after(() => client.close());
    const traceparent = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';
    const reply = await client.call(
      'alice',
      { style: 'pun' },
      { topic: 'cats' },
      { properties: { traceparent } },
    );
    assert.deepEqual(JSON.parse(reply), {
      user: 'alice',
      config: { style: 'pun' },
      args: { topic: 'cats' },
      traceparent,
    });

    const errors: ToolbusError[] = [];
    await clientBus.publish(
      'request:tg:nobody',
      '{}',
      { id: '1' },
      { onUnavailable: (e) => void errors.push(e) },
    );
    await until(() => errors.length === 1, 5_000, 'unavailable');
    assert.equal(errors[0]?.code, 'unavailable');
    assert.match(errors[0]?.message ?? '', /topic 'request:tg:nobody'/);

    const nobody = new ToolServiceClient(clientBus, {
      requestQueue: 'non-persistent://tg/request/nobody-here',
      responseQueue: 'non-persistent://tg/response/nobody-here',
      timeoutMs: 5_000,
    });
    t.after(() => nobody.close());
    await assert.rejects(nobody.call('alice', {}, {}), { code: 'unavailable' });
  });
});
