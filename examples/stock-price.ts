/**
 * @module The Saptiva-Agents guide's stock price tool, in toolbus: the schema a model sees, a direct
 * `runJson`, and a `ToolSet` call that fails politely.
 *
 * Run: npx tsx examples/stock-price.ts
 */
import { z } from 'zod';
import { CancellationToken, FunctionTool, ToolSet } from '../src/index.js';

// Returns a random stock price for demonstration purposes (as in the guide).
const getStockPrice = new FunctionTool(
  async function get_stock_price(_args: { ticker: string; date: string }) {
    return 10 + Math.random() * 190;
  },
  {
    description: 'Get the stock price.',
    parameters: z.object({
      ticker: z.string().describe('ticker'),
      date: z.string().describe('Date in YYYY/MM/DD'),
    }),
  },
);

console.log('schema:', JSON.stringify(getStockPrice.schema, null, 2));
console.log('openai-strict:', JSON.stringify(getStockPrice.schemaFor('openai-strict').parameters));

// Run the tool, as the guide does, with a cancellation token.
const cancellationToken = new CancellationToken();
const result = await getStockPrice.runJson({ ticker: 'AAPL', date: '2021/01/01' }, cancellationToken);
console.log('runJson:', getStockPrice.returnValueAsString(result));

// A ToolSet never throws for a bad call: it returns a result written for the model.
const tools = new ToolSet([getStockPrice]);
const ok = await tools.call('get_stock_price', '{"ticker": "AAPL", "date": "2021/01/01"}');
console.log('ToolSet.call:', ok.content);
const bad = await tools.call('get_stock_price', '{"ticker": 42}');
console.log(`ToolSet.call (bad arguments): isError=${bad.isError} code=${bad.error?.code}\n  ${bad.content}`);
