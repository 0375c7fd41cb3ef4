/**
 * @module `onStart`: observers told that a call starts, without being awaited. A hook that throws changes
 * nothing, a call vetoed by `onCall` or that never gets a slot still ends with `onResult`, and a call
 * that fails before it starts (an unknown tool) is not started at all.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { z } from 'zod';
import { FunctionTool } from './function-tool.js';
import { ToolSet, type ToolCallEvent } from './tool-set.js';

const echo = new FunctionTool(({ text }: { text: string }) => `echo: ${text}`, {
  name: 'echo',
  description: 'Echoes',
  parameters: z.object({ text: z.string() }),
});

test('onStart hears each call that starts, with its parsed arguments; a throwing hook changes nothing', async () => {
  const started: ToolCallEvent[] = [];
  const ended: string[] = [];
  const tools = new ToolSet([echo], {
    hooks: {
      onStart: [
        () => {
          throw new Error('a broken observer');
        },
        (event) => void started.push(event),
      ],
      onResult: (event) => void ended.push(`${event.callId}:${event.result.isError}`),
    },
  });
  const result = await tools.call('echo', '{"text":"hi"}', { callId: 'c1', user: 'alice' });
  assert.equal(result.content, 'echo: hi');
  assert.equal(started.length, 1);
  assert.deepEqual([started[0]!.name, started[0]!.callId, started[0]!.user], ['echo', 'c1', 'alice']);
  assert.deepEqual(started[0]!.arguments, { text: 'hi' });
  // An unknown tool never starts; its result is still reported.
  await tools.call('nope', {}, { callId: 'c2' });
  assert.equal(started.length, 1);
  assert.deepEqual(ended, ['c1:false', 'c2:true']);
});

test('a call vetoed by onCall was started, and ends with its veto as the result', async () => {
  const events: string[] = [];
  const tools = new ToolSet([echo], {
    hooks: {
      onStart: (event) => void events.push(`start ${event.callId}`),
      onCall: () => {
        throw new Error('not today');
      },
      onResult: (event) => void events.push(`end ${event.callId} ${event.result.content}`),
    },
  });
  const result = await tools.call('echo', { text: 'x' }, { callId: 'v1' });
  assert.equal(result.isError, true);
  assert.deepEqual(events, ['start v1', `end v1 ${result.content}`]);
  assert.match(result.content, /not today/);
});
