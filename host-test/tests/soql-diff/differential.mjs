// The differential: every generated query judged by our validator (the soql_verdicts example)
// and by Salesforce's grammar. A disagreement is allowed only when exceptions.json explains it
// (a documented Salesforce rule the grammar does not enforce, or a refusal ours makes on
// purpose), citing the page. Usage: node differential.mjs <path to soql_verdicts>
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { generate } from './generate.mjs';
import { judge } from './grammar.mjs';

const verdicts = process.argv[2];
if (!verdicts) {
  console.error('usage: node differential.mjs <path to soql_verdicts>');
  process.exit(2);
}
// A fixed seed in CI; SOQL_SEED explores others by hand.
const corpus = generate(process.env.SOQL_SEED ? { seed: Number(process.env.SOQL_SEED) } : {});
const ours = spawnSync(verdicts, [], {
  input: corpus.map((q) => JSON.stringify(q)).join('\n') + '\n',
  maxBuffer: 1 << 28,
  timeout: 120_000,
});
if (ours.status !== 0) {
  console.error(`soql_verdicts failed: ${ours.stderr}`);
  process.exit(2);
}
const ourVerdicts = ours.stdout.toString().trim().split('\n').map((l) => JSON.parse(l));
if (ourVerdicts.length !== corpus.length) {
  console.error(`soql_verdicts answered ${ourVerdicts.length} of ${corpus.length} queries`);
  process.exit(2);
}
const exceptions = JSON.parse(readFileSync(new URL('./exceptions.json', import.meta.url))).exceptions.map((e) => ({
  ...e,
  regex: new RegExp(e.pattern, 'is'),
  reason: new RegExp(e.our_reason, 'i'),
  used: 0,
}));

const counts = { queries: corpus.length, bothAccept: 0, bothRefuse: 0, excepted: 0, weRefuseValid: 0, weAcceptInvalid: 0 };
const unexplained = [];
corpus.forEach((query, i) => {
  const mine = ourVerdicts[i];
  const theirs = judge(query);
  if (mine.accepted === theirs.accepted) {
    counts[mine.accepted ? 'bothAccept' : 'bothRefuse'] += 1;
    return;
  }
  const side = mine.accepted ? 'we accept, the grammar refuses' : 'we refuse, the grammar accepts';
  const exception = exceptions.find(
    (e) => e.when === (mine.accepted ? 'we-accept' : 'we-refuse') && e.regex.test(query) && e.reason.test(mine.reason ?? ''),
  );
  if (exception) {
    exception.used += 1;
    counts.excepted += 1;
    return;
  }
  counts[mine.accepted ? 'weAcceptInvalid' : 'weRefuseValid'] += 1;
  unexplained.push({ query, side, ours: mine.reason, grammar: theirs.reason });
});

for (const d of unexplained) {
  console.log(`DISAGREE (${d.side}): ${JSON.stringify(d.query)}`);
  console.log(`    ours:    ${d.ours ?? 'accepted'}`);
  console.log(`    grammar: ${d.grammar ?? 'accepted'}`);
}
console.log(JSON.stringify(counts));
for (const e of exceptions) console.log(`exception ${e.id}: ${e.used} queries`);
console.log(`${counts.queries - unexplained.length} passed, ${unexplained.length} failed`);
process.exit(unexplained.length === 0 ? 0 : 1);
