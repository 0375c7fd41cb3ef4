/**
 * @module NATS authentication and TLS for `connectNats`: the typed options, credentials written in a
 * server URL, and {@link NatsSecurityError}, what a refusal by the server or a TLS failure becomes. Its
 * messages say what is wrong and never carry a password, a token, a key or a file's contents.
 */
import { X509Certificate, createPrivateKey, type KeyObject } from 'node:crypto';
import { connect as connectTcp } from 'node:net';
import {
  credsAuthenticator,
  nkeyAuthenticator,
  tokenAuthenticator,
  usernamePasswordAuthenticator,
  type Authenticator,
  type ServerInfo,
  type TlsOptions,
} from '@nats-io/transport-node';
import { ToolbusError, type ToolbusErrorCode } from '../../errors/index.js';

/** A user name and password (`authorization { users: [...] }` on the server). */
export interface NatsUserAuth {
  user: string;
  /** @default none */
  password?: string;
}
/** A token (`authorization { token: ... }` on the server). */
export interface NatsTokenAuth {
  token: string;
}
/** The text of a `.creds` file: a user JWT and its nkey seed (decentralized auth, `nsc`). */
export interface NatsCredsAuth {
  creds: string;
}
/** The text of an nkey seed file (`SU…`; `authorization { users: [{ nkey: U… }] }` on the server). */
export interface NatsNkeyAuth {
  nkeySeed: string;
}
/** How a client proves who it is: exactly one of the four. */
export type NatsAuth = NatsUserAuth | NatsTokenAuth | NatsCredsAuth | NatsNkeyAuth;

/**
 * TLS for a NATS connection, as PEM text (not file paths). Given, even as `{}`, it requires TLS: a
 * server without TLS is refused. Without it TLS is still used when the server asks for it.
 */
export interface NatsTlsOptions {
  /** The CA certificates that sign the server's certificate. @default Node's bundled CAs */
  ca?: string;
  /** A client certificate, for a server that verifies clients (`verify: true`); needs `key`. @default none */
  cert?: string;
  /** The client certificate's private key. @default none */
  key?: string;
}

/** What {@link NatsSecurityError} reports. */
export const NatsSecurityProblem = {
  /** The server refused the credentials given. */
  CredentialsRefused: 'credentials-refused',
  /** The server requires credentials and none were given. */
  CredentialsRequired: 'credentials-required',
  /** The credentials (a JWT) have expired. */
  CredentialsExpired: 'credentials-expired',
  /** The creds file or the nkey seed cannot be read as one. */
  CredentialsInvalid: 'credentials-invalid',
  /** The server's certificate is not signed by a trusted CA, or does not name the host dialled. */
  TlsUntrusted: 'tls-untrusted',
  /** TLS was required (a `tls://` URL or TLS options) and the server offers none. */
  TlsUnavailable: 'tls-unavailable',
  /** The server verifies clients and no client certificate was given. */
  TlsClientCertificateRequired: 'tls-client-certificate-required',
  /** The server verifies clients and did not accept the client certificate given. */
  TlsClientCertificateRefused: 'tls-client-certificate-refused',
  /** `tls.ca` is not a PEM certificate. */
  TlsCaInvalid: 'tls-ca-invalid',
  /** `tls.cert` is not a PEM certificate. */
  TlsCertificateInvalid: 'tls-certificate-invalid',
  /** `tls.key` is not a PEM private key, or not the key of `tls.cert`. */
  TlsKeyInvalid: 'tls-key-invalid',
} as const;
/** One of {@link NatsSecurityProblem}'s values. */
export type NatsSecurityProblem = (typeof NatsSecurityProblem)[keyof typeof NatsSecurityProblem];

const PROBLEM_CODES: Record<NatsSecurityProblem, ToolbusErrorCode> = {
  'credentials-refused': 'unauthorized',
  'credentials-required': 'unauthorized',
  'credentials-expired': 'unauthorized',
  'credentials-invalid': 'invalid-config',
  'tls-untrusted': 'unavailable',
  'tls-unavailable': 'unavailable',
  'tls-client-certificate-required': 'unauthorized',
  'tls-client-certificate-refused': 'unauthorized',
  'tls-ca-invalid': 'invalid-config',
  'tls-certificate-invalid': 'invalid-config',
  'tls-key-invalid': 'invalid-config',
};

/**
 * A NATS connection refused for its credentials or its TLS settings. `code` is `unauthorized` (the server
 * refused or requires credentials or a client certificate), `unavailable` (TLS could not be set up with
 * that server) or `invalid-config` (a creds file, seed, certificate or key that cannot be used).
 */
export class NatsSecurityError extends ToolbusError {
  /** What is wrong, for a caller that explains how to fix it (e.g. naming its own flags). */
  readonly problem: NatsSecurityProblem;
  /** The server(s) dialled, without credentials. */
  readonly server: string;

  constructor(problem: NatsSecurityProblem, server: string, message: string, options?: ErrorOptions) {
    super(PROBLEM_CODES[problem] ?? 'unavailable', message, options);
    this.problem = problem;
    this.server = server;
  }
}

/** Server URLs with their credentials taken out, and what the URLs ask for. */
export interface NatsServerTarget {
  /** The URLs as nats.js dials them: no user info. */
  servers: string[];
  /** The URLs for messages: no user info, comma-separated. */
  label: string;
  /** Credentials written in a URL (`nats://user:password@host`, `nats://token@host`). */
  auth: NatsAuth | undefined;
  /** True when a URL is `tls://`. */
  tls: boolean;
}

const USER_INFO = /^([a-z][a-z0-9+.-]*:\/\/)([^/@]*)@/i;

/**
 * Takes the credentials out of server URLs (nats.js ignores them silently): `user:password@` is a user
 * and password, a bare `name@` a token.
 * @throws ToolbusError `usage` when URLs carry different credentials.
 */
export function parseServerUrls(urls: readonly string[]): NatsServerTarget {
  let auth: NatsAuth | undefined;
  let seen: string | undefined;
  const servers = urls.map((url) => {
    const match = USER_INFO.exec(url.trim());
    if (!match) return url.trim();
    const info = match[2]!;
    if (seen !== undefined && seen !== info) {
      throw new ToolbusError(
        'usage',
        'the NATS server URLs carry different credentials: give the same to each',
      );
    }
    seen = info;
    const colon = info.indexOf(':');
    auth =
      colon === -1
        ? { token: decode(info) }
        : { user: decode(info.slice(0, colon)), password: decode(info.slice(colon + 1)) };
    return match[1]! + url.trim().slice(match[0].length);
  });
  return {
    servers,
    label: servers.join(', '),
    auth,
    tls: servers.some((url) => /^tls:\/\//i.test(url)),
  };
}

function decode(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text; // a stray % is taken as written
  }
}

/** `url` without its credentials, for a message or a log line. */
export function redactServerUrl(url: string): string {
  return url.replace(USER_INFO, '$1');
}

/** The kind of `auth`, for messages; throws `usage` when it holds more than one kind, or none. */
function authKind(auth: NatsAuth): 'user' | 'token' | 'creds' | 'nkeySeed' {
  const kinds = (['user', 'token', 'creds', 'nkeySeed'] as const).filter(
    (kind) => typeof (auth as unknown as Record<string, unknown>)[kind] === 'string',
  );
  if (kinds.length !== 1) {
    throw new ToolbusError(
      'usage',
      `NATS auth must hold exactly one of user (with password), token, creds or nkeySeed, got ${kinds.length === 0 ? 'none' : kinds.join(' and ')}`,
    );
  }
  return kinds[0]!;
}

/**
 * The nats.js authenticator for `auth`, tried once so a creds file or seed that cannot be parsed fails
 * here, naming what it is, and not as an opaque error in the middle of the handshake.
 * @throws NatsSecurityError `credentials-invalid`; ToolbusError `usage` for an `auth` of no single kind.
 */
export function authenticatorOf(auth: NatsAuth, label: string): Authenticator {
  const kind = authKind(auth);
  const encode = (text: string): Uint8Array => new TextEncoder().encode(text);
  let authenticator: Authenticator;
  if (kind === 'user') {
    const { user, password } = auth as NatsUserAuth;
    authenticator = usernamePasswordAuthenticator(user, password);
  } else if (kind === 'token') authenticator = tokenAuthenticator((auth as NatsTokenAuth).token);
  else if (kind === 'creds') authenticator = credsAuthenticator(encode((auth as NatsCredsAuth).creds));
  else authenticator = nkeyAuthenticator(encode((auth as NatsNkeyAuth).nkeySeed.trim()));
  try {
    authenticator('toolbus-check');
  } catch (error) {
    const what = kind === 'creds' ? 'creds text (a user JWT and its nkey seed)' : 'nkey seed (SU…)';
    throw new NatsSecurityError(
      NatsSecurityProblem.CredentialsInvalid,
      label,
      `NATS at ${label}: the ${kind === 'creds' ? 'creds file' : 'nkey seed'} cannot be used: expected a ${what}`,
      { cause: error },
    );
  }
  return authenticator;
}

/**
 * The nats.js TLS options for `tls`, each PEM checked first so a bad one is named.
 * @throws NatsSecurityError `tls-ca-invalid`, `tls-certificate-invalid`, `tls-key-invalid`; ToolbusError
 * `usage` for a certificate without its key or a key without its certificate.
 */
export function tlsOptionsOf(tls: NatsTlsOptions, label: string): TlsOptions {
  if ((tls.cert === undefined) !== (tls.key === undefined)) {
    throw new ToolbusError('usage', 'NATS tls.cert and tls.key go together: give both or neither');
  }
  const invalid = (problem: NatsSecurityProblem, what: string): NatsSecurityError =>
    new NatsSecurityError(problem, label, `NATS at ${label}: the TLS ${what}`);
  if (tls.ca !== undefined && !isCertificate(tls.ca)) {
    throw invalid(NatsSecurityProblem.TlsCaInvalid, 'CA is not a PEM certificate');
  }
  if (tls.cert !== undefined && tls.key !== undefined) {
    let certificate: X509Certificate;
    try {
      certificate = new X509Certificate(tls.cert);
    } catch {
      throw invalid(NatsSecurityProblem.TlsCertificateInvalid, 'client certificate is not a PEM certificate');
    }
    let key: KeyObject;
    try {
      key = createPrivateKey(tls.key);
    } catch {
      throw invalid(NatsSecurityProblem.TlsKeyInvalid, 'client key is not a PEM private key');
    }
    if (!certificate.checkPrivateKey(key)) {
      throw invalid(NatsSecurityProblem.TlsKeyInvalid, 'client key is not the key of the client certificate');
    }
  }
  return {
    ...(tls.ca !== undefined ? { ca: tls.ca } : {}),
    ...(tls.cert !== undefined ? { cert: tls.cert } : {}),
    ...(tls.key !== undefined ? { key: tls.key } : {}),
  };
}

function isCertificate(pem: string): boolean {
  try {
    new X509Certificate(pem);
    return true;
  } catch {
    return false;
  }
}

/** What a failed connect attempt had asked for, to tell a security failure from an unreachable server. */
export interface SecurityAttempt {
  label: string;
  /** Credentials were given. */
  auth: boolean;
  /** Why TLS was required, e.g. `a tls:// URL`; undefined when it was not. */
  tlsRequiredBy: string | undefined;
  /** A client certificate was given. */
  clientCertificate: boolean;
}

/** Node's codes for a server certificate it does not trust. */
const UNTRUSTED = new Set([
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'CERT_UNTRUSTED',
  'CERT_HAS_EXPIRED',
  'CERT_NOT_YET_VALID',
  'CERT_REVOKED',
  'ERR_TLS_CERT_ALTNAME_INVALID',
]);

/**
 * The {@link NatsSecurityError} a nats.js connect failure means, or undefined when it is not about
 * credentials or TLS (an unreachable server, a timeout).
 */
export function securityFailure(error: unknown, attempt: SecurityAttempt): NatsSecurityError | undefined {
  const err = error as { name?: unknown; message?: unknown; code?: unknown; cause?: unknown };
  const name = typeof err?.name === 'string' ? err.name : '';
  const message = typeof err?.message === 'string' ? err.message : '';
  const { label } = attempt;
  const cause = error instanceof Error ? error : undefined;
  if (name === 'UserAuthenticationExpiredError') {
    return new NatsSecurityError(
      NatsSecurityProblem.CredentialsExpired,
      label,
      `NATS at ${label} refused the credentials: they have expired (${message.toLowerCase()})`,
      { cause },
    );
  }
  if (name === 'AuthorizationError') {
    return attempt.auth
      ? new NatsSecurityError(
          NatsSecurityProblem.CredentialsRefused,
          label,
          `NATS at ${label} refused the credentials (${message.toLowerCase()})`,
          { cause },
        )
      : new NatsSecurityError(
          NatsSecurityProblem.CredentialsRequired,
          label,
          `NATS at ${label} requires credentials (${message.toLowerCase()}), and none were given`,
          { cause },
        );
  }
  const tlsCode = [err?.code, (err?.cause as { code?: unknown } | undefined)?.code].find(
    (code): code is string => typeof code === 'string' && UNTRUSTED.has(code),
  );
  if (tlsCode !== undefined) {
    const reason = tlsCode === 'ERR_TLS_CERT_ALTNAME_INVALID' ? 'does not name this host' : 'is not trusted';
    return new NatsSecurityError(
      NatsSecurityProblem.TlsUntrusted,
      label,
      `NATS at ${label}: the server's TLS certificate ${reason} (${message})`,
      { cause },
    );
  }
  if (/server does not support 'tls'|'tls' is not available/.test(message)) {
    return new NatsSecurityError(
      NatsSecurityProblem.TlsUnavailable,
      label,
      `NATS at ${label} does not offer TLS, which ${attempt.tlsRequiredBy ?? 'the connection'} requires`,
      { cause },
    );
  }
  return undefined;
}

/**
 * The error for a server that verifies TLS clients (its INFO says `tls_verify`), which nats.js reports
 * only as a timeout: the server drops the connection after the handshake, and the client keeps waiting.
 */
export function clientCertificateFailure(attempt: SecurityAttempt): NatsSecurityError {
  return attempt.clientCertificate
    ? new NatsSecurityError(
        NatsSecurityProblem.TlsClientCertificateRefused,
        attempt.label,
        `NATS at ${attempt.label} verifies TLS clients and did not accept the client certificate (is it signed by a CA the server trusts?)`,
      )
    : new NatsSecurityError(
        NatsSecurityProblem.TlsClientCertificateRequired,
        attempt.label,
        `NATS at ${attempt.label} verifies TLS clients and no client certificate was given`,
      );
}

/**
 * Reads the INFO line a NATS server sends as soon as a client connects (before TLS and auth), or
 * undefined when it cannot within `timeoutMs`. Used only to explain a connect that is not getting
 * anywhere.
 */
export function probeServerInfo(url: string, timeoutMs: number): Promise<ServerInfo | undefined> {
  let host: string;
  let port: number;
  try {
    const parsed = new URL(`http://${url.replace(/^[a-z][a-z0-9+.-]*:\/\//i, '')}`);
    host = parsed.hostname.replace(/^\[|\]$/g, '');
    port = parsed.port === '' ? 4222 : Number(parsed.port);
  } catch {
    return Promise.resolve(undefined);
  }
  return new Promise((resolve) => {
    let text = '';
    const socket = connectTcp({ host, port });
    const done = (info: ServerInfo | undefined): void => {
      clearTimeout(timer);
      socket.destroy();
      resolve(info);
    };
    const timer = setTimeout(() => done(undefined), timeoutMs);
    socket.on('data', (chunk: Buffer) => {
      text += chunk.toString('utf8');
      const end = text.indexOf('\r\n');
      if (end === -1 && text.length < 64 * 1024) return;
      try {
        const match = /^INFO\s+(\{.*\})/.exec(text.slice(0, end === -1 ? undefined : end));
        done(match ? (JSON.parse(match[1]!) as ServerInfo) : undefined);
      } catch {
        done(undefined);
      }
    });
    socket.on('error', () => done(undefined));
    socket.on('close', () => done(undefined));
  });
}
