// The differential: every query of the fixed-seed corpus (generate.mjs) judged by our
// validator (the soql_verdicts example: JSON Lines in, JSON Lines out) and by Salesforce's
// grammar (grammar.mjs). A disagreement passes only when an entry of exceptions.json explains
// it: a rule Salesforce documents that the grammar does not check, with the page that says so.
//
//   node differential.mjs <path to soql_verdicts> [--dump FILE]
//
// Prints the counts, then every unexplained disagreement grouped by cause (each group: the
// side, the normalised reason, every query with both reasons), then the exceptions' use, and
// last `N passed, M failed` (N: queries on which both agree or an exception explains the
// disagreement; M: the others). Exit 0 when M = 0, 1 otherwise, 2 on a broken setup.
// SOQL_SEED=<n> explores another corpus by hand; CI uses the fixed one.
import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { generate, DEFAULT_SEED } from './generate.mjs';
import { grammarVerdict, GRAMMAR } from './grammar.mjs';

const args = process.argv.slice(2);
const dumpAt = args.indexOf('--dump');
const dumpFile = dumpAt >= 0 ? args.splice(dumpAt, 2)[1] : undefined;
const verdictsBin = args[0];
// A broken setup is a failure too, with the closing line CI reads.
const broken = (message) => {
  console.error(message);
  console.log('0 passed, 1 failed');
  process.exit(2);
};
if (!verdictsBin) broken('usage: node differential.mjs <path to soql_verdicts> [--dump FILE]');

const started = Date.now();
const seed = process.env.SOQL_SEED ? Number(process.env.SOQL_SEED) : DEFAULT_SEED;
const corpus = generate({ seed });

// --- our verdicts ------------------------------------------------------------------------------
const ours = spawnSync(verdictsBin, [], {
  input: corpus.map((q) => JSON.stringify(q)).join('\n') + '\n',
  maxBuffer: 1 << 30,
  timeout: 120_000,
});
if (ours.error || ours.status !== 0) {
  broken(`soql_verdicts failed (${ours.error ? ours.error.message : `exit ${ours.status}`}): ${String(ours.stderr).slice(0, 2000)}`);
}
const ourVerdicts = ours.stdout.toString().split('\n').filter((l) => l.trim() !== '').map((l) => JSON.parse(l));
// soql_verdicts skips blank input lines; JSON-encoded queries are never blank lines, so the
// answers line up one for one.
if (ourVerdicts.length !== corpus.length) broken(`soql_verdicts answered ${ourVerdicts.length} of ${corpus.length} queries`);

// --- exceptions --------------------------------------------------------------------------------
const exceptionsFile = JSON.parse(readFileSync(new URL('./exceptions.json', import.meta.url), 'utf8'));
const exceptions = exceptionsFile.exceptions.map((e) => {
  for (const k of ['id', 'when', 'right', 'why', 'cites']) if (!e[k]) throw new Error(`exception ${e.id ?? '?'} lacks ${k}`);
  if (!['we-refuse', 'we-accept'].includes(e.when)) throw new Error(`exception ${e.id}: when must be we-refuse or we-accept`);
  if (!e.pattern && !e.exact) throw new Error(`exception ${e.id}: needs pattern or exact`);
  return {
    ...e,
    queryRe: e.pattern ? new RegExp(e.pattern, 'isu') : undefined,
    oursRe: e.our_reason ? new RegExp(e.our_reason, 'iu') : undefined,
    grammarRe: e.grammar_reason ? new RegExp(e.grammar_reason, 'iu') : undefined,
    used: 0,
  };
});
const explain = (query, mine, theirs) =>
  exceptions.find(
    (e) =>
      e.when === (mine.accepted ? 'we-accept' : 'we-refuse') &&
      (e.exact === undefined || e.exact === query) &&
      (!e.queryRe || e.queryRe.test(query)) &&
      (!e.oursRe || e.oursRe.test(mine.reason ?? '')) &&
      (!e.grammarRe || e.grammarRe.test(theirs.reason ?? '')),
  );

// --- compare -----------------------------------------------------------------------------------
const counts = { queries: corpus.length, bothAccept: 0, bothRefuse: 0, weRefuseValid: 0, weAcceptInvalid: 0, explainedByExceptions: 0 };
const unexplained = [];
corpus.forEach((query, i) => {
  const mine = ourVerdicts[i];
  const theirs = grammarVerdict(query);
  if (mine.accepted === theirs.accepted) {
    counts[mine.accepted ? 'bothAccept' : 'bothRefuse'] += 1;
    return;
  }
  const e = explain(query, mine, theirs);
  if (e) {
    e.used += 1;
    counts.explainedByExceptions += 1;
    return;
  }
  counts[mine.accepted ? 'weAcceptInvalid' : 'weRefuseValid'] += 1;
  unexplained.push({ query, side: mine.accepted ? 'we-accept' : 'we-refuse', ours: mine.reason, grammar: theirs.reason });
});

// --- group by cause ----------------------------------------------------------------------------
// Known causes first (what was learnt from reading the disagreements; the first match names the
// group), then, for anything new, the refusal's reason with positions and quoted specifics taken
// out: ours for "we refuse, the grammar accepts", the grammar's for the reverse.
const GRAMMAR_KEYWORDS_NOT_NAMES =
  'and|or|true|false|with|for|limit|where|else|rollup|cube|having|includes|excludes|in|not|by|asc|desc|nulls|select|from|lookup|as|using|null|update|first|last|like|bind';
const CAUSES = [
  { side: 'we-refuse', cause: 'time literal (hh:mm:ss[.fff]Z or +hh[:]mm) read as an Apex bind variable', ours: /bind variables/, query: /(?<![\dTt:.])\d{2}:\d{2}:\d{2}/ },
  { side: 'we-refuse', cause: 'alias after a child subquery or after TYPEOF ... END', ours: /after the field list but found/, query: /(?:\bEND|\))\s+[A-Za-z_][\w.]*\s*(?:,|FROM\b)/i },
  { side: 'we-refuse', cause: 'AS before an object alias in FROM (grammar: soqlFromExpr = name AS? alias?)', ours: /aliases don't use AS/, query: /\bFROM\s+[\w.]+\s+AS\s+\w/i },
  { side: 'we-refuse', cause: 'USING LOOKUP name, USING SCOPE x, LOOKUP y, and the BIND clause', query: /\b(?:LOOKUP|BIND)\b/i },
  { side: 'we-refuse', cause: 'OFFSET, FOR, UPDATE, TYPEOF used as names (grammar: ordinary identifiers there)', ours: /found '(?:OFFSET|FOR|UPDATE)'|missing FROM before OFFSET|OFFSET takes .* found the end|polymorphic field after TYPEOF|expected WHEN after the TYPEOF field/i },
  { side: 'we-refuse', cause: "comparison operator written with a space ('< =', '> =')", query: /[<>]\s+=/ },
  { side: 'we-refuse', cause: "sign apart from its number ('- 5')", ours: /only allowed as the sign of a number/ },
  { side: 'we-refuse', cause: 'raw carriage return inside a string', ours: /cannot span lines/, query: /'[^'\n]*\r/ },
  { side: 'we-refuse', cause: 'non-ASCII letter inside a name (grammar IDENTIFIER allows U+0080..U+FFFE after the first character)', ours: /unexpected character .* \(U\+(?!00[0-7])/ },
  { side: 'we-accept', cause: 'NOT NOT', query: /\bNOT\s+NOT\b/i, grammar: /extraneous input 'NOT'/i },
  { side: 'we-accept', cause: 'semi-join with a clause the grammar does not allow there (only WHERE and WITH DATA CATEGORY / WITH name = value)', grammar: /missing '\)' at '(?:FOR|GROUP|OFFSET|ORDER|LIMIT|WITH)'|mismatched input '\)' expecting '='/i },
  { side: 'we-accept', cause: 'FOR VIEW and FOR REFERENCE combined', query: /\bFOR\s+VIEW\s*,/i },
  { side: 'we-accept', cause: 'grammar keyword used as a name (field, object, alias, scope, ORDER BY key, function name)', grammar: new RegExp(`(?:input|at) '(?:[^']*[\\s(])?(?:${GRAMMAR_KEYWORDS_NOT_NAMES})'`, 'i') },
  { side: 'we-accept', cause: 'grammar keyword used as a name (field, object, alias, scope, ORDER BY key, function name)', query: new RegExp(`\\b(?:${GRAMMAR_KEYWORDS_NOT_NAMES})\\s*$`, 'i'), grammar: /'<EOF>'/ },
  { side: 'we-accept', cause: 'COUNT() outside the SELECT list', grammar: /input '[^']*COUNT\s*\(\s*\)'/i },
  { side: 'we-accept', cause: 'USING SCOPE name that is a keyword (the grammar takes only a plain IDENTIFIER there)', grammar: /at input 'SCOPE /i },
  { side: 'we-accept', cause: 'function argument shape (one field or one nested function; only DISTANCE/GEOLOCATION take several, GEOLOCATION takes numbers)', grammar: /mismatched input '\(' expecting|no viable alternative at input '[^']*\(\s*['\d]|expecting \{'-', '\+', INTEGER_LITERAL/i },
  { side: 'we-accept', cause: 'date literal that Salesforce does not define (accepted by shape)', grammar: /no viable alternative at input '(?:LAST|NEXT|THIS|N)_/i },
  { side: 'we-accept', cause: 'escape \\uFFFF', grammar: /Invalid Unicode Character/ },
];
const normalise = (reason) =>
  (reason ?? '')
    .replace(/^SOQL error at line \d+, column \d+: /, '')
    .replace(/^line \d+:\d+ /, '')
    .replace(/expecting \{[^}]*\}|expecting \S+/g, 'expecting …')
    .replace(/'[^'\s]{0,60}'/g, "'…'")
    .replace(/^[A-Z][A-Z_]+ is a reserved word/, 'WORD is a reserved word')
    .replace(/\b[A-Z]+(?:_[A-Z]+)+\b/g, 'WORD')
    .replace(/\b\d+\b/g, 'N');
const causeOf = (d) => {
  const known = CAUSES.find(
    (c) =>
      c.side === d.side &&
      (!c.query || c.query.test(d.query)) &&
      (!c.ours || c.ours.test(d.ours ?? '')) &&
      (!c.grammar || c.grammar.test(d.grammar ?? '')),
  );
  return known ? known.cause : `(unclassified) ${normalise(d.side === 'we-refuse' ? d.ours : d.grammar)}`;
};
const groups = new Map();
for (const d of unexplained) {
  const key = `${d.side}: ${causeOf(d)}`;
  if (!groups.has(key)) groups.set(key, []);
  groups.get(key).push(d);
}
const show = (q) => (q.length > 400 ? `${JSON.stringify(q.slice(0, 400))}… (${q.length} chars)` : JSON.stringify(q));
const sorted = [...groups.entries()].sort((a, b) => b[1].length - a[1].length || a[0].localeCompare(b[0]));

console.log(`grammar: ${GRAMMAR.package}@${GRAMMAR.version} (antlr4ts ${GRAMMAR.antlr4ts}), rule ${GRAMMAR.entryRule}, isApex=${GRAMMAR.isApex}, apiVersion=${GRAMMAR.apiVersion}, multiCurrency=${GRAMMAR.isMultiCurrencyEnabled}; seed 0x${seed.toString(16)}`);
if (sorted.length > 0) {
  console.log(`\n${unexplained.length} unexplained disagreements in ${sorted.length} groups:`);
  for (const [key, items] of sorted) {
    const side = items[0].side === 'we-refuse' ? 'WE REFUSE, GRAMMAR ACCEPTS' : 'WE ACCEPT, GRAMMAR REFUSES';
    console.log(`\n=== [${items.length}] ${side}: ${key.replace(/^we-\w+: /, '')}`);
    for (const d of [...items].sort((a, b) => a.query.length - b.query.length)) {
      console.log(`  ${show(d.query)}`);
      console.log(`      ours:    ${d.ours ?? 'accepted'}`);
      console.log(`      grammar: ${d.grammar ?? 'accepted'}`);
    }
  }
}
console.log('\ncounts:', JSON.stringify(counts));
console.log('exceptions used:');
for (const e of exceptions) console.log(`  ${e.id}: ${e.used}`);
if (dumpFile) writeFileSync(dumpFile, JSON.stringify({ counts, groups: Object.fromEntries(sorted) }, null, 1));
console.log(`(${((Date.now() - started) / 1000).toFixed(1)} s)`);
console.log(`${corpus.length - unexplained.length} passed, ${unexplained.length} failed`);
process.exit(unexplained.length === 0 ? 0 : 1);
