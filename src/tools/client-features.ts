/**
 * @module What the caller of a tool call can do for the tool while it runs: answer a question put to a
 * person (elicitation), run a completion on its own model (sampling) and take log messages. An MCP
 * client that declared those capabilities can; the MCP bridge passes them as
 * `ToolCallOptions.clientFeatures`, and a tool reaches them through `ctx.elicit`, `ctx.sample` and
 * `ctx.log`, which reject with `unsupported` (or do nothing, for `log`) when the caller cannot.
 */
import type { JsonObject } from '../schema/index.js';
import type { AudioPart, ImagePart, TextPart } from './content-parts.js';
import { ToolError, toolAbortError } from './errors.js';

/** The eight log levels of MCP (syslog's, RFC 5424), least severe first. */
export const ToolLogLevel = {
  Debug: 'debug',
  Info: 'info',
  Notice: 'notice',
  Warning: 'warning',
  Error: 'error',
  Critical: 'critical',
  Alert: 'alert',
  Emergency: 'emergency',
} as const;
/** One of {@link ToolLogLevel}'s values. */
export type ToolLogLevel = (typeof ToolLogLevel)[keyof typeof ToolLogLevel];

const LEVELS: ReadonlySet<string> = new Set(Object.values(ToolLogLevel));

/** True for one of the eight {@link ToolLogLevel} values. */
export function isToolLogLevel(value: unknown): value is ToolLogLevel {
  return typeof value === 'string' && LEVELS.has(value);
}

/** A question for the person behind the caller: MCP's `elicitation/create` in form mode. */
export interface ElicitationRequest {
  /** What to ask, for a person. */
  message: string;
  /**
   * The form: a JSON Schema of an object whose properties are primitives (string, number, integer,
   * boolean, or an enum of strings, single or multiple choice), e.g.
   * `{ type: 'object', properties: { name: { type: 'string' } }, required: ['name'] }`.
   */
  requestedSchema: JsonObject;
}

/** The person's answer to an {@link ElicitationRequest}. */
export interface ElicitationResult {
  /** `accept`: they filled in the form; `decline`: they said no; `cancel`: they dismissed it. */
  action: 'accept' | 'decline' | 'cancel';
  /** The form's values, when accepted. */
  content?: Record<string, string | number | boolean | string[]>;
}

/** What a sampling message may hold: text, an image or a sound. */
export type SamplingContent = TextPart | ImagePart | AudioPart;

/** One message of a {@link SamplingRequest}. */
export interface SamplingMessage {
  role: 'user' | 'assistant';
  /** One part, or several. */
  content: SamplingContent | SamplingContent[];
}

/** Which model the caller should pick, as hints and priorities (MCP's `modelPreferences`). */
export interface SamplingModelPreferences {
  /** Model names or families to prefer, in order (`{ name: 'claude-3-5-sonnet' }`). */
  hints?: { name?: string }[];
  /** How much cost matters, 0–1. */
  costPriority?: number;
  /** How much speed matters, 0–1. */
  speedPriority?: number;
  /** How much capability matters, 0–1. */
  intelligencePriority?: number;
}

/** A completion the caller runs on its own model: MCP's `sampling/createMessage`. */
export interface SamplingRequest {
  messages: SamplingMessage[];
  /** The most tokens to generate. */
  maxTokens: number;
  systemPrompt?: string;
  temperature?: number;
  stopSequences?: string[];
  modelPreferences?: SamplingModelPreferences;
  /** Context from MCP servers the caller may add (MCP's `includeContext`). @default 'none' */
  includeContext?: 'none' | 'thisServer' | 'allServers';
  /** Provider-specific settings, passed through. */
  metadata?: JsonObject;
}

/** The caller's model's answer to a {@link SamplingRequest}. */
export interface SamplingResult {
  role: 'user' | 'assistant';
  /** One part, or several. */
  content: SamplingContent | SamplingContent[];
  /** The model that answered. */
  model: string;
  /** Why it stopped: `endTurn`, `stopSequence`, `maxTokens`, or a provider's own reason. */
  stopReason?: string;
}

/**
 * What the caller of a call can do for the tool (`ToolCallOptions.clientFeatures`): each member is
 * present only when the caller can do that. The MCP bridge fills it from the client's declared
 * capabilities; a program may pass its own (a UI that asks the user, a local model).
 */
export interface ToolClientFeatures {
  /** Asks the person behind the caller; rejects when `signal` aborts (the call was cancelled). */
  elicit?(request: ElicitationRequest, options: { signal: AbortSignal }): Promise<ElicitationResult>;
  /** Runs a completion on the caller's model; rejects when `signal` aborts. */
  sample?(request: SamplingRequest, options: { signal: AbortSignal }): Promise<SamplingResult>;
  /** Takes a log message of the tool (`data` is any JSON value); never throws. */
  log?(level: ToolLogLevel, data: unknown, logger?: string): void;
}

/** The caller as error messages name it. */
function callerName(caller: string | undefined): string {
  if (caller === undefined) return 'the caller of this call';
  const line = caller.replace(/[\r\n]+/g, ' ');
  return `the caller '${line.length > 80 ? `${line.slice(0, 80)}…` : line}'`;
}

/**
 * The `unsupported` error (a `ToolError`) of `ctx.elicit` or `ctx.sample` when the caller cannot: it
 * says who called and what would work.
 */
function unsupportedClientFeature(
  toolName: string,
  feature: 'elicit' | 'sample',
  caller: string | undefined,
): ToolError {
  const what = feature === 'elicit' ? 'answer an elicitation' : 'sample its model';
  const capability = feature === 'elicit' ? 'elicitation' : 'sampling';
  return new ToolError(
    'unsupported',
    `tool '${toolName}': ${callerName(caller)} cannot ${what}: only a call that came in over MCP from a ` +
      `client that declared the ${capability} capability can (or a program that passes ` +
      `clientFeatures.${feature} to ToolSet.call)`,
    { toolName },
  );
}

function badRequest(toolName: string, what: string): ToolError {
  return new ToolError('usage', `tool '${toolName}': ${what}`, { toolName });
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** How `ctx.elicit` and `ctx.sample` requests must look, and what to say when they do not. */
const REQUEST_SHAPES = {
  elicit: {
    fits: (r: unknown) => isObject(r) && typeof r['message'] === 'string' && isObject(r['requestedSchema']),
    usage: 'ctx.elicit takes { message: string, requestedSchema: { type: "object", … } }',
  },
  sample: {
    fits: (r: unknown) => isObject(r) && Array.isArray(r['messages']) && typeof r['maxTokens'] === 'number',
    usage: 'ctx.sample takes { messages: [{ role, content }], maxTokens: number, … }',
  },
} as const;

/**
 * `ctx.elicit` and `ctx.sample` of every call context: `request` put through the caller's features, or
 * rejected (`usage` for a malformed request, `unsupported` when the caller cannot, or the abort's error
 * once `signal` has aborted).
 */
export function askThrough(
  feature: 'elicit',
  features: ToolClientFeatures | undefined,
  toolName: string,
  caller: string | undefined,
  request: ElicitationRequest,
  signal: AbortSignal,
): Promise<ElicitationResult>;
export function askThrough(
  feature: 'sample',
  features: ToolClientFeatures | undefined,
  toolName: string,
  caller: string | undefined,
  request: SamplingRequest,
  signal: AbortSignal,
): Promise<SamplingResult>;
export function askThrough(
  feature: 'elicit' | 'sample',
  features: ToolClientFeatures | undefined,
  toolName: string,
  caller: string | undefined,
  request: ElicitationRequest | SamplingRequest,
  signal: AbortSignal,
): Promise<ElicitationResult | SamplingResult> {
  const shape = REQUEST_SHAPES[feature];
  if (!shape.fits(request)) return Promise.reject(badRequest(toolName, shape.usage));
  const ask = features?.[feature] as
    | ((request: unknown, options: { signal: AbortSignal }) => Promise<ElicitationResult | SamplingResult>)
    | undefined;
  if (ask === undefined) return Promise.reject(unsupportedClientFeature(toolName, feature, caller));
  if (signal.aborted) return Promise.reject(toolAbortError(signal, toolName));
  try {
    return ask.call(features, request, { signal });
  } catch (error) {
    return Promise.reject(error);
  }
}

/** `ctx.log` of every call context: to the caller's log channel, or nowhere. Never throws. */
export function logThrough(
  features: ToolClientFeatures | undefined,
  level: ToolLogLevel,
  data: unknown,
  logger: string | undefined,
): void {
  const log = features?.log;
  if (log === undefined || !isToolLogLevel(level)) return;
  try {
    log.call(features, level, data, logger);
  } catch {
    // A log channel's failure is not the tool's.
  }
}
