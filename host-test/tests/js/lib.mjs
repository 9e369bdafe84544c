// Shared helpers for the JavaScript MCP client tests: the crm-host servers (stdio and
// Streamable HTTP), the tenants file, bounded child processes, a bearer-token forwarding
// proxy, and the checks every client makes.

import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { createWriteStream, mkdtempSync, readFileSync, writeFileSync, mkdirSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';

export const ACME_ACCOUNT = '0015gA000000001ABA';
export const ACME_NAME = 'Acme Energy';
export const TOOL_COUNT = 30;
export const TOKENS = { acme: 'token-for-acme', globex: 'token-for-globex' };

// Per-call and per-start bounds (ms). Every server start, call and child process is bounded.
export const CALL_TIMEOUT = 60_000;
export const START_TIMEOUT = 90_000;

export class CheckError extends Error {}

export function check(condition, what) {
  if (!condition) throw new CheckError(what);
}

export function withTimeout(promise, ms, what) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms: ${what}`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

export function makeWorkdir() {
  return mkdtempSync(path.join(os.tmpdir(), 'crm-js-'));
}

// The environment every crm-host gets: a one-record threshold, so a SOQL query writes its
// result to a file and answers with a resource_link.
export function serverEnv() {
  return { ...process.env, CRM_FILE_THRESHOLD_RECORDS: '1', NO_COLOR: '1' };
}

// Every crm-host here gives structured answers (structuredContent beside the text, output
// schemas listed; the default is the text alone), which the SDKs check against each tool's
// output schema.
const STRUCTURED = ['--answers', 'structured'];

// `crm-host mcp` for one tenant (acme) with its own data and results folders; `answers: 'text'`
// is the server's default (no output schemas), what a client configured by hand gets.
export function stdioServer(crmHost, workdir, name, { answers = 'structured' } = {}) {
  return {
    command: crmHost,
    args: ['mcp', '--answers', answers,
      '--data-dir', path.join(workdir, `${name}-data`),
      '--results-dir', path.join(workdir, `${name}-results`)],
    env: serverEnv(),
  };
}

// The tenants file for TOKENS' tenants; `policies` maps a tenant to the TOML lines of its
// [tenants.policy] table.
export function writeTenants(workdir, policies = {}, name = 'tenants') {
  const file = path.join(workdir, `${name}.toml`);
  let text = '';
  for (const tenant of Object.keys(TOKENS)) {
    text += `[[tenants]]\nid = "${tenant}"\n`;
    if (policies[tenant]) text += `[tenants.policy]\n${policies[tenant]}\n`;
  }
  for (const [tenant, token] of Object.entries(TOKENS)) {
    const digest = createHash('sha256').update(token).digest('hex');
    text += `[[tokens]]\nsha256 = "${digest}"\ntenant = "${tenant}"\nuser = "${tenant}-user"\n`;
  }
  writeFileSync(file, text);
  return file;
}

const children = new Set();

function killTree(child, signal = 'SIGKILL') {
  try {
    process.kill(-child.pid, signal);
  } catch {
    try { child.kill(signal); } catch { /* gone */ }
  }
}

// Kills every child this process started (on exit, on a failure, on a signal).
export function killAll() {
  for (const child of children) killTree(child);
  children.clear();
}
process.on('exit', killAll);
for (const signal of ['SIGINT', 'SIGTERM']) {
  process.on(signal, () => { killAll(); process.exit(130); });
}

// Starts `crm-host serve` on a free loopback port and waits for its {"listening": URL} line.
export async function startHttpServer(crmHost, workdir, name = 'http', policies = {}) {
  const tenants = writeTenants(workdir, policies, name === 'http' ? 'tenants' : `${name}-tenants`);
  const logPath = path.join(workdir, `${name}-server.log`);
  const log = createWriteStream(logPath);
  const child = spawn(crmHost, ['serve', ...STRUCTURED, '--listen', '127.0.0.1:0', '--tenants', tenants,
    '--data-dir', path.join(workdir, `${name}-data`),
    '--results-dir', path.join(workdir, `${name}-results`)],
  { env: serverEnv(), stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  children.add(child);
  child.stderr.pipe(log);
  const exited = new Promise((resolve) => child.once('exit', resolve));
  const firstLine = new Promise((resolve, reject) => {
    let buffered = '';
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (chunk) => {
      buffered += chunk;
      const newline = buffered.indexOf('\n');
      if (newline >= 0) resolve(buffered.slice(0, newline));
    });
    child.once('exit', (code) => reject(new Error(
      `crm-host serve exited (${code}) before listening; log ${logPath}:\n${tail(logPath)}`)));
    child.once('error', reject);
  });
  const line = await withTimeout(firstLine, START_TIMEOUT, 'crm-host serve to listen');
  const base = JSON.parse(line).listening;
  check(typeof base === 'string' && base.startsWith('http://'), `a listening URL: ${line}`);
  const url = base.endsWith('/mcp') ? base : `${base.replace(/\/$/, '')}/mcp`;
  return {
    url,
    logPath,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) {
        killTree(child, 'SIGTERM');
        const done = await Promise.race([exited.then(() => true),
          new Promise((r) => setTimeout(() => r(false), 10_000))]);
        if (!done) killTree(child);
      }
      children.delete(child);
      log.end();
    },
  };
}

export function tail(file, lines = 30) {
  try {
    // eslint-disable-next-line no-control-regex
    return readFileSync(file, 'utf8').replace(/\x1b\[[0-9;]*m/g, '').split('\n').slice(-lines).join('\n');
  } catch {
    return '(no log)';
  }
}

// Runs a command to its end, bounded: { code, signal, stdout, stderr }.
export function runProcess(command, args, { env = process.env, cwd, timeoutMs = CALL_TIMEOUT } = {}) {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { env, cwd, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    children.add(child);
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (c) => { stdout += c; });
    child.stderr.setEncoding('utf8').on('data', (c) => { stderr += c; });
    const timer = setTimeout(() => {
      killTree(child);
      reject(new Error(`timed out after ${timeoutMs} ms: ${command} ${args.join(' ')}\n` +
        `stdout: ${stdout.slice(-2000)}\nstderr: ${stderr.slice(-2000)}`));
    }, timeoutMs);
    child.once('error', (e) => { clearTimeout(timer); children.delete(child); reject(e); });
    child.once('close', (code, signal) => {
      clearTimeout(timer);
      // Whatever the command left running in its group (a stdio server) goes too.
      killTree(child);
      children.delete(child);
      resolve({ code, signal, stdout, stderr });
    });
  });
}

// A loopback HTTP proxy that forwards every request (method, path and headers, streamed both
// ways, so SSE passes through) to `target`, adding `Authorization: Bearer <token>` when the
// request has none. It lets a client that cannot send a header of its own (the conformance
// suite) reach the authenticated `crm-host serve`. The server must see what a direct client
// would send, so a loopback Host or Origin naming the proxy's port is rewritten to name the
// server's; any other Host or Origin (e.g. a DNS-rebinding probe's) is passed as it came.
export async function startTokenProxy(targetUrl, token) {
  const target = new URL(targetUrl);
  const sockets = new Set();
  let ownPort;
  const loopback = /^(127\.0\.0\.1|localhost|\[::1\])$/i;
  const toServer = (value, withScheme) => {
    if (typeof value !== 'string') return value;
    try {
      const url = new URL(withScheme ? value : `http://${value}`);
      if (!loopback.test(url.hostname) || url.port !== String(ownPort)) return value;
      return withScheme ? `${url.protocol}//${url.hostname}:${target.port}` : `${url.hostname}:${target.port}`;
    } catch {
      return value;
    }
  };
  const server = http.createServer((req, res) => {
    const headers = { ...req.headers };
    if (!headers.authorization) headers.authorization = `Bearer ${token}`;
    headers.host = toServer(headers.host, false);
    if (headers.origin) headers.origin = toServer(headers.origin, true);
    const upstream = http.request({
      host: target.hostname, port: target.port, method: req.method, path: req.url, headers,
    }, (answer) => {
      res.writeHead(answer.statusCode, answer.statusMessage, answer.rawHeaders);
      res.flushHeaders();
      answer.pipe(res);
    });
    upstream.on('error', (e) => {
      if (!res.headersSent) res.writeHead(502, { 'content-type': 'text/plain' });
      res.end(`proxy: ${e.message}`);
    });
    res.on('close', () => upstream.destroy());
    req.pipe(upstream);
  });
  server.on('connection', (s) => { sockets.add(s); s.on('close', () => sockets.delete(s)); });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  ownPort = server.address().port;
  return {
    url: `http://127.0.0.1:${ownPort}${target.pathname}`,
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

export function ensureDir(dir) {
  mkdirSync(dir, { recursive: true });
  return dir;
}

// --- the checks every client run makes -----------------------------------------------------

export function checkTools(tools) {
  check(Array.isArray(tools), `tools/list gives a list: ${JSON.stringify(tools)?.slice(0, 300)}`);
  check(tools.length === TOOL_COUNT, `${TOOL_COUNT} tools, got ${tools.length}`);
  for (const tool of tools) {
    check(tool.title, `${tool.name} has a title`);
    check(tool.outputSchema?.type === 'object', `${tool.name} has an object output schema`);
    check(tool.annotations && typeof tool.annotations.readOnlyHint === 'boolean',
      `${tool.name} is annotated`);
  }
  const names = tools.map((t) => t.name);
  for (const name of ['crmb_get_record', 'crmb_run_soql_query', 'crm_read_result_file']) {
    check(names.includes(name), `${name} is listed`);
  }
}

export function textOf(result) {
  return (result.content ?? []).filter((c) => c.type === 'text').map((c) => c.text).join('\n');
}

export function checkRead(result) {
  check(result && !result.isError, `read: not an error: ${JSON.stringify(result)?.slice(0, 800)}`);
  check(result.structuredContent?.record?.Name === ACME_NAME,
    `read: record.Name is ${ACME_NAME}: ${JSON.stringify(result.structuredContent)?.slice(0, 800)}`);
  check(JSON.stringify(JSON.parse(textOf(result))) === JSON.stringify(result.structuredContent),
    'read: the text block is the structuredContent JSON');
}

// The failing call: the client gets a result (not a thrown protocol/validation error) with
// isError, and its text names the error kind and carries the message.
export function checkFailure(result) {
  check(result && result.isError === true,
    `failing call: isError true: ${JSON.stringify(result)?.slice(0, 800)}`);
  const text = textOf(result);
  check(text.includes('invalid-input'), `failing call: the text names invalid-input: ${text}`);
  let error;
  try {
    error = JSON.parse(text).error;
  } catch {
    throw new CheckError(`failing call: the text is the {"error": ...} JSON: ${text}`);
  }
  check(error?.kind === 'invalid-input', `failing call: kind invalid-input: ${text}`);
  check(typeof error.message === 'string' && error.message.length > 0,
    `failing call: a message: ${text}`);
  return error;
}

export function resourceLinkOf(result) {
  check(result && !result.isError, `query: not an error: ${JSON.stringify(result)?.slice(0, 800)}`);
  const links = (result.content ?? []).filter((c) => c.type === 'resource_link');
  check(links.length === 1, `query: one resource_link: ${JSON.stringify(result.content)?.slice(0, 800)}`);
  check(links[0].mimeType === 'application/x-ndjson', `query: an ndjson link: ${JSON.stringify(links[0])}`);
  check(links[0].uri.startsWith('crm-results://files/'), `query: a crm-results URI: ${links[0].uri}`);
  const count = result.structuredContent?.record_count;
  check(Number.isInteger(count) && count > 1, `query: a record_count: ${JSON.stringify(result.structuredContent)?.slice(0, 400)}`);
  return { uri: links[0].uri, count };
}

export function checkResource(read, uri, count) {
  const contents = read?.contents;
  check(Array.isArray(contents) && contents.length === 1, `resources/read: one content: ${JSON.stringify(read)?.slice(0, 400)}`);
  check(contents[0].uri === uri, `resources/read: the same URI: ${contents[0].uri}`);
  const lines = contents[0].text.split('\n').filter((l) => l.length > 0);
  check(lines.length === count, `resources/read: ${count} lines, got ${lines.length}`);
  for (const line of lines) JSON.parse(line);
}

export const READ_ARGS = { object: 'Account', record_id: ACME_ACCOUNT, fields: ['Name'] };
export const FAIL_ARGS = { object: 'Account', record_id: 'nope' };
export const QUERY_ARGS = { query: 'SELECT Id, Name FROM Account' };
