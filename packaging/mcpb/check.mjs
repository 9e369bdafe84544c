// Checks a packed MCP Bundle as a client would use it:
//
//   node check.mjs <bundle.mcpb> <staged bundle dir> <work dir>
//
// 1. Unpacks the .mcpb (a zip) with the mcpb library's own unpacker into <work>/installed, and
//    checks it holds exactly the staged files, byte for byte, and that crm-host is executable.
// 2. Resolves the manifest's mcp_config with the library's getMcpConfigForManifest (the
//    substitution of ${__dirname} and ${user_config.*} that clients do), with sample settings
//    and the optional ones left empty, and starts that command.
// 3. Speaks MCP to it over stdio: initialize, tools/list (the tools must be exactly the
//    manifest's `tools`, by name), tools/call of crm_list_changes, which reads the host's own
//    change journal and reaches no CRM, and of crmb_generate_record_url, which makes no CRM
//    call and must find the Salesforce org URL left empty unknown rather than malformed. The sample broker URL is a loopback port where nothing
//    listens, and neither request sends anything to it.
import { spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { mkdirSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { join, relative, resolve } from "node:path";
import { getMcpConfigForManifest, unpackExtension } from "@anthropic-ai/mcpb";

const [bundlePath, stagedDir, workDir] = process.argv.slice(2).map((path) => resolve(path));
if (process.argv.length !== 5) {
  console.error("usage: node check.mjs <bundle.mcpb> <staged bundle dir> <work dir>");
  process.exit(2);
}

let failures = 0;
let passes = 0;
function check(ok, what) {
  if (ok) {
    passes += 1;
    console.log(`ok: ${what}`);
  } else {
    failures += 1;
    console.log(`FAILED: ${what}`);
  }
}

function files(dir) {
  const walk = (at) =>
    readdirSync(at).flatMap((name) => {
      const path = join(at, name);
      return statSync(path).isDirectory() ? walk(path) : [path];
    });
  return walk(dir)
    .map((path) => relative(dir, path))
    .sort();
}

const sha256 = (path) => createHash("sha256").update(readFileSync(path)).digest("hex");

// 1. Install.
rmSync(workDir, { recursive: true, force: true });
const installed = join(workDir, "installed");
mkdirSync(installed, { recursive: true });
check(await unpackExtension({ mcpbPath: bundlePath, outputDir: installed, silent: true }), "mcpb unpacks the bundle");
const stagedFiles = files(stagedDir);
const installedFiles = files(installed);
check(
  JSON.stringify(installedFiles) === JSON.stringify(stagedFiles),
  `the bundle holds exactly ${stagedFiles.join(", ")} (it holds ${installedFiles.join(", ")})`,
);
for (const file of ["manifest.json", "server/crm-host", "server/crm_plugin.wasm"]) {
  check(
    installedFiles.includes(file) && sha256(join(installed, file)) === sha256(join(stagedDir, file)),
    `${file} comes out of the bundle as it went in`,
  );
}
check((statSync(join(installed, "server/crm-host")).mode & 0o111) !== 0, "server/crm-host is executable once unpacked");

// 2. The command the manifest gives, as a client resolves it.
const manifest = JSON.parse(readFileSync(join(installed, "manifest.json"), "utf8"));
const userConfig = {
  tenant: "bundle-check",
  user: "ci",
  broker_url: "https://127.0.0.1:9",
  broker_credential: "not-sent-anywhere",
};
const config = await getMcpConfigForManifest({
  manifest,
  extensionPath: installed,
  systemDirs: { HOME: workDir, DESKTOP: workDir, DOCUMENTS: workDir, DOWNLOADS: workDir },
  userConfig,
  pathSeparator: "/",
});
check(config !== undefined, "the manifest's mcp_config resolves with the required settings given");
const leftOver = JSON.stringify(config).match(/\$\{[^}]*\}/g);
check(leftOver === null, `every \${...} in mcp_config is substituted (left: ${leftOver ?? "none"})`);
console.log(`command: ${config.command} ${config.args.join(" ")}`);

// The host's data and compile cache under the work dir (the cache may be shared: the caller's
// XDG_CACHE_HOME is kept when set), the credential and settings only from mcp_config.
const run = join(workDir, "run");
mkdirSync(run, { recursive: true });
const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("CRM_")));
env.HOME = run;
env.XDG_DATA_HOME = join(run, "data");
env.XDG_CACHE_HOME = process.env.XDG_CACHE_HOME ?? join(run, "cache");
Object.assign(env, config.env);

// 3. Speak MCP to it.
const server = spawn(config.command, config.args, { cwd: run, env, stdio: ["pipe", "pipe", "pipe"] });
let stderr = "";
server.stderr.on("data", (chunk) => {
  stderr += chunk;
});
const pending = new Map();
let buffered = "";
server.stdout.on("data", (chunk) => {
  buffered += chunk;
  let newline;
  while ((newline = buffered.indexOf("\n")) >= 0) {
    const line = buffered.slice(0, newline);
    buffered = buffered.slice(newline + 1);
    if (!line.trim()) continue;
    const message = JSON.parse(line);
    const waiter = pending.get(message.id);
    if (waiter) {
      pending.delete(message.id);
      waiter(message);
    }
  }
});
const exited = new Promise((resolve) => server.on("exit", (code, signal) => resolve({ code, signal })));
let nextId = 1;
function request(method, params) {
  const id = nextId++;
  const answer = new Promise((resolve, reject) => {
    pending.set(id, resolve);
    exited.then(({ code, signal }) => reject(new Error(`the server exited (${code ?? signal}) before answering ${method}:\n${stderr}`)));
    setTimeout(() => reject(new Error(`no answer to ${method} in 120 s:\n${stderr}`)), 120_000).unref();
  });
  server.stdin.write(JSON.stringify({ jsonrpc: "2.0", id, method, params }) + "\n");
  return answer;
}

try {
  const init = await request("initialize", {
    protocolVersion: "2025-06-18",
    capabilities: {},
    clientInfo: { name: "crm-plugin-bundle-check", version: "1.0.0" },
  });
  check(init.result?.serverInfo?.name === "crm-host", `initialize answers as crm-host (${JSON.stringify(init.result?.serverInfo)})`);
  server.stdin.write(JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" }) + "\n");

  const listed = (await request("tools/list", {})).result?.tools ?? [];
  const served = listed.map((t) => t.name).sort();
  const declared = manifest.tools.map((t) => t.name).sort();
  check(
    JSON.stringify(served) === JSON.stringify(declared),
    `tools/list serves the manifest's ${declared.length} tools (served ${served.length}: ${served.filter((n) => !declared.includes(n)).join(", ") || "no others"}; missing: ${declared.filter((n) => !served.includes(n)).join(", ") || "none"})`,
  );

  const call = await request("tools/call", { name: "crm_list_changes", arguments: {} });
  const text = call.result?.content?.[0]?.text ?? JSON.stringify(call);
  check(call.result && !call.result.isError, `crm_list_changes runs in the component (${text.slice(0, 120)})`);

  // The Salesforce org URL was left empty, so the client passed `--instance-url=`: that is no
  // org URL, not a malformed one (which would fail every Salesforce tool that adds links).
  const link = await request("tools/call", {
    name: "crmb_generate_record_url",
    arguments: { object: "Account", record_id: "001000000000001AAA" },
  });
  const said = link.result?.content?.[0]?.text ?? JSON.stringify(link);
  check(link.result?.isError && said.includes("is not known"), `an empty Salesforce org URL is an unknown one (${said.slice(0, 160)})`);
} catch (error) {
  check(false, error.message);
}

server.stdin.end();
const ended = await Promise.race([exited, new Promise((resolve) => setTimeout(() => resolve(null), 20_000))]);
if (ended === null) server.kill("SIGKILL");
check(ended !== null && ended.code === 0, `the server exits cleanly when stdin closes (${JSON.stringify(ended)})`);
if (failures) console.log(stderr);
console.log(`bundle: ${passes} passed, ${failures} failed`);
process.exit(failures ? 1 : 0);
