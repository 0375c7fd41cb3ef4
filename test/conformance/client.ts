/**
 * @module toolbus as the client of the official MCP conformance suite (`@modelcontextprotocol/conformance`).
 * The suite runs it as `<command> <server-url>` with `MCP_CONFORMANCE_SCENARIO` naming the scenario
 * and, for some, `MCP_CONFORMANCE_CONTEXT` carrying client credentials. It connects with toolbus's
 * public MCP client (`mcpServerTools` from `toolbus/mcp`, OAuth included), lists the tools, calls the
 * one the scenario expects and closes. It exits 1 with one line on stderr when something fails.
 *
 * `npm run conformance` (scripts/conformance.mjs) runs every client scenario against it.
 */
import { requestJwtAuthorizationGrant } from '@modelcontextprotocol/client';
import {
  mcpServerTools,
  type McpAuthorizeRequest,
  type McpOAuthOptions,
  type ToolClientFeatures,
} from 'toolbus/mcp';

/** The client ID metadata document URL the suite expects a CIMD client to use (it is never fetched). */
const CIMD_URL = 'https://conformance-test.local/client-metadata.json';
/** The suite's authorization endpoint redirects here at once; nothing needs to listen on it. */
const REDIRECT_URL = 'http://127.0.0.1:3000/callback';

/** The tool each scenario's server offers, and arguments for it. */
const TOOL_CALLS: Record<string, { name: string; args: Record<string, unknown> }> = {
  tools_call: { name: 'add_numbers', args: { a: 2, b: 3 } },
  'sse-retry': { name: 'test_reconnection', args: {} },
  'elicitation-sep1034-client-defaults': { name: 'test_client_elicitation_defaults', args: {} },
};

/**
 * The caller behind the calls, as a program offers it: a person who accepts every form without
 * touching it, so toolbus's client fills in the schema's defaults (SEP-1034).
 */
const caller: ToolClientFeatures = {
  elicit: async () => ({ action: 'accept', content: {} }),
};

/**
 * Plays the browser of a user who approves: the suite's authorization endpoint answers with a
 * redirect to the client at once, which is what `authorize` returns.
 */
async function followAuthorization(request: McpAuthorizeRequest): Promise<URL> {
  const response = await fetch(request.url, { redirect: 'manual', signal: request.signal });
  const location = response.headers.get('location');
  if (response.status < 300 || response.status >= 400 || location === null) {
    throw new Error(`the authorization endpoint answered ${response.status} without a redirect`);
  }
  return new URL(location, request.url);
}

/** `MCP_CONFORMANCE_CONTEXT`, whose fields depend on the scenario. */
function context(): Record<string, string | undefined> {
  const text = process.env['MCP_CONFORMANCE_CONTEXT'];
  if (!text) throw new Error('MCP_CONFORMANCE_CONTEXT is not set; this scenario needs it');
  return JSON.parse(text) as Record<string, string | undefined>;
}

function required(ctx: Record<string, string | undefined>, field: string): string {
  const value = ctx[field];
  if (!value) throw new Error(`MCP_CONFORMANCE_CONTEXT has no '${field}'`);
  return value;
}

/** The `oauth` options for a scenario, or undefined for the scenarios without authorization. */
function oauthFor(scenario: string): McpOAuthOptions | undefined {
  if (!scenario.startsWith('auth/')) return undefined;
  const interactive: McpOAuthOptions = {
    clientName: 'toolbus-conformance',
    redirectUrl: REDIRECT_URL,
    authorize: followAuthorization,
  };
  switch (scenario) {
    case 'auth/client-credentials-basic': {
      const ctx = context();
      return {
        grant: 'client_credentials',
        clientId: required(ctx, 'client_id'),
        clientSecret: required(ctx, 'client_secret'),
        tokenEndpointAuthMethod: 'client_secret_basic',
      };
    }
    case 'auth/client-credentials-jwt': {
      const ctx = context();
      return {
        grant: 'client_credentials',
        clientId: required(ctx, 'client_id'),
        privateKey: required(ctx, 'private_key_pem'),
        ...(ctx['signing_algorithm'] ? { signingAlgorithm: ctx['signing_algorithm'] } : {}),
      };
    }
    case 'auth/pre-registration': {
      const ctx = context();
      return {
        ...interactive,
        clientId: required(ctx, 'client_id'),
        clientSecret: required(ctx, 'client_secret'),
      };
    }
    case 'auth/cross-app-access-complete-flow': {
      const ctx = context();
      const idToken = required(ctx, 'idp_id_token');
      const idpClientId = required(ctx, 'idp_client_id');
      const tokenEndpoint = required(ctx, 'idp_token_endpoint');
      return {
        grant: 'jwt-bearer',
        clientId: required(ctx, 'client_id'),
        clientSecret: required(ctx, 'client_secret'),
        tokenEndpointAuthMethod: 'client_secret_basic',
        // The enterprise IdP exchanges the user's ID token for a grant for this MCP server (RFC 8693).
        assertion: async (request) =>
          (
            await requestJwtAuthorizationGrant({
              tokenEndpoint,
              audience: request.authorizationServerUrl,
              resource: request.resourceUrl,
              idToken,
              clientId: idpClientId,
              ...(request.scope ? { scope: request.scope } : {}),
            })
          ).jwtAuthGrant,
      };
    }
    default:
      return { ...interactive, clientMetadataUrl: CIMD_URL };
  }
}

async function run(scenario: string, serverUrl: string): Promise<void> {
  const oauth = oauthFor(scenario);
  const tools = await mcpServerTools({ url: serverUrl, id: 'conformance', ...(oauth ? { oauth } : {}) });
  try {
    const names = tools.list().map((tool) => tool.name);
    const call =
      TOOL_CALLS[scenario] ?? (names.includes('test-tool') ? { name: 'test-tool', args: {} } : undefined);
    if (call) {
      const result = await tools.call(call.name, call.args, { clientFeatures: caller });
      if (result.isError) throw new Error(result.content);
    }
  } finally {
    await tools.close();
  }
}

const scenario = process.env['MCP_CONFORMANCE_SCENARIO'];
const serverUrl = process.argv[2];
if (!scenario || !serverUrl) {
  process.stderr.write('usage: MCP_CONFORMANCE_SCENARIO=<scenario> client.ts <server-url>\n');
  process.exit(2);
}
try {
  await run(scenario, serverUrl);
} catch (error) {
  process.stderr.write(
    `conformance client (${scenario}): ${error instanceof Error ? error.message : String(error)}\n`,
  );
  process.exitCode = 1;
}
