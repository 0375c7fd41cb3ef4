/**
 * @module Benchmark: `ToolSet.call` on a trivial FunctionTool against a direct call with JSON.parse and
 * JSON.stringify, side by side in one run. Target: at most 3× the direct path.
 */
import { z } from 'zod';
import { FunctionTool, ToolSet } from '../src/index.js';
import { measure, type BenchTable } from './harness.js';

export default async function (): Promise<BenchTable[]> {
  const add = async ({ a, b }: { a: number; b: number }): Promise<{ sum: number }> => ({ sum: a + b });
  const tool = new FunctionTool(add, {
    name: 'add',
    description: 'Adds two numbers.',
    parameters: z.object({ a: z.number().describe('First'), b: z.number().describe('Second') }),
  });
  const set = new ToolSet([tool]);
  const args = '{"a": 1, "b": 2}';
  const options = { iterations: 100_000, maxMs: 4_000, warmup: 2_000 };

  const direct = (): Promise<string> =>
    add(JSON.parse(args) as { a: number; b: number }).then((value) => JSON.stringify(value));
  const viaSet = (): Promise<unknown> => set.call('add', args);

  // Alternate the two, twice, so neither gets all the warm (or cold) periods of a noisy machine.
  const rows = [
    await measure('direct: JSON.parse + fn + JSON.stringify', direct, options),
    await measure('ToolSet.call (zod FunctionTool)', viaSet, options),
  ];
  const again = [
    await measure('direct (2nd run)', direct, options),
    await measure('ToolSet.call (2nd run)', viaSet, options),
  ];
  const ratio = (again[0]!.opsPerSec / again[1]!.opsPerSec + rows[0]!.opsPerSec / rows[1]!.opsPerSec) / 2;
  return [
    {
      title: 'ToolSet.call vs a direct call (sequential)',
      baseline: 'direct: JSON.parse + fn + JSON.stringify',
      rows: [...rows, { ...again[1]!, name: 'ToolSet.call (2nd run)' }],
      notes: [
        `ToolSet.call costs ${ratio.toFixed(2)}× the direct path (mean of two alternating runs; target ≤ 3×).`,
        `direct (2nd run): ${Math.round(again[0]!.opsPerSec).toLocaleString('en-US')} ops/s`,
      ],
    },
  ];
}
