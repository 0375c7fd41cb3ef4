/**
 * @module Catalog benchmark: how a registry with many tools starts and follows changes. Over
 * {@link N} tool-service descriptors in a SQLite file (as `toolbus up` keeps them):
 *
 * - cold start: `new ToolRegistry(...).start()` against building the same tools directly (N
 *   `FunctionTool`s with zod schemas, and N `BaseTool`s with the descriptors' JSON Schemas, plus a
 *   `ToolSet`), interleaved in each round (the order reversed every other round);
 * - first calls: the first call of each of N tools, which compiles its validator, with one schema
 *   shared by all (the validator cache hits) and with N distinct schemas (every call compiles);
 * - hot add: a new `tool` item put, until it is callable through `registry.tools`, written through the
 *   registry's own store, through another store instance on the same file, and from another process.
 *
 * Every figure is the median over {@link ROUNDS} rounds (`CATALOG_BENCH_ROUNDS`), with the min–max of
 * the rounds. Run only this bench with `npm run bench -- catalog`. Tool search and the unknown-tool
 * path have their own sections over 10,000 in-memory tools ({@link unknownToolSection}, {@link toolSearchSection}).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import { MemoryBus } from '../src/bus/index.js';
import { SqliteConfigStore } from '../src/config/sqlite/index.js';
import { DEFAULT_REGISTRY_DEBOUNCE_MS, ToolRegistry } from '../src/registry/index.js';
import { DynamicToolService, ToolServiceClientCache, createToolServiceTool } from '../src/services/index.js';
import { BaseTool, FunctionTool, LiveToolSet, ToolSet, type Tool } from '../src/tools/index.js';
import type { JsonObject } from '../src/schema/index.js';
import { UserMessage } from '../src/models/index.js';
import { OpenAIChatCompletionClient } from '../src/models/openai/index.js';
import type { TextTable } from './run.js';

/** Tool descriptors in the catalog. */
const N = 1_000;
const ROUNDS = Math.max(3, Number(process.env['CATALOG_BENCH_ROUNDS'] ?? 5));
/** Cold starts of each contender per round (the round's figure is their median). */
const STARTS_PER_ROUND = 3;
/** Hot adds of each kind per round. */
const ADDS_PER_ROUND = 5;
/** Targets of issue 20. */
const TARGET_START_RATIO = 2;
const TARGET_AFTER_DEBOUNCE_MS = 10;
const TARGET_CROSS_PROCESS_MS = 60;
const CHILD_ENV = 'TOOLBUS_CATALOG_BENCH_WRITER';

const SERVICE = {
  id: 'add-service',
  'request-queue': 'non-persistent://tg/request/add',
  'response-queue': 'non-persistent://tg/response/add',
};
const ARGUMENTS = [
  { name: 'a', type: 'number', description: 'First' },
  { name: 'b', type: 'number', description: 'Second' },
];
const descriptor = (name: string): JsonObject => ({
  type: 'tool-service',
  name,
  description: `Adds two numbers (${name}).`,
  service: SERVICE.id,
  arguments: ARGUMENTS,
});
/** The JSON Schema a registry makes of {@link ARGUMENTS} (`argumentsToJsonSchema`). */
const jsonSchema = (salt = ''): Record<string, unknown> => ({
  type: 'object',
  properties: {
    a: { type: 'number', description: `First${salt}` },
    b: { type: 'number', description: 'Second' },
  },
  required: ['a', 'b'],
  additionalProperties: false,
});
const ARGS = '{"a": 1, "b": 2}';
const ARGS_ID = '{"id": "x"}';

class AddTool extends BaseTool {
  protected run(args: Record<string, unknown>): Promise<unknown> {
    return Promise.resolve((args['a'] as number) + (args['b'] as number));
  }
}

// ---------------------------------------------------------------------------------------------------
// Figures

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

/** "median (min–max)" over rounds. */
function spread(values: readonly number[], digits = 1): string {
  const f = (v: number): string => v.toFixed(digits);
  return `${f(median(values))} (${f(Math.min(...values))}–${f(Math.max(...values))})`;
}

const met = (ok: boolean): string => (ok ? 'met' : 'NOT met');
const ms = (t0: number): number => performance.now() - t0;
const sleep = (msToWait: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, msToWait));

/** Runs each contender once per pass, in this order and then reversed, `passes` times. */
async function interleaved(
  contenders: readonly (readonly [string, () => Promise<number>])[],
  passes: number,
): Promise<Map<string, number[]>> {
  const out = new Map<string, number[]>(contenders.map(([name]) => [name, []]));
  for (let pass = 0; pass < passes; pass++) {
    const order = pass % 2 === 0 ? contenders : [...contenders].reverse();
    for (const [name, run] of order) out.get(name)!.push(await run());
  }
  return out;
}

// ---------------------------------------------------------------------------------------------------
// Fixture: a SQLite file with N descriptors, a bus and the service they call

interface Catalog {
  dir: string;
  path: string;
  bus: MemoryBus;
  service: DynamicToolService;
  close(): Promise<void>;
}

async function createCatalog(): Promise<Catalog> {
  const dir = mkdtempSync(join(tmpdir(), 'toolbus-bench-catalog-'));
  const path = join(dir, 'config.db');
  // Written without a sync per put, only to set up faster; every store below uses the default.
  const setup = new SqliteConfigStore({ path, synchronous: 'normal' });
  await setup.put('tool-service', SERVICE.id, SERVICE);
  for (let i = 0; i < N; i++) await setup.put('tool', `t${i}`, descriptor(`t${i}`));
  await setup.close();
  const bus = new MemoryBus();
  const service = new DynamicToolService({
    bus,
    id: SERVICE.id,
    requestQueue: SERVICE['request-queue'],
    responseQueue: SERVICE['response-queue'],
    invoke: (_user, _config, args) => (args['a'] as number) + (args['b'] as number),
  });
  await service.start();
  return {
    dir,
    path,
    bus,
    service,
    async close() {
      await service.stop();
      await bus.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

// ---------------------------------------------------------------------------------------------------
// Section: cold start

async function coldStartSection(catalog: Catalog): Promise<TextTable[]> {
  const store = new SqliteConfigStore({ path: catalog.path });
  const registryStart = async (): Promise<number> => {
    const registry = new ToolRegistry({ store, bus: catalog.bus, announcements: false });
    const t0 = performance.now();
    await registry.start();
    const took = ms(t0);
    if (registry.tools.list().length !== N)
      throw new Error(`catalog bench: ${registry.tools.list().length} tools`);
    await registry.close();
    return took;
  };
  const zodBuild = (): Promise<number> => {
    const t0 = performance.now();
    const tools: Tool[] = [];
    for (let i = 0; i < N; i++) {
      tools.push(
        new FunctionTool(({ a, b }) => a + b, {
          name: `t${i}`,
          description: `Adds two numbers (t${i}).`,
          parameters: z.object({ a: z.number().describe('First'), b: z.number().describe('Second') }),
        }),
      );
    }
    new ToolSet(tools);
    return Promise.resolve(ms(t0));
  };
  const jsonBuild = (): Promise<number> => {
    const t0 = performance.now();
    const tools: Tool[] = [];
    for (let i = 0; i < N; i++) {
      tools.push(
        new AddTool({ name: `t${i}`, description: `Adds two numbers (t${i}).`, parameters: jsonSchema() }),
      );
    }
    new ToolSet(tools);
    return Promise.resolve(ms(t0));
  };
  const serviceBuild = async (): Promise<number> => {
    const clients = new ToolServiceClientCache(catalog.bus);
    const t0 = performance.now();
    const tools: Tool[] = [];
    const life = new AbortController();
    for (let i = 0; i < N; i++) {
      tools.push(
        createToolServiceTool({ clients, signal: life.signal, service: SERVICE, tool: descriptor(`t${i}`) })
          .tool,
      );
    }
    new ToolSet(tools);
    const took = ms(t0);
    life.abort();
    await clients.close();
    return took;
  };
  const names = {
    service: `direct: ${N} createToolServiceTool (the same descriptors, a shared client cache) + ToolSet`,
    registry: `ToolRegistry.start() over ${N} tool-service descriptors (SQLite file)`,
    zod: `direct: ${N} FunctionTool (zod schemas) + ToolSet`,
    json: `direct: ${N} BaseTool (the same JSON Schemas) + ToolSet`,
  };
  const contenders = [
    [names.registry, registryStart],
    [names.zod, zodBuild],
    [names.json, jsonBuild],
    [names.service, serviceBuild],
  ] as const;
  await interleaved(contenders, 2); // warm-up: the JIT, the page cache, Ajv and zod loaded
  const rounds = {
    registry: [] as number[],
    zod: [] as number[],
    json: [] as number[],
    service: [] as number[],
  };
  const ratios = { zod: [] as number[], json: [] as number[], service: [] as number[] };
  for (let r = 0; r < ROUNDS; r++) {
    const got = await interleaved(contenders, STARTS_PER_ROUND);
    const registry = median(got.get(names.registry)!);
    const zod = median(got.get(names.zod)!);
    const json = median(got.get(names.json)!);
    const service = median(got.get(names.service)!);
    rounds.service.push(service);
    ratios.service.push(registry / service);
    rounds.registry.push(registry);
    rounds.zod.push(zod);
    rounds.json.push(json);
    ratios.zod.push(registry / zod);
    ratios.json.push(registry / json);
  }
  await store.close();

  const firstCalls = await firstCallRows();
  const zodRatio = median(ratios.zod);
  const jsonRatio = median(ratios.json);
  return [
    {
      title: `Registry cold start over ${N.toLocaleString('en-US')} descriptors vs building the same tools directly`,
      columns: ['case', 'ms, median of rounds (min–max)', 'registry ÷ this, median of rounds (min–max)'],
      rows: [
        [names.registry, spread(rounds.registry), '1'],
        [names.zod, spread(rounds.zod), spread(ratios.zod, 2)],
        [names.json, spread(rounds.json), spread(ratios.json, 2)],
        [names.service, spread(rounds.service), spread(ratios.service, 2)],
      ],
      notes: [
        `${ROUNDS} rounds; each round's figure is the median of ${STARTS_PER_ROUND} runs of each case, interleaved ` +
          '(the order reversed every other run), after 2 warm-up passes. The registry reads the file, builds a ' +
          'ToolServiceTool per descriptor (announcements off) and swaps the set in; its close is not timed.',
        `Target: registry ≤ ${TARGET_START_RATIO}× the direct build. Against FunctionTool + zod: ` +
          `${zodRatio.toFixed(2)}× (${met(zodRatio <= TARGET_START_RATIO)}); against BaseTool + JSON Schema ` +
          `(no zod conversion, the stricter floor): ${jsonRatio.toFixed(2)}× (${met(jsonRatio <= TARGET_START_RATIO)}); ` +
          `against the same tool-service tools built directly: ${median(ratios.service).toFixed(2)}× ` +
          `(${met(median(ratios.service) <= TARGET_START_RATIO)}).`,
      ],
    },
    firstCalls,
  ];
}

/** The first call of each of N BaseTools: one shared schema (cache hits) vs N distinct schemas. */
async function firstCallRows(): Promise<TextTable> {
  let salt = 0;
  const firstCalls = async (distinct: boolean): Promise<number> => {
    const round = salt++;
    const tools = Array.from(
      { length: N },
      (_, i) =>
        new AddTool({
          name: `t${i}`,
          description: 'Adds.',
          // A salt per round too: distinct schemas must miss the cache in every round.
          parameters: jsonSchema(distinct ? ` (${round}.${i})` : ''),
        }),
    );
    const t0 = performance.now();
    for (const tool of tools) await tool.runJson({ a: 1, b: 2 });
    return ms(t0);
  };
  const names = {
    shared: `first call of each of ${N} tools, one shared JSON Schema`,
    distinct: `first call of each of ${N} tools, ${N} distinct JSON Schemas (a compile each)`,
  };
  const contenders = [
    [names.shared, () => firstCalls(false)],
    [names.distinct, () => firstCalls(true)],
  ] as const;
  await interleaved(contenders, 1);
  const shared: number[] = [];
  const distinct: number[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    const got = await interleaved(contenders, 1);
    shared.push(got.get(names.shared)![0]!);
    distinct.push(got.get(names.distinct)![0]!);
  }
  return {
    title: `First calls: a raw JSON Schema validator is compiled on a tool's first call, once per schema text`,
    columns: ['case', 'ms for all, median of rounds (min–max)', 'µs per call, median'],
    rows: [
      [names.shared, spread(shared), ((median(shared) * 1000) / N).toFixed(1)],
      [names.distinct, spread(distinct), ((median(distinct) * 1000) / N).toFixed(1)],
    ],
    notes: [
      'Tools whose schemas have the same JSON text share one compiled Ajv validator (a bounded LRU in ' +
        'src/schema/ajv.ts); the distinct row is what every first call cost before that cache.',
    ],
  };
}

// ---------------------------------------------------------------------------------------------------
// Section: hot add

/** A child process holding its own store on the file: it puts `tool/<name>` for each line it reads. */
interface Writer {
  /** Puts the item; resolves with the child's clock (epoch ms) just before its put. */
  put(name: string): Promise<number>;
  close(): Promise<void>;
}

function startWriter(path: string): Promise<Writer> {
  const child: ChildProcess = spawn(
    process.execPath,
    ['--import', 'tsx', fileURLToPath(import.meta.url), path],
    {
      env: { ...process.env, [CHILD_ENV]: '1' },
      stdio: ['pipe', 'pipe', 'inherit'],
    },
  );
  const lines = createInterface({ input: child.stdout! })[Symbol.asyncIterator]();
  const next = async (): Promise<string> => {
    const line = await lines.next();
    if (line.done) throw new Error('catalog bench: the writer process exited');
    return line.value;
  };
  return next().then(() => ({
    async put(name) {
      child.stdin!.write(`${name}\n`);
      return Number(await next());
    },
    async close() {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.stdin!.end();
      await exited;
    },
  }));
}

/** The child's loop (see {@link startWriter}). */
async function writerMain(path: string): Promise<void> {
  const store = new SqliteConfigStore({ path });
  await store.revision();
  process.stdout.write('ready\n');
  for await (const name of createInterface({ input: process.stdin })) {
    const at = performance.timeOrigin + performance.now();
    await store.put('tool', name, descriptor(name));
    process.stdout.write(`${at}\n`);
  }
  await store.close();
}

interface HotAdd {
  /** From just before the put to the first successful call, in ms. */
  totalMs: number;
  /** From the put acknowledged to callable, minus the debounce: the registry's own work. */
  afterDebounceMs: number;
}

async function hotAddSection(catalog: Catalog): Promise<TextTable[]> {
  const store = new SqliteConfigStore({ path: catalog.path });
  const other = new SqliteConfigStore({ path: catalog.path });
  const writer = await startWriter(catalog.path);
  const registry = new ToolRegistry({ store, bus: catalog.bus, announcements: false });
  await registry.start();
  let n = 0;
  /** Resolves at the first successful call of `name` through the live set (clock: epoch ms). */
  const callable = (name: string): Promise<number> =>
    new Promise((resolve, reject) => {
      const off = registry.onChange((change) => {
        if (!change.tools.has(name)) return;
        off();
        registry.tools.call(name, ARGS).then((result) => {
          if (result.isError) reject(new Error(`catalog bench: ${result.content}`));
          else resolve(performance.timeOrigin + performance.now());
        }, reject);
      });
    });
  const now = (): number => performance.timeOrigin + performance.now();
  const viaStore = async (writeTo: SqliteConfigStore): Promise<HotAdd> => {
    const name = `hot-${n++}`;
    const done = callable(name);
    const t0 = now();
    await writeTo.put('tool', name, descriptor(name));
    const acknowledged = now();
    const at = await done;
    return { totalMs: at - t0, afterDebounceMs: at - acknowledged - DEFAULT_REGISTRY_DEBOUNCE_MS };
  };
  const viaProcess = async (): Promise<HotAdd> => {
    const name = `hot-${n++}`;
    const done = callable(name);
    const t0 = await writer.put(name);
    const at = await done;
    return { totalMs: at - t0, afterDebounceMs: Number.NaN };
  };
  const viaRefresh = async (): Promise<HotAdd> => {
    const name = `hot-${n++}`;
    const t0 = now();
    await store.put('tool', name, descriptor(name));
    await registry.refresh();
    const result = await registry.tools.call(name, ARGS);
    if (result.isError) throw new Error(`catalog bench: ${result.content}`);
    const at = now();
    return { totalMs: at - t0, afterDebounceMs: at - t0 };
  };
  const names = {
    same: 'same store (one process): put → callable',
    instance: 'another store instance on the same file (one process)',
    process: 'another process writing the same file',
    refresh: 'same store, put + refresh() (no debounce, no watch)',
  };
  const kinds = [
    [names.same, () => viaStore(store)],
    [names.instance, () => viaStore(other)],
    [names.process, viaProcess],
    [names.refresh, viaRefresh],
  ] as const;
  // The start's own work spaces the next debounced rebuild (RebuildScheduler): let that pass first.
  await sleep(1_100);
  const results = new Map<string, HotAdd[][]>(kinds.map(([name]) => [name, []]));
  for (let r = -1; r < ROUNDS; r++) {
    const round = new Map<string, HotAdd[]>(kinds.map(([name]) => [name, []]));
    for (let i = 0; i < ADDS_PER_ROUND; i++) {
      const order = i % 2 === 0 ? kinds : [...kinds].reverse();
      for (const [name, add] of order) {
        round.get(name)!.push(await add());
        // Past the debounce and the spacing after the rebuild, so each add stands alone.
        await sleep(60);
      }
    }
    if (r >= 0) for (const [name, adds] of round) results.get(name)!.push(adds); // round -1: warm-up
  }
  await registry.close();
  await writer.close();
  await other.close();
  await store.close();

  const perRound = (name: string, pick: (a: HotAdd) => number): number[] =>
    results.get(name)!.map((adds) => median(adds.map(pick)));
  const worst = (name: string, pick: (a: HotAdd) => number): number =>
    Math.max(...results.get(name)!.flat().map(pick));
  const row = (name: string, target: string): string[] => {
    const after = perRound(name, (a) => a.afterDebounceMs);
    return [
      name,
      spread(perRound(name, (a) => a.totalMs)),
      worst(name, (a) => a.totalMs).toFixed(1),
      Number.isNaN(after[0]!) ? '-' : spread(after),
      target,
    ];
  };
  const sameAfter = median(perRound(names.same, (a) => a.afterDebounceMs));
  const instanceTotal = median(perRound(names.instance, (a) => a.totalMs));
  const processTotal = median(perRound(names.process, (a) => a.totalMs));
  return [
    {
      title: `Hot add: a new tool descriptor among ${N.toLocaleString('en-US')}, put → callable through registry.tools`,
      columns: [
        'case',
        'ms, median of rounds (min–max)',
        'worst single add ms',
        `after the ${DEFAULT_REGISTRY_DEBOUNCE_MS} ms debounce, ms`,
        'target',
      ],
      rows: [
        row(names.same, `≤ ${TARGET_AFTER_DEBOUNCE_MS} ms after the debounce`),
        row(names.instance, `≤ ${TARGET_CROSS_PROCESS_MS} ms in all`),
        row(names.process, `≤ ${TARGET_CROSS_PROCESS_MS} ms in all`),
        row(names.refresh, '-'),
      ],
      notes: [
        `${ROUNDS} rounds of ${ADDS_PER_ROUND} adds of each kind (interleaved, 60 ms apart), after a warm-up ` +
          "round; a round's figure is the median of its adds. Callable: registry.onChange shows the name and a " +
          'call through registry.tools (MemoryBus, the service in this process) succeeds. SQLite stores use ' +
          'their defaults (synchronous=full, file events on). "After the debounce" is callable − put ' +
          `acknowledged − ${DEFAULT_REGISTRY_DEBOUNCE_MS} ms; across processes it starts at the writer's clock ` +
          'just before its put.',
        `Targets: in one process ${sameAfter.toFixed(1)} ms after the debounce ` +
          `(${met(sameAfter <= TARGET_AFTER_DEBOUNCE_MS)}); across store instances ${instanceTotal.toFixed(1)} ms ` +
          `(${met(instanceTotal <= TARGET_CROSS_PROCESS_MS)}) and across processes ${processTotal.toFixed(1)} ms ` +
          `(${met(processTotal <= TARGET_CROSS_PROCESS_MS)}) in all (medians of rounds).`,
      ],
    },
  ];
}

// ---------------------------------------------------------------------------------------------------
// Sections reserved for catalog features still to come: each returns its tables for the same catalog.

/** Tools of the in-memory set the search and unknown-tool sections use. */
const BIG = 10_000;
/** Timed operations per contender per round in those sections. */
const OPS_PER_ROUND = 2_000;
const TARGET_UNKNOWN_RATIO = 2;
const TARGET_UNKNOWN_BYTES = 2_048;
const TARGET_SEARCH_P50_MS = 1;

/** Words the big set's names and descriptions are made of, so names differ like real ones. */
const VERBS = ['get', 'list', 'create', 'update', 'delete', 'search', 'send', 'fetch', 'sync', 'export'];
const NOUNS = [
  'invoice',
  'customer',
  'order',
  'ticket',
  'weather',
  'stock',
  'report',
  'user',
  'email',
  'payment',
  'shipment',
  'forecast',
  'calendar',
  'document',
  'project',
  'account',
  'price',
  'review',
  'message',
  'contract',
];

/** BIG FunctionTools named `<verb>_<noun>_<n>`, described in words, with two arguments each. */
function bigSet(): FunctionTool[] {
  const tools: FunctionTool[] = [];
  for (let i = 0; i < BIG; i++) {
    const verb = VERBS[i % VERBS.length]!;
    const noun = NOUNS[Math.floor(i / VERBS.length) % NOUNS.length]!;
    const n = Math.floor(i / (VERBS.length * NOUNS.length));
    tools.push(
      new FunctionTool(({ id }) => id, {
        name: `${verb}_${noun}_${n}`,
        description: `${verb[0]!.toUpperCase()}${verb.slice(1)} a ${noun} in region ${n} of the catalog.`,
        parameters: z.object({ id: z.string().describe(`The ${noun} id`), note: z.string().optional() }),
      }),
    );
  }
  return tools;
}

/** Per-op latencies (µs) of `run` over `inputs`, cycling, OPS_PER_ROUND of them. */
async function latencies<T>(inputs: readonly T[], run: (input: T) => unknown): Promise<number[]> {
  const out: number[] = [];
  for (let k = 0; k < OPS_PER_ROUND; k++) {
    const input = inputs[k % inputs.length]!;
    const t0 = performance.now();
    await run(input);
    out.push((performance.now() - t0) * 1000);
  }
  return out;
}

/**
 * The unknown-tool path with BIG tools (performance.md §7, gap 1): the p50 of a call with a misspelt
 * name (1,000 different typos, cycled) against the p50 of a call of a known tool, interleaved per round,
 * and the largest error text.
 */
async function unknownToolSection(): Promise<TextTable[]> {
  const tools = bigSet();
  const set = new ToolSet(tools);
  const known = tools.filter((_, i) => i % 10 === 0).map((t) => t.name);
  // One edit each: a dropped, doubled or swapped character, at varying places.
  const typos = known.slice(0, 1_000).map((name, i) => {
    const at = 1 + (i % (name.length - 2));
    return i % 3 === 0
      ? name.slice(0, at) + name.slice(at + 1)
      : i % 3 === 1
        ? name.slice(0, at) + name[at] + name.slice(at)
        : name.slice(0, at) + name[at + 1] + name[at] + name.slice(at + 2);
  });
  const far = Array.from({ length: 100 }, (_, i) => `zz_no_such_tool_${i}_qqq`);
  let biggest = 0;
  let misses = 0;
  const callUnknown = async (name: string): Promise<void> => {
    const r = await set.call(name, ARGS_ID);
    if (r.error?.code !== 'unknown-tool') return;
    misses++;
    biggest = Math.max(biggest, Buffer.byteLength(r.content));
  };
  const callKnown = (name: string): Promise<unknown> => set.call(name, ARGS_ID);
  await callUnknown(typos[0]!); // builds the name index once (a set's first miss)
  const got = await interleaved(
    [
      ['known', async () => median(await latencies(known, callKnown))],
      ['typo', async () => median(await latencies(typos, callUnknown))],
      ['far', async () => median(await latencies(far, callUnknown))],
    ],
    ROUNDS,
  );
  const rounds = { known: got.get('known')!, typo: got.get('typo')!, far: got.get('far')! };
  if (misses === 0) throw new Error('catalog bench: no unknown-tool results');
  const typoRatios = rounds.typo.map((v, i) => v / rounds.known[i]!);
  const farRatios = rounds.far.map((v, i) => v / rounds.known[i]!);
  const build0 = performance.now();
  const fresh = new ToolSet(tools);
  await fresh.call(typos[1]!, ARGS_ID);
  const indexMs = ms(build0);
  return [
    {
      title: `Unknown tool name with ${BIG.toLocaleString('en-US')} tools vs a call of a known tool`,
      columns: [
        'case',
        'p50 µs, median of rounds (min–max)',
        'this ÷ known call, median of rounds (min–max)',
      ],
      rows: [
        ['ToolSet.call of a known tool (baseline)', spread(rounds.known, 2), '1'],
        [
          'ToolSet.call of a misspelt name (1 edit; 1,000 different typos)',
          spread(rounds.typo, 2),
          spread(typoRatios, 2),
        ],
        ['ToolSet.call of a name like no tool', spread(rounds.far, 2), spread(farRatios, 2)],
      ],
      notes: [
        `${ROUNDS} rounds of ${OPS_PER_ROUND} calls per case, interleaved (order reversed every other round).`,
        `Largest unknown-tool message: ${biggest} bytes (target ≤ ${TARGET_UNKNOWN_BYTES}: ${met(biggest <= TARGET_UNKNOWN_BYTES)}); ` +
          `it names at most 5 near tools. Before: 118,926 characters listing every name.`,
        `Target: a misspelt name costs ≤ ${TARGET_UNKNOWN_RATIO}× a known call: ${median(typoRatios).toFixed(2)}× ` +
          `(${met(median(typoRatios) <= TARGET_UNKNOWN_RATIO)}). The name index is built on a set's first miss: ` +
          `${indexMs.toFixed(1)} ms for ${BIG.toLocaleString('en-US')} names (once per set, i.e. per registry change).`,
      ],
    },
  ];
}

/**
 * Tool search over BIG tools: `LiveToolSet.search` p50 (20 different queries, cycled), against a call
 * of a known tool in the same rounds; the index's first build; and a search right after a replace
 * that changed one tool (re-indexes only that one).
 */
async function toolSearchSection(): Promise<TextTable[]> {
  const tools = bigSet();
  const build0 = performance.now();
  const live = new LiveToolSet(tools);
  live.search('invoice');
  const buildMs = ms(build0);
  const queries = [
    'create invoice',
    'weather forecast',
    'send email to customer',
    'stock price',
    'delete ticket',
    'export report',
    'sync calendar',
    'update contract',
    'list shipments',
    'payment',
    'fetch document region 3',
    'search reviews',
    'user account',
    'projects',
    'get order 12',
    'forecst',
    'invoce customer',
    'messages',
    'region 40 price',
    'calendar events',
  ];
  const known = tools.filter((_, i) => i % 10 === 0).map((t) => t.name);
  const got = await interleaved(
    [
      ['known', async () => median(await latencies(known, (name) => live.call(name, ARGS_ID)))],
      ['search', async () => median(await latencies(queries, (q) => live.search(q, { limit: 10 })))],
    ],
    ROUNDS,
  );
  const rounds = { known: got.get('known')!, search: got.get('search')! };
  const ratios = rounds.search.map((v, i) => v / rounds.known[i]!);
  const resync: number[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    const next = [...tools];
    next[r] = new FunctionTool(() => 'new', {
      name: tools[r]!.name,
      description: 'A changed tool.',
      parameters: z.object({ id: z.string() }),
    });
    live.replace(next);
    const t0 = performance.now();
    live.search('changed tool');
    resync.push(ms(t0));
  }
  const p50 = median(rounds.search) / 1000;
  return [
    {
      title: `Tool search over ${BIG.toLocaleString('en-US')} tools (minisearch BM25, prefix and fuzzy terms)`,
      columns: [
        'case',
        'p50 µs, median of rounds (min–max)',
        'this ÷ known call, median of rounds (min–max)',
      ],
      rows: [
        ['ToolSet.call of a known tool (baseline)', spread(rounds.known, 2), '1'],
        [
          'LiveToolSet.search(query, { limit: 10 }), 20 queries cycled',
          spread(rounds.search, 1),
          spread(ratios, 1),
        ],
      ],
      notes: [
        `Target: search p50 ≤ ${TARGET_SEARCH_P50_MS} ms: ${p50.toFixed(3)} ms (${met(p50 <= TARGET_SEARCH_P50_MS)}).`,
        `First search (builds the index of ${BIG.toLocaleString('en-US')} tools): ${buildMs.toFixed(0)} ms. ` +
          `First search after a replace that changed one tool: ${spread(resync, 2)} ms (a diff by identity, one re-index).`,
      ],
    },
  ];
}

/**
 * The model-facing tool list with BIG tools: an OpenAI-compatible request (the HTTP exchange stubbed)
 * offering the same list object at every step, as agents do until the registry changes, against a
 * fresh copy of the list every step (what rebuilding the schemas per step would cost).
 */
async function schemaSection(): Promise<TextTable[]> {
  const tools = Object.freeze(bigSet());
  const reply = JSON.stringify({
    id: 'c',
    object: 'chat.completion',
    created: 0,
    model: 'm',
    choices: [{ index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop' }],
  });
  const client = new OpenAIChatCompletionClient({
    model: 'm',
    apiKey: 'k',
    baseURL: 'http://127.0.0.1:9/v1',
    fetch: (() =>
      Promise.resolve(
        new Response(reply, { headers: { 'content-type': 'application/json' } }),
      )) as typeof fetch,
  });
  const messages = [new UserMessage({ content: 'hi' })];
  const step = async (list: readonly Tool[]): Promise<number> => {
    const t0 = performance.now();
    await client.create(messages, { tools: list });
    return ms(t0);
  };
  await step(tools); // the first step of a change: compiles and caches the wire list
  const rounds = { same: [] as number[], fresh: [] as number[] };
  for (let r = 0; r < ROUNDS; r++) {
    const same: number[] = [];
    const fresh: number[] = [];
    for (let k = 0; k < 10; k++) {
      same.push(await step(tools));
      fresh.push(await step(Object.freeze([...tools])));
    }
    rounds.same.push(median(same));
    rounds.fresh.push(median(fresh));
  }
  await client.close();
  const ratios = rounds.fresh.map((v, i) => v / rounds.same[i]!);
  return [
    {
      title: `A model request offering ${BIG.toLocaleString('en-US')} tools: the list kept between steps vs rebuilt each step`,
      columns: ['case', 'ms per request, median of rounds (min–max)', 'this ÷ kept list'],
      rows: [
        ['same list object (an agent between registry changes)', spread(rounds.same, 2), '1'],
        ['a new list each step (schemas mapped again)', spread(rounds.fresh, 2), spread(ratios, 1)],
      ],
      notes: [
        'OpenAIChatCompletionClient.create with its fetch stubbed (no network): the cost left in the kept case ' +
          'is the request body itself (JSON of 10,000 schemas), which a real request pays too.',
      ],
    },
  ];
}

// ---------------------------------------------------------------------------------------------------

if (process.env[CHILD_ENV] === '1') {
  await writerMain(process.argv[2]!);
  process.exit(0);
}

export default async function (): Promise<TextTable[]> {
  // CATALOG_BENCH_SECTIONS=unknown,search runs only those (cold, hot, unknown, search, schemas).
  const only = (process.env['CATALOG_BENCH_SECTIONS'] ?? '').split(',').filter(Boolean);
  const wanted = (name: string): boolean => only.length === 0 || only.includes(name);
  const catalog = await createCatalog();
  try {
    return [
      ...(wanted('cold') ? await coldStartSection(catalog) : []),
      ...(wanted('hot') ? await hotAddSection(catalog) : []),
      ...(wanted('unknown') ? await unknownToolSection() : []),
      ...(wanted('search') ? await toolSearchSection() : []),
      ...(wanted('schemas') ? await schemaSection() : []),
    ];
  } finally {
    await catalog.close();
  }
}
