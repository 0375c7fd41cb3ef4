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

interface ToolInfo {
  name: string;
  description: string;
  parameters: { properties?: Record<string, unknown>; required?: string[] };
}

const help = `Usage: toolbus tools [--json] [--url URL | --nats URL | --store PATH]

List the tools the agent can use: their names, descriptions and arguments.

Options:
  --json             print the full list as JSON (with each tool's JSON Schema)
${GATEWAY_FLAGS_HELP}
${CONNECTION_FLAGS_HELP}
  -h, --help         show this help

${NATS_SECURITY_HELP}

Examples:
  toolbus tools
  toolbus tools --json | jq '.[].name'
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

/** The `tools` command. */
export const command: CliCommand = {
  name: 'tools',
  summary: 'list the tools the agent can use',
  help,
  async run(argv, io) {
    const { values, positionals } = parseCommandArgs(argv, {
      json: { type: 'boolean' },
      ...GATEWAY_FLAGS,
      ...CONNECTION_FLAGS,
      ...NATS_SECURITY_FLAGS,
    });
    if (positionals.length > 0) throw new UsageError(`unexpected argument '${positionals[0]}'`);
    let tools: ToolInfo[];
    if (values.nats !== undefined || values.store !== undefined) {
      const natsSecurity = NatsSecurity.fromFlags(values, io);
      const local = await openLocalTools({ nats: values.nats, store: values.store, natsSecurity }, io);
      try {
        await local.settle(); // self-announced tools arrive just after the registry starts
        tools = local.tools
          .list()
          .map((t) => ({ name: t.name, description: t.description, parameters: t.schema.parameters }));
        for (const p of local.problems()) io.stderr.write(`warning: ${p.key}: ${p.message}\n`);
      } finally {
        await local.close();
      }
    } else {
      const target = gatewayTarget(values, io);
      const response = await gatewayFetch(target, '/api/v1/tools?fresh=1', { signal: io.signal });
      tools = ((await response.json()) as { tools: ToolInfo[] }).tools;
      // Config items the registry skipped are missing from the list: say which and why, as with --store.
      for (const p of await gatewayProblems(target, io.signal))
        io.stderr.write(`warning: ${p.key}: ${p.message}\n`);
    }
    io.stdout.write(values.json ? JSON.stringify(tools, null, 2) + '\n' : formatToolTable(tools));
    return ExitCode.Ok;
  },
};
