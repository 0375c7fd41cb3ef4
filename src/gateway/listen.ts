/**
 * @module Starting an HTTP server: the gateway and the metrics listener listen the same way and report
 * the address they got (a port of 0 picks a free one) as a URL.
 */
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * Listens on `host:port` and resolves with the bound address and its base URL (`http://127.0.0.1:8888`,
 * `http://[::1]:8888`). Rejects with the server's error, e.g. `EADDRINUSE`.
 */
export async function listenHttp(
  server: Server,
  port: number,
  host: string,
): Promise<{ address: string; url: string }> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address() as AddressInfo;
  const shownHost = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  return { address: address.address, url: `http://${shownHost}:${address.port}` };
}
