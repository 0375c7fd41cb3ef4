import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { MemoryBus, type MessageBus } from '../bus/index.js';
import { MemoryConfigStore } from '../config/index.js';
import { ToolRegistry } from '../registry/index.js';
import { DynamicToolService, type DynamicToolServiceStats } from '../services/index.js';
import { FunctionTool, LiveToolSet, ToolError, ToolSet } from '../tools/index.js';
import { z } from 'zod';
import { ToolbusMetrics, UNKNOWN_TOOL_LABEL } from './index.js';

interface Sample {
  labels: Record<string, string | number>;
  value: number;
  metricName?: string;
}

/** The samples of one series, collected now. */
async function samples(metrics: ToolbusMetrics, name: string): Promise<Sample[]> {
  const metric = (await metrics.registry()).getSingleMetric(name);
  assert.ok(metric, `no series ${name}`);
  return (await metric.get()).values as Sample[];
}

/** The value of the sample of `name` with exactly these labels (undefined when there is none). */
async function valueOf(
  metrics: ToolbusMetrics,
  name: string,
  labels: Record<string, string> = {},
): Promise<number | undefined> {
  const wanted = JSON.stringify(Object.entries(labels).sort());
  const found = (await samples(metrics, name)).find(
    (s) =>
      (s.metricName === undefined || s.metricName === name) &&
      JSON.stringify(Object.entries(s.labels).sort()) === wanted,
  );
  return found?.value;
}

const echo = new FunctionTool(({ text }: { text: string }) => text, {
  name: 'echo',
  description: 'Echo',
  parameters: z.object({ text: z.string() }),
});
const broken = new FunctionTool(
  () => {
    throw new ToolError('unavailable', 'the backend is down');
  },
  { name: 'broken', description: 'Always fails', parameters: z.object({}) },
);

/** A tool whose calls wait until `release()`. */
function gatedTool(): { tool: FunctionTool; release: () => void } {
  let release = (): void => undefined;
  const gate = new Promise<void>((resolve) => (release = resolve));
  const tool = new FunctionTool(
    async () => {
      await gate;
      return 'done';
    },
    { name: 'slow', description: 'Waits', parameters: z.object({}) },
  );
  return { tool, release };
}

describe('ToolbusMetrics', () => {
  test('counts ToolSet calls by tool and outcome, and observes their duration', async () => {
    const metrics = new ToolbusMetrics({ defaultMetrics: false });
    const tools = new ToolSet([echo, broken], { hooks: metrics.toolSetHooks() });
    assert.equal((await tools.call('echo', '{"text":"hi"}')).isError, false);
    await tools.call('echo', { text: 'again' });
    await tools.call('echo', '{"text": 1}');
    await tools.call('broken', '{}');
    await tools.call('user-chosen-name-42', '{}');

    const calls = 'toolbus_tool_calls_total';
    assert.equal(await valueOf(metrics, calls, { tool: 'echo', outcome: 'ok' }), 2);
    assert.equal(await valueOf(metrics, calls, { tool: 'echo', outcome: 'invalid-arguments' }), 1);
    assert.equal(await valueOf(metrics, calls, { tool: 'broken', outcome: 'unavailable' }), 1);
    // A name the set does not have never becomes a label value.
    assert.equal(await valueOf(metrics, calls, { tool: UNKNOWN_TOOL_LABEL, outcome: 'unknown-tool' }), 1);
    const all = await samples(metrics, calls);
    assert.ok(!all.some((s) => s.labels.tool === 'user-chosen-name-42'), JSON.stringify(all));

    const durations = await samples(metrics, 'toolbus_tool_call_duration_seconds');
    const count = durations.find(
      (s) => s.metricName === 'toolbus_tool_call_duration_seconds_count' && s.labels.tool === 'echo',
    );
    assert.equal(count?.value, 3);
    const inf = durations.find(
      (s) => s.metricName === 'toolbus_tool_call_duration_seconds_bucket' && s.labels.le === '+Inf',
    );
    assert.ok(inf && inf.value > 0, 'the +Inf bucket holds the calls');
  });

  test('a duration on a bucket bound counts in that bucket; buckets are cumulative in the exposition', async () => {
    const metrics = new ToolbusMetrics({ defaultMetrics: false, durationBuckets: [0.1, 0.01] });
    const onResult = metrics.toolSetHooks().onResult as (event: unknown) => void;
    const ok = { content: 'x', isError: false };
    for (const durationMs of [10, 10.5, 100, 250]) {
      onResult({ name: 'slow', callId: 'c', args: '{}', result: ok, durationMs });
    }
    const { body } = await metrics.scrape();
    const line = (le: string): string | undefined =>
      new RegExp(`^toolbus_tool_call_duration_seconds_bucket\\{le="${le}",tool="slow"\\} (\\S+)$`, 'm').exec(
        body,
      )?.[1];
    assert.equal(line('0.01'), '1', body);
    assert.equal(line('0.1'), '3', body);
    assert.equal(line('\\+Inf'), '4', body);
    assert.match(body, /^toolbus_tool_call_duration_seconds_count\{tool="slow"\} 4$/m);
    assert.match(body, /^toolbus_tool_call_duration_seconds_sum\{tool="slow"\} 0\.3705$/m);
    assert.match(body, /^toolbus_tool_calls_total\{tool="slow",outcome="ok"\} 4$/m);
  });

  test('calls that finish while prom-client is still loading are counted once it is', async () => {
    const metrics = new ToolbusMetrics({ defaultMetrics: false });
    const tools = new ToolSet([echo], { hooks: metrics.toolSetHooks() });
    // Started in one tick: the first finished call starts the load, the others finish before it is done.
    const results = await Promise.all(
      Array.from({ length: 50 }, (_, i) => tools.call('echo', { text: `${i}` })),
    );
    assert.ok(results.every((r) => !r.isError));
    assert.equal(await valueOf(metrics, 'toolbus_tool_calls_total', { tool: 'echo', outcome: 'ok' }), 50);
    await tools.call('echo', { text: 'after' });
    assert.equal(await valueOf(metrics, 'toolbus_tool_calls_total', { tool: 'echo', outcome: 'ok' }), 51);
  });

  test('the in-flight gauge counts running calls, also on a swapped-out set, and returns to 0', async () => {
    const metrics = new ToolbusMetrics({ defaultMetrics: false });
    const { tool, release } = gatedTool();
    const live = new LiveToolSet([tool], { hooks: metrics.toolSetHooks(), concurrency: 1 });
    metrics.observeToolSet(live);
    const inFlight = 'toolbus_tool_calls_in_flight';
    assert.equal(await valueOf(metrics, inFlight), 0);

    const first = live.call('slow', '{}');
    const second = live.call('slow', '{}'); // waits for the one slot: in flight too
    assert.equal(await valueOf(metrics, inFlight), 2);
    live.replace([echo]);
    assert.equal(await valueOf(metrics, inFlight), 2, 'calls on the old set still count');

    release();
    assert.equal((await first).isError, false);
    assert.equal((await second).isError, false);
    assert.equal(await valueOf(metrics, inFlight), 0);
    assert.equal(await valueOf(metrics, 'toolbus_tool_calls_total', { tool: 'slow', outcome: 'ok' }), 2);
  });

  test('service counters follow stats() deltas, summed over replicas and monotonic across a reload', async () => {
    const metrics = new ToolbusMetrics({ defaultMetrics: false });
    const stats = (over: Partial<DynamicToolServiceStats>): DynamicToolServiceStats => ({
      received: 0,
      completed: 0,
      failed: 0,
      rejected: 0,
      expired: 0,
      cancelled: 0,
      invalid: 0,
      unreadable: 0,
      inFlight: 0,
      queued: 0,
      ...over,
    });
    const a = { id: 'echo', now: stats({ completed: 3, failed: 1, queued: 2 }), stats: () => a.now };
    const b = { id: 'echo', now: stats({ completed: 1, rejected: 4, queued: 1 }), stats: () => b.now };
    let current: { id: string; stats(): DynamicToolServiceStats }[] = [a, b];
    metrics.observeServices(() => current);
    const requests = 'toolbus_service_requests_total';

    assert.equal(await valueOf(metrics, requests, { service: 'echo', outcome: 'ok' }), 4);
    assert.equal(await valueOf(metrics, requests, { service: 'echo', outcome: 'tool-service-error' }), 1);
    assert.equal(await valueOf(metrics, requests, { service: 'echo', outcome: 'too-many-requests' }), 4);
    assert.equal(await valueOf(metrics, 'toolbus_service_queue_depth', { service: 'echo' }), 3);

    // A reload: a fresh instance starts counting from 0; the series keeps growing.
    const c = { id: 'echo', now: stats({ completed: 2 }), stats: () => c.now };
    current = [c];
    assert.equal(await valueOf(metrics, requests, { service: 'echo', outcome: 'ok' }), 6);
    assert.equal(await valueOf(metrics, 'toolbus_service_queue_depth', { service: 'echo' }), 0);
    // A service without stats() (a consumer's own kind) is left out, not an error.
    current = [{ id: 'plain' } as never];
    assert.equal(await valueOf(metrics, 'toolbus_service_queue_depth', { service: 'plain' }), 0);
  });

  test('a registry on a MemoryBus: tools, problems, announced instances, and a real service call', async (t) => {
    const metrics = new ToolbusMetrics({ defaultMetrics: false });
    const bus = new MemoryBus();
    const store = new MemoryConfigStore();
    await store.put('tool', 'bad', '{"type":"no-such-type","name":"bad"}');
    const registry = new ToolRegistry({
      store,
      bus,
      debounceMs: 1,
      toolSetOptions: { hooks: metrics.toolSetHooks() },
    });
    const services = [1, 2].map(
      () =>
        new DynamicToolService({
          bus,
          id: 'joke-service',
          topic: 'joke',
          invoke: (_user, _config, args) => `a joke about ${String(args.topic)}`,
          announce: {
            tools: [
              {
                name: 'tell-joke',
                description: 'Tell a joke',
                arguments: [{ name: 'topic', type: 'string', description: 'what about' }],
              },
            ],
          },
        }),
    );
    t.after(async () => {
      await registry.close();
      for (const s of services) await s.stop();
      await bus.close();
    });
    for (const s of services) await s.start();
    await registry.start();
    metrics.observeRegistry(registry);
    metrics.observeToolSet(registry.tools);
    metrics.observeServices(() => services);
    metrics.observeBus(bus);
    for (let i = 0; i < 200 && !registry.tools.get('tell-joke'); i++) await registry.refresh();

    const result = await registry.tools.call('tell-joke', '{"topic":"cats"}');
    assert.equal(result.content, 'a joke about cats');
    assert.equal(await valueOf(metrics, 'toolbus_registry_tools'), 1);
    assert.equal(await valueOf(metrics, 'toolbus_registry_problems', { severity: 'error' }), 1);
    assert.equal(await valueOf(metrics, 'toolbus_announced_instances', { service: 'joke-service' }), 2);
    assert.equal(await valueOf(metrics, 'toolbus_tool_calls_total', { tool: 'tell-joke', outcome: 'ok' }), 1);
    assert.equal(
      await valueOf(metrics, 'toolbus_service_requests_total', { service: 'joke-service', outcome: 'ok' }),
      1,
    );
    assert.equal(await valueOf(metrics, 'toolbus_bus_connected'), 1);
  });

  test('bus_connected reads bus.connected: false is 0, true or absent is 1', async () => {
    const metrics = new ToolbusMetrics({ defaultMetrics: false });
    // A bus that reports its connection, as a NatsBus does.
    const bus: MessageBus & { connected: boolean | undefined } = {
      connected: true,
      publish: () => Promise.resolve(),
      subscribe: () => Promise.resolve({ unsubscribe: () => Promise.resolve() }),
      close: () => Promise.resolve(),
    };
    metrics.observeBus(bus);
    assert.equal(await valueOf(metrics, 'toolbus_bus_connected'), 1);
    bus.connected = false;
    assert.equal(await valueOf(metrics, 'toolbus_bus_connected'), 0);
    bus.connected = undefined;
    assert.equal(await valueOf(metrics, 'toolbus_bus_connected'), 1);
  });

  test('model tokens come from totalUsage(), by model and kind', async () => {
    const metrics = new ToolbusMetrics({ defaultMetrics: false });
    let usage = { promptTokens: 10, completionTokens: 3 };
    metrics.observeModel('gpt-4o-mini', { totalUsage: () => usage });
    const tokens = 'toolbus_model_tokens_total';
    assert.equal(await valueOf(metrics, tokens, { model: 'gpt-4o-mini', kind: 'input' }), 10);
    usage = { promptTokens: 25, completionTokens: 8 };
    assert.equal(await valueOf(metrics, tokens, { model: 'gpt-4o-mini', kind: 'input' }), 25);
    assert.equal(await valueOf(metrics, tokens, { model: 'gpt-4o-mini', kind: 'output' }), 8);
  });

  test('each instance has its own registry; scrape() is the text exposition with the process defaults', async () => {
    const one = new ToolbusMetrics();
    const two = new ToolbusMetrics();
    await new ToolSet([echo], { hooks: one.toolSetHooks() }).call('echo', '{"text":"x"}');
    const first = await one.scrape();
    const second = await two.scrape();
    assert.match(first.contentType, /^text\/plain/);
    assert.match(first.body, /^toolbus_tool_calls_total\{tool="echo",outcome="ok"\} 1$/m);
    assert.doesNotMatch(second.body, /tool="echo"/);
    assert.match(second.body, /^process_cpu_user_seconds_total /m);
    assert.match(second.body, /^# TYPE toolbus_bus_connected gauge$/m);
  });
});
