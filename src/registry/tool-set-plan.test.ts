import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { z } from 'zod';
import type { JsonObject, JsonValue } from '../schema/index.js';
import { FunctionTool } from '../tools/index.js';
import { ToolbusError } from '../errors/index.js';
import { planToolSet, toolSources } from './tool-set-plan.js';
import type {
  AnnouncedServices,
  BuildResult,
  BuiltTool,
  ConfigSnapshot,
  RecordedLookup,
  ToolSource,
} from './tool-set-plan.js';

/** A fixed config: `{ type: { key: value } }`. */
function snapshot(items: Record<string, Record<string, JsonValue>>): ConfigSnapshot {
  return {
    get: (type, key) => items[type]?.[key],
    entries: (type) => Object.entries(items[type] ?? {}),
  };
}

const service = (id: string): JsonObject => ({
  id,
  'request-queue': `request:tg:${id}`,
  'response-queue': `response:tg:${id}`,
});

function announced(services: Record<string, { service: JsonObject; tools: string[] }>): AnnouncedServices {
  return new Map(
    Object.entries(services).map(([id, s]) => [
      id,
      { service: s.service, tools: new Map(s.tools.map((name) => [name, { name, description: name }])) },
    ]),
  );
}

function built(name: string, lookups: RecordedLookup[] = [], warnings: string[] = []): BuiltTool {
  return {
    descriptorJson: '{}',
    lookups: new Map(lookups.map((l) => [`${l.type}/${l.key}`, l])),
    tool: new FunctionTool(() => name, { name, description: name, parameters: z.object({}) }),
    warnings,
    controller: new AbortController(),
  };
}

/** Sources with their results, as the builder hands them to the plan. */
function results(
  config: ConfigSnapshot,
  services: AnnouncedServices,
  byKey: Record<string, BuildResult>,
): (ToolSource & { result: BuildResult })[] {
  return toolSources(config, () => services).map((source) => {
    const result = byKey[source.source];
    assert.ok(result, `no result for ${source.source}`);
    return { ...source, result };
  });
}

const names = (tools: { name: string }[]) => tools.map((t) => t.name);

describe('toolSources', () => {
  test('config tools by key, then announced tools by service and name, with their descriptors', () => {
    const config = snapshot({ tool: { b: { type: 'x' }, a: { type: 'y' } } });
    const services = announced({
      zeta: { service: service('zeta'), tools: ['two', 'one'] },
      alpha: { service: service('alpha'), tools: ['only'] },
    });
    const sources = toolSources(config, () => services);
    assert.deepEqual(
      sources.map((s) => [s.source, s.key, s.announcedName]),
      [
        ['tool/a', 'a', undefined],
        ['tool/b', 'b', undefined],
        ['announced/alpha/only', 'only', 'only'],
        ['announced/zeta/one', 'one', 'one'],
        ['announced/zeta/two', 'two', 'two'],
      ],
    );
    assert.deepEqual(sources[2]!.descriptor, {
      type: 'tool-service',
      service: 'alpha',
      name: 'only',
      description: 'only',
    });
  });

  test('a config tool looks up config first, then announced services; an announced tool its own service first', () => {
    const mine = { ...service('jokes'), note: 'config' };
    const theirs = service('jokes');
    const config = snapshot({ tool: { t: { type: 'x' } }, 'tool-service': { jokes: mine } });
    const services = announced({
      jokes: { service: theirs, tools: ['tell'] },
      calc: { service: service('calc'), tools: [] },
    });
    const [configTool, announcedTool] = toolSources(config, () => services);
    assert.equal(configTool!.lookup('tool-service', 'jokes'), mine);
    assert.equal(configTool!.lookup('tool-service', 'calc'), services.get('calc')!.service);
    assert.equal(configTool!.lookup('mcp', 'calc'), undefined, 'only tool-service items fall back');
    assert.equal(announcedTool!.lookup('tool-service', 'jokes'), theirs);
    assert.deepEqual(announcedTool!.lookup('tool', 't'), { type: 'x' });
  });
});

describe('planToolSet', () => {
  test('tools are added in order; a second tool of a name is an error for config, a warning when announced', () => {
    const config = snapshot({ tool: { a: {}, b: {} } });
    const services = announced({ s: { service: service('s'), tools: ['x', 'y'] } });
    const plan = planToolSet(
      config,
      results(config, services, {
        'tool/a': { built: built('same') },
        'tool/b': { built: built('same') },
        'announced/s/x': { built: built('shared') },
        'announced/s/y': { built: built('shared') },
      }),
      new Map(),
    );
    assert.deepEqual(names(plan.tools), ['same', 'shared']);
    assert.deepEqual(
      plan.problems.map((p) => [p.key, p.severity]),
      [
        ['tool/b', 'error'],
        ['announced/s/y', 'warning'],
      ],
    );
    assert.match(plan.problems[0]!.message, /'same' is already used by tool\/a/);
    assert.deepEqual([...plan.built.keys()], ['tool/a', 'tool/b', 'announced/s/x', 'announced/s/y']);
  });

  test('config wins over an announced tool of the same name: the fresh build is unused, the source outvoted', () => {
    const config = snapshot({ tool: { 'tell-joke': {} } });
    const services = announced({ jokes: { service: service('jokes'), tools: ['tell-joke', 'pun'] } });
    const fresh = built('tell-joke');
    const plan = planToolSet(
      config,
      results(config, services, {
        'tool/tell-joke': { built: built('tell-joke') },
        'announced/jokes/tell-joke': { built: fresh },
        'announced/jokes/pun': { built: built('pun') },
      }),
      new Map(),
    );
    assert.deepEqual(names(plan.tools), ['tell-joke', 'pun']);
    assert.deepEqual(plan.unused, [fresh]);
    assert.deepEqual(plan.outvoted, ['announced/jokes/tell-joke']);
    assert.equal(plan.built.has('announced/jokes/tell-joke'), false);
    const problem = plan.problems.find((p) => p.key === 'announced/jokes/tell-joke');
    assert.equal(problem?.severity, 'warning');
    assert.match(problem.message, /config tool\/tell-joke defines a tool named 'tell-joke' too; config wins/);
  });

  test('an outvoted announced tool that was live is retired, not released as unused', () => {
    const config = snapshot({ tool: { t: {} } });
    const services = announced({ s: { service: service('s'), tools: ['t'] } });
    const live = built('t');
    const plan = planToolSet(
      config,
      results(config, services, { 'tool/t': { built: built('t') }, 'announced/s/t': { built: live } }),
      new Map([['announced/s/t', live]]),
    );
    assert.deepEqual(plan.unused, []);
    assert.deepEqual(plan.retired, [live]);
  });

  test('a failed build keeps the last good one live and says so; the error keeps its code', () => {
    const config = snapshot({ tool: { t: {} } });
    const last = built('t', [{ type: 'mcp', key: 'server', json: '{}' }]);
    const error = new ToolbusError('invalid-config', "config 'tool/t': field 'x' must be a string");
    const lookupLive = snapshot({ tool: { t: {} }, mcp: { server: {} } });
    const plan = planToolSet(
      lookupLive,
      results(lookupLive, new Map(), { 'tool/t': { error } }),
      new Map([['tool/t', last]]),
    );
    assert.deepEqual(names(plan.tools), ['t']);
    assert.equal(plan.built.get('tool/t'), last);
    assert.deepEqual(plan.retired, []);
    assert.equal(plan.problems.length, 1);
    assert.equal(plan.problems[0]!.code, 'invalid-config');
    assert.match(plan.problems[0]!.message, /must be a string; the last good version of tool 't' stays live/);

    // The item it looked up is gone: a deliberate removal, so the last good version goes too.
    const plan2 = planToolSet(
      config,
      results(config, new Map(), { 'tool/t': { error } }),
      new Map([['tool/t', last]]),
    );
    assert.deepEqual(plan2.tools, []);
    assert.deepEqual(plan2.retired, [last]);
    assert.doesNotMatch(plan2.problems[0]!.message, /last good/);
  });

  test("a build's warnings are listed under its source; previous builds no longer kept are retired", () => {
    const config = snapshot({ tool: { a: {} } });
    const gone = built('gone');
    const plan = planToolSet(
      config,
      results(config, new Map(), { 'tool/a': { built: built('a', [], ['probably a typo']) } }),
      new Map([['tool/gone', gone]]),
    );
    assert.deepEqual(plan.problems, [{ key: 'tool/a', message: 'probably a typo', severity: 'warning' }]);
    assert.deepEqual(plan.retired, [gone]);
  });

  test('tool-service items are checked even when no tool uses them', () => {
    const config = snapshot({
      'tool-service': { bad: 'not an object', renamed: service('other'), fine: service('fine') },
    });
    const plan = planToolSet(config, [], new Map());
    assert.deepEqual(
      plan.problems.map((p) => [p.key, p.severity]),
      [
        ['tool-service/bad', 'error'],
        ['tool-service/renamed', 'warning'],
      ],
    );
    assert.match(plan.problems[1]!.message, /its 'id' is 'other' but its key is 'renamed'/);
  });
});
