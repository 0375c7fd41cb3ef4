/**
 * The web console end to end: a real `toolbus up` (embedded, a scripted model) and Debian's Chromium
 * driven by playwright-core. Logs in, lists the tools, invokes tell-joke through the generated form,
 * adds a tool on the config page and finds it in the tools list without a reload, watches a call
 * appear in the live-calls table, and chats with the agent. A failing step saves a screenshot to
 * test/e2e/artifacts/.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { ROOT } from '../support/cli.js';
import {
  CHROMIUM,
  TOKEN,
  buildConsole,
  launchBrowser,
  startGateway,
  type Browser,
  type Gateway,
} from './browser.js';

const ARTIFACTS = join(ROOT, 'test/e2e/artifacts');
/** How long one wait for the page may take. */
const WAIT_MS = 10_000;
/** How long one test may take. */
const TEST_MS = 30_000;

const missing = !existsSync(CHROMIUM);
// On CI a missing browser is a failure (.ci/run installs it); on a developer's machine, a skip.
const skip = missing && !process.env.CI ? `no Chromium at ${CHROMIUM} (apt-get install -y chromium)` : false;

let gateway: Gateway | undefined;
let browser: Browser | undefined;
let page: Page;

before(
  async () => {
    if (skip) return;
    await rm(ARTIFACTS, { recursive: true, force: true });
    await Promise.all([buildConsole(), mkdir(ARTIFACTS, { recursive: true })]);
    // The agent's script: tell-joke, then the answer (replayed for every question).
    [gateway, browser] = await Promise.all([
      startGateway([
        { calls: [{ name: 'tell-joke', arguments: { topic: 'cats' } }], thought: 'The joke tool fits.' },
        'Here is a joke about cats, as the tool told it.',
      ]),
      launchBrowser(),
    ]);
    page = await browser.context.newPage();
    page.setDefaultTimeout(WAIT_MS);
  },
  { timeout: 60_000 },
);

after(async () => {
  await Promise.allSettled([browser?.close(), gateway?.stop()]);
});

/** Runs a step of the console; on failure saves a screenshot named after it, then fails. */
function step(name: string, body: () => Promise<void>): void {
  test(name, { skip, timeout: TEST_MS }, async () => {
    try {
      await body();
    } catch (error) {
      const file = join(ARTIFACTS, `${name.replace(/[^a-z0-9]+/gi, '-').toLowerCase()}.png`);
      await page?.screenshot({ path: file, fullPage: true }).catch(() => undefined);
      throw Object.assign(error as Error, { message: `${(error as Error).message}\n(screenshot: ${file})` });
    }
  });
}

/** Polls `check` (a string predicate would be `eval`, which the console's CSP refuses). */
async function until(check: () => Promise<boolean>, what: string): Promise<void> {
  const end = Date.now() + WAIT_MS;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`timed out after ${WAIT_MS} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** The gateway's API, as the test's own client (not the page). */
async function api(path: string, init: RequestInit = {}): Promise<Response> {
  return fetch(`${gateway!.url}${path}`, {
    ...init,
    headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
  });
}

step('a wrong token shows the gateway error; the right one logs in', async () => {
  await page.goto(`${gateway!.url}/#/tools`);
  const field = page.getByLabel('Gateway token');
  await field.fill('not-the-token');
  await page.getByRole('button', { name: 'Log in' }).click();
  await page.getByRole('alert').filter({ hasText: /token/i }).waitFor();
  await field.fill(TOKEN);
  await page.getByRole('button', { name: 'Log in' }).click();
  await page.getByRole('navigation', { name: 'Pages' }).waitFor();
  assert.equal(await page.evaluate("sessionStorage.getItem('toolbus-console-token')"), TOKEN);
});

step('the tools page lists every tool, and the filter narrows it', async () => {
  await page.goto(`${gateway!.url}/#/tools`);
  const tools = page.locator('li.tool');
  await tools.filter({ hasText: 'tell-joke' }).first().waitFor();
  await tools.filter({ hasText: 'tell-dad-joke' }).waitFor();
  await page.getByLabel('Filter tools').fill('dad');
  await until(async () => (await tools.count()) === 1, 'one tool left');
  assert.equal(await tools.getAttribute('data-tool'), 'tell-dad-joke');
});

step('tell-joke is invoked through the form generated from its schema', async () => {
  await page.goto(`${gateway!.url}/#/tools/tell-joke`);
  await page.getByRole('button', { name: 'Invoke tell-joke' }).click();
  await page.getByRole('alert').filter({ hasText: 'topic: required' }).waitFor();
  await page.getByLabel(/^topic/).fill('cats');
  await page.getByRole('button', { name: 'Invoke tell-joke' }).click();
  const result = page.locator('[data-outcome="ok"] .result-text');
  await result.waitFor();
  assert.match(await result.innerText(), /Here's a .* for you/);
  // The same arguments as JSON, edited there, and back in the form.
  await page.getByRole('button', { name: 'Edit as JSON' }).click();
  const json = page.getByLabel('Arguments (JSON)');
  assert.deepEqual(JSON.parse(await json.inputValue()), { topic: 'cats' });
  await json.fill('{"topic": "owls"}');
  await page.getByRole('button', { name: 'Edit in the form' }).click();
  assert.equal(await page.getByLabel(/^topic/).inputValue(), 'owls');
});

step('a call appears in the live-calls table as it happens', async () => {
  await page.goto(`${gateway!.url}/#/calls`);
  await page.locator('.live-state.live').waitFor();
  const answer = await api('/api/v1/tools/tell-dad-joke/invoke', {
    method: 'POST',
    body: JSON.stringify({ topic: 'live calls' }),
  });
  assert.equal(answer.status, 200);
  const { callId } = (await answer.json()) as { callId: string };
  const row = page.locator(`tr[data-call="${callId}"]`);
  await row.and(page.locator('[data-status="ok"]')).waitFor();
  // Newest first.
  assert.equal(await page.locator('table.calls tbody tr').first().getAttribute('data-call'), callId);
  await row.getByRole('button', { name: /Details/ }).click();
  const detail = page.locator('#call-detail');
  await detail.getByText('"topic": "live calls"').waitFor();
});

step('a tool added on the config page appears in the tools list without a reload', async () => {
  await page.goto(`${gateway!.url}/#/config`);
  // Set on the page now: a reload would lose it.
  await page.evaluate('window.e2eMark = 1');
  await page.getByRole('button', { name: 'New item' }).click();
  await page.getByLabel('Type', { exact: true }).fill('tool');
  await page.getByLabel('Key', { exact: true }).fill('e2e-joke');
  await page.getByLabel('Value', { exact: true }).fill(
    JSON.stringify({
      type: 'tool-service',
      name: 'e2e-joke',
      description: 'A joke added by the console test',
      service: 'joke-service',
      style: 'one-liner',
      arguments: [{ name: 'topic', type: 'string', description: 'The topic' }],
    }),
  );
  await page.getByRole('button', { name: 'Check and save' }).click();
  await page.getByRole('status').filter({ hasText: 'Saved tool/e2e-joke' }).waitFor();
  await page.getByRole('navigation', { name: 'Pages' }).getByRole('link', { name: 'Tools' }).click();
  await page.locator('li.tool[data-tool="e2e-joke"]').waitFor();
  assert.equal(await page.evaluate('window.e2eMark'), 1, 'no reload');
});

step('the agent streams its thought, the tool call and the answer', async () => {
  await page.goto(`${gateway!.url}/#/agent`);
  await page.getByLabel('Your question').fill('Tell me a joke about cats');
  await page.getByRole('button', { name: 'Send' }).click();
  const turn = page.locator('li.turn').last();
  await turn.and(page.locator('[data-status="done"]')).waitFor();
  await turn.locator('.step.thought').getByText('The joke tool fits.').waitFor();
  const call = turn.locator('.step.tool');
  await call.locator('summary').click(); // closed once it has its observation
  assert.match(await call.locator('.observation').innerText(), /Here's a .* for you/);
  await turn
    .locator('.message.answer')
    .getByText('Here is a joke about cats, as the tool told it.')
    .waitFor();
});

step('saving an item changed since it was loaded offers to reload it', async () => {
  await page.goto(`${gateway!.url}/#/config/tool/tell-joke`);
  const editor = page.getByLabel('Value of tool/tell-joke');
  await editor.waitFor();
  const loaded = JSON.parse(await editor.inputValue()) as Record<string, unknown>;
  // Someone else saves it meanwhile.
  const item = (await (await api('/api/v1/config/tool/tell-joke')).json()) as { revision: number };
  const put = await api(`/api/v1/config/tool/tell-joke?ifRevision=${item.revision}`, {
    method: 'PUT',
    body: JSON.stringify({ ...loaded, description: 'Changed by someone else' }),
  });
  assert.equal(put.status, 200);
  await editor.fill(JSON.stringify({ ...loaded, description: 'Changed in the console' }, null, 2));
  await page.getByRole('button', { name: 'Check and save' }).click();
  await page.getByText('changed since you loaded it').waitFor();
  await page.getByRole('button', { name: 'Reload', exact: true }).last().click();
  await until(
    async () => (await editor.inputValue()).includes('Changed by someone else'),
    'the reloaded item',
  );
});

/** A 1×1 PNG. */
const PIXEL =
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==';

/** A tool with every kind of field the form generates, served in place of the gateway's list. */
const REPORT_TOOL = {
  name: 'build-report',
  description: 'Build a report',
  source: 'announced',
  needsApproval: false,
  problems: [],
  parameters: {
    type: 'object',
    properties: {
      title: { type: 'string', description: 'The title' },
      format: { type: 'string', enum: ['pdf', 'html'] },
      pages: { type: 'integer', minimum: 1 },
      draft: { type: 'boolean' },
      author: {
        type: 'object',
        properties: { name: { type: 'string' }, email: { type: 'string' } },
        required: ['name'],
      },
      tags: { type: 'array', items: { type: 'string' } },
      sections: {
        type: 'array',
        items: {
          type: 'object',
          properties: { heading: { type: 'string' }, words: { type: 'number' } },
          required: ['heading'],
        },
      },
      notes: { type: 'string' },
    },
    required: ['title', 'format'],
  },
};

step('the invoke form follows the schema, streams progress and shows images (mocked tool)', async () => {
  let sent: unknown;
  await page.route('**/api/v1/tools?detail=1*', (route) => route.fulfill({ json: { tools: [REPORT_TOOL] } }));
  await page.route('**/api/v1/live-calls/events', (route) =>
    route.fulfill({
      contentType: 'text/event-stream',
      body:
        'event: progress\ndata: {"callId":"c1","tool":"build-report","progress":1,"total":2,"message":"section 1 written"}\n\n' +
        'event: progress\ndata: {"callId":"c1","tool":"other-tool","progress":1,"message":"not ours"}\n\n',
    }),
  );
  await page.route('**/api/v1/tools/build-report/invoke', async (route) => {
    sent = route.request().postDataJSON();
    await new Promise((resolve) => setTimeout(resolve, 800));
    await route.fulfill({
      json: {
        name: 'build-report',
        callId: 'c1',
        content: 'Report ready',
        isError: false,
        structured: { pages: 3 },
        parts: [
          { type: 'text', text: 'Report ready' },
          { type: 'image', data: PIXEL, mimeType: 'image/png' },
        ],
      },
    });
  });
  try {
    await page.goto(`${gateway!.url}/#/tools/build-report`);
    await page.locator('#arg-title').fill('Q3');
    await page.locator('#arg-format').selectOption({ label: 'html' });
    await page.locator('#arg-pages').fill('3');
    await page.locator('#arg-draft').check();
    await page.locator('#arg-author-name').fill('Ada');
    await page.getByRole('button', { name: 'Add tags item' }).click();
    await page.getByRole('button', { name: 'Add tags item' }).click();
    await page.locator('#arg-tags-0').fill('a');
    await page.locator('#arg-tags-1').fill('b');
    await page.getByRole('button', { name: 'Add sections item' }).click();
    await page.locator('#arg-sections-0-heading').fill('Intro');
    await page.locator('#arg-sections-0-words').fill('120');
    await page.getByRole('button', { name: 'Add tags item' }).click();
    await page.getByRole('button', { name: 'Remove tags item 3' }).click();
    await page.getByRole('button', { name: 'Invoke build-report' }).click();
    await page.getByText('section 1 written').waitFor();
    assert.equal(await page.getByText('not ours').count(), 0, 'only this tool’s progress');
    await page.locator('[data-outcome="ok"]').waitFor();
    assert.deepEqual(sent, {
      title: 'Q3',
      format: 'html',
      pages: 3,
      draft: true,
      author: { name: 'Ada' },
      tags: ['a', 'b'],
      sections: [{ heading: 'Intro', words: 120 }],
    });
    const image = page.locator('img.result-image');
    assert.match((await image.getAttribute('src')) ?? '', /^data:image\/png;base64,iVBOR/);
    await page.getByLabel('Structured result').getByText('"pages": 3').waitFor();
  } finally {
    await page.unrouteAll();
  }
});

step('the agent, audit and approvals pages say what the gateway lacks (mocked 503 and 404s)', async () => {
  const error = (status: number, code: string, message: string) => ({
    status,
    json: { error: { code, message } },
  });
  await page.route('**/api/v1/agent', (route) =>
    route.fulfill(error(503, 'no-model', 'no model is configured, so the agent is not running')),
  );
  await page.route('**/api/v1/audit?*', (route) =>
    route.fulfill(error(404, 'not-found', 'this gateway serves no audit log')),
  );
  await page.route('**/api/v1/approvals?*', (route) =>
    route.fulfill(error(404, 'not-found', 'this gateway keeps no runs or approvals')),
  );
  try {
    await page.goto(`${gateway!.url}/#/agent`);
    await page.getByLabel('Your question').fill('Hello?');
    await page.getByRole('button', { name: 'Send' }).click();
    await page.getByText('The agent is not running.').waitFor();
    await page.getByText('no model is configured, so the agent is not running').waitFor();
    await page.goto(`${gateway!.url}/#/audit`);
    await page.getByText('No audit log is configured').waitFor();
    await page.goto(`${gateway!.url}/#/approvals`);
    await page.getByText('Approvals need the agent with a run store').waitFor();
  } finally {
    await page.unrouteAll();
  }
});

step('an item the registry would skip is saved only after a confirm, and deleted after another', async () => {
  await page.goto(`${gateway!.url}/#/config/tool`);
  await page.getByRole('button', { name: 'New item' }).click();
  await page.getByLabel('Key', { exact: true }).fill('e2e-bogus');
  await page.getByLabel('Value', { exact: true }).fill('{"type": "bogus"}');
  await page.getByRole('button', { name: 'Check and save' }).click();
  await page.getByText("unknown tool type 'bogus'").waitFor();
  assert.equal((await api('/api/v1/config/tool/e2e-bogus')).status, 404, 'not saved before the confirm');
  await page.getByRole('button', { name: 'Save anyway' }).click();
  await page.getByRole('status').filter({ hasText: 'Saved tool/e2e-bogus' }).waitFor();
  assert.equal((await api('/api/v1/config/tool/e2e-bogus')).status, 200);
  await page.getByRole('button', { name: 'Delete' }).click();
  await page.getByRole('button', { name: 'Yes, delete it' }).click();
  await page.getByRole('link', { name: 'e2e-bogus' }).waitFor({ state: 'detached' });
  assert.equal((await api('/api/v1/config/tool/e2e-bogus')).status, 404);
});

step('a refused token anywhere returns to the login page, and Log out ends the session', async () => {
  await page.evaluate("sessionStorage.setItem('toolbus-console-token', 'a-token-since-revoked')");
  await page.goto(`${gateway!.url}/#/overview`);
  await page.reload();
  await page.getByText('The gateway refused the token').waitFor();
  await page.getByLabel('Gateway token').fill(TOKEN);
  await page.getByRole('button', { name: 'Log in' }).click();
  await page.getByRole('heading', { name: 'Overview' }).waitFor();
  await page.getByRole('button', { name: 'Log out' }).click();
  await page.getByLabel('Gateway token').waitFor();
  assert.equal(await page.evaluate("sessionStorage.getItem('toolbus-console-token')"), null);
});
