/**
 * @module A principal's view of a tool set: only the tools its policy allows are listed or found, each
 * call is admitted against its quotas and runs for its verified user. `/mcp` and the agent serve this
 * view, so a tool the principal may not use is neither offered nor callable there.
 */
import { randomUUID } from 'node:crypto';
import {
  ToolError,
  toolView,
  type ObservableToolProvider,
  type ToolCallOptions,
  type ToolResult,
} from '../tools/index.js';
import { anyGlobMatches } from '../schema/index.js';
import type { AccessDeniedEvent, AccessPolicy } from './access-policy.js';
import type { Principal } from './principal.js';

/** Where the view is served and for whom, for its calls and its denial events. */
export interface PolicyToolsOptions {
  /** The verified user every call is for. */
  user: string;
  /** `mcp` or `agent`: named in denial events. */
  surface: string;
  /** `ToolCallOptions.caller` of every call, e.g. `mcp:alice@127.0.0.1`. @default the caller's own */
  caller?: string;
  /** The client's address, for denial events. @default 'unknown' */
  remote?: string;
  /** Where denial events say the request went. @default '/mcp' */
  path?: string;
  /** Told of each refused call instead of the policy's own `onDenied`. @default policy.denied */
  onDenied?: (event: AccessDeniedEvent) => void;
}

export type { ObservableToolProvider };

function denial(
  name: string,
  callId: string,
  code: 'forbidden' | 'rate-limited' | 'too-many-requests',
  message: string,
): ToolResult {
  return {
    name,
    callId,
    content: message,
    isError: true,
    error: new ToolError(code, message, { toolName: name }),
  };
}

/**
 * `tools` as `principal` may use them (see {@link AccessPolicy.allows} and {@link AccessPolicy.admit}).
 * A call of a tool it may not use is a `forbidden` error result, one over its quotas `rate-limited` or
 * `too-many-requests`; each is told to the policy's `onDenied`.
 */
export function policyTools(
  policy: AccessPolicy,
  principal: Principal,
  tools: ObservableToolProvider,
  options: PolicyToolsOptions,
): ObservableToolProvider {
  const notify = options.onDenied ?? ((e: AccessDeniedEvent) => policy.denied(e));
  const event = (status: number, code: string, rule: string, reason: string, tool: string): void =>
    notify({
      status,
      code,
      rule,
      reason,
      surface: options.surface,
      method: 'tools/call',
      path: options.path ?? '/mcp',
      remote: options.remote ?? 'unknown',
      principal: principal.name,
      user: options.user,
      tool,
    });
  // The list is kept until the tools or the role settings change (an MCP session keeps this view).
  const narrowed = toolView(tools, {
    accepts: (tool) => policy.allows(principal, tool.name),
    version: () => policy.rolesRevision,
  });
  const view: ObservableToolProvider = {
    list: narrowed.list,
    get: narrowed.get,
    search: narrowed.search!,
    async call(name, args, callOptions: ToolCallOptions = {}) {
      const callId = callOptions.callId ?? randomUUID();
      if (!policy.can(principal, 'call-tools') || !policy.allows(principal, name)) {
        const reason = !policy.can(principal, 'call-tools')
          ? `principal '${principal.name}' may not call tools: that takes the role ${policy.rolesFor('call-tools').join(' or ')}`
          : `principal '${principal.name}' may not use tool '${name.slice(0, 80)}' (its tool policy does not allow it)`;
        event(403, 'forbidden', !policy.can(principal, 'call-tools') ? 'role' : 'tool-policy', reason, name);
        return denial(name, callId, 'forbidden', reason);
      }
      const admission = policy.admit(principal, name);
      if (!admission.ok) {
        event(429, admission.code, admission.rule, admission.message, name);
        return denial(name, callId, admission.code, admission.message);
      }
      try {
        return await tools.call(name, args, {
          ...callOptions,
          callId,
          user: options.user,
          ...(options.caller !== undefined ? { caller: options.caller } : {}),
        });
      } finally {
        admission.release();
      }
    },
  };
  if (tools.onChange) view.onChange = (listener) => tools.onChange?.(listener);
  return view;
}

/**
 * `tools` narrowed to the names `globs` match: the others are neither listed nor found, and calling one
 * is a `forbidden` error result. What an agent run asked for by a restricted principal offers its model.
 */
export function toolsMatching(
  tools: ObservableToolProvider,
  globs: readonly string[],
): ObservableToolProvider {
  return toolView(tools, {
    accepts: (tool) => anyGlobMatches(globs, tool.name),
    hidden: (name, callId) =>
      denial(
        name,
        callId,
        'forbidden',
        `tool '${name.slice(0, 80)}' is not among the tools this run may use (${globs.join(', ') || 'none'})`,
      ),
  });
}
