// Drives crm-host with real JavaScript MCP clients: the TypeScript SDK v1 and v2, the MCP
// Inspector CLI, the official conformance suite, and the tools' schemas through the Gemini CLI,
// @google/genai, Ajv and the model APIs' documented rules. Usage:
// node main.mjs <crm-host> [filter]
// Runs the steps whose name contains the filter (all without one; `schemas` for the schema
// checks alone) in order, stops at the first failure (but for an `independent` step, whose
// failure leaves the rest to run), and ends with `N passed, M failed`.

import { rmSync } from 'node:fs';
import path from 'node:path';

import { confirmSteps } from './confirm.mjs';
import { conformanceSteps } from './conformance.mjs';
import { inspectorSteps } from './inspector.mjs';
import { CheckError, killAll, makeWorkdir, startHttpServer, tail } from './lib.mjs';
import { schemaSteps } from './schemas.mjs';
import { sdkSteps } from './sdk.mjs';

const STEP_TIMEOUT = 240_000;

async function main() {
  const crmHost = path.resolve(process.argv[2] ?? '');
  const filter = process.argv[3];
  if (!process.argv[2]) {
    console.error('usage: node main.mjs <path to crm-host> [step filter]');
    process.exit(2);
  }
  const workdir = makeWorkdir();
  let server;
  const http = () => server;
  const steps = [
    ...sdkSteps(crmHost, workdir, http),
    ...confirmSteps(crmHost, workdir),
    ...inspectorSteps(crmHost, workdir, http),
    ...conformanceSteps(crmHost, workdir, http),
    ...schemaSteps(crmHost, workdir),
  ].filter((s) => !filter || s.name.includes(filter));

  let passed = 0;
  let failed = 0;
  const started = Date.now();
  try {
    server = await startHttpServer(crmHost, workdir);
    console.log(`crm-host serve listening at ${server.url}`);
    for (const step of steps) {
      const t0 = Date.now();
      try {
        let timer;
        const detail = await Promise.race([
          step.run(),
          new Promise((_, reject) => {
            timer = setTimeout(() => reject(new Error(`step timed out after ${STEP_TIMEOUT} ms`)),
              STEP_TIMEOUT);
          }),
        ]).finally(() => clearTimeout(timer));
        passed += 1;
        console.log(`ok   ${step.name} (${((Date.now() - t0) / 1000).toFixed(1)} s)` +
          (detail ? `: ${detail}` : ''));
      } catch (e) {
        failed += 1;
        console.log(`FAIL ${step.name} (${((Date.now() - t0) / 1000).toFixed(1)} s)`);
        const shown = e instanceof CheckError ? e.message : String(e?.stack ?? e);
        console.log(`     ${shown.split('\n').join('\n     ')}`);
        if (step.independent) continue;
        console.log(`     server log tail (${server.logPath}):\n${tail(server.logPath, 15)}`);
        break;
      }
    }
  } catch (e) {
    failed += 1;
    console.log(`FAIL starting crm-host serve: ${e?.stack ?? e}`);
  } finally {
    await server?.stop().catch(() => {});
    killAll();
  }
  console.log(`JavaScript clients: ${((Date.now() - started) / 1000).toFixed(1)} s`);
  // CRM_JS_KEEP=1 keeps the work folder (server logs, conformance results) after a pass too.
  if (failed === 0 && !process.env.CRM_JS_KEEP) rmSync(workdir, { recursive: true, force: true });
  else console.log(`work folder kept: ${workdir}`);
  console.log(`${passed} passed, ${failed} failed`);
  process.exit(failed === 0 ? 0 : 1);
}

main();
