/**
 * @module Agent overhead: one ToolUseAgent step (scripted model asking for 8 parallel trivial tool
 * calls, then answering) against the same 8 calls made directly with Promise.all. Target: the agent adds
 * at most 1 ms beyond the tools' own time.
 */
import { z } from 'zod';
import { ScriptedChatCompletionClient } from '../src/models/index.js';
import { FunctionTool, ToolSet } from '../src/tools/index.js';
import { ToolUseAgent } from '../src/agents/index.js';
import type { FunctionCall } from '../src/models/index.js';
import { measure, type BenchTable } from './harness.js';

const CALLS = 8;

export default async function (): Promise<BenchTable[]> {
  const add = new FunctionTool(({ a, b }) => a + b, {
    name: 'add',
    description: 'Add two numbers.',
    parameters: z.object({ a: z.number(), b: z.number() }),
  });
  const tools = new ToolSet([add]);
  const calls: FunctionCall[] = Array.from({ length: CALLS }, (_, i) => ({
    id: `call_${i}`,
    name: 'add',
    arguments: `{"a": ${i}, "b": 1}`,
  }));
  const args = calls.map((c) => JSON.parse(c.arguments) as Record<string, unknown>);
  const options = { iterations: 5_000, maxMs: 4_000, warmup: 300 };

  const direct = await measure(
    `${CALLS} × tool.runJson, Promise.all`,
    () => Promise.all(args.map((a) => add.runJson(a))),
    options,
  );
  const viaToolSet = await measure(
    `${CALLS} × ToolSet.call, Promise.all (baseline)`,
    () => Promise.all(args.map((a, i) => tools.call('add', a, { callId: `call_${i}` }))),
    options,
  );
  const scriptOnly = await measure(
    'scripted model alone: 2 create() calls',
    async () => {
      const model = new ScriptedChatCompletionClient([calls, 'done']);
      await model.create([]);
      await model.create([]);
    },
    options,
  );
  const agentStep = await measure(
    `ToolUseAgent.run: 1 step, ${CALLS} parallel calls, then the answer`,
    () =>
      new ToolUseAgent({ model: new ScriptedChatCompletionClient([calls, 'done']), tools }).run('sum them'),
    options,
  );
  const overheadUs = agentStep.p50Us - viaToolSet.p50Us;
  const overheadBeyondModelUs = overheadUs - scriptOnly.p50Us;
  return [
    {
      title: `Agent step overhead (${CALLS} parallel trivial tool calls)`,
      baseline: viaToolSet.name,
      rows: [direct, viaToolSet, scriptOnly, agentStep],
      notes: [
        `Agent overhead beyond the tools' own time (p50 agent − p50 baseline): ${(overheadUs / 1000).toFixed(3)} ms ` +
          `(target ≤ 1 ms: ${overheadUs <= 1000 ? 'met' : 'NOT met'}); of which the scripted model itself: ` +
          `${(scriptOnly.p50Us / 1000).toFixed(3)} ms, the agent loop: ${(overheadBeyondModelUs / 1000).toFixed(3)} ms.`,
      ],
    },
  ];
}
