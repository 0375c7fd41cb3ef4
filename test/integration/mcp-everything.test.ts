/**
 * `mcpServerTools` against the published reference server `@modelcontextprotocol/server-everything`
 * (from the npm registry, a dev dependency) over stdio.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mcpServerTools } from '../../src/adapters/mcp/index.js';
import { everythingParams, isAlive, waitFor } from '../fixtures/mcp-spawn.js';

test(
  'server-everything over stdio: tools, text, sums, images, resources, progress',
  { timeout: 60_000 },
  async (t) => {
    const mcp = await mcpServerTools({
      ...everythingParams(),
      // Short on purpose: the long-running tool below only finishes because its progress resets this.
      toolTimeoutsMs: { 'trigger-long-running-operation': 1500 },
    });
    const pid = mcp.session.childPid;
    t.after(async () => {
      await mcp.close();
      if (pid !== null)
        assert.ok(await waitFor(() => !isAlive(pid), 10_000), 'server-everything still running');
    });

    const names = mcp.list().map((tool) => tool.name);
    for (const name of [
      'echo',
      'get-sum',
      'get-tiny-image',
      'get-resource-reference',
      'get-resource-links',
    ]) {
      assert.ok(names.includes(name), `server-everything lacks '${name}': ${names.join(', ')}`);
    }
    assert.equal(mcp.problems.length, 0, JSON.stringify(mcp.problems));
    assert.equal(mcp.get('echo')?.annotations?.readOnly, true);

    const echo = await mcp.call('echo', { message: 'hello everything' });
    assert.equal(echo.isError, false, echo.content);
    assert.match(echo.content, /hello everything/);

    const sum = await mcp.call('get-sum', { a: 2, b: 40 });
    assert.equal(sum.isError, false, sum.content);
    assert.match(sum.content, /42/);

    const image = await mcp.call('get-tiny-image', {});
    assert.equal(image.isError, false, image.content);
    assert.match(image.content, /\[image: image\/png, \d+ bytes\]/);

    const resource = await mcp.call('get-resource-reference', { resourceType: 'Text', resourceId: 1 });
    assert.equal(resource.isError, false, resource.content);
    assert.match(resource.content, /\[resource: \S+/);

    const links = await mcp.call('get-resource-links', { count: 2 });
    assert.equal(links.isError, false, links.content);
    assert.equal(links.content.match(/\[resource link: /g)?.length, 2);

    const bad = await mcp.call('get-sum', { a: 'two' });
    assert.equal(bad.isError, true);
    assert.equal(bad.error?.code, 'invalid-arguments');

    // 3 s in total, a progress notification every second: longer than the 1.5 s timeout, yet it completes.
    const long = await mcp.get('trigger-long-running-operation')?.runJson({ duration: 3, steps: 3 });
    assert.match(String(long), /completed/i);
  },
);
