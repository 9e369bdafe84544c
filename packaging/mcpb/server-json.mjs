// Validates packaging/server.json (the MCP Registry's description of this server) against the
// registry's published JSON Schema, vendored as packaging/registry/server.schema.json, and
// checks that it agrees with the bundle's manifest and the crates' version.
//
//   node server-json.mjs                                   # the checked-in file only
//   node server-json.mjs --bundle <x.mcpb> --out <file>    # and write the one for that bundle
//
// The checked-in file is a template: its fileSha256 is all zeros, as the SHA-256 of a bundle is
// known only once it is built. With --bundle, the file to publish is written with that bundle's
// file name in the release URL and its real SHA-256, and validated in turn.
import { createHash } from "node:crypto";
import { readFileSync, writeFileSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import Ajv from "ajv";
import addFormats from "ajv-formats";

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, "..", "..");
const SCHEMA_PATH = join(root, "packaging", "registry", "server.schema.json");
// The SHA-256 of https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json
// (packaging/registry/README.md says where it came from). A newer schema is a deliberate change:
// the file, this pin and server.json's $schema together.
const SCHEMA_SHA256 = "3fba09590c99f61735d234822279f4223fab9e300c0a81e81c91ab62a4114de0";
const PLACEHOLDER_SHA256 = "0".repeat(64);

const args = process.argv.slice(2);
const option = (name) => {
  const at = args.indexOf(name);
  return at >= 0 ? args[at + 1] : undefined;
};
const bundlePath = option("--bundle");
const outPath = option("--out");
if (Boolean(bundlePath) !== Boolean(outPath)) {
  console.error("usage: node server-json.mjs [--bundle <x.mcpb> --out <server.json>]");
  process.exit(2);
}

const problems = [];
const sha256 = (bytes) => createHash("sha256").update(bytes).digest("hex");

const schemaBytes = readFileSync(SCHEMA_PATH);
if (sha256(schemaBytes) !== SCHEMA_SHA256) {
  problems.push(`${SCHEMA_PATH}: SHA-256 ${sha256(schemaBytes)} is not the published schema's ${SCHEMA_SHA256}`);
}
const schema = JSON.parse(schemaBytes.toString("utf8"));
// The schema is draft-07 with OpenAPI's `example` keyword beside the standard ones: Ajv's
// strict mode would refuse that keyword, so it is off; formats (uri) are checked.
const ajv = new Ajv({ strict: false, allErrors: true });
addFormats(ajv);
const validate = ajv.compile(schema);

const serverPath = join(root, "packaging", "server.json");
const server = JSON.parse(readFileSync(serverPath, "utf8"));
const manifest = JSON.parse(readFileSync(join(here, "manifest.json"), "utf8"));
const cargoVersion = readFileSync(join(root, "host-test", "Cargo.toml"), "utf8").match(/^version = "([^"]+)"/m)?.[1];

function schemaCheck(document, label) {
  if (!validate(document)) {
    for (const e of validate.errors) problems.push(`${label}: schema: ${e.instancePath || "/"} ${e.message}`);
  } else {
    console.log(`${label}: valid against ${schema.$id}`);
  }
}

schemaCheck(server, serverPath);
if (server.$schema !== schema.$id) problems.push(`$schema is ${server.$schema}, not the vendored schema's ${schema.$id}`);

// One version everywhere: the crates', the bundle's and the registry entry's.
for (const [what, version] of [
  ["manifest.json version", manifest.version],
  ["server.json version", server.version],
  ...server.packages.map((p, i) => [`server.json packages[${i}].version`, p.version]),
]) {
  if (version !== cargoVersion) problems.push(`${what} is ${version}, not crm-host's ${cargoVersion} (host-test/Cargo.toml)`);
}

// The registry lets a GitHub account publish io.github.<account>/* only, and the bundle's
// repository is the same one.
const repo = server.repository?.url ?? "";
const owner = repo.match(/^https:\/\/github\.com\/([^/]+)\/[^/]+$/)?.[1];
if (!owner) problems.push(`repository.url ${repo} is not https://github.com/<owner>/<repo>`);
if (owner && !server.name.startsWith(`io.github.${owner}/`)) problems.push(`name ${server.name} is not in io.github.${owner}/, the repository's namespace`);
if (manifest.repository?.url !== repo) problems.push(`manifest.json repository.url ${manifest.repository?.url} is not server.json's ${repo}`);

// Each package is a bundle on the repository's release page, with the registry's rules for
// MCPB: a URL containing "mcp" and a SHA-256.
const releaseFile = /^crm-plugin-(?<version>[^-]+(?:-[^-]+)?)-(?<os>linux|darwin)-(?<arch>x64|arm64)\.mcpb$/;
for (const [i, p] of server.packages.entries()) {
  const where = `packages[${i}]`;
  if (p.registryType !== "mcpb") problems.push(`${where}.registryType is ${p.registryType}, not mcpb`);
  const prefix = `${repo}/releases/download/v${server.version}/`;
  const file = p.identifier?.startsWith(prefix) ? p.identifier.slice(prefix.length) : undefined;
  const name = file?.match(releaseFile);
  if (!name || name.groups.version !== server.version) {
    problems.push(`${where}.identifier ${p.identifier} is not ${prefix}crm-plugin-${server.version}-<linux|darwin>-<x64|arm64>.mcpb`);
  } else if (!manifest.compatibility.platforms.includes(name.groups.os)) {
    problems.push(`${where} is for ${name.groups.os}, which manifest.json's compatibility.platforms does not list`);
  }
  if (!p.identifier?.includes("mcp")) problems.push(`${where}.identifier must contain "mcp" (the registry's rule for MCPB)`);
  if (!/^[a-f0-9]{64}$/.test(p.fileSha256 ?? "")) problems.push(`${where}.fileSha256 is required for MCPB`);
  if (p.transport?.type !== "stdio") problems.push(`${where}.transport is not stdio`);

  // The same command line and environment as the bundle's mcp_config, with the same required
  // and secret settings (the component path inside the bundle is the manifest's own business).
  const config = manifest.server.mcp_config;
  const settingOf = (text) => manifest.user_config[text?.match(/\$\{user_config\.([^}]+)\}/)?.[1]];
  const flags = new Map();
  config.args.forEach((arg, at) => {
    if (!arg.startsWith("--")) return;
    const [flag, inline] = arg.split("=", 2);
    if (flag !== "--component") flags.set(flag, settingOf(inline ?? config.args[at + 1]));
  });
  const positional = (p.packageArguments ?? []).filter((a) => a.type === "positional").map((a) => a.value);
  if (JSON.stringify(positional) !== JSON.stringify([config.args[0]])) {
    problems.push(`${where}.packageArguments' positional values ${JSON.stringify(positional)} are not the subcommand ["${config.args[0]}"]`);
  }
  const named = new Map((p.packageArguments ?? []).filter((a) => a.type === "named").map((a) => [a.name, a]));
  const sameKeys = (a, b) => JSON.stringify([...a.keys()].sort()) === JSON.stringify([...b.keys()].sort());
  if (!sameKeys(named, flags)) {
    problems.push(`${where}.packageArguments name ${[...named.keys()]}, the manifest's args ${[...flags.keys()]}`);
  }
  for (const [flag, setting] of flags) {
    const arg = named.get(flag);
    if (arg && Boolean(arg.isRequired) !== Boolean(setting?.required)) problems.push(`${where} ${flag}: isRequired differs from the manifest's setting`);
  }
  const variables = new Map((p.environmentVariables ?? []).map((v) => [v.name, v]));
  const env = new Map(Object.entries(config.env).map(([k, v]) => [k, settingOf(v)]));
  if (!sameKeys(variables, env)) {
    problems.push(`${where}.environmentVariables name ${[...variables.keys()]}, the manifest's env ${[...env.keys()]}`);
  }
  for (const [name, setting] of env) {
    const variable = variables.get(name);
    if (!variable) continue;
    if (Boolean(variable.isRequired) !== Boolean(setting?.required)) problems.push(`${where} ${name}: isRequired differs from the manifest's setting`);
    if (Boolean(variable.isSecret) !== Boolean(setting?.sensitive)) problems.push(`${where} ${name}: isSecret differs from the manifest's sensitive`);
  }
}
for (const [i, p] of server.packages.entries()) {
  if (p.fileSha256 !== PLACEHOLDER_SHA256) {
    problems.push(`packages[${i}].fileSha256 in the checked-in file must be the placeholder (64 zeros): the real one is written for each build`);
  }
}

// The file to publish with this bundle.
if (bundlePath) {
  const file = basename(bundlePath);
  const match = file.match(releaseFile);
  const release = structuredClone(server);
  const p = match && release.packages.find((q) => q.identifier.endsWith(`-${match.groups.os}-${match.groups.arch}.mcpb`));
  if (!p) {
    problems.push(`${file}: no package in server.json for this platform (add one: the identifier ends -<os>-<arch>.mcpb)`);
  } else {
    p.identifier = `${repo}/releases/download/v${server.version}/${file}`;
    p.fileSha256 = sha256(readFileSync(bundlePath));
    release.packages = [p]; // one bundle, one package: a release of several merges theirs
    schemaCheck(release, outPath);
    writeFileSync(outPath, JSON.stringify(release, null, 2) + "\n");
    console.log(`${outPath}: ${p.identifier}, sha256 ${p.fileSha256}`);
  }
}

if (problems.length) {
  for (const problem of problems) console.error(`server.json: ${problem}`);
  process.exit(1);
}
console.log(`server.json: ${server.name} ${server.version} agrees with manifest.json and host-test/Cargo.toml`);
