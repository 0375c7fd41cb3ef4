/**
 * @module `toolbus call`: call one tool with arguments given as `key=value` pairs or a JSON object.
 */
import { createParser } from 'eventsource-parser';
import type { CliCommand, CliIO } from '../command.js';
import { ExitCode, UsageError } from '../command.js';
import {
  CONNECTION_FLAGS,
  CONNECTION_FLAGS_HELP,
  GATEWAY_FLAGS,
  GATEWAY_FLAGS_HELP,
  parseCommandArgs,
} from '../args.js';
import { GatewayRequestError, gatewayFetch, gatewayTarget } from '../gateway-client.js';
import { openLocalTools } from '../local-tools.js';
import { NATS_SECURITY_FLAGS, NATS_SECURITY_HELP, NatsSecurity, displayNatsUrl } from '../nats-security.js';

const help = `Usage: toolbus call <tool> [key=value ... | key:=json ... | '{"key": "value"}'] [options]
       toolbus call --result <call-id> [--follow]
       toolbus call --cancel <call-id>

Call one tool and print its result. Exits 0 on success, 1 when the tool returns an error.
With --async, start the call and print its id at once: fetch the result later with --result,
from this or any other shell, even after toolbus up restarted when the tool's service is durable
("delivery": "durable"; crash recovery needs --nats).

Arguments:
  key=value          a string argument (turned into a number or boolean when the tool's
                     schema says so)
  key:=json          an argument given as JSON, e.g. count:=3 tags:='["a","b"]'
  '{"k": "v"}'       all arguments as one JSON object

Options:
  --user NAME        the end user the call runs for (sent to tool services; default: anonymous)
  --json             print the whole result as JSON ({ name, callId, content, isError, code })
  --async            start the call, print its id and return (through toolbus up only)
  --result ID        print the state of call ID: queued, running (chunks so far), or its result
  --follow           with --result: wait for the call to end, printing its chunks as they come
  --cancel ID        cancel call ID (a queued call never runs; a running one is told to stop)
${GATEWAY_FLAGS_HELP}
${CONNECTION_FLAGS_HELP}
  -h, --help         show this help

${NATS_SECURITY_HELP}

Examples:
  toolbus call tell-joke topic=cats
  toolbus call tell-dad-joke '{"topic": "dogs"}' --user alice
  toolbus call build-report year:=2026 --async      # prints task-…
  toolbus call --result task-… --follow
`;

interface PropertySchema {
  type?: unknown;
}

/** Turns `key=value` / `key:=json` pairs or one JSON object into an arguments object. */
export function parseCallArguments(
  words: readonly string[],
  properties: Record<string, PropertySchema> = {},
): Record<string, unknown> {
  if (words.length === 1 && words[0]!.trimStart().startsWith('{')) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(words[0]!);
    } catch (error) {
      throw new UsageError(`the arguments are not valid JSON: ${(error as Error).message}`);
    }
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
      throw new UsageError('the JSON arguments must be an object, e.g. \'{"topic": "cats"}\'');
    }
    return parsed as Record<string, unknown>;
  }
  const args: Record<string, unknown> = {};
  for (const word of words) {
    const json = /^([^=:]+):=(.*)$/s.exec(word);
    if (json) {
      try {
        args[json[1]!] = JSON.parse(json[2]!);
      } catch (error) {
        throw new UsageError(
          `argument '${json[1]}': '${json[2]}' is not valid JSON (${(error as Error).message})`,
        );
      }
      continue;
    }
    const eq = word.indexOf('=');
    if (eq <= 0) {
      throw new UsageError(`'${word}' is not an argument: write key=value, key:=json, or one JSON object`);
    }
    const key = word.slice(0, eq);
    args[key] = coerce(word.slice(eq + 1), properties[key]?.type);
  }
  return args;
}

function coerce(value: string, type: unknown): unknown {
  const types = Array.isArray(type) ? type : [type];
  if (types.includes('string') || types.every((t) => t === undefined)) return value;
  if (
    (types.includes('number') || types.includes('integer')) &&
    value.trim() !== '' &&
    Number.isFinite(Number(value))
  ) {
    return Number(value);
  }
  if (types.includes('boolean') && (value === 'true' || value === 'false')) return value === 'true';
  if (types.includes('object') || types.includes('array')) {
    try {
      return JSON.parse(value) as unknown;
    } catch {
      return value;
    }
  }
  return value;
}

interface CallOutput {
  name: string;
  callId: string;
  content: string;
  isError: boolean;
  code?: string;
}

/** A call's state as `GET /api/v1/calls/{id}` answers it. */
interface CallState {
  id: string;
  tool?: string;
  status: string;
  done: boolean;
  chunks?: string[];
  chunkCount: number;
  response?: string;
  error?: { type: string; message: string };
}

/** `--async`: starts the call through the gateway and returns its id. */
async function startThroughGateway(
  io: CliIO,
  values: { url?: string; token?: string; user?: string },
  name: string,
  words: string[],
): Promise<string> {
  const target = gatewayTarget(values, io);
  const args = parseCallArguments(words, await parameterTypes(target, io, name, words));
  const query = `?async=1${values.user ? `&user=${encodeURIComponent(values.user)}` : ''}`;
  const response = await gatewayFetch(target, `/api/v1/tools/${encodeURIComponent(name)}/invoke${query}`, {
    method: 'POST',
    body: args,
    signal: io.signal,
  });
  return ((await response.json()) as { call: string }).call;
}

/** `--result` (with `--follow`) and `--cancel`: prints a call's state, or its result once it ended. */
async function callState(
  io: CliIO,
  values: { url?: string; token?: string },
  id: string,
  how: { cancel: boolean; follow: boolean; json: boolean },
): Promise<number> {
  const target = gatewayTarget(values, io);
  const path = `/api/v1/calls/${encodeURIComponent(id)}`;
  let state = (
    (await (
      await gatewayFetch(target, how.cancel ? `${path}/cancel` : path, {
        method: how.cancel ? 'POST' : 'GET',
        ...(how.cancel ? { body: {} } : {}),
        signal: io.signal,
      })
    ).json()) as { call: CallState }
  ).call;
  if (how.follow && !state.done) {
    let printed = 0;
    let printedChars = 0;
    const response = await gatewayFetch(target, `${path}/events`, {
      accept: 'text/event-stream',
      signal: io.signal,
    });
    await readEvents(response, (event, data) => {
      if (event !== 'state' && event !== 'done') return;
      state = JSON.parse(data) as CallState;
      if (how.json || state.done || !state.chunks) return;
      // The chunks not printed yet, of the latest ones the store keeps.
      const fresh = state.chunks.slice(Math.max(0, state.chunks.length - (state.chunkCount - printed)));
      for (const chunk of fresh) {
        io.stdout.write(chunk);
        printedChars += chunk.length;
      }
      printed = state.chunkCount;
    });
    // What was printed as chunks is the start of the whole response: print the rest of it.
    if (state.status === 'completed' && printedChars > 0 && state.response !== undefined) {
      state = { ...state, response: state.response.slice(printedChars) };
    }
  }
  if (how.json) io.stdout.write(`${JSON.stringify(state, null, 2)}\n`);
  else if (!state.done) {
    const chunks = state.chunks?.join('') ?? '';
    io.stdout.write(`${state.status}${state.chunkCount > 0 ? ` (${state.chunkCount} chunks so far)` : ''}\n`);
    if (chunks !== '') io.stdout.write(chunks.endsWith('\n') ? chunks : `${chunks}\n`);
  } else if (state.status === 'completed') {
    const text = state.response;
    if (text !== undefined) io.stdout.write(text.endsWith('\n') ? text : `${text}\n`);
  } else {
    io.stderr.write(`${state.status} (${state.error?.type ?? 'error'}): ${state.error?.message ?? ''}\n`);
  }
  return state.done && state.status !== 'completed' ? ExitCode.Error : ExitCode.Ok;
}

/** Calls `onEvent` for each server-sent event of `response`, until the stream ends. */
async function readEvents(response: Response, onEvent: (event: string, data: string) => void): Promise<void> {
  const parser = createParser({ onEvent: (e) => onEvent(e.event ?? 'message', e.data) });
  const decoder = new TextDecoder();
  for await (const bytes of response.body as unknown as AsyncIterable<Uint8Array>) {
    parser.feed(decoder.decode(bytes, { stream: true }));
  }
}

/** The parameter types of tool `name`, so `key=value` pairs get them (fetched only when needed). */
async function parameterTypes(
  target: ReturnType<typeof gatewayTarget>,
  io: CliIO,
  name: string,
  words: string[],
): Promise<Record<string, PropertySchema>> {
  if (!words.some((w) => !w.trimStart().startsWith('{') && !w.includes(':='))) return {};
  const list = await gatewayFetch(target, '/api/v1/tools', { signal: io.signal });
  const tools = (
    (await list.json()) as {
      tools: { name: string; parameters: { properties?: Record<string, PropertySchema> } }[];
    }
  ).tools;
  return tools.find((t) => t.name === name)?.parameters.properties ?? {};
}

async function callThroughGateway(
  io: CliIO,
  values: { url?: string; token?: string; user?: string },
  name: string,
  words: string[],
): Promise<CallOutput> {
  const target = gatewayTarget(values, io);
  const args = parseCallArguments(words, await parameterTypes(target, io, name, words));
  const query = values.user ? `?user=${encodeURIComponent(values.user)}` : '';
  let response: Response;
  try {
    response = await gatewayFetch(target, `/api/v1/tools/${encodeURIComponent(name)}/invoke${query}`, {
      method: 'POST',
      body: args,
      signal: io.signal,
    });
  } catch (error) {
    // The gateway answers an unknown tool with a 404; as with --store/--nats (the ToolSet's error
    // contract), it is a result with isError, so --json prints it and scripts see one shape.
    if (error instanceof GatewayRequestError && error.code === 'unknown-tool') {
      return { name, callId: '', content: error.message, isError: true, code: error.code };
    }
    throw error;
  }
  return (await response.json()) as CallOutput;
}

/**
 * How to start the tool service an `unavailable` result names, or undefined for any other result. The
 * error text comes from the tool-service client, in this process or in the gateway's answer alike.
 */
export function unavailableServiceHint(
  result: { code?: string | undefined; content: string },
  nats: string | undefined,
): string | undefined {
  if (result.code !== 'unavailable' || !/tool service '[^']+' is unavailable/.test(result.content))
    return undefined;
  return nats
    ? `start the service on that NATS server: toolbus service <module> --nats ${nats} ` +
        `(or inside toolbus up: toolbus up --nats ${nats} --service <module>)`
    : 'start it with: toolbus up --service <module> (embedded) ' +
        'or toolbus service <module> --nats <url> (next to toolbus up --nats <url>)';
}

/** The `call` command. */
export const command: CliCommand = {
  name: 'call',
  summary: 'call one tool and print its result',
  help,
  async run(argv, io) {
    const { values, positionals } = parseCommandArgs(argv, {
      user: { type: 'string' },
      json: { type: 'boolean' },
      async: { type: 'boolean' },
      result: { type: 'string' },
      follow: { type: 'boolean' },
      cancel: { type: 'string' },
      ...GATEWAY_FLAGS,
      ...CONNECTION_FLAGS,
      ...NATS_SECURITY_FLAGS,
    });
    const [name, ...words] = positionals;
    const callFlags = [
      values.async && '--async',
      values.result !== undefined && '--result',
      values.cancel !== undefined && '--cancel',
    ].filter(Boolean);
    if (callFlags.length > 1) throw new UsageError(`${callFlags.join(' and ')} cannot be used together`);
    if (values.follow && values.result === undefined)
      throw new UsageError('--follow goes with --result <call-id>');
    if (callFlags.length > 0 && (values.nats !== undefined || values.store !== undefined)) {
      throw new UsageError(
        `${String(callFlags[0])} works through a running toolbus up (its gateway keeps the call states); leave out --nats and --store`,
      );
    }
    if (values.result !== undefined || values.cancel !== undefined) {
      if (name !== undefined)
        throw new UsageError(`name no tool with ${String(callFlags[0])}; give the call id only`);
      return callState(io, values, values.result ?? values.cancel!, {
        cancel: values.cancel !== undefined,
        follow: values.follow === true,
        json: values.json === true,
      });
    }
    if (!name) throw new UsageError('name the tool to call, e.g. toolbus call tell-joke topic=cats');
    if (values.async) {
      const id = await startThroughGateway(io, values, name, words);
      io.stdout.write(values.json ? `${JSON.stringify({ call: id })}\n` : `${id}\n`);
      if (!values.json) io.stderr.write(`follow it with: toolbus call --result ${id} --follow\n`);
      return ExitCode.Ok;
    }
    let result: CallOutput;
    let privateBusNote: string | undefined;
    if (values.nats !== undefined || values.store !== undefined) {
      const natsSecurity = NatsSecurity.fromFlags(values, io);
      const local = await openLocalTools({ nats: values.nats, store: values.store, natsSecurity }, io);
      privateBusNote = local.privateBusNote;
      try {
        await local.settle(name); // a self-announced tool arrives just after the registry starts
        const tool = local.tools.get(name);
        const props = (tool?.schema.parameters.properties ?? {}) as Record<string, PropertySchema>;
        const args = parseCallArguments(words, props);
        const r = await local.tools.call(name, args, { signal: io.signal, user: values.user ?? 'anonymous' });
        result = {
          name: r.name,
          callId: r.callId,
          content: r.content,
          isError: r.isError,
          ...(r.error ? { code: r.error.code } : {}),
        };
      } finally {
        await local.close();
      }
    } else {
      result = await callThroughGateway(io, values, name, words);
    }
    if (values.json) io.stdout.write(JSON.stringify(result, null, 2) + '\n');
    else if (result.isError)
      io.stderr.write(`error${result.code ? ` (${result.code})` : ''}: ${result.content}\n`);
    else io.stdout.write(result.content.endsWith('\n') ? result.content : result.content + '\n');
    if (result.code === 'unavailable' && privateBusNote) {
      io.stderr.write(`note: ${privateBusNote}, or leave out --store to call through the running toolbus\n`);
    } else if (result.isError) {
      const hint = unavailableServiceHint(result, values.nats && displayNatsUrl(values.nats));
      if (hint) io.stderr.write(`hint: ${hint}\n`);
    }
    return result.isError ? ExitCode.Error : ExitCode.Ok;
  },
};
