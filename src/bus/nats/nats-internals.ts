/**
 * @module The one place that relies on nats.js private behaviour, and the version check that guards it.
 *
 * Two shortcuts save work on every message:
 * - publish: the client is handed a header block already in wire form, as an object whose only method is
 *   `encode()`. nats.js's `ProtocolHandler.publish` calls nothing else on `options.headers`, so the
 *   client's `MsgHdrsImpl` (a map of arrays per message, encoded again by `TextEncoder`) is skipped;
 * - receive: the header block is read straight from the message's private `_msg.hdr` (its length) and
 *   `_rdata` (header and body bytes), instead of building the client's `MsgHdrsImpl` through `msg.headers`.
 *
 * Both were read in the nats.js sources of the versions in {@link CHECKED_NATS_CORE_VERSIONS}. At load,
 * this module reads the version of the installed `@nats-io/nats-core` (the copy `@nats-io/transport-node`
 * loads). With any other version, or when the packages cannot be found (a bundle that inlines nats.js),
 * every bus uses the public API only: `MsgHdrsImpl.fromRecord` to publish and `msg.headers` to read.
 * `test/integration/nats-internals.test.ts` fails while the installed version is not a checked one, so an
 * upgrade is noticed: re-read `core/src/msg.ts` (`MsgImpl`) and `ProtocolHandler.publish` in
 * `core/src/protocol.ts` at the new tag, then add the version below.
 */
import { readFileSync } from 'node:fs';
// Renamed: bundles often declare their own `createRequire` in a banner (esbuild's ESM recipe).
import { createRequire as requireFrom } from 'node:module';
import { dirname, join } from 'node:path';
import type { Msg, MsgHdrs } from '@nats-io/transport-node';

/** `@nats-io/nats-core` releases whose `MsgImpl` fields and `publish` were checked against this module. */
export const CHECKED_NATS_CORE_VERSIONS: readonly string[] = Object.freeze([
  '3.0.0',
  '3.0.2',
  '3.1.0',
  '3.2.0',
  '3.3.0',
  '3.3.1',
  '3.4.0',
]);

/** What the load-time check found. */
export interface NatsInternalsCheck {
  /** Whether buses use the shortcuts (unless told not to with {@link NATS_PUBLIC_API_ONLY}). */
  readonly enabled: boolean;
  /** The installed `@nats-io/transport-node` version, when found. */
  readonly transportNodeVersion: string | undefined;
  /** The installed `@nats-io/nats-core` version, when found. */
  readonly natsCoreVersion: string | undefined;
  /** Why the shortcuts are on or off, naming the versions. */
  readonly reason: string;
}

/** The result of the check, made once when this module loads. */
export const NATS_INTERNALS: NatsInternalsCheck = Object.freeze(checkInstalledNats());

/**
 * Not part of the package's API: a `NatsBus` option key that makes the bus use the public client API
 * only, whatever the version check found. For tests of that path.
 */
export const NATS_PUBLIC_API_ONLY: unique symbol = Symbol('toolbus.nats.publicApiOnly');

/** `NatsBusOptions` plus the test-only switch (pass it where `NatsBusOptions` are expected). */
export interface InternalNatsBusOptions {
  [NATS_PUBLIC_API_ONLY]?: boolean;
}

/** Whether a bus built with `options` uses the shortcuts. */
export function usesClientInternals(options: object): boolean {
  return NATS_INTERNALS.enabled && (options as InternalNatsBusOptions)[NATS_PUBLIC_API_ONLY] !== true;
}

/**
 * A header block in wire form, published as the client's `MsgHdrs` (see the module comment). Only a
 * bus whose check passed may hand it to the client.
 */
export class PreEncodedHeaders {
  readonly #bytes: Uint8Array;
  constructor(bytes: Uint8Array) {
    this.#bytes = bytes;
  }
  /** The block's size, framing included (the client counts it against max_payload). */
  get byteLength(): number {
    return this.#bytes.byteLength;
  }
  /** The one method nats.js calls on the headers it publishes. */
  encode(): Uint8Array {
    return this.#bytes;
  }
  /** This object as the type `publish` takes. */
  get headers(): MsgHdrs {
    return this as unknown as MsgHdrs;
  }
}

/** The private fields of a received nats.js 3.x `MsgImpl` that hold the raw header block. */
interface RawMsg {
  _msg?: { hdr?: unknown };
  _rdata?: unknown;
}

/**
 * A received message's header block as bytes, read from the client's private fields; `null` when the
 * message has no headers; `undefined` when the fields are not there as expected (the caller then reads
 * `msg.headers`).
 */
export function rawHeaderBlock(msg: Msg): Uint8Array | null | undefined {
  const raw = msg as unknown as RawMsg;
  const length = raw._msg?.hdr;
  const data = raw._rdata;
  if (typeof length !== 'number' || !(data instanceof Uint8Array)) return undefined;
  if (length < 0) return null;
  return length <= data.byteLength ? data.subarray(0, length) : undefined;
}

function checkInstalledNats(): NatsInternalsCheck {
  let transportNodeVersion: string | undefined;
  let natsCoreVersion: string | undefined;
  try {
    const require = requireFrom(import.meta.url);
    // The entry `import '@nats-io/transport-node'` loads, and the nats-core that entry resolves.
    const transportEntry = require.resolve('@nats-io/transport-node');
    transportNodeVersion = packageVersion(transportEntry, '@nats-io/transport-node');
    natsCoreVersion = packageVersion(
      requireFrom(transportEntry).resolve('@nats-io/nats-core'),
      '@nats-io/nats-core',
    );
  } catch {
    // Not resolvable from here (e.g. bundled): the versions stay unknown.
  }
  const found =
    `@nats-io/transport-node ${transportNodeVersion ?? '(not found)'}, ` +
    `@nats-io/nats-core ${natsCoreVersion ?? '(not found)'}`;
  if (natsCoreVersion !== undefined && CHECKED_NATS_CORE_VERSIONS.includes(natsCoreVersion)) {
    return {
      enabled: true,
      transportNodeVersion,
      natsCoreVersion,
      reason: `${found}: a checked version, headers are read and written without the client's header object`,
    };
  }
  return {
    enabled: false,
    transportNodeVersion,
    natsCoreVersion,
    reason:
      `${found}: not a checked version (${CHECKED_NATS_CORE_VERSIONS.join(', ')}), ` +
      `headers go through the client's public API`,
  };
}

/** The `version` of the package named `name` that contains `file`, looking up from its folder. */
function packageVersion(file: string, name: string): string | undefined {
  let dir = dirname(file);
  for (;;) {
    try {
      const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as {
        name?: unknown;
        version?: unknown;
      };
      if (pkg.name === name) return typeof pkg.version === 'string' ? pkg.version : undefined;
    } catch {
      // No package.json here: keep looking up.
    }
    const parent = dirname(dir);
    if (parent === dir) return undefined;
    dir = parent;
  }
}
