// Salesforce's own ANTLR SOQL grammar, as shipped in @salesforce/soql-common 0.2.2
// (its lib/soql-parser is "a copy of the lib/ output folder of the (private)
// @salesforce/soql-parser package"; it needs antlr4ts at run time, which
// soql-common does not declare, so package.json pins antlr4ts beside it).
//
// What "as the REST API sees a query" means here:
//   * entry rule soqlQuery (= soqlInnerQuery EOF), the rule the package's own
//     SOQLParser(config).parseQuery() runs, on the package's LowerCasingCharStream
//     (keywords are case-insensitive);
//   * ParserHelper(isApex = false): the grammar gates every `:name` bind
//     (soqlColonExpr) on isApex(), so with false a bind is a syntax error, as on
//     /query. Date-literal N values (LAST_N_DAYS:5, also `LAST_N_DAYS : 5`) are a
//     different rule (soqlDateFormulaLiteral) and stay valid. As a second guard,
//     a parse tree that still holds a soqlColonExpr is refused;
//   * apiVersion 62.0: only `< 32` changes the grammar (the pre-Summer'14
//     `USING <scope>` form without the SCOPE keyword);
//   * isMultiCurrencyEnabled = true: currency literals (USD5000) are accepted, as
//     Salesforce does in a multi-currency org; the validator cannot know the org;
//   * unlike parseQuery(), lexer errors (characters no token matches, e.g. `*`,
//     `;`, `"`, `!`, `#`) are collected, not printed to the console and dropped.
//     The lexer recovers by skipping the character, so without this `SELECT Id
//     FROM Account;` would "pass".
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const { CommonTokenStream } = require('antlr4ts');
const { LowerCasingCharStream } = require('@salesforce/soql-common/lib/soql-parser/soql-parser.js');
const { ParserHelper } = require('@salesforce/soql-common/lib/soql-parser/parserHelper.js');
const { SoqlLexer } = require('@salesforce/soql-common/lib/soql-parser/generated/SoqlLexer.js');
const { SoqlParser, SoqlColonExprContext } = require(
  '@salesforce/soql-common/lib/soql-parser/generated/SoqlParser.js'
);

export const GRAMMAR = Object.freeze({
  package: '@salesforce/soql-common',
  version: require('@salesforce/soql-common/package.json').version,
  antlr4ts: require('antlr4ts/package.json').version,
  entryRule: 'soqlQuery',
  isApex: false,
  apiVersion: 62.0,
  isMultiCurrencyEnabled: true,
});

class Collect {
  constructor(kind) {
    this.kind = kind;
    this.errors = [];
  }
  syntaxError(_recognizer, _offending, line, col, msg) {
    this.errors.push({ line, col, msg: `${this.kind}: ${msg}` });
  }
}

function findColonExpr(node) {
  if (node instanceof SoqlColonExprContext) return node;
  const n = node.childCount ?? 0;
  for (let i = 0; i < n; i++) {
    const hit = findColonExpr(node.getChild(i));
    if (hit) return hit;
  }
  return undefined;
}

/**
 * Whether Salesforce's grammar accepts `query` as the REST API would read it.
 * @param {string} query
 * @returns {{accepted: boolean, reason?: string}}
 */
export function grammarVerdict(query) {
  const lexErrors = new Collect('lexer');
  const parseErrors = new Collect('parser');
  let tree;
  try {
    const lexer = new SoqlLexer(new LowerCasingCharStream(query));
    lexer.removeErrorListeners();
    lexer.addErrorListener(lexErrors);
    const parser = new SoqlParser(new CommonTokenStream(lexer));
    parser.removeErrorListeners();
    parser.addErrorListener(parseErrors);
    parser.helper = new ParserHelper(GRAMMAR.isApex, GRAMMAR.apiVersion, GRAMMAR.isMultiCurrencyEnabled);
    tree = parser.soqlQuery();
  } catch (e) {
    return { accepted: false, reason: `parser threw: ${e && e.message}` };
  }
  // The first error by position, lexer or parser.
  const all = [...lexErrors.errors, ...parseErrors.errors].sort((a, b) => a.line - b.line || a.col - b.col);
  if (all.length > 0) {
    const e = all[0];
    return { accepted: false, reason: `line ${e.line}:${e.col} ${e.msg}` };
  }
  const colon = findColonExpr(tree);
  if (colon && !GRAMMAR.isApex) {
    const t = colon.start;
    return {
      accepted: false,
      reason: `line ${t.line}:${t.charPositionInLine} bind variable '${colon.text}' is Apex-only`,
    };
  }
  return { accepted: true };
}
