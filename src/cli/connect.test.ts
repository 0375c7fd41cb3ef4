import { createServer, type Socket } from 'node:net';
import { PassThrough } from 'node:stream';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ToolbusError } from '../errors/index.js';
import type { CliIO } from './command.js';
import { openBus } from './connect.js';

test('openBus: Ctrl-C while a NATS server does not answer cancels at once (not after the connect timeout)', async (t) => {
  // Accepts connections and never speaks: the NATS client waits for INFO until its timeout.
  const sockets = new Set<Socket>();
  const controller = new AbortController();
  const silent = createServer((socket) => {
    sockets.add(socket);
    controller.abort(new Error('received SIGINT'));
  });
  await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
  t.after(() => {
    for (const socket of sockets) socket.destroy();
    silent.close();
  });
  const { port } = silent.address() as { port: number };
  const io: CliIO = {
    stdin: new PassThrough(),
    stdout: new PassThrough(),
    stderr: new PassThrough(),
    env: {},
    cwd: process.cwd(),
    signal: controller.signal,
  };
  await assert.rejects(openBus({ nats: `nats://127.0.0.1:${port}` }, io), (e: unknown) => {
    assert.ok(e instanceof ToolbusError, String(e));
    assert.equal(e.code, 'cancelled', e.message);
    return true;
  });
});
