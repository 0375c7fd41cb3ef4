/**
 * @module An MCP HTTP handler on a real HTTP server on 127.0.0.1 (a free port) for a test, closed with
 * the handler when the test ends.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { McpHttpHandler } from '../../src/adapters/mcp/index.js';

/** Mounts `handler` on a new server on 127.0.0.1, stopped after the test; resolves with its `/mcp` URL. */
export async function listenMcp(
  t: { after: (fn: () => Promise<void>) => void },
  handler: McpHttpHandler,
): Promise<string> {
  const http = createServer((req, res) => void handler(req, res));
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  t.after(async () => {
    await handler.close();
    http.closeAllConnections();
    await new Promise<void>((resolve) => http.close(() => resolve()));
  });
  return `http://127.0.0.1:${(http.address() as AddressInfo).port}/mcp`;
}
