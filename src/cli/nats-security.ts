/**
 * @module The NATS security flags every `--nats` command takes (`--nats-user`, `--nats-pass`,
 * `--nats-token`, `--nats-creds`, `--nats-nkey`, `--nats-tls-ca`, `--nats-tls-cert`, `--nats-tls-key`)
 * and their `TOOLBUS_NATS_*` variables: parsed here, the files read once at the first connection, and a
 * refusal by the server explained in terms of the flag to fix. No message carries a secret, a file's
 * contents or a path beyond the file's name.
 */
import { readFileSync } from 'node:fs';
import { basename, resolve } from 'node:path';
import type { NatsConnectOptions, NatsSecurityProblem } from '../bus/nats/index.js';
import { ToolbusError, isToolbusError } from '../errors/index.js';
import { UsageError, type CliIO } from './command.js';

/** The NATS security flags, for `parseCommandArgs`. */
export const NATS_SECURITY_FLAGS = {
  'nats-user': { type: 'string' },
  'nats-pass': { type: 'string' },
  'nats-token': { type: 'string' },
  'nats-creds': { type: 'string' },
  'nats-nkey': { type: 'string' },
  'nats-tls-ca': { type: 'string' },
  'nats-tls-cert': { type: 'string' },
  'nats-tls-key': { type: 'string' },
} as const;

type SecurityFlag = keyof typeof NATS_SECURITY_FLAGS;

/** The values `parseCommandArgs` gives for {@link NATS_SECURITY_FLAGS}. */
export type NatsSecurityFlagValues = { readonly [K in SecurityFlag]?: string | undefined };

/** Help text for {@link NATS_SECURITY_FLAGS}, one block shared by every `--nats` command. */
export const NATS_SECURITY_HELP = `NATS security (with --nats; each flag also as a variable, e.g. TOOLBUS_NATS_PASS for
--nats-pass, which the flag overrides; prefer the variables for secrets, as flags show in ps):
  --nats-user USER, --nats-pass PASS
                     user and password (or in the URL: nats://USER:PASS@host:4222)
  --nats-token TOKEN a token (or in the URL: nats://TOKEN@host:4222)
  --nats-creds FILE  a credentials file: a user JWT and its nkey seed
  --nats-nkey FILE   an nkey seed file
  --nats-tls-ca FILE the CA certificates (PEM) the server's certificate is checked against;
                     TLS is then required, as with a tls:// URL
  --nats-tls-cert FILE, --nats-tls-key FILE
                     a client certificate and its key (PEM), for a server that verifies clients`;

const AUTH_FLAGS = ['nats-user', 'nats-pass', 'nats-token', 'nats-creds', 'nats-nkey'] as const;
const FILE_FLAGS = ['nats-creds', 'nats-nkey', 'nats-tls-ca', 'nats-tls-cert', 'nats-tls-key'] as const;
type FileFlag = (typeof FILE_FLAGS)[number];

/** One setting and where it came from: `--nats-pass` or `TOOLBUS_NATS_PASS`. */
interface Setting {
  flag: SecurityFlag;
  value: string;
  source: string;
  fromFlag: boolean;
}

/** A flag's variable: `nats-tls-ca` → `TOOLBUS_NATS_TLS_CA`. */
function variableOf(flag: SecurityFlag): string {
  return `TOOLBUS_${flag.replace(/-/g, '_').toUpperCase()}`;
}

/** `nats://user:pass@host` → `nats://host`, for messages, banners and logs. */
export function displayNatsUrl(url: string): string {
  return url.replace(/^([a-z][a-z0-9+.-]*:\/\/)[^/@]*@/i, '$1');
}

function urlHasCredentials(url: string): boolean {
  return displayNatsUrl(url) !== url;
}

/**
 * What the NATS security flags and variables ask for. The files are read at the first
 * {@link NatsSecurity.connectOptions} call and kept, so the connections of one process share one read.
 */
export class NatsSecurity {
  readonly #settings: Partial<Record<SecurityFlag, Setting>>;
  readonly #cwd: string;
  readonly #files = new Map<FileFlag, string>();

  private constructor(settings: Partial<Record<SecurityFlag, Setting>>, cwd: string) {
    this.#settings = settings;
    this.#cwd = cwd;
  }

  /**
   * Reads the flags, each falling back to its `TOOLBUS_NATS_*` variable.
   * @throws UsageError for an empty flag, a password without a user, two ways to authenticate, or a
   * client certificate without its key (or the other way round).
   */
  static fromFlags(values: NatsSecurityFlagValues, io: Pick<CliIO, 'env' | 'cwd'>): NatsSecurity {
    const settings: Partial<Record<SecurityFlag, Setting>> = {};
    for (const flag of Object.keys(NATS_SECURITY_FLAGS) as SecurityFlag[]) {
      const given = values[flag];
      if (given === '') throw new UsageError(`--${flag} needs a value`);
      const variable = variableOf(flag);
      if (given !== undefined) settings[flag] = { flag, value: given, source: `--${flag}`, fromFlag: true };
      else if (io.env[variable]) {
        settings[flag] = { flag, value: io.env[variable], source: variable, fromFlag: false };
      }
    }
    const { 'nats-user': user, 'nats-pass': pass } = settings;
    if (pass && !user)
      throw new UsageError(`${pass.source} needs a user: give --nats-user (or TOOLBUS_NATS_USER)`);
    const ways = [user, settings['nats-token'], settings['nats-creds'], settings['nats-nkey']].filter(
      (s): s is Setting => s !== undefined,
    );
    if (ways.length > 1) {
      throw new UsageError(
        `${ways[0]!.source} and ${ways[1]!.source} are two ways to authenticate to NATS: give one of them`,
      );
    }
    const { 'nats-tls-cert': cert, 'nats-tls-key': key } = settings;
    if ((cert === undefined) !== (key === undefined)) {
      throw new UsageError(
        cert
          ? `${cert.source} needs its private key: give --nats-tls-key (or TOOLBUS_NATS_TLS_KEY)`
          : `${key!.source} needs its certificate: give --nats-tls-cert (or TOOLBUS_NATS_TLS_CERT)`,
      );
    }
    return new NatsSecurity(settings, io.cwd);
  }

  /**
   * The `auth` and `tls` options for a connection to `url`. Credentials written in the URL replace the
   * auth variables; an auth flag next to them is an error.
   * @throws UsageError naming the flag when a file cannot be read, or when the URL and a flag both carry
   * credentials.
   */
  connectOptions(url: string): Pick<NatsConnectOptions, 'auth' | 'tls'> {
    const s = this.#settings;
    const options: Pick<NatsConnectOptions, 'auth' | 'tls'> = {};
    if (urlHasCredentials(url)) {
      const flag = AUTH_FLAGS.map((f) => s[f]).find((setting) => setting?.fromFlag);
      if (flag) {
        throw new UsageError(
          `the --nats URL carries credentials and ${flag.source} gives others: give them once`,
        );
      }
    } else if (s['nats-user']) {
      options.auth = {
        user: s['nats-user'].value,
        ...(s['nats-pass'] ? { password: s['nats-pass'].value } : {}),
      };
    } else if (s['nats-token']) options.auth = { token: s['nats-token'].value };
    else if (s['nats-creds']) options.auth = { creds: this.#read('nats-creds') };
    else if (s['nats-nkey']) options.auth = { nkeySeed: this.#read('nats-nkey') };
    if (s['nats-tls-ca'] || s['nats-tls-cert']) {
      options.tls = {
        ...(s['nats-tls-ca'] ? { ca: this.#read('nats-tls-ca') } : {}),
        ...(s['nats-tls-cert'] ? { cert: this.#read('nats-tls-cert'), key: this.#read('nats-tls-key') } : {}),
      };
    }
    return options;
  }

  /**
   * `error` with what to do about it when it is a `NatsSecurityError` from connecting to `url` (the flag
   * or variable to check or give), as a `ToolbusError` of the same code; any other error as it is.
   */
  explain(error: unknown, url: string): unknown {
    if (!isToolbusError(error)) return error;
    const { problem } = error as { problem?: NatsSecurityProblem };
    if (!problem) return error;
    const hint = this.#hint(problem, urlHasCredentials(url));
    return new ToolbusError(error.code, hint ? `${error.message}: ${hint}` : error.message, { cause: error });
  }

  #hint(problem: NatsSecurityProblem, urlCredentials: boolean): string | undefined {
    const s = this.#settings;
    switch (problem) {
      case 'credentials-refused':
      case 'credentials-expired': {
        if (urlCredentials) return 'check the credentials in the --nats URL';
        const used = [s['nats-user'], s['nats-pass'], s['nats-token'], s['nats-creds'], s['nats-nkey']]
          .filter((setting): setting is Setting => setting !== undefined)
          .map((setting) => this.#name(setting));
        return `check ${used.join(' and ')}`;
      }
      case 'credentials-required':
        return (
          'give --nats-user and --nats-pass, --nats-token, --nats-creds FILE or --nats-nkey FILE ' +
          '(or their TOOLBUS_NATS_* variables)'
        );
      case 'credentials-invalid':
        return `check ${this.#name(s['nats-creds'] ?? s['nats-nkey'])}`;
      case 'tls-untrusted':
        return s['nats-tls-ca']
          ? `check ${this.#name(s['nats-tls-ca'])}: it must hold the CA that signed the server's certificate, ` +
              'and the URL must name a host the certificate names'
          : 'give the CA that signed it with --nats-tls-ca FILE (or TOOLBUS_NATS_TLS_CA)';
      case 'tls-unavailable':
        return 'use a nats:// URL without --nats-tls-* (or TOOLBUS_NATS_TLS_*), or enable TLS on the server';
      case 'tls-client-certificate-required':
        return 'give --nats-tls-cert FILE and --nats-tls-key FILE (or TOOLBUS_NATS_TLS_CERT and TOOLBUS_NATS_TLS_KEY)';
      case 'tls-client-certificate-refused':
        return `check ${this.#name(s['nats-tls-cert'])}`;
      case 'tls-ca-invalid':
        return `check ${this.#name(s['nats-tls-ca'])}`;
      case 'tls-certificate-invalid':
        return `check ${this.#name(s['nats-tls-cert'])}`;
      case 'tls-key-invalid':
        return `check ${this.#name(s['nats-tls-key'])}`;
      default:
        return undefined;
    }
  }

  /** `--nats-creds (user.creds)` for a file, `TOOLBUS_NATS_PASS` for a value: never the value itself. */
  #name(setting: Setting | undefined): string {
    if (!setting) return 'the NATS security flags';
    return (FILE_FLAGS as readonly string[]).includes(setting.flag)
      ? `${setting.source} (${basename(setting.value)})`
      : setting.source;
  }

  #read(flag: FileFlag): string {
    const cached = this.#files.get(flag);
    if (cached !== undefined) return cached;
    const setting = this.#settings[flag]!;
    let text: string;
    try {
      text = readFileSync(resolve(this.#cwd, setting.value), 'utf8');
    } catch (error) {
      const code = (error as { code?: string }).code;
      const why =
        code === 'ENOENT'
          ? 'no such file'
          : code === 'EACCES'
            ? 'permission denied'
            : code === 'EISDIR'
              ? 'it is a folder'
              : (code ?? 'unreadable');
      throw new UsageError(`${setting.source}: cannot read '${basename(setting.value)}' (${why})`);
    }
    this.#files.set(flag, text);
    return text;
  }
}

/**
 * Connects with the security settings (the `TOOLBUS_NATS_*` variables alone when there are none),
 * turning a refusal into a message that names the flag to fix.
 */
export async function connectSecurely<T>(
  security: NatsSecurity | undefined,
  url: string,
  io: Pick<CliIO, 'env' | 'cwd'>,
  connect: (options: Pick<NatsConnectOptions, 'auth' | 'tls'>) => Promise<T>,
): Promise<T> {
  const settings = security ?? NatsSecurity.fromFlags({}, io);
  try {
    return await connect(settings.connectOptions(url));
  } catch (error) {
    throw settings.explain(error, url);
  }
}
