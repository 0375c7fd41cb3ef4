import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { z } from 'zod';
import { FunctionTool } from './function-tool.js';
import { LiveToolSet } from './live-tool-set.js';
import { ToolSet } from './tool-set.js';
import { ToolSearchIndex, searchTools } from './tool-search.js';
import { toolView } from './tool-view.js';
import { ToolbusError } from '../errors/index.js';

function tool(
  name: string,
  description: string,
  extra: { tags?: string[]; arg?: string } = {},
): FunctionTool {
  const arg = extra.arg ?? 'input';
  return new FunctionTool(() => name, {
    name,
    description,
    parameters: z.object({ [arg]: z.string().describe(`the ${arg} to use`) }),
    ...(extra.tags ? { tags: extra.tags } : {}),
  });
}

const weather = tool('get_weather', 'Current conditions for a city.', { arg: 'city' });
const forecast = tool('forecastDaily', 'Seven days ahead.', { tags: ['meteo'] });
const invoice = tool('create-invoice', 'Bill a customer for an order.', { arg: 'customer' });
const joke = tool('tell_joke', 'Tell a joke.');

describe('tool search', () => {
  test('finds tools by name words (snake, camel, kebab), description, argument names and tags', () => {
    const index = new ToolSearchIndex(() => [weather, forecast, invoice, joke]);
    assert.equal(index.search('weather')[0]!.name, 'get_weather');
    assert.equal(index.search('daily')[0]!.name, 'forecastDaily');
    assert.equal(index.search('invoice')[0]!.name, 'create-invoice');
    assert.equal(index.search('bill order')[0]!.name, 'create-invoice');
    assert.equal(index.search('city')[0]!.name, 'get_weather'); // an argument name
    assert.equal(index.search('meteo')[0]!.name, 'forecastDaily'); // a tag
    assert.equal(index.search('custom')[0]!.name, 'create-invoice'); // a prefix
    assert.equal(index.search('wheather')[0]!.name, 'get_weather'); // a typo
    assert.deepEqual(index.search('spaceship'), []);
  });

  test('hits carry the tool, its description and tags; limit and tags narrow them', () => {
    const index = new ToolSearchIndex(() => [weather, forecast, invoice, joke]);
    const [hit] = index.search('seven days', { limit: 1 });
    assert.equal(hit!.tool, forecast);
    assert.deepEqual(hit!.tags, ['meteo']);
    assert.equal(hit!.description, 'Seven days ahead.');
    assert.equal(index.search('a', { limit: 2 }).length <= 2, true);
    assert.deepEqual(
      index.search('weather days', { tags: ['meteo'] }).map((h) => h.name),
      ['forecastDaily'],
    );
  });

  test('an empty query or a bad limit is a usage error saying what is expected', () => {
    const index = new ToolSearchIndex(() => [weather]);
    assert.throws(
      () => index.search('  '),
      (e: unknown) => e instanceof ToolbusError && e.code === 'usage' && /needs a query/.test(e.message),
    );
    assert.throws(() => index.search('x', { limit: 0 }), /positive integer/);
    assert.throws(() => index.search('x', { limit: 1.5 }), /positive integer/);
  });

  test('a LiveToolSet search follows replace: new tools found, removed ones gone, replaced ones re-indexed', () => {
    const live = new LiveToolSet([weather, joke]);
    assert.deepEqual(live.search('invoice'), []);
    live.replace([weather, invoice]);
    assert.equal(live.search('invoice')[0]!.tool, invoice);
    assert.deepEqual(live.search('joke'), []);
    const renamed = tool('get_weather', 'Rain and snow reports.', { arg: 'place' });
    live.replace([renamed, invoice]);
    assert.equal(live.search('snow')[0]!.tool, renamed);
    assert.deepEqual(live.search('conditions'), []);
  });

  test('searchTools indexes a provider without its own search, and views search within themselves', () => {
    const set = new ToolSet([weather, forecast, invoice, joke]);
    assert.equal(searchTools(set, 'joke')[0]!.name, 'tell_joke');
    const live = new LiveToolSet([weather, forecast, invoice, joke]);
    const meteo = toolView(live, { accepts: (t) => t.tags?.includes('meteo') === true });
    assert.deepEqual(
      searchTools(meteo, 'weather days').map((h) => h.name),
      ['forecastDaily'],
    );
    assert.deepEqual(searchTools(meteo, 'invoice'), []);
  });
});

describe('tool search over a large set', () => {
  test('words most tools share re-rank what the rarer words found, and the whole query fills up a short list', () => {
    const filler = Array.from({ length: 300 }, (_, i) =>
      tool(`warehouse_item_${i}`, `Look up a warehouse item, number ${i}.`),
    );
    const index = new ToolSearchIndex(() => [...filler, weather]);
    assert.deepEqual(
      index.search('warehouse item 42', { limit: 3 }).map((h) => h.name),
      ['warehouse_item_42', 'warehouse_item_0', 'warehouse_item_1'],
    );
    assert.equal(index.search('weather item', { limit: 1 })[0]!.name, 'get_weather');
  });
});

describe('tool views', () => {
  test('list, get and call only the accepted tools; the list is kept until the base changes', async () => {
    const live = new LiveToolSet([weather, forecast, invoice, joke]);
    const view = toolView(live, { accepts: (t) => t.name !== 'create-invoice' });
    const first = view.list();
    assert.deepEqual(
      first.map((t) => t.name),
      ['get_weather', 'forecastDaily', 'tell_joke'],
    );
    assert.equal(view.list(), first, 'the same array until the base changes');
    assert.equal(view.get('create-invoice'), undefined);
    const hidden = await view.call('create-invoice', { customer: 'x' });
    assert.equal(hidden.error?.code, 'unknown-tool');
    // Named as unknown, and the list offered is the view's only.
    assert.match(hidden.content, /available tools: 'get_weather', 'forecastDaily', 'tell_joke'$/);
    assert.equal((await view.call('tell_joke', { input: 'x' })).content, 'tell_joke');
    live.replace([weather, invoice]);
    assert.notEqual(view.list(), first);
    assert.deepEqual(
      view.list().map((t) => t.name),
      ['get_weather'],
    );
  });
});
