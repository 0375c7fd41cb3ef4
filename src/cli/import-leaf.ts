/**
 * @module Loads a leaf (a subpath with a heavy optional peer) and, when the peer is not installed, fails
 * with the install command instead of Node's bare "Cannot find package".
 */
import { ToolbusError } from '../errors/index.js';

/** The peers each leaf needs, for the install hint. */
export const LEAF_PEERS = {
  nats: ['@nats-io/transport-node', '@nats-io/jetstream', '@nats-io/kv'],
  sqlite: ['better-sqlite3@12'],
  mcp: ['@modelcontextprotocol/client', '@modelcontextprotocol/server', '@modelcontextprotocol/node'],
  openai: ['openai'],
  langchain: ['@langchain/core'],
} as const;

/** Runs `load` (a dynamic import of a leaf); a missing peer becomes an `unsupported` error with the fix. */
export async function importLeaf<T>(leaf: keyof typeof LEAF_PEERS, load: () => Promise<T>): Promise<T> {
  try {
    return await load();
  } catch (error) {
    const e = error as { code?: string; message?: string };
    const missing = LEAF_PEERS[leaf].find((peer) => e.message?.includes(`'${peer.replace(/@\d+$/, '')}'`));
    if (e.code === 'ERR_MODULE_NOT_FOUND' && missing) {
      throw new ToolbusError(
        'unsupported',
        `toolbus/${leaf} needs the optional package ${missing}, which is not installed: ` +
          `npm install ${LEAF_PEERS[leaf].join(' ')}`,
        { cause: error },
      );
    }
    throw error;
  }
}
