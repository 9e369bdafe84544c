// The tools' JSON Schemas as the model APIs' client code takes them (issue 40, point 1): every
// check is real client code or a documented rule, offline.
//
//   Gemini CLI        the CLI itself (npm @google/gemini-cli) with our server in its settings:
//                     `gemini -p` against a loopback stand-in for the Gemini API (a dummy key,
//                     GOOGLE_GEMINI_BASE_URL), so the request it would send to the model, with
//                     the function declarations it made from tools/list, is caught on the wire;
//                     every tool must be declared with every parameter. `gemini mcp list` too
//                     (it shows the server's connection, not its tools).
//   @google/genai     mcpToTool(client) over an MCP SDK client, the declarations tool() gives and
//                     those generateContent sends (to the same stand-in): same checks.
//   OpenAI strict     how many tools OpenAI's strict function mode would take as listed, by its
//                     documented rules (schema-rules.mjs); a report, never a failure.
//   Ajv strict        Ajv 2020 with strict: true compiles every input and output schema.
//   Gemini subset     every input schema as sent fits the Schema object of a FunctionDeclaration's
//                     `parameters` (schema-rules.mjs): what a client that converts rather than
//                     passing `parametersJsonSchema` can keep.
// The first step runs those rule checkers on hand-made schemas with known answers.
//
// The steps start their own stdio servers and change nothing, so each one's failure leaves the
// later ones to run (`independent`): one run shows every finding.

import { readFileSync, realpathSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { GoogleGenAI, mcpToTool } from '@google/genai';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import Ajv2020 from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';

import {
  CALL_TIMEOUT, CheckError, START_TIMEOUT, TOOL_COUNT, check, ensureDir, runProcess, stdioServer,
  withTimeout,
} from './lib.mjs';
import {
  classifyChanges, compareParameters, geminiSubsetFindings, jsonDiff, openaiStrictCheck,
  resolveRef, selfTest, showChange,
} from './schema-rules.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const packageJson = (name) => JSON.parse(readFileSync(path.join(here, 'node_modules', name, 'package.json'), 'utf8'));
const GEMINI_CLI = packageJson('@google/gemini-cli');
const GEMINI_JS = path.join(here, 'node_modules', '@google/gemini-cli', GEMINI_CLI.bin.gemini);
const GENAI = packageJson('@google/genai');

const CLIENT_INFO = { name: 'crm-host-schema-test', version: '1.0.0' };
// The name our server has in the Gemini CLI's settings: its tools are declared as mcp_crm_<tool>.
const SERVER_NAME = 'crm';
const FAKE_KEY = 'offline-test-key';
// Any model name: the stand-in answers for all of them. Naming one skips the CLI's model router
// (whose classifier call would want a JSON answer).
const MODEL = 'gemini-2.5-flash';

const indent = (lines) => lines.map((l) => `     ${l}`).join('\n');

// --- our server's tools --------------------------------------------------------------------------

async function withMcpClient(server, body) {
  const client = new Client(CLIENT_INFO, { capabilities: {} });
  const transport = new StdioClientTransport({ ...server, stderr: 'ignore' });
  try {
    await withTimeout(client.connect(transport, { timeout: START_TIMEOUT }), START_TIMEOUT + 5_000, 'connect');
    return await body(client);
  } finally {
    await withTimeout(client.close(), 15_000, 'close').catch(() => {});
  }
}

async function listAll(client) {
  const tools = [];
  let cursor;
  do {
    const page = await withTimeout(client.listTools(cursor ? { cursor } : undefined, { timeout: CALL_TIMEOUT }),
      CALL_TIMEOUT + 5_000, 'tools/list');
    tools.push(...page.tools);
    cursor = page.nextCursor;
  } while (cursor);
  check(tools.length === TOOL_COUNT, `${TOOL_COUNT} tools, got ${tools.length}`);
  return tools;
}

// --- a loopback stand-in for the Gemini API ---------------------------------------------------------

// Answers every generateContent (plain or streamed) with the text "done" and keeps each request's
// JSON body: what the client would have sent to Google.
async function startGeminiStandIn() {
  const requests = [];
  const answer = {
    candidates: [{ content: { role: 'model', parts: [{ text: 'done' }] }, finishReason: 'STOP', index: 0 }],
    usageMetadata: { promptTokenCount: 1, candidatesTokenCount: 1, totalTokenCount: 2 },
  };
  const server = http.createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (c) => { body += c; });
    req.on('end', () => {
      let json;
      try { json = JSON.parse(body); } catch { json = undefined; }
      requests.push({ method: req.method, url: req.url, body: json });
      if (req.url.includes(':streamGenerateContent')) {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.end(`data: ${JSON.stringify(answer)}\n\n`);
      } else if (req.url.includes(':countTokens')) {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ totalTokens: 1 }));
      } else {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify(answer));
      }
    });
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${server.address().port}`,
    requests,
    close: () => new Promise((resolve) => { server.closeAllConnections?.(); server.close(resolve); }),
  };
}

// The function declarations of the first caught request that declares one named by `isOurs`.
function declarationsSent(requests, isOurs) {
  for (const r of requests) {
    const declarations = (r.body?.tools ?? []).flatMap((t) => t.functionDeclarations ?? t.function_declarations ?? []);
    if (declarations.some((d) => isOurs(d.name))) return { url: r.url, declarations };
  }
  return undefined;
}

// --- declarations against tools/list ----------------------------------------------------------------

// For each listed tool, its declaration (found by nameOf), the field its schema went in, the
// parameters lost or added, and every other change to the schema.
function compareDeclarations(tools, declarations, nameOf) {
  const byName = new Map(declarations.map((d) => [d.name, d]));
  const result = { missing: [], lost: [], added: new Map(), fields: new Map(), nullable: 0, other: [], parameters: 0 };
  for (const tool of tools) {
    const declaration = byName.get(nameOf(tool.name));
    if (!declaration) {
      result.missing.push(tool.name);
      continue;
    }
    const field = ['parametersJsonSchema', 'parameters'].find((f) => declaration[f] !== undefined) ?? '(none)';
    result.fields.set(field, (result.fields.get(field) ?? 0) + 1);
    const schema = declaration[field] ?? {};
    const params = compareParameters(tool.inputSchema, schema);
    result.parameters += params.count;
    for (const p of params.lost) result.lost.push(`${tool.name}: ${p}`);
    for (const p of params.added) result.added.set(p, (result.added.get(p) ?? 0) + 1);
    const changes = classifyChanges(jsonDiff(tool.inputSchema, schema));
    result.nullable += changes.nullable.length;
    // An added parameter is already counted (for a tool without parameters, the whole
    // `properties` holding the added ones); whatever else changed is listed.
    const addedAt = new Set(params.added.map((p) => `/properties/${p}`));
    const onlyAdded = (d) => d.kind === 'added' && (addedAt.has(d.path) || (d.path === '/properties' &&
      Object.keys(d.to ?? {}).every((k) => params.added.includes(k))));
    for (const d of changes.other) {
      if (!onlyAdded(d)) result.other.push(`${tool.name}: ${showChange(d)}`);
    }
  }
  return result;
}

function describe(result, tools) {
  const fields = [...result.fields].map(([f, n]) => `${f} ×${n}`).join(', ');
  const parts = [
    `${tools.length - result.missing.length} of ${tools.length} tools declared`,
    `${result.lost.length} of ${result.parameters} parameters lost`,
    `schemas sent as ${fields || '(none)'}`,
  ];
  if (result.nullable > 0) parts.push(`${result.nullable} ["T","null"] types made T + nullable: true`);
  for (const [p, n] of result.added) parts.push(`parameter ${p} added to ${n}`);
  parts.push(result.other.length === 0 ? 'nothing else changed' : `${result.other.length} other changes`);
  return parts.join('; ');
}

function verdict(what, result, tools) {
  const summary = `${what}: ${describe(result, tools)}`;
  const lines = [];
  if (result.missing.length > 0) lines.push(`not declared: ${result.missing.join(', ')}`);
  if (result.lost.length > 0) lines.push('parameters lost:', ...result.lost.map((l) => `  ${l}`));
  if (result.other.length > 0) {
    lines.push('other changes (shown, not failed):', ...result.other.slice(0, 20).map((l) => `  ${l}`));
    if (result.other.length > 20) lines.push(`  ... and ${result.other.length - 20} more`);
  }
  if (result.missing.length > 0 || result.lost.length > 0) {
    throw new CheckError(`${summary}\n${lines.join('\n')}`);
  }
  return lines.length > 0 ? `${summary}\n${indent(lines)}` : summary;
}

// --- the Gemini CLI ------------------------------------------------------------------------------------

function geminiEnv(home, baseUrl) {
  // The machine's own Gemini or Google settings must not reach the CLI.
  const env = Object.fromEntries(Object.entries(process.env)
    .filter(([k]) => !/^(GEMINI_|GOOGLE_|CLOUD_SHELL)/.test(k)));
  return { ...env, HOME: home, GEMINI_API_KEY: FAKE_KEY, GOOGLE_GEMINI_BASE_URL: baseUrl, NO_COLOR: '1' };
}

// A HOME with the CLI's user settings (API-key auth, no usage statistics, no update checks, our
// server, trusted so that its tools are offered in a non-interactive run, where a tool that would
// ask for confirmation is left out) and a trusted project folder to run in.
function geminiSetup(crmHost, workdir) {
  const home = ensureDir(path.join(workdir, 'gemini-home'));
  const project = realpathSync(ensureDir(path.join(workdir, 'gemini-project')));
  const server = stdioServer(crmHost, workdir, 'gemini-cli', { answers: 'text' });
  // The CLI gives a stdio server only a sanitised environment, with our fake HOME: the compiled
  // component cache is named outright, so the server need not compile it again.
  const cacheHome = process.env.XDG_CACHE_HOME || path.join(os.homedir(), '.cache');
  const settings = {
    security: { auth: { selectedType: 'gemini-api-key' } },
    privacy: { usageStatisticsEnabled: false },
    general: { enableAutoUpdate: false, enableAutoUpdateNotification: false },
    mcpServers: {
      [SERVER_NAME]: {
        command: server.command,
        args: server.args,
        env: { XDG_CACHE_HOME: cacheHome, NO_COLOR: '1' },
        timeout: CALL_TIMEOUT,
        trust: true,
      },
    },
  };
  ensureDir(path.join(home, '.gemini'));
  writeFileSync(path.join(home, '.gemini', 'settings.json'), JSON.stringify(settings, null, 2));
  writeFileSync(path.join(home, '.gemini', 'trustedFolders.json'), JSON.stringify({ [project]: 'TRUST_FOLDER' }));
  return { home, project };
}

async function geminiCli(crmHost, workdir, reference) {
  const { home, project } = geminiSetup(crmHost, workdir);
  const standIn = await startGeminiStandIn();
  try {
    const env = geminiEnv(home, standIn.url);
    const show = (run) => `exit ${run.code}\nstdout: ${run.stdout.slice(-1500)}\nstderr: ${run.stderr.slice(-1500)}`;

    // `gemini mcp list`: the configured servers, each pinged (connection only, no tools).
    const listed = await runProcess(process.execPath, [GEMINI_JS, 'mcp', 'list'],
      { env, cwd: project, timeoutMs: CALL_TIMEOUT + 30_000 });
    const listText = `${listed.stdout}\n${listed.stderr}`;
    check(listed.code === 0, `gemini mcp list: ${show(listed)}`);
    const connected = new RegExp(`${SERVER_NAME}: .* - Connected`).test(listText);
    check(connected, `gemini mcp list shows ${SERVER_NAME} Connected: ${show(listed)}`);

    // `gemini -p`: one non-interactive turn, answered by the stand-in.
    const run = await runProcess(process.execPath,
      [GEMINI_JS, '-m', MODEL, '-p', 'Which CRM tools do you have?', '--output-format', 'json'],
      { env, cwd: project, timeoutMs: CALL_TIMEOUT * 2 });
    check(run.code === 0, `gemini -p: ${show(run)}`);
    let out;
    try { out = JSON.parse(run.stdout); } catch { throw new CheckError(`gemini -p --output-format json: ${show(run)}`); }
    check(out.response === 'done', `gemini -p answered with the stand-in's text: ${show(run)}`);

    const prefix = `mcp_${SERVER_NAME}_`;
    const sent = declarationsSent(standIn.requests, (n) => n?.startsWith(prefix));
    check(sent, `a request declaring ${prefix}* tools reached the stand-in; caught: ` +
      `${standIn.requests.map((r) => `${r.url} (${(r.body?.tools ?? []).flatMap((t) => t.functionDeclarations ?? []).map((d) => d.name).join(' ')})`).join('; ')}`);
    const result = compareDeclarations(reference, sent.declarations, (name) => `${prefix}${name}`);
    const detail = verdict(`gemini-cli ${GEMINI_CLI.version}`, result, reference);
    return `${detail}\n${indent([`request: POST ${sent.url}; gemini mcp list: "${SERVER_NAME} ... Connected" (status only, it lists no tools)`])}`;
  } finally {
    await standIn.close();
  }
}

// --- @google/genai ---------------------------------------------------------------------------------------

async function genai(crmHost, workdir) {
  const server = stdioServer(crmHost, workdir, 'genai', { answers: 'text' });
  return withMcpClient(server, async (client) => {
    const reference = await listAll(client);
    const callable = mcpToTool(client);
    const declared = (await withTimeout(callable.tool(), CALL_TIMEOUT, 'mcpToTool(...).tool()')).functionDeclarations ?? [];
    const converted = compareDeclarations(reference, declared, (name) => name);
    const convertedLine = verdict(`@google/genai ${GENAI.version} mcpToTool().tool()`, converted, reference);

    // The same tool handed to generateContent: what the SDK puts on the wire.
    const standIn = await startGeminiStandIn();
    let sentLine;
    try {
      const ai = new GoogleGenAI({ vertexai: false, apiKey: FAKE_KEY, httpOptions: { baseUrl: standIn.url } });
      const answer = await withTimeout(ai.models.generateContent({
        model: MODEL,
        contents: 'Which CRM tools do you have?',
        config: { tools: [callable], automaticFunctionCalling: { disable: true } },
      }), CALL_TIMEOUT, 'generateContent');
      check(answer.text === 'done', `generateContent answered with the stand-in's text: ${JSON.stringify(answer)?.slice(0, 400)}`);
      const names = new Set(reference.map((t) => t.name));
      const sent = declarationsSent(standIn.requests, (n) => names.has(n));
      check(sent, `generateContent sent our tools: ${JSON.stringify(standIn.requests).slice(0, 600)}`);
      const result = compareDeclarations(reference, sent.declarations, (name) => name);
      sentLine = verdict(`@google/genai generateContent (POST ${sent.url})`, result, reference);
    } finally {
      await standIn.close();
    }
    return `${convertedLine}\n${indent([sentLine])}`;
  });
}

// --- Ajv strict ----------------------------------------------------------------------------------------------

// Ajv names a place relative to the schema resource it was compiling, which for a $ref'd
// definition is the definition: the full path is found by trying the root and each $defs entry.
function locate(schema, ajvPointer) {
  const rel = ajvPointer.replace(/^#/, '');
  const places = [''];
  for (const key of ['$defs', 'definitions']) {
    if (schema && typeof schema[key] === 'object') for (const name of Object.keys(schema[key])) places.push(`/${key}/${name}`);
  }
  const found = places.filter((p) => resolveRef(schema, `#${p}${rel}`) !== undefined);
  return found.length === 1 && found[0] !== '' ? ` (#${found[0]}${decodeURIComponent(rel)})` : '';
}

// Every strict-mode complaint Ajv has about one schema: its "log" mode reports each one (where
// strict: true throws at the first), and a compile with strict: true must agree.
export function ajvStrictErrors(schema) {
  const errors = [];
  const logger = { log() {}, warn: (...a) => errors.push(a.join(' ')), error: (...a) => errors.push(a.join(' ')) };
  const logging = new Ajv2020({ strict: 'log', logger, allErrors: true });
  addFormats(logging);
  try {
    logging.compile(schema);
  } catch (e) {
    errors.push(e.message);
  }
  const strict = new Ajv2020({ strict: true, logger: { log() {}, warn() {}, error() {} } });
  addFormats(strict);
  try {
    strict.compile(schema);
    if (errors.length > 0) errors.push('(yet strict: true compiled it)');
  } catch (e) {
    if (!errors.some((m) => m === e.message)) errors.push(e.message);
  }
  return errors.map((m) => {
    const at = /at "(#[^"]*)"/.exec(m);
    return at ? `${m}${locate(schema, at[1])}` : m;
  });
}

function ajvSelfTest() {
  const failures = [];
  const good = { type: 'object', properties: { a: { type: ['string', 'null'] } }, required: ['a'], additionalProperties: false };
  if (ajvStrictErrors(good).length > 0) failures.push(`ajv, good schema: ${ajvStrictErrors(good).join('; ')}`);
  const bad = {
    type: 'object',
    properties: { m: { $ref: '#/$defs/M' } },
    $defs: {
      M: { type: 'object', patternProperties: { '^x': { type: ['string', 'number'] } } },
      N: { type: 'object', properties: { id: { type: 'string' } }, required: ['id', 'name'] },
    },
    anyOf: [{ $ref: '#/$defs/N' }],
  };
  const errors = ajvStrictErrors(bad);
  const want = [/allowUnionTypes.*#\/\$defs\/M\/patternProperties\/%5Ex/, /required property "name" is not defined/];
  if (errors.length !== 2 || !want.every((re) => errors.some((e) => re.test(e)))) {
    failures.push(`ajv, bad schema: got ${JSON.stringify(errors)}`);
  }
  return failures;
}

// --- the steps --------------------------------------------------------------------------------------------------

export function schemaSteps(crmHost, workdir) {
  // One listing per answer mode, shared by the steps that only read schemas.
  const listings = new Map();
  const listing = (answers) => {
    if (!listings.has(answers)) {
      const server = stdioServer(crmHost, workdir, `schemas-${answers}`, { answers });
      const p = withMcpClient(server, listAll);
      p.catch(() => listings.delete(answers));
      listings.set(answers, p);
    }
    return listings.get(answers);
  };

  return [
    {
      name: 'schemas: the rule checkers on hand-made schemas',
      independent: true,
      run: async () => {
        const failures = [...selfTest(), ...ajvSelfTest()];
        check(failures.length === 0, `the checkers are wrong:\n${failures.join('\n')}`);
        return 'Gemini subset, OpenAI strict, parameter paths, change classes and Ajv strict give the known answers';
      },
    },
    {
      name: `schemas: Gemini CLI ${GEMINI_CLI.version} declares every tool and parameter`,
      independent: true,
      run: async () => geminiCli(crmHost, workdir, await listing('text')),
    },
    {
      name: `schemas: @google/genai ${GENAI.version} mcpToTool declares every tool and parameter`,
      independent: true,
      run: () => genai(crmHost, workdir),
    },
    {
      name: 'schemas: OpenAI strict function mode (a count, not a check)',
      independent: true,
      run: async () => {
        const tools = await listing('text');
        const rejected = [];
        const notes = new Map();
        for (const tool of tools) {
          const { reasons, notes: n } = openaiStrictCheck(tool.inputSchema);
          for (const note of n) {
            const [k, count] = note.split(' ×');
            notes.set(k, (notes.get(k) ?? 0) + Number(count));
          }
          if (reasons.length > 0) rejected.push({ name: tool.name, reasons });
        }
        const byRule = new Map();
        for (const { reasons } of rejected) {
          for (const r of reasons) {
            const rule = r.replace(/^[^:]*: /, '').replace(/ \(.*\)$/, '');
            byRule.set(rule, (byRule.get(rule) ?? 0) + 1);
          }
        }
        const summary = `openai strict: ${tools.length - rejected.length} of ${tools.length} tools accepted as listed` +
          (byRule.size > 0 ? `; reasons: ${[...byRule].sort((a, b) => b[1] - a[1]).map(([r, n]) => `${r} ×${n}`).join(', ')}` : '') +
          (notes.size > 0 ? `; not counted against (annotations the docs do not list): ${[...notes].map(([k, n]) => `${k} ×${n}`).join(', ')}` : '');
        const accepted = tools.filter((t) => !rejected.some((r) => r.name === t.name)).map((t) => t.name);
        const lines = [`accepted: ${accepted.join(', ') || '(none)'}`];
        for (const { name, reasons } of rejected) lines.push(`${name}:`, ...reasons.map((r) => `  ${r}`));
        return `${summary}\n${indent(lines)}`;
      },
    },
    {
      name: 'schemas: Ajv 2020 strict compiles every input and output schema',
      independent: true,
      run: async () => {
        const tools = await listing('structured');
        const text = await listing('text');
        const sameInputs = text.every((t) => JSON.stringify(t.inputSchema) ===
          JSON.stringify(tools.find((s) => s.name === t.name)?.inputSchema));
        const lines = [];
        let schemas = 0;
        for (const tool of tools) {
          for (const [kind, schema] of [['input', tool.inputSchema], ['output', tool.outputSchema]]) {
            if (!schema) {
              lines.push(`${tool.name} ${kind}: no schema`);
              continue;
            }
            schemas += 1;
            for (const e of ajvStrictErrors(schema)) lines.push(`${tool.name} ${kind}: ${e}`);
          }
        }
        const summary = `ajv strict: ${schemas} schemas (${tools.length} input, ${schemas - tools.length} output), ` +
          `${lines.length} errors; input schemas ${sameInputs ? 'the same' : 'DIFFERENT'} with --answers text and structured`;
        if (lines.length > 0) throw new CheckError(`${summary}\n${lines.join('\n')}`);
        return summary;
      },
    },
    {
      name: 'schemas: every input schema fits Gemini\'s Schema (parameters) as sent',
      independent: true,
      run: async () => {
        const tools = await listing('text');
        const byKind = new Map();
        const lines = [];
        const maps = [];
        let fit = 0;
        for (const tool of tools) {
          // A free-form map (crmb fields, crma properties: the contract's inputs) is an object
          // without named properties. The reference allows it; only a forum report says the
          // legacy `parameters` field refused one nested, and the clients above send
          // `parametersJsonSchema`, which takes it. So it is reported, not failed.
          const all = geminiSubsetFindings(tool.inputSchema);
          const findings = all.filter((f) => f.kind !== 'object without properties');
          maps.push(...all.filter((f) => f.kind === 'object without properties')
            .map((f) => `${tool.name}${f.path.slice(1)}`));
          if (findings.length === 0) {
            fit += 1;
            continue;
          }
          lines.push(`${tool.name} (${findings.length}):`, ...findings.map((f) => `  ${f.path}: ${f.what}`));
          for (const f of findings) byKind.set(f.kind, (byKind.get(f.kind) ?? 0) + 1);
        }
        const total = [...byKind.values()].reduce((a, b) => a + b, 0);
        const summary = `gemini subset: ${fit} of ${tools.length} input schemas fit; ${total} findings` +
          (byKind.size > 0 ? ` (${[...byKind].sort((a, b) => b[1] - a[1]).map(([k, n]) => `${k} ${n}`).join(', ')})` : '');
        if (lines.length > 0) throw new CheckError(`${summary}\n${lines.join('\n')}`);
        return `${summary}; free-form maps (undocumented limit, reported): ${maps.join(', ') || 'none'}`;
      },
    },
  ];
}
