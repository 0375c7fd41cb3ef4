/**
 * `needsApproval` on tools: `ToolSet.call` refuses a call that needs approval and has none, runs it
 * with `approvedBy`, asks a predicate per call (a throwing one counts as "yes"), and never asks about
 * arguments that do not validate.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { z } from 'zod';
import { FunctionTool } from './function-tool.js';
import { ToolSet } from './tool-set.js';
import { approvalNeeded, checkToolArguments, requireApproval } from './approval.js';

const pay = new FunctionTool(({ amount }) => `paid ${amount}`, {
  name: 'pay',
  description: 'Pay.',
  parameters: z.object({ amount: z.number() }),
  needsApproval: ({ amount }) => amount > 100,
});

test('a predicate decides per call; approvedBy lets a refused call run', async () => {
  const tools = new ToolSet([pay]);
  assert.equal((await tools.call('pay', '{"amount":5}')).content, 'paid 5');
  const refused = await tools.call('pay', '{"amount":500}');
  assert.equal(refused.error?.code, 'approval-required');
  assert.match(refused.content, /needs a person's approval before it runs/);
  assert.equal((await tools.call('pay', '{"amount":500}', { approvedBy: 'bob' })).content, 'paid 500');
  // Invalid arguments: no approval is asked, the call fails as it would have.
  assert.equal((await tools.call('pay', '{"amount":"lots"}')).error?.code, 'invalid-arguments');
  assert.equal(await approvalNeeded(pay, { amount: 'lots' }, { toolName: 'pay', callId: 'c' }), false);
});

test('a predicate that throws counts as needing approval; requireApproval wraps any tool; edited arguments are checked', async () => {
  const risky = new FunctionTool(() => 'ran', {
    name: 'risky',
    description: 'Risky.',
    parameters: z.object({}),
    needsApproval: () => {
      throw new Error('policy service down');
    },
  });
  assert.equal(await approvalNeeded(risky, {}, { toolName: 'risky', callId: 'c' }), true);
  const plain = new FunctionTool(({ path }) => `removed ${path}`, {
    name: 'remove',
    description: 'Remove.',
    parameters: z.object({ path: z.string() }),
  });
  const wrapped = requireApproval(plain);
  assert.deepEqual(wrapped.schema, plain.schema);
  assert.equal(
    (await new ToolSet([wrapped]).call('remove', { path: '/x' })).error?.code,
    'approval-required',
  );
  assert.equal(checkToolArguments(plain, { path: '/x' }), undefined);
  assert.match(checkToolArguments(plain, { path: 1 }) ?? '', /argument 'path' must be a string, got number/);
  assert.throws(
    () =>
      new FunctionTool(() => 1, {
        name: 'x',
        description: 'x',
        parameters: z.object({}),
        needsApproval: 'yes' as unknown as boolean,
      }),
    { code: 'usage' },
  );
});
