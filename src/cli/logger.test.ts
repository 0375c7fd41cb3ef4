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
  const logger = createCliLogger({ stream: json.stream });
  logger.info({ event: 'start', gateway: 'http://x' }, 'started');
  await logger.flush();
  const line = JSON.parse(json.text().trim()) as Record<string, unknown>;
  assert.equal(line.event, 'start');
  assert.equal(line.msg, 'started');
  assert.equal(line.level, 30);

  const pretty = capture();
  const readable = createCliLogger({ stream: pretty.stream, pretty: true });
  readable.warn({ event: 'bus.disconnected' }, 'lost NATS');
  await readable.flush();
  assert.match(pretty.text(), /WARN.*lost NATS/);
  assert.doesNotMatch(pretty.text(), /^\{/);
});

test('lines logged while pino loads keep their order and the time they were logged; lines below the level are dropped', async () => {
  const out = capture();
  const logger = createCliLogger({ stream: out.stream, level: 'warn' });
  const before = Date.now();
  logger.warn({ event: 'one' }, 'first');
  logger.info({ event: 'quiet' }, 'below the level');
  logger.error({ event: 'two' }, 'second');
  await new Promise((resolve) => setTimeout(resolve, 30));
  logger.warn({ event: 'three' }, 'third');
  await logger.flush();
  const lines = out
    .text()
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as { event: string; level: number; time: number });
  assert.deepEqual(
    lines.map((l) => [l.event, l.level]),
    [
      ['one', 40],
      ['two', 50],
      ['three', 40],
    ],
  );
  // The queued lines carry the time of the call, not of their replay.
  assert.ok(lines[0]!.time >= before && lines[0]!.time < lines[2]!.time - 20, JSON.stringify(lines));
});

test('a held logger writes nothing until load(), then every line in order; flush() loads it too', async () => {
  const out = capture();
  const logger = createCliLogger({ stream: out.stream, hold: true });
  logger.info({ event: 'start' }, 'started');
  logger.warn({ event: 'later' }, 'then this');
  await new Promise((resolve) => setTimeout(resolve, 50));
  assert.equal(out.text(), '', 'held until load()');
  await logger.load();
  assert.deepEqual(
    out
      .text()
      .trim()
      .split('\n')
      .map((l) => (JSON.parse(l) as { event: string }).event),
    ['start', 'later'],
  );

  const other = capture();
  const stopping = createCliLogger({ stream: other.stream, hold: true });
  stopping.info({ event: 'stop' }, 'stopping');
  await stopping.flush();
  assert.match(other.text(), /"event":"stop"/);
});

test('a silent logger writes nothing, at any level', async () => {
  const out = capture();
  const logger = createCliLogger({ stream: out.stream, level: 'silent' });
  logger.fatal({ event: 'x' }, 'nothing');
  await logger.flush();
  assert.equal(out.text(), '');
});

test("a module's service, given the host's hooks later, logs its failed calls", async (t) => {
  const out = capture();
  const logger = createCliLogger({ stream: out.stream });
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
  await logger.flush();
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
