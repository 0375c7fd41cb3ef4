import { test } from 'node:test';
import assert from 'node:assert/strict';
import { PassThrough } from 'node:stream';
import { DynamicToolService, MemoryBus, ToolServiceClient } from '../index.js';
import { createCliLogger, logServiceErrors } from './logger.js';

function capture(): { stream: PassThrough; text: () => string } {
  const stream = new PassThrough();
  let text = '';
  stream.on('data', (chunk: Buffer) => (text += chunk.toString()));
  return { stream, text: () => text };
}

test('JSON lines by default on a stream that is no terminal; readable lines when pretty', async () => {
  const json = capture();
  (await createCliLogger({ stream: json.stream })).info({ event: 'start', gateway: 'http://x' }, 'started');
  const line = JSON.parse(json.text().trim()) as Record<string, unknown>;
  assert.equal(line.event, 'start');
  assert.equal(line.msg, 'started');
  assert.equal(line.level, 30);

  const pretty = capture();
  (await createCliLogger({ stream: pretty.stream, pretty: true })).warn(
    { event: 'bus.disconnected' },
    'lost NATS',
  );
  assert.match(pretty.text(), /WARN.*lost NATS/);
  assert.doesNotMatch(pretty.text(), /^\{/);
});

test("a module's service, given the host's hooks later, logs its failed calls", async (t) => {
  const out = capture();
  const logger = await createCliLogger({ stream: out.stream });
  const bus = new MemoryBus();
  const service = new DynamicToolService({
    bus,
    topic: 'boom',
    invoke: () => {
      throw new Error('the tool broke');
    },
  });
  const remove = service.addHooks(logServiceErrors(logger));
  await service.start();
  t.after(() => service.stop());
  const client = new ToolServiceClient(bus, {
    requestQueue: 'non-persistent://tg/request/boom',
    responseQueue: 'non-persistent://tg/response/boom',
  });
  t.after(() => client.close());
  await assert.rejects(client.call('alice', {}, {}));
  const failed = out
    .text()
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as Record<string, unknown>);
  assert.equal(failed.length, 1);
  assert.equal(failed[0]!.event, 'service.call-failed');
  assert.equal(failed[0]!.type, 'tool-service-error');
  assert.match(String(failed[0]!.msg), /the tool broke/);

  remove();
  await assert.rejects(client.call('alice', {}, {}));
  assert.equal(out.text().trim().split('\n').length, 1, 'removed hooks log nothing');
});
