/**
 * Saves the README's picture of the web console: the Overview page of a fresh `toolbus up` (embedded,
 * a scripted model) after a few tool calls, in the light theme at 1280×800. Run by hand after a change
 * that shows, not in CI (it needs Chromium: `apt-get install -y chromium`):
 *
 *   node --import tsx scripts/console-screenshot.ts [out.png]   (default: docs/console.png)
 */
import { mkdir } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { ROOT } from '../test/support/cli.js';
import { TOKEN, buildConsole, launchBrowser, startGateway } from '../test/e2e/browser.js';

const out = resolve(process.argv[2] ?? join(ROOT, 'docs/console.png'));

async function invoke(url: string, tool: string, args: unknown): Promise<void> {
  await fetch(`${url}/api/v1/tools/${tool}/invoke`, {
    method: 'POST',
    headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
    body: JSON.stringify(args),
  });
}

await buildConsole();
const gateway = await startGateway(['Hello.']);
const browser = await launchBrowser({ colorScheme: 'light', width: 1280, height: 800 });
try {
  // Calls spread over a few of the chart's 5 s buckets, one of them failing.
  const topics = ['cats', 'dogs', 'owls', 'coffee', 'trains', 'rain', 'maths', 'llamas'];
  for (let round = 0; round < 4; round++) {
    for (const topic of topics.slice(0, 2 + round * 2)) await invoke(gateway.url, 'tell-joke', { topic });
    await invoke(gateway.url, 'tell-dad-joke', { topic: 'bread' });
    if (round === 2) await invoke(gateway.url, 'tell-joke', { topic: 42 });
    await new Promise((r) => setTimeout(r, 5000));
  }
  const page = await browser.context.newPage();
  page.setDefaultTimeout(15_000);
  await page.goto(`${gateway.url}/#/overview`);
  await page.getByLabel('Gateway token').fill(TOKEN);
  await page.getByRole('button', { name: 'Log in' }).click();
  await page.locator('.chart polyline.calls').waitFor();
  await mkdir(dirname(out), { recursive: true });
  await page.screenshot({ path: out });
  process.stdout.write(`saved ${out}\n`);
} finally {
  await browser.close();
  await gateway.stop();
}
