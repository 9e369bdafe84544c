// Salesforce's SOQL grammar as the REST API reads a query: @salesforce/soql-common's ANTLR
// parser (a copy of Salesforce's own soql-parser) with isApex false, so an Apex bind variable
// (:name) is an error as it is for /query, and multi-currency literals (USD5000) allowed.
// The generated lexer reports characters it cannot read on the console and drops them; those
// are errors too, so the console is listened to for each parse.
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const { SOQLParser } = require('@salesforce/soql-common/lib/soql-parser');

const parser = SOQLParser({ isApex: false, isMultiCurrencyEnabled: true, apiVersion: 62.0 });

/** Whether the grammar accepts `query`, and the first error if not. */
export function judge(query) {
  const lexerErrors = [];
  const consoleError = console.error;
  console.error = (...args) => lexerErrors.push(args.join(' '));
  try {
    const result = parser.parseQuery(query);
    const errors = result.getParserErrors();
    if (errors.length > 0) {
      const e = errors[0];
      return { accepted: false, reason: `${e.getLineNumber()}:${e.getCharacterPositionInLine()} ${e.getMessage()}` };
    }
    if (lexerErrors.length > 0) return { accepted: false, reason: lexerErrors[0] };
    return { accepted: result.getSuccess(), reason: undefined };
  } finally {
    console.error = consoleError;
  }
}
