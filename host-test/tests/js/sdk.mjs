// The TypeScript SDK clients, v1 (@modelcontextprotocol/sdk 1.x: the 2025 era, initialize and
// sessions) and v2 (@modelcontextprotocol/client 2.x: the 2025 era, and the stateless
// 2026-07-28 era through server/discover), over stdio and over Streamable HTTP. Each run lists
// the tools, reads a record, makes a failing call whose message it must show, and reads a
// query's result file back as a resource. Both SDKs check structuredContent against the tool's
// outputSchema themselves.

import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport as StdioV1 } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport as HttpV1 } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { Client as ClientV2, StreamableHTTPClientTransport as HttpV2 } from '@modelcontextprotocol/client';
import { StdioClientTransport as StdioV2 } from '@modelcontextprotocol/client/stdio';

import {
  CALL_TIMEOUT, START_TIMEOUT, TOKENS, FAIL_ARGS, QUERY_ARGS, READ_ARGS, check, checkFailure,
  checkRead, checkResource, checkTools, resourceLinkOf, stdioServer, withTimeout,
} from './lib.mjs';

const CLIENT_INFO = { name: 'crm-host-js-test', version: '1.0.0' };
const MODERN = '2026-07-28';

function transportFor(sdk, kind, target) {
  if (kind === 'stdio') {
    const params = { ...target, stderr: 'ignore' };
    return sdk === 'v1' ? new StdioV1(params) : new StdioV2(params);
  }
  const options = { requestInit: { headers: { Authorization: `Bearer ${TOKENS.acme}` } } };
  return sdk === 'v1' ? new HttpV1(new URL(target), options) : new HttpV2(new URL(target), options);
}

function clientFor(sdk, era) {
  if (sdk === 'v1') return new ClientV1(CLIENT_INFO, { capabilities: {} });
  const mode = { modern: { pin: MODERN }, auto: 'auto', legacy: 'legacy' }[era];
  const versionNegotiation = { mode };
  return new ClientV2(CLIENT_INFO, { capabilities: {}, versionNegotiation });
}

// v1 takes (params, resultSchema, options); v2 takes (params, options).
function callTool(sdk, client, name, args) {
  const params = { name, arguments: args };
  const options = { timeout: CALL_TIMEOUT };
  return sdk === 'v1' ? client.callTool(params, undefined, options) : client.callTool(params, options);
}

// What the SDK says when a call throws instead of returning a result (an output-schema
// validation failure, a JSON-RPC error): that is what the user would see.
async function shown(promise, what) {
  try {
    return await withTimeout(promise, CALL_TIMEOUT + 5_000, what);
  } catch (e) {
    throw new Error(`${what}: the client threw instead of returning a result: ${e?.message ?? e}`);
  }
}

export async function exerciseSdk(sdk, kind, era, target) {
  const client = clientFor(sdk, era);
  const transport = transportFor(sdk, kind, target);
  let pid;
  const start = transport.start.bind(transport);
  transport.start = async () => {
    await start();
    pid = transport.pid ?? pid;
  };
  try {
    await withTimeout(client.connect(transport, { timeout: START_TIMEOUT }), START_TIMEOUT + 5_000,
      `${sdk} ${kind} ${era}: connect`);
    // 'auto' probes with server/discover and must find the modern era here.
    const negotiated = sdk === 'v2' ? client.getProtocolEra?.() : 'legacy';
    const expected = era === 'auto' ? 'modern' : era;
    check(negotiated === expected, `negotiated the ${expected} era, got ${negotiated}`);
    const version = client.getServerVersion?.();
    check(version?.name, `the server says who it is: ${JSON.stringify(version)}`);

    const list = await shown(client.listTools(undefined, { timeout: CALL_TIMEOUT }), 'tools/list');
    checkTools(list.tools);

    checkRead(await shown(callTool(sdk, client, 'crmb_get_record', READ_ARGS), 'read'));
    const error = checkFailure(await shown(callTool(sdk, client, 'crmb_get_record', FAIL_ARGS),
      'failing call'));

    const query = await shown(callTool(sdk, client, 'crmb_run_soql_query', QUERY_ARGS), 'query');
    const { uri, count } = resourceLinkOf(query);
    const read = await shown(client.readResource({ uri }, { timeout: CALL_TIMEOUT }), 'resources/read');
    checkResource(read, uri, count);
    return `${list.tools.length} tools, read ok, error shown (${error.kind}: ${error.message}), ` +
      `resource of ${count} lines`;
  } finally {
    await withTimeout(client.close(), 15_000, 'close').catch(() => {});
    await withTimeout(transport.close(), 15_000, 'close').catch(() => {});
    // A stdio server the SDK could not close (say a connect that timed out) is killed here.
    if (pid) {
      try { process.kill(pid, 'SIGKILL'); } catch { /* already gone */ }
    }
  }
}

// The combinations: v1 speaks only the 2025 era (initialize; it has no server/discover), v2
// both eras, pinned so that a silent fallback to the other era cannot pass, and 'auto' (the
// server/discover probe with fallback, on stdio a throwaway probe process first) must land on
// 2026-07-28.
export function sdkSteps(crmHost, workdir, http) {
  const combos = [
    ['v1', 'stdio', 'legacy'], ['v1', 'http', 'legacy'],
    ['v2', 'stdio', 'legacy'], ['v2', 'stdio', 'modern'],
    ['v2', 'http', 'legacy'], ['v2', 'http', 'modern'],
    ['v2', 'stdio', 'auto'], ['v2', 'http', 'auto'],
  ];
  const label = { legacy: '2025-11-25 era', modern: `${MODERN} era`, auto: `negotiated (auto) ${MODERN} era` };
  return combos.map(([sdk, kind, era]) => ({
    name: `TypeScript SDK ${sdk} over ${kind}, ${label[era]}`,
    run: () => exerciseSdk(sdk, kind, era,
      kind === 'stdio' ? stdioServer(crmHost, workdir, `sdk-${sdk}-${era}`) : http().url),
  }));
}
