// The MCP Inspector CLI (`inspector --cli`), as a person would run it from a terminal, over
// stdio (it starts `crm-host mcp` itself, one process per command) and over Streamable HTTP
// (`--server-url` with the bearer token as a header), in both protocol eras (`--protocol-era
// legacy` is the 2025 initialize handshake, `modern` pins 2026-07-28). Each combination lists
// the tools (with --strict: no error-severity schema portability finding), reads a record,
// makes a failing call, runs a query and reads its result file with resources/read.

import { createRequire } from 'node:module';
import path from 'node:path';

import {
  CALL_TIMEOUT, TOKENS, FAIL_ARGS, QUERY_ARGS, READ_ARGS, check, checkFailure, checkRead,
  checkResource, checkTools, ensureDir, resourceLinkOf, runProcess, stdioServer,
} from './lib.mjs';

const require = createRequire(import.meta.url);
const INSPECTOR = path.join(path.dirname(require.resolve('@modelcontextprotocol/inspector/package.json')),
  'clients/launcher/build/index.js');

// Exit codes of the CLI: 0 a result, 5 a tool result with isError (the result is still
// printed on stdout, the envelope on stderr).
const TOOL_IS_ERROR = 5;

async function inspector(workdir, target, era, args, expectCode = 0) {
  const home = ensureDir(path.join(workdir, 'inspector-home'));
  const env = {
    ...process.env,
    HOME: home,
    MCP_CATALOG_PATH: path.join(home, 'mcp.json'),
    MCP_CLIENT_CONFIG_PATH: path.join(home, 'client.json'),
    MCP_AUTO_OPEN_ENABLED: 'false',
  };
  const common = ['--cli', '--format', 'json', '--stored-auth-only', '--protocol-era', era,
    '--connect-timeout', String(CALL_TIMEOUT)];
  const argv = [INSPECTOR, ...common, ...args, ...target];
  const run = await runProcess(process.execPath, argv, { env, timeoutMs: CALL_TIMEOUT + 15_000 });
  const shown = `inspector ${args.join(' ')} -> exit ${run.code}\nstdout: ${run.stdout.slice(0, 1500)}\n` +
    `stderr: ${run.stderr.slice(-1500)}`;
  check(run.code === expectCode, `exit code ${expectCode}: ${shown}`);
  let out;
  try {
    out = JSON.parse(run.stdout);
  } catch {
    throw new Error(`one JSON object on stdout: ${shown}`);
  }
  return { out, stderr: run.stderr, shown };
}

function call(name, argsJson) {
  return ['--method', 'tools/call', '--tool-name', name, '--tool-args-json', JSON.stringify(argsJson)];
}

async function exerciseInspector(workdir, target, era) {
  const list = await inspector(workdir, target, era, ['--method', 'tools/list', '--strict']);
  checkTools(list.out.result?.tools);

  checkRead((await inspector(workdir, target, era, call('crmb_get_record', READ_ARGS))).out.result);

  const failed = await inspector(workdir, target, era, call('crmb_get_record', FAIL_ARGS), TOOL_IS_ERROR);
  const error = checkFailure(failed.out.result);
  check(failed.stderr.includes('tool_is_error'), `the CLI says the tool failed: ${failed.shown}`);

  const query = await inspector(workdir, target, era, call('crmb_run_soql_query', QUERY_ARGS));
  const { uri, count } = resourceLinkOf(query.out.result);
  const read = await inspector(workdir, target, era, ['--method', 'resources/read', '--uri', uri]);
  const resource = read.out.result ?? read.out;
  checkResource(resource, uri, count);
  if (era === 'modern') {
    // 2026-07-28 results carry caching hints (SEP-2549): evidence the modern era was spoken.
    check(typeof resource.cacheScope === 'string', `a 2026-07-28 read has cacheScope: ${read.shown}`);
  }
  return `${list.out.result.tools.length} tools, read ok, error shown (${error.kind}), ` +
    `resource of ${count} lines`;
}

export function inspectorSteps(crmHost, workdir, http) {
  const steps = [];
  for (const era of ['legacy', 'modern']) {
    const label = era === 'modern' ? '2026-07-28' : '2025-11-25';
    steps.push({
      name: `MCP Inspector CLI over stdio, ${label} era`,
      run: () => {
        const server = stdioServer(crmHost, workdir, `inspector-${era}`);
        const target = ['-e', 'CRM_FILE_THRESHOLD_RECORDS=1', server.command, ...server.args];
        return exerciseInspector(workdir, target, era);
      },
    });
    steps.push({
      name: `MCP Inspector CLI over http, ${label} era`,
      run: () => exerciseInspector(workdir, ['--header', `Authorization: Bearer ${TOKENS.acme}`,
        '--server-url', http().url], era),
    });
  }
  return steps;
}
