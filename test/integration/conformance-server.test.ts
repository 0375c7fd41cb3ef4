/**
 * The conformance fixture server (`test/conformance/server.ts`) as the suite runs it: a child process
 * that prints its MCP URL as the first line, serves the suite's tools, resources and prompts to the
 * official client behind toolbus's gateway (a foreign Host is refused), and exits 0 on SIGTERM.
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { ROOT } from '../support/cli.js';
import { rawRequest } from '../support/raw-http.js';

test(
  'the conformance fixture server serves the suite’s fixtures and stops on SIGTERM',
  { timeout: 60_000 },
  async (t) => {
    const child = spawn(process.execPath, ['--import', 'tsx', join(ROOT, 'test/conformance/server.ts')], {
      cwd: ROOT,
      env: { ...process.env, PORT: '0' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    t.after(() => {
      if (child.exitCode === null) child.kill('SIGKILL');
    });
    const firstLine = await new Promise<string>((resolve, reject) => {
      const lines = createInterface({ input: child.stdout });
      lines.once('line', resolve);
      child.once('exit', (code) => reject(new Error(`exited early with ${code}`)));
    });
    assert.match(firstLine, /^http:\/\/127\.0\.0\.1:\d+\/mcp$/);

    const client = new Client(
      { name: 'fixture-check', version: '1' },
      { capabilities: { elicitation: {}, sampling: {} } },
    );
    await client.connect(new StreamableHTTPClientTransport(new URL(firstLine)));
    const names = (await client.listTools()).tools.map((tool) => tool.name);
    for (const name of [
      'test_simple_text',
      'test_elicitation',
      'test_sampling',
      'json_schema_2020_12_tool',
    ]) {
      assert.ok(names.includes(name), `${name} in ${names.join(', ')}`);
    }
    const image = await client.callTool({ name: 'test_image_content', arguments: {} });
    assert.equal((image.content as { type: string }[])[0]?.type, 'image');
    assert.deepEqual(
      (await client.listResources()).resources.map((r) => r.uri),
      ['test://static-text', 'test://static-binary', 'test://watched-resource'],
    );
    const templated = await client.readResource({ uri: 'test://template/123/data' });
    assert.match((templated.contents[0] as { text: string }).text, /Data for ID: 123/);
    assert.equal((await client.listPrompts()).prompts.length, 4);
    await client.close();

    const foreign = await rawRequest(firstLine.replace(/\/mcp$/, ''), '/mcp', {
      method: 'POST',
      headers: {
        host: 'evil.example.com',
        origin: 'http://evil.example.com',
        'content-type': 'application/json',
      },
      body: '{}',
    });
    assert.equal(foreign.status, 403);

    const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
    child.kill('SIGTERM');
    assert.equal(await exited, 0);
  },
);
