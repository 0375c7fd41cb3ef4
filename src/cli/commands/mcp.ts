/**
 * @module `toolbus mcp`: serve the registry's tools to MCP clients over stdio (`serve`), import every
 * tool of an MCP server into config (`import`), and log in to an MCP server that requires OAuth
 * (`login`, `logout`).
 */
import type { CliCommand, CliIO } from '../command.js';
import { configAllowlistFromEnv } from '../../registry/index.js';
import { parseDuration } from '../../audit/index.js';
import { isToolbusError } from '../../errors/index.js';
import { importLeaf } from '../import-leaf.js';
import { ExitCode, UsageError } from '../command.js';
import { CONNECTION_FLAGS, CONNECTION_FLAGS_HELP, parseCommandArgs, parsePortFlag } from '../args.js';
import { openBrowser } from '../open-browser.js';
import { openConfigStore } from '../connect.js';
import { openLocalTools } from '../local-tools.js';
import { NATS_SECURITY_FLAGS, NATS_SECURITY_HELP, NatsSecurity } from '../nats-security.js';

const help = `Usage: toolbus mcp serve [--search] [--profile ID] [--nats URL | --store PATH]
       toolbus mcp import <id> [--prefix P] [--include a,b] [--overwrite] [--nats URL | --store PATH]
       toolbus mcp login <id> [--no-browser] [--port N] [--timeout AGE] [--nats URL | --store PATH]
       toolbus mcp logout <id> [--nats URL | --store PATH]

serve    Serve every tool of the registry (config tools, tool services on the bus, announced
         services) to an MCP client over stdin/stdout, with the resource/<id> items as MCP
         resources and the prompt tool items as MCP prompts. The lists follow config changes
         (list_changed notifications). Logs go to stderr; stdout carries MCP only.
         Tool services in other processes answer only over a shared bus (--nats); to serve the
         embedded 'toolbus up', connect the MCP client to its http://127.0.0.1:8888/mcp instead.
import   Connect to the MCP server in config item mcp/<id> and write one tool/<name> item of type
         mcp-tool for each of its tools, with arguments from the server's schema. An item with
         'command' starts that program, so it must be listed in TOOLBUS_ALLOW_COMMANDS (in the
         environment of this command and of 'toolbus up'; see 'toolbus config --help').
login    Authorize toolbus with the MCP server of mcp/<id>, whose item has an "oauth" object
         (OAuth 2.1 as the MCP authorization spec describes it). For the authorization code
         grant it prints a URL to open, opens a browser unless --no-browser, and waits on
         127.0.0.1 for the browser to come back (checking the state toolbus sent). It keeps the
         tokens in the config item mcp-oauth/<id>, replacing the ones there only once it
         succeeded; a running 'toolbus up' picks them up at once, and it and 'toolbus mcp import'
         refresh them before they expire. It prints the scopes and the expiry, never a token;
         'toolbus config' shows mcp-oauth items with their secrets withheld.
logout   Forget the tokens of mcp/<id> (delete mcp-oauth/<id>).

Options:
  --search           serve: list a search_tools tool instead of every tool (for clients with small
                     context windows); the tools a search finds join the list
  --profile ID       serve: only the tools of the profile profile/ID
  --prefix P         prepend P to every imported tool name
  --include a,b      import only these remote tools
  --overwrite        replace tool items that already exist (default: leave them)
  --no-browser       login: only print the URL to open
  --port N           login: listen for the browser on 127.0.0.1:N (a client registered with a
                     fixed redirect URI needs its port; default: the port of the item's
                     oauth "redirect-url", else a free one)
  --timeout AGE      login: how long to wait for the browser, e.g. 90s or 10m (default: 5m)
${CONNECTION_FLAGS_HELP}
  -h, --help         show this help

${NATS_SECURITY_HELP}

The "oauth" object of an mcp item (kebab-case): grant ("authorization_code", the default, or
"client_credentials"), client-id, client-secret and private-key (only as {"env": "NAME"}: the
variable must be listed in TOOLBUS_ALLOW_ENV), signing-algorithm, token-endpoint-auth-method,
client-metadata-url, scope, client-name, redirect-url, issuer, refresh-margin-ms. Without
client-id, toolbus registers itself (or uses client-metadata-url where the server supports it).

Examples:
  export TOOLBUS_ALLOW_COMMANDS='npx -y @modelcontextprotocol/server-everything'
  toolbus config put mcp/everything '{"command":"npx","args":["-y","@modelcontextprotocol/server-everything"]}'
  toolbus mcp import everything --prefix everything_
  toolbus config put mcp/remote '{"url":"https://mcp.example.com/mcp","oauth":{}}'
  toolbus mcp login remote && toolbus mcp import remote
  claude mcp add toolbus -- toolbus mcp serve --nats nats://127.0.0.1:4222
  claude mcp add --transport http toolbus http://127.0.0.1:8888/mcp
`;

function waitForEnd(io: CliIO): Promise<void> {
  return new Promise((resolve) => {
    if (io.signal.aborted) return resolve();
    const done = (): void => {
      io.signal.removeEventListener('abort', done);
      io.stdin.removeListener('end', done);
      io.stdin.removeListener('close', done);
      resolve();
    };
    io.signal.addEventListener('abort', done, { once: true });
    io.stdin.once('end', done);
    io.stdin.once('close', done);
  });
}

async function serve(argv: string[], io: CliIO): Promise<number> {
  const { values, positionals } = parseCommandArgs(argv, {
    search: { type: 'boolean' },
    profile: { type: 'string' },
    ...CONNECTION_FLAGS,
    ...NATS_SECURITY_FLAGS,
  });
  if (positionals.length > 0) throw new UsageError(`unexpected argument '${positionals[0]}'`);
  const natsSecurity = NatsSecurity.fromFlags(values, io);
  const { serveMcpStdio } = await importLeaf('mcp', () => import('../../adapters/mcp/index.js'));
  const local = await openLocalTools({ nats: values.nats, store: values.store, natsSecurity }, io);
  try {
    for (const problem of local.problems())
      io.stderr.write(`toolbus mcp serve: ${problem.key}: ${problem.message}\n`);
    let tools = local.tools;
    let promptFilter: ((name: string) => boolean) | undefined;
    if (values.profile !== undefined) {
      try {
        const profile = local.profile(values.profile);
        tools = profile;
        // A prompt is a prompt tool: a profile shows the prompts of its tools.
        promptFilter = (name) => profile.get(name) !== undefined;
      } catch (error) {
        if (isToolbusError(error)) throw new UsageError(error.message);
        throw error;
      }
    }
    io.stderr.write(
      `toolbus mcp serve: serving ${tools.list().length} tools over stdio${values.search ? ' behind search_tools' : ''}\n`,
    );
    if (local.privateBusNote) {
      io.stderr.write(
        `toolbus mcp serve: note: ${local.privateBusNote}, or connect the MCP client to the running toolbus's /mcp endpoint (http://127.0.0.1:8888/mcp by default)\n`,
      );
    }
    const bridge = serveMcpStdio(tools, {
      ...(values.search ? { toolSearch: {} } : {}),
      resources: local.resources,
      prompts: local.prompts,
      ...(promptFilter !== undefined ? { promptFilter } : {}),
      stdin: io.stdin,
      stdout: io.stdout,
      onError: (error) => io.stderr.write(`toolbus mcp serve: ${error.message}\n`),
    });
    await waitForEnd(io);
    await bridge.close();
  } finally {
    await local.close();
  }
  return ExitCode.Ok;
}

async function importTools(argv: string[], io: CliIO): Promise<number> {
  const { values, positionals } = parseCommandArgs(argv, {
    prefix: { type: 'string' },
    include: { type: 'string' },
    overwrite: { type: 'boolean' },
    json: { type: 'boolean' },
    ...CONNECTION_FLAGS,
    ...NATS_SECURITY_FLAGS,
  });
  const [id, extra] = positionals;
  if (!id)
    throw new UsageError("missing the server id: 'toolbus mcp import <id>' (the key of an mcp/<id> item)");
  if (extra !== undefined) throw new UsageError(`unexpected argument '${extra}'`);
  const { importMcpTools } = await importLeaf('mcp', () => import('../../adapters/mcp/index.js'));
  const natsSecurity = NatsSecurity.fromFlags(values, io);
  const store = await openConfigStore({ nats: values.nats, store: values.store, natsSecurity }, io);
  try {
    const include = values.include
      ?.split(',')
      .map((s) => s.trim())
      .filter(Boolean);
    const imported = await importMcpTools(store, id, {
      signal: io.signal,
      allowlist: configAllowlistFromEnv(io.env),
      env: io.env,
      ...(values.prefix !== undefined ? { prefix: values.prefix } : {}),
      ...(values.overwrite ? { overwrite: true } : {}),
      ...(include ? { include } : {}),
    });
    if (values.json) {
      io.stdout.write(JSON.stringify(imported, null, 2) + '\n');
    } else if (imported.length === 0) {
      io.stdout.write(`MCP server 'mcp/${id}' offers no tools; nothing imported.\n`);
    } else {
      for (const t of imported) {
        const note =
          t.status === 'exists'
            ? ' (exists; left alone, use --overwrite)'
            : t.status === 'missing'
              ? ' (the server offers no such tool; nothing written)'
              : '';
        const schema = t.hasArguments || t.status === 'missing' ? '' : ' [schema from server]';
        io.stdout.write(`${t.key}  <- ${t.remoteName}${schema}${note}\n`);
      }
      const written = imported.filter((t) => t.status === 'written').length;
      io.stdout.write(`${written} of ${imported.length} tools written.\n`);
    }
  } finally {
    await store.close();
  }
  return ExitCode.Ok;
}

/** The id of `login` and `logout`: one positional, the key of an `mcp/<id>` item. */
function serverId(positionals: string[], sub: string): string {
  const [id, extra] = positionals;
  if (!id)
    throw new UsageError(`missing the server id: 'toolbus mcp ${sub} <id>' (the key of an mcp/<id> item)`);
  if (extra !== undefined) throw new UsageError(`unexpected argument '${extra}'`);
  return id;
}

/** `--timeout AGE` of login, in ms. */
function loginTimeout(text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  const ms = parseDuration(text);
  if (ms === undefined || ms < 1_000) {
    throw new UsageError(`--timeout takes an age of at least 1s such as 90s or 10m, got '${text}'`);
  }
  return ms;
}

async function login(argv: string[], io: CliIO): Promise<number> {
  const { values, positionals } = parseCommandArgs(argv, {
    'no-browser': { type: 'boolean' },
    port: { type: 'string' },
    timeout: { type: 'string' },
    ...CONNECTION_FLAGS,
    ...NATS_SECURITY_FLAGS,
  });
  const id = serverId(positionals, 'login');
  const port = values.port === undefined ? undefined : parsePortFlag('--port', values.port);
  const timeoutMs = loginTimeout(values.timeout);
  const { loginMcpServer } = await importLeaf('mcp', () => import('../../adapters/mcp/index.js'));
  const natsSecurity = NatsSecurity.fromFlags(values, io);
  const store = await openConfigStore({ nats: values.nats, store: values.store, natsSecurity }, io);
  try {
    const result = await loginMcpServer(store, id, {
      signal: io.signal,
      allowlist: configAllowlistFromEnv(io.env),
      env: io.env,
      ...(port !== undefined ? { port } : {}),
      ...(timeoutMs !== undefined ? { timeoutMs } : {}),
      open: async (url) => {
        io.stdout.write(
          `Open this URL in a browser to authorize toolbus with mcp/${id}:\n\n  ${url.href}\n\n`,
        );
        if (values['no-browser']) return;
        if (!(await openBrowser(url.href)))
          io.stderr.write('toolbus mcp login: could not open a browser; open the URL above\n');
      },
    });
    const expires =
      result.expiresAt === undefined
        ? 'no expiry given'
        : `expires ${new Date(result.expiresAt).toISOString()}`;
    io.stdout.write(
      `Logged in to mcp/${id}: scope ${result.scope ?? '(not stated)'}; access token ${expires}; ` +
        `${result.refreshable ? 'renewed with a refresh token' : 'no refresh token (log in again when it expires)'}. ` +
        `${result.tools} tools. Kept in mcp-oauth/${id}.\n`,
    );
  } finally {
    await store.close();
  }
  return ExitCode.Ok;
}

async function logout(argv: string[], io: CliIO): Promise<number> {
  const { values, positionals } = parseCommandArgs(argv, { ...CONNECTION_FLAGS, ...NATS_SECURITY_FLAGS });
  const id = serverId(positionals, 'logout');
  const { logoutMcpServer } = await importLeaf('mcp', () => import('../../adapters/mcp/index.js'));
  const natsSecurity = NatsSecurity.fromFlags(values, io);
  const store = await openConfigStore({ nats: values.nats, store: values.store, natsSecurity }, io);
  try {
    const existed = await logoutMcpServer(store, id);
    io.stdout.write(
      existed ? `Logged out of mcp/${id} (deleted mcp-oauth/${id}).\n` : `mcp/${id} was not logged in.\n`,
    );
  } finally {
    await store.close();
  }
  return ExitCode.Ok;
}

const SUBCOMMANDS = "'serve', 'import', 'login' or 'logout'";

/** The `mcp` command. */
export const command: CliCommand = {
  name: 'mcp',
  summary: 'serve the tools over MCP (stdio), import an MCP server’s tools, or log in to one (OAuth)',
  help,
  async run(argv, io) {
    const [sub, ...rest] = argv;
    if (sub === 'serve') return serve(rest, io);
    if (sub === 'import') return importTools(rest, io);
    if (sub === 'login') return login(rest, io);
    if (sub === 'logout') return logout(rest, io);
    throw new UsageError(
      sub ? `unknown subcommand '${sub}'; expected ${SUBCOMMANDS}` : `expected ${SUBCOMMANDS}`,
    );
  },
};
