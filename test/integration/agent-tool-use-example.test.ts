import { test } from 'node:test';
import assert from 'node:assert/strict';
import { FunctionExecutionResultMessage } from '../../src/index.js';
import { createModelClient, main } from '../../examples/tool-use-agent.js';

test("the guide's ToolUseAgent example runs end to end on the runtime with the scripted client", async () => {
  const model = createModelClient();
  const reply = await main(model);
  assert.match(reply, /^The stock price of NVIDIA on 2025\/04\/01, was approximately \$\d+\.\d{2}\.$/);
  // The model was offered the tool, then reflected on the tool's real output (no tools the second time).
  assert.equal(model.calls.length, 2);
  assert.deepEqual(
    model.calls[0]!.tools.map((t) => t.name),
    ['get_stock_price'],
  );
  assert.equal(model.calls[1]!.tools.length, 0);
  const results = model.calls[1]!.messages.at(-1);
  assert.ok(results instanceof FunctionExecutionResultMessage);
  const [result] = results.content;
  assert.equal(result!.isError, false);
  assert.equal(result!.name, 'get_stock_price');
  const price = Number(result!.content);
  assert.ok(price >= 10 && price <= 200, `price ${price} in the tool's range`);
  assert.ok(reply.includes(`$${price.toFixed(2)}`));
});
