/**
 * @module `toolbus tools`: list the tools a running toolbus (or a bus and store) offers.
 */
import type { CliCommand } from '../command.js';
import { ExitCode, UsageError } from '../command.js';
import {
  CONNECTION_FLAGS,
  CONNECTION_FLAGS_HELP,
  GATEWAY_FLAGS,
  GATEWAY_FLAGS_HELP,
  parseCommandArgs,
} from '../args.js';
import { gatewayFetch, gatewayTarget, type GatewayTarget } from '../gateway-client.js';
import type { GatewayProblem } from '../../gateway/index.js';
import { openLocalTools } from '../local-tools.js';
import { NATS_SECURITY_FLAGS, NATS_SECURITY_HELP, NatsSecurity } from '../nats-security.js';
import { CONFIG_NAME_PATTERN } from '../../config/index.js';
import { isToolbusError } from '../../errors/index.js';
import { MAX_SEARCH_LIMIT, searchTools, type ToolProvider } from '../../tools/index.js';

interface ToolInfo {
  name: string;
  description: string;
  parameters: { properties?: Record<string, unknown>; required?: string[] };
  tags?: readonly string[];
}

const help = `Usage: toolbus tools [--search WORDS [--limit N]] [--profile ID] [--json]
                     [--url URL | --nats URL | --store PATH]

List the tools the agent can use: their names, descriptions and arguments.

Options:
  --search WORDS     only the tools that best match these words (their names, descriptions,
                     arguments and tags; prefixes and small typos count), best first
  --limit N          how many --search returns (default 10, at most ${MAX_SEARCH_LIMIT})
  --profile ID       only the tools of the profile profile/ID ({"tools": [globs], "tags": [...],
                     "exclude": [globs]})
  --json             print the full list as JSON (with each tool's JSON Schema)
${GATEWAY_FLAGS_HELP}
${CONNECTION_FLAGS_HELP}
  -h, --help         show this help

${NATS_SECURITY_HELP}

Examples:
  toolbus tools
  toolbus tools --search "weather forecast" --limit 5
  toolbus tools --profile support --json | jq '.[].name'
`;

/** Formats tools as an aligned table: NAME, ARGUMENTS, DESCRIPTION. */
export function formatToolTable(tools: readonly ToolInfo[]): string {
  if (tools.length === 0) return 'No tools. Load some with `toolbus config put tool/<name> < tool.json`.\n';
  const rows = tools.map((t) => {
    const props = t.parameters.properties ?? {};
    const required = new Set(t.parameters.required ?? []);
    const args = Object.entries(props)
      .map(
        ([name, schema]) =>
          `${name}${required.has(name) ? '' : '?'}: ${typeName((schema as { type?: unknown }).type)}`,
      )
      .join(', ');
    return [t.name, args || '-', firstLine(t.description)];
  });
  const header = ['NAME', 'ARGUMENTS', 'DESCRIPTION'];
  const widths = [0, 1].map((i) => Math.max(header[i]!.length, ...rows.map((r) => r[i]!.length)));
  const line = (r: string[]): string =>
    `${r[0]!.padEnd(widths[0]!)}  ${r[1]!.padEnd(widths[1]!)}  ${r[2]}`.trimEnd();
  return [line(header), ...rows.map(line)].join('\n') + '\n';
}

function typeName(type: unknown): string {
  if (Array.isArray(type)) return type.filter((t) => t !== 'null').join('|');
  return typeof type === 'string' ? type : 'any';
}

function firstLine(text: string): string {
  const line = text.split('\n')[0] ?? '';
  return line.length > 80 ? line.slice(0, 77) + '...' : line;
}

/** The registry's problems from the gateway's health route; none when it cannot say. */
async function gatewayProblems(target: GatewayTarget, signal: AbortSignal): Promise<GatewayProblem[]> {
  try {
    const response = await gatewayFetch(target, '/api/v1/health', { signal });
    const { problems } = (await response.json()) as { problems?: unknown };
    return Array.isArray(problems)
      ? problems.filter(
          (p): p is GatewayProblem =>
            typeof (p as GatewayProblem).key === 'string' &&
            typeof (p as GatewayProblem).message === 'string',
        )
      : [];
  } catch (error) {
    if (signal.aborted) throw error;
    return []; // an older gateway or a proxy in front: the list itself is still right
  }
}

/** `--limit N` of a search. @throws UsageError without --search or for a bad number. */
function parseLimit(text: string | undefined, query: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  if (query === undefined)
    throw new UsageError('--limit goes with --search (e.g. --search weather --limit 5)');
  const n = Number(text);
  if (text.trim() === '' || !Number.isInteger(n) || n < 1 || n > MAX_SEARCH_LIMIT) {
    throw new UsageError(
      `--limit takes an integer from 1 to ${MAX_SEARCH_LIMIT}, got '${text.slice(0, 40)}'`,
    );
  }
  return n;
}

/** The `tools` command. */
export const command: CliCommand = {
  name: 'tools',
  summary: 'list the tools the agent can use',
  help,
  async run(argv, io) {
    const { values, positionals } = parseCommandArgs(argv, {
      json: { type: 'boolean' },
      search: { type: 'string' },
      limit: { type: 'string' },
      profile: { type: 'string' },
      ...GATEWAY_FLAGS,
      ...CONNECTION_FLAGS,
      ...NATS_SECURITY_FLAGS,
    });
    if (positionals.length > 0) throw new UsageError(`unexpected argument '${positionals[0]}'`);
    const query = values.search;
    if (query !== undefined && query.trim() === '') {
      throw new UsageError('--search needs words of what the tool should do, e.g. --search "weather"');
    }
    const limit = parseLimit(values.limit, query);
    const profile = values.profile;
    if (profile !== undefined && !CONFIG_NAME_PATTERN.test(profile)) {
      throw new UsageError(
        `--profile needs a profile id (1-128 characters of [A-Za-z0-9_.=-]), got '${profile.slice(0, 80)}'`,
      );
    }
    let tools: ToolInfo[];
    if (values.nats !== undefined || values.store !== undefined) {
      const natsSecurity = NatsSecurity.fromFlags(values, io);
      const local = await openLocalTools({ nats: values.nats, store: values.store, natsSecurity }, io);
      try {
        await local.settle(); // self-announced tools arrive just after the registry starts
        let provider: ToolProvider = local.tools;
        try {
          if (profile !== undefined) provider = local.profile(profile);
        } catch (error) {
          if (isToolbusError(error)) throw new UsageError(error.message);
          throw error;
        }
        const found =
          query === undefined
            ? provider.list()
            : searchTools(provider, query, limit !== undefined ? { limit } : {}).map((hit) => hit.tool);
        tools = found.map((t) => ({
          name: t.name,
          description: t.description,
          parameters: t.schema.parameters,
          ...(t.tags && t.tags.length > 0 ? { tags: t.tags } : {}),
        }));
        for (const p of local.problems()) io.stderr.write(`warning: ${p.key}: ${p.message}\n`);
      } finally {
        await local.close();
      }
    } else {
      const target = gatewayTarget(values, io);
      const params = new URLSearchParams({ fresh: '1' });
      if (query !== undefined) params.set('search', query);
      if (limit !== undefined) params.set('limit', String(limit));
      if (profile !== undefined) params.set('profile', profile);
      const response = await gatewayFetch(target, `/api/v1/tools?${params}`, { signal: io.signal });
      tools = ((await response.json()) as { tools: ToolInfo[] }).tools;
      // Config items the registry skipped are missing from the list: say which and why, as with --store.
      for (const p of await gatewayProblems(target, io.signal))
        io.stderr.write(`warning: ${p.key}: ${p.message}\n`);
    }
    io.stdout.write(values.json ? JSON.stringify(tools, null, 2) + '\n' : formatToolTable(tools));
    return ExitCode.Ok;
  },
};
