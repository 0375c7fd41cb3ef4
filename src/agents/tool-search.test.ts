import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { z } from 'zod';
import { FunctionExecutionResultMessage, ScriptedChatCompletionClient } from '../models/index.js';
import type { CreateOptions, LLMMessage } from '../models/index.js';
import { FunctionTool, LiveToolSet, SEARCH_TOOLS_NAME, type Tool } from '../tools/index.js';
import { ReActAgent } from './react-agent.js';
import { ToolUseAgent } from './tool-use-agent.js';

/** 10,000 dull tools and one the question needs. */
function catalog(): Tool[] {
  const filler = Array.from(
    { length: 9_999 },
    (_, i) =>
      new FunctionTool(() => i, {
        name: `inventory_item_${i}`,
        description: `Look up stock of warehouse item number ${i}.`,
        parameters: z.object({ sku: z.string() }),
      }),
  );
  const rate = new FunctionTool(({ from, to }) => `1 ${from} = 0.92 ${to}`, {
    name: 'currency_exchange_rate',
    description: 'The exchange rate between two currencies.',
    parameters: z.object({ from: z.string().describe('ISO code'), to: z.string().describe('ISO code') }),
    tags: ['finance'],
  });
  return [...filler.slice(0, 5_000), rate, ...filler.slice(5_000)];
}

function lastResults(messages: readonly LLMMessage[]): FunctionExecutionResultMessage | undefined {
  return messages
    .filter((m): m is FunctionExecutionResultMessage => m instanceof FunctionExecutionResultMessage)
    .at(-1);
}

describe('deferred tool loading (toolSearch)', () => {
  test('ToolUseAgent over 10,000 tools: sees search_tools, finds the right tool, calls it, answers', async () => {
    const tools = new LiveToolSet(catalog());
    const model = new ScriptedChatCompletionClient([
      [{ id: 's1', name: SEARCH_TOOLS_NAME, arguments: '{"query": "currency exchange rate"}' }],
      (messages) => {
        const found = JSON.parse(lastResults(messages)!.content[0]!.content) as { tools: { name: string }[] };
        assert.equal(found.tools[0]!.name, 'currency_exchange_rate');
        return [{ id: 'c1', name: found.tools[0]!.name, arguments: '{"from": "USD", "to": "EUR"}' }];
      },
      'One dollar is 0.92 euros.',
    ]);
    const agent = new ToolUseAgent({ model, tools, toolSearch: { alwaysLoaded: ['inventory_item_1'] } });
    assert.equal(await agent.run('How many euros is a dollar?'), 'One dollar is 0.92 euros.');
    model.assertDone();
    const offered = model.calls.map((c) => c.tools.map((t) => t.name));
    assert.deepEqual(offered[0], [SEARCH_TOOLS_NAME, 'inventory_item_1']);
    assert.equal(offered[1]![0], SEARCH_TOOLS_NAME);
    assert.ok(offered[1]!.includes('currency_exchange_rate'));
    assert.ok(offered[1]!.length <= 2 + 8, `${offered[1]!.length} tools shown`);
    assert.equal(lastResults(model.calls[2]!.messages)!.content[0]!.content, '1 USD = 0.92 EUR');
  });

  test('a search_tools call with bad arguments or no match goes back to the model as a result it can read', async () => {
    const tools = new LiveToolSet(catalog());
    const model = new ScriptedChatCompletionClient([
      [
        { id: 's1', name: SEARCH_TOOLS_NAME, arguments: '{"query": ""}' },
        { id: 's2', name: SEARCH_TOOLS_NAME, arguments: '{"query": "spaceship"}' },
      ],
      'Nothing found.',
    ]);
    const agent = new ToolUseAgent({ model, tools, toolSearch: {} });
    assert.equal(await agent.run('?'), 'Nothing found.');
    const [bad, none] = lastResults(model.calls[1]!.messages)!.content;
    assert.equal(bad!.isError, true);
    assert.match(bad!.content, /invalid arguments: .*query/);
    assert.equal(none!.isError, false);
    assert.match(none!.content, /"tools":\[\].*No tool matched/);
    assert.deepEqual(
      model.calls[1]!.tools.map((t) => t.name),
      [SEARCH_TOOLS_NAME],
    );
  });

  test('a resumed conversation keeps what earlier searches found; minTools shows a small set whole', async () => {
    const tools = catalog();
    const small = tools.slice(0, 3);
    const model = new ScriptedChatCompletionClient(['ok']);
    const agent = new ToolUseAgent({ model, tools: small, toolSearch: { minTools: 64 } });
    await agent.run('hi');
    assert.deepEqual(
      model.calls[0]!.tools.map((t) => t.name),
      small.map((t) => t.name),
    );
  });

  test('the model gets the same tool list object at every step until the tools change', async () => {
    const offered: unknown[] = [];
    class Recording extends ScriptedChatCompletionClient {
      override create(messages: readonly LLMMessage[], options: CreateOptions = {}) {
        offered.push(options.tools);
        return super.create(messages, options);
      }
    }
    const counted = new FunctionTool(() => 'x', {
      name: 'counted',
      description: 'd',
      parameters: z.object({}),
    });
    const other = new FunctionTool(() => 'y', { name: 'other', description: 'd', parameters: z.object({}) });
    const live = new LiveToolSet([counted]);
    for (const toolSearch of [undefined, {}]) {
      offered.length = 0;
      live.replace([counted]);
      const model = new Recording([
        [{ id: 'a', name: 'counted', arguments: '{}' }],
        () => {
          live.replace([counted, other]);
          return [{ id: 'b', name: 'counted', arguments: '{}' }];
        },
        'done',
      ]);
      const agent = new ToolUseAgent({ model, tools: live, ...(toolSearch ? { toolSearch } : {}) });
      await agent.run('go');
      // Steps 1 and 2 saw one list (the replace happened during step 2's reply); step 3 a new one.
      assert.equal(offered[0], offered[1]);
      assert.notEqual(offered[1], offered[2]);
      assert.ok(Object.isFrozen(offered[0]));
    }
  });

  test('ReActAgent lists search_tools, then what it found', async () => {
    const tools = new LiveToolSet(catalog());
    const model = new ScriptedChatCompletionClient(
      [
        'Thought: search\nAction: search_tools\nArgs: {"query": "exchange rate currencies"}',
        'Thought: call\nAction: currency_exchange_rate\nArgs: {"from": "USD", "to": "EUR"}',
        'Thought: done\nFinal Answer: 0.92',
      ],
      { modelInfo: { functionCalling: false } },
    );
    const agent = new ReActAgent({ model, tools, toolSearch: {} });
    assert.equal(await agent.run('rate?'), '0.92');
    const prompt = (i: number) => String(model.calls[i]!.messages[0]!.content);
    assert.match(prompt(0), /- search_tools:/);
    assert.doesNotMatch(prompt(0), /currency_exchange_rate|inventory_item_/);
    assert.match(prompt(1), /- currency_exchange_rate:/);
    assert.match(String(model.calls[2]!.messages.at(-1)!.content), /1 USD = 0\.92 EUR/);
  });
});
