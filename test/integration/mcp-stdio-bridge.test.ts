/**
 * `serveMcpStdio` in process, on streams the test holds: a message whose UTF-8 is split mid-character
 * across chunks arrives whole, a line over the 10 MiB limit gets -32700 and the server keeps serving,
 * and stdin failing (an error, or a close without an end) reaches `onError` and closes the connection
 * instead of crashing the process or leaving it open.
 */
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import { PassThrough } from 'node:stream';
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { z } from 'zod';
import { serveMcpStdio } from '../../src/adapters/mcp/index.js';
import { FunctionTool, LiveToolSet } from '../../src/tools/index.js';
import { waitFor } from '../fixtures/mcp-spawn.js';

type Message = Record<string, unknown>;

/** The tools, with a way to tell when the bridge's server stopped following them (it closed). */
function echoTools(): { tools: LiveToolSet; followers: () => number } {
  const tools = new LiveToolSet([
    new FunctionTool(({ text }) => text, {
      name: 'echo',
      description: 'Answers its text',
      parameters: z.object({ text: z.string() }),
    }),
  ]);
  let followers = 0;
  const onChange = tools.onChange.bind(tools);
  tools.onChange = (listener) => {
    followers++;
    const off = onChange(listener);
    return () => {
      followers--;
      off();
    };
  };
  return { tools, followers: () => followers };
}

function serve(t: { after: (fn: () => Promise<void>) => void }) {
  const { tools, followers } = echoTools();
  const stdin = new PassThrough();
  const stdout = new PassThrough();
  const errors: Error[] = [];
  const bridge = serveMcpStdio(tools, { stdin, stdout, onError: (error) => void errors.push(error) });
  t.after(() => bridge.close());
  const replies: Message[] = [];
  createInterface({ input: stdout }).on('line', (line) => replies.push(JSON.parse(line) as Message));
  const reply = async (count: number): Promise<Message> => {
    await waitFor(() => replies.length >= count, 10_000, 10);
    const answer = replies[count - 1];
    assert.ok(answer, `no reply ${count}; got ${JSON.stringify(replies)}`);
    return answer;
  };
  const send = (message: Message): boolean => stdin.write(`${JSON.stringify(message)}\n`);
  return { stdin, errors, reply, send, followers };
}

const INITIALIZE = {
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
};

async function initialize(bridge: ReturnType<typeof serve>): Promise<void> {
  bridge.send(INITIALIZE);
  assert.ok((await bridge.reply(1))['result']);
  bridge.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
}

describe('serveMcpStdio', { timeout: 60_000 }, () => {
  test('a message whose UTF-8 is split mid-character across chunks arrives whole', async (t) => {
    const bridge = serve(t);
    await initialize(bridge);
    const text = 'héllo 😀 wörld';
    const line = Buffer.from(
      `${JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'echo', arguments: { text } } })}\n`,
    );
    // Cut inside the emoji's four bytes, and inside the two of 'é'.
    const emoji = line.indexOf(Buffer.from('😀'));
    const e = line.indexOf(Buffer.from('é'));
    bridge.stdin.write(line.subarray(0, e + 1));
    await new Promise((r) => setImmediate(r));
    bridge.stdin.write(line.subarray(e + 1, emoji + 2));
    await new Promise((r) => setImmediate(r));
    bridge.stdin.write(line.subarray(emoji + 2));
    const answer = await bridge.reply(2);
    assert.deepEqual((answer['result'] as { content: unknown }).content, [{ type: 'text', text }]);
  });

  test('a line over 10 MiB gets -32700 and the server keeps serving', async (t) => {
    const bridge = serve(t);
    bridge.stdin.write('x'.repeat(10 * 1024 * 1024 + 1));
    const tooLong = await bridge.reply(1);
    assert.equal(tooLong['id'], null);
    const error = tooLong['error'] as { code: number; message: string };
    assert.equal(error.code, -32700);
    assert.match(error.message, /a line longer than 10485760 bytes/);
    // The rest of that line is skipped; the next one is served.
    bridge.stdin.write('yyy\n');
    bridge.send({ ...INITIALIZE, id: 2 });
    assert.ok((await bridge.reply(2))['result']);
  });

  test('a stdin error reaches onError and closes the connection; the process goes on', async (t) => {
    const bridge = serve(t);
    await initialize(bridge);
    assert.equal(bridge.followers(), 1);
    bridge.stdin.destroy(new Error('stdin broke'));
    assert.ok(
      await waitFor(() => bridge.errors.some((e) => e.message === 'stdin broke'), 5000, 10),
      `onError got ${bridge.errors.map((e) => e.message).join('; ') || 'nothing'}`,
    );
    assert.ok(await waitFor(() => bridge.followers() === 0, 5000, 10), 'the connection stayed open');
  });

  test('a stdin that closes without an end closes the connection', async (t) => {
    const bridge = serve(t);
    await initialize(bridge);
    bridge.stdin.destroy();
    await once(bridge.stdin, 'close');
    assert.ok(await waitFor(() => bridge.followers() === 0, 5000, 10), 'the connection stayed open');
    assert.deepEqual(bridge.errors, []);
  });
});
