/**
 * The Saptiva preset: defaults, the key from SAPTIVA_API_KEY, model capabilities, and the wire it sends.
 */
import { describe, test } from 'node:test';
import type { TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { z } from 'zod';
import { FunctionTool } from '../../src/tools/index.js';
import { ToolbusError } from '../../src/errors/index.js';
import { SAPTIVA_MODEL_INFO, SaptivaModel, UserMessage } from '../../src/models/index.js';
import { saptivaClient } from '../../src/models/openai/index.js';
import { chatCompletion, startFakeOpenAIServer } from '../fixtures/fake-openai-server.js';

function withEnv(t: TestContext, value: string | undefined): void {
  const saved = process.env.SAPTIVA_API_KEY;
  if (value === undefined) delete process.env.SAPTIVA_API_KEY;
  else process.env.SAPTIVA_API_KEY = value;
  t.after(() => {
    if (saved === undefined) delete process.env.SAPTIVA_API_KEY;
    else process.env.SAPTIVA_API_KEY = saved;
  });
}

const tool = new FunctionTool(async () => 1, {
  name: 'get_stock_price',
  description: 'Get the stock price.',
  parameters: z.object({ ticker: z.string() }),
});

describe('saptivaClient', () => {
  test('fails clearly when no key is given or set', (t) => {
    withEnv(t, undefined);
    assert.throws(
      () => saptivaClient({ model: SaptivaModel.Turbo }),
      (e: unknown) =>
        e instanceof ToolbusError &&
        e.code === 'authentication' &&
        /no API key for model 'Saptiva Turbo': pass \{ apiKey \} or set SAPTIVA_API_KEY/.test(e.message),
    );
  });

  test("defaults: Saptiva's base URL, 'Saptiva Legacy', the key from SAPTIVA_API_KEY", (t) => {
    withEnv(t, 'va-ai-from-env');
    const client = saptivaClient();
    assert.equal(client.baseURL, 'https://api.saptiva.com/v1');
    assert.equal(client.model, 'Saptiva Legacy');
    assert.equal(client.modelInfo.functionCalling, true);
  });

  test('sends the Saptiva model name, the key and the sampling defaults', async (t) => {
    withEnv(t, 'va-ai-from-env');
    const server = await startFakeOpenAIServer();
    t.after(() => server.close());
    server.reply({ json: chatCompletion({ content: 'Hola' }) });
    const client = saptivaClient({ model: SaptivaModel.Turbo, baseURL: server.baseURL });
    const result = await client.create([new UserMessage({ content: 'Hola', source: 'user' })], {
      tools: [tool],
    });
    assert.equal(result.content, 'Hola');
    const request = server.requests[0];
    assert.equal(request?.headers.authorization, 'Bearer va-ai-from-env');
    assert.equal(request?.body?.model, 'Saptiva Turbo');
    assert.equal(request?.body?.temperature, 0.7);
    assert.equal(request?.body?.top_p, 0.9);
  });

  test('an explicit key wins over the environment', async (t) => {
    withEnv(t, 'va-ai-from-env');
    const server = await startFakeOpenAIServer();
    t.after(() => server.close());
    server.reply({ json: chatCompletion({ content: 'ok' }) });
    await saptivaClient({
      model: SaptivaModel.Ops,
      apiKey: 'va-ai-explicit',
      baseURL: server.baseURL,
    }).create([new UserMessage({ content: 'x' })]);
    assert.equal(server.requests[0]?.headers.authorization, 'Bearer va-ai-explicit');
  });

  test('refuses tools on Saptiva Coder and Saptiva OCR, which cannot call functions', async (t) => {
    withEnv(t, 'k');
    const server = await startFakeOpenAIServer();
    t.after(() => server.close());
    for (const model of [SaptivaModel.Coder, SaptivaModel.OCR]) {
      const client = saptivaClient({ model, baseURL: server.baseURL });
      await assert.rejects(
        client.create([new UserMessage({ content: 'x' })], { tools: [tool] }),
        (e: unknown) =>
          e instanceof ToolbusError &&
          e.code === 'unsupported' &&
          e.message.includes(`model '${model}' cannot call`),
      );
    }
    assert.equal(server.requests.length, 0);
  });

  test('an unknown model needs modelInfo', (t) => {
    withEnv(t, 'k');
    assert.throws(
      () => saptivaClient({ model: 'Saptiva Nova' }),
      (e: unknown) =>
        e instanceof ToolbusError &&
        e.code === 'invalid-arguments' &&
        /'Saptiva Nova' is not a known Saptiva model; expected one of 'Saptiva Turbo'/.test(e.message),
    );
    const client = saptivaClient({
      model: 'Saptiva Nova',
      modelInfo: { functionCalling: false, jsonOutput: true, vision: false },
    });
    assert.equal(client.modelInfo.functionCalling, false);
  });

  test('model capabilities follow Saptiva-Agents: no tools on Coder/OCR, vision on Multimodal/OCR', () => {
    const noTools = Object.entries(SAPTIVA_MODEL_INFO)
      .filter(([, info]) => !info.functionCalling)
      .map(([name]) => name);
    assert.deepEqual(noTools.sort(), ['Saptiva Coder', 'Saptiva OCR']);
    const vision = Object.entries(SAPTIVA_MODEL_INFO)
      .filter(([, info]) => info.vision)
      .map(([name]) => name);
    assert.deepEqual(vision.sort(), ['Saptiva Multimodal', 'Saptiva OCR']);
    for (const name of ['Saptiva Turbo', 'Saptiva Cortex', 'Saptiva Legacy', 'Saptiva Ops']) {
      assert.ok(Object.values(SaptivaModel).includes(name as SaptivaModel), name);
      assert.equal(SAPTIVA_MODEL_INFO[name as SaptivaModel].jsonOutput, true);
    }
  });
});
