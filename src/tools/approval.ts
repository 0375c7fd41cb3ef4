/**
 * @module Which tool calls need a person's approval before they run: the `needsApproval` contract of
 * `Tool`, the check `ToolSet.call` and agents share, and a wrapper that adds it to any tool.
 */
import { createValidator, type ObjectJsonSchema, type Validator } from '../schema/index.js';
import type { Tool } from './tool.js';
import { decorateTool } from './decorated-tool.js';
import { formatInvalidArguments } from './base-tool.js';

/** What a `needsApproval` predicate sees of the call besides its arguments. */
export interface ApprovalContext {
  /** The tool's name. */
  toolName: string;
  /** The call's id. */
  callId: string;
  /** The end user the call runs for. */
  user?: string | undefined;
}

/**
 * Whether a tool's calls need a person's approval before they run: `true` for every call, or a predicate
 * over the (parsed, valid) arguments, e.g. `(args) => args.amount > 100`. A predicate that throws counts
 * as `true`: when in doubt, ask.
 */
export type NeedsApproval =
  boolean | ((args: Record<string, unknown>, ctx: ApprovalContext) => boolean | Promise<boolean>);

/**
 * True when this call of `tool` needs an approval. Arguments that do not validate need none: the call
 * fails with `invalid-arguments` as it would have, and nobody is asked to approve a call that cannot run.
 */
export async function approvalNeeded(
  tool: Tool,
  args: Record<string, unknown>,
  ctx: ApprovalContext,
): Promise<boolean> {
  const rule = tool.needsApproval;
  if (rule === undefined || rule === false) return false;
  if (checkToolArguments(tool, args) !== undefined) return false;
  if (rule === true) return true;
  try {
    return (await rule(args, ctx)) !== false;
  } catch {
    return true;
  }
}

/** Validators of tool schemas, one per schema object: edited arguments are checked often, compiled once. */
const validators = new WeakMap<object, Validator>();

/**
 * Checks `args` against the tool's JSON Schema (what the model was shown), without running it: for
 * arguments a person edited while approving a call. Resolves to undefined when they are valid, else to
 * the problems as the model would read them (`tool 'x': invalid arguments: argument 'path' must be a
 * string, got number`).
 */
export function checkToolArguments(tool: Tool, args: Record<string, unknown>): string | undefined {
  const schema = tool.schema;
  let validate = validators.get(schema);
  if (validate === undefined) {
    validate = createValidator(schema.parameters as ObjectJsonSchema);
    validators.set(schema, validate);
  }
  const result = validate(args);
  if (result instanceof Promise) return undefined; // only raw JSON Schema here: never asynchronous
  if (result.ok) return undefined;
  return formatInvalidArguments(tool.name, result.issues);
}

/**
 * A tool whose calls need approval, whatever its kind: what a config item's `"approval": "always"`
 * makes of the tool it describes. Everything else is the inner tool's.
 */
export function requireApproval(tool: Tool, needsApproval: NeedsApproval = true): Tool {
  return decorateTool(tool, { needsApproval });
}
