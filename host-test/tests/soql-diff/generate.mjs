// A deterministic SOQL corpus for the differential against Salesforce's own grammar: grammar-
// driven variants of every clause, then mutations of them (token deletion, duplication, swaps,
// and the specific mistakes models make). Same seed, same corpus, on every machine.

/** mulberry32: a small, well-known 32-bit PRNG; good enough to vary a corpus. */
function rng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export function generate({ seed = 20261124, variants = 2400, mutations = 1600 } = {}) {
  const r = rng(seed);
  const pick = (xs) => xs[Math.floor(r() * xs.length)];
  const chance = (p) => r() < p;
  const some = (n, f) => Array.from({ length: 1 + Math.floor(r() * n) }, f);

  const objects = ['Account', 'Contact', 'Opportunity', 'Lead', 'Case', 'Task', 'Invoice__c', 'ns__Thing__c', 'Group', 'Offset', 'Update'];
  const fields = ['Id', 'Name', 'Industry', 'Amount', 'CloseDate', 'CreatedDate', 'StageName', 'OwnerId', 'Owner.Name', 'Account.Name', 'Account.Owner.Email', 'Custom__c', 'ns__Field__c', 'Rel__r.Name', 'Type', 'Phone', 'IsClosed', 'Probability'];
  const dateFields = ['CreatedDate', 'CloseDate', 'LastModifiedDate', 'ActivityDate'];
  const numFields = ['Amount', 'Probability', 'NumberOfEmployees', 'AnnualRevenue'];
  const aliases = ['total', 'c', 'n', 'x1', 'distinct', 'Is', 'cnt', 'avgAmount'];
  const strings = ["'Acme'", "'O\\'Brien'", "'100\\%'", "'a\\\\b'", "'line\\nbreak'", "'tab\\there'", "'\\u00e9t\\u00e9'", "'\\U00E9'", "'say \\\"hi\\\"'", "''", "'%acme%'", "'A_c'", "'\\b'", "'\\N\\R\\T\\B'"];
  const numbers = ['0', '42', '-7', '3.14', '.5', '-.5', '+5', '+.25', '1000000', '0.0'];
  const dates = ['2024-01-31', '2017-04-05T10:41:42.000+0000', '2024-01-31T09:00:00Z', '2024-01-31T09:00:00+05:30', '2024-01-31T09:00:00-08:00', '2017-04-05t10:41:42z', '2024-02-29T23:59:59.999Z'];
  const dateLits = ['TODAY', 'YESTERDAY', 'TOMORROW', 'LAST_WEEK', 'THIS_MONTH', 'NEXT_90_DAYS', 'LAST_FISCAL_QUARTER', 'THIS_YEAR'];
  const nLits = ['LAST_N_DAYS:30', 'NEXT_N_DAYS:5', 'NEXT_N_DAYS :5', 'N_DAYS_AGO:3', 'LAST_N_WEEKS:2', 'NEXT_N_FISCAL_QUARTERS:2', 'LAST_N_MONTHS: 6'];
  const currency = ['USD5000', 'EUR100.50', 'JPY1000'];
  const ops = ['=', '!=', '<', '<=', '>', '>=', '<>'];

  const value = () => pick([pick(strings), pick(numbers), pick(dates), pick(dateLits), pick(nLits), pick(currency), 'null', 'true', 'FALSE']);
  const comparison = () => {
    const kind = r();
    if (kind < 0.35) return `${pick(fields)} ${pick(ops)} ${value()}`;
    if (kind < 0.45) return `${pick(fields)} LIKE ${pick(strings)}`;
    if (kind < 0.55) return `${pick(dateFields)} ${pick(ops)} ${pick([...dates, ...dateLits, ...nLits])}`;
    if (kind < 0.62) return `${pick(numFields)} ${pick(ops)} ${pick([...numbers, ...currency])}`;
    if (kind < 0.72) return `${pick(fields)} ${pick(['IN', 'NOT IN'])} (${some(3, () => pick(strings)).join(', ')})`;
    if (kind < 0.77) return `Tags__c ${pick(['INCLUDES', 'EXCLUDES'])} ('a;b', 'c')`;
    if (kind < 0.87) return `${pick(['Id', 'AccountId', 'OwnerId'])} ${pick(['IN', 'NOT IN'])} (SELECT ${pick(['AccountId', 'Id', 'WhatId'])} FROM ${pick(objects.slice(0, 6))}${chance(0.5) ? ` WHERE ${simpleCondition()}` : ''})`;
    if (kind < 0.92) return `CALENDAR_YEAR(${pick(dateFields)}) = ${pick(['2024', '2025'])}`;
    return `DISTANCE(Loc__c, GEOLOCATION(37.775, -122.418), 'mi') < 20`;
  };
  const simpleCondition = () => `${pick(fields)} ${pick(ops)} ${pick([...strings, ...numbers])}`;
  const condition = (depth = 0) => {
    const k = r();
    if (depth > 2 || k < 0.35) return comparison();
    if (k < 0.5) return `(${condition(depth + 1)})`;
    if (k < 0.6) return `NOT (${condition(depth + 1)})`;
    if (k < 0.65) return `NOT ${comparison()}`;
    const joiner = pick(['AND', 'OR']);
    const parts = some(3, () => (chance(0.6) ? comparison() : `(${condition(depth + 1)})`));
    parts.push(chance(0.5) ? comparison() : `(${condition(depth + 1)})`);
    return parts.join(` ${joiner} `);
  };

  const selectItem = (aggregate) => {
    const k = r();
    if (aggregate) {
      if (k < 0.3) return `${pick(['COUNT', 'COUNT_DISTINCT', 'SUM', 'AVG', 'MIN', 'MAX'])}(${pick(['Id', 'Amount', 'Name'])})${chance(0.5) ? ' ' + pick(aliases) : ''}`;
      if (k < 0.4) return `${pick(['CALENDAR_MONTH', 'FISCAL_YEAR', 'DAY_ONLY'])}(${pick(dateFields)})${chance(0.4) ? ' ' + pick(aliases) : ''}`;
      return pick(['Industry', 'StageName', 'Type', 'LeadSource']);
    }
    if (k < 0.55) return `${pick(fields)}${chance(0.1) ? ' ' + pick(aliases) : ''}`;
    if (k < 0.62) return `toLabel(${pick(['StageName', 'Industry'])})`;
    if (k < 0.67) return `FORMAT(${pick(['Amount', 'CloseDate'])})${chance(0.4) ? ' ' + pick(aliases) : ''}`;
    if (k < 0.72) return `convertCurrency(Amount)`;
    if (k < 0.8) return `(SELECT ${some(2, () => pick(['Id', 'LastName', 'Email', 'Subject'])).join(', ')} FROM ${pick(['Contacts', 'Opportunities', 'Cases', 'Account.Contacts'])}${chance(0.4) ? ` WHERE ${simpleCondition()}` : ''}${chance(0.3) ? ' ORDER BY Id' : ''}${chance(0.3) ? ' LIMIT 5' : ''})`;
    if (k < 0.85) return `TYPEOF What WHEN Account THEN Phone, Name WHEN Opportunity THEN Amount ELSE Name END`;
    return `FIELDS(${pick(['STANDARD', 'ALL', 'CUSTOM'])})`;
  };

  const query = () => {
    const aggregate = chance(0.25);
    const items = some(4, () => selectItem(aggregate));
    if (chance(0.04)) items.splice(0, items.length, 'COUNT()');
    let q = `SELECT ${items.join(', ')} FROM ${pick(objects)}`;
    if (chance(0.08)) q += ` USING SCOPE ${pick(['mine', 'team', 'everything', 'delegated'])}`;
    if (chance(0.7)) q += ` WHERE ${condition()}`;
    if (chance(0.1)) q += ` WITH ${pick(['SECURITY_ENFORCED', 'USER_MODE', 'SYSTEM_MODE', 'DATA CATEGORY Geography__c AT usa__c', 'DATA CATEGORY Geography__c ABOVE_OR_BELOW (europe__c, asia__c) AND Product__c BELOW all__c'])}`;
    if (aggregate && chance(0.8)) {
      q += ` GROUP BY ${pick(['Industry', 'StageName', 'Type', 'ROLLUP(Type, Industry)', 'CUBE(Type)', 'CALENDAR_YEAR(CloseDate)', 'Industry, Type'])}`;
      if (chance(0.4)) q += ` HAVING COUNT(Id) > ${pick(['1', '10'])}`;
    }
    if (chance(0.4)) q += ` ORDER BY ${some(2, () => `${pick(fields)}${pick(['', ' ASC', ' DESC'])}${pick(['', ' NULLS FIRST', ' NULLS LAST'])}`).join(', ')}`;
    if (chance(0.6)) q += ` LIMIT ${pick(['1', '10', '200', '2000', '50000'])}`;
    if (chance(0.15)) q += ` OFFSET ${pick(['0', '10', '2000', '2001'])}`;
    if (chance(0.06)) q += ` FOR ${pick(['VIEW', 'REFERENCE', 'VIEW, REFERENCE', 'UPDATE'])}`;
    return q;
  };

  // The mistakes worth knowing the answer to, each on a valid base.
  const targeted = [
    "SELECT Id FROM Account WHERE Name = 'A' AND NOT Industry = 'B'",
    "SELECT Id FROM Account WHERE NOT Name = 'A' AND Industry = 'B'",
    "SELECT Id FROM Account WHERE NOT NOT Name = 'A'",
    "SELECT Id FROM Account WHERE Name = 'A' AND (NOT Industry = 'B')",
    "SELECT Id, Limit FROM Account",
    "SELECT Id FROM Limit",
    "SELECT Id FROM Account WHERE Name = 'a\\%b'",
    "SELECT Id FROM Account WHERE Name = 'a\\_b'",
    "SELECT COUNT(Id, Name) FROM Account",
    "SELECT SUM() FROM Opportunity",
    "SELECT COUNT(Id) FROM Account HAVING COUNT(Id) > 1",
    "SELECT Id FROM Account WHERE Id IN (SELECT AccountId FROM Contact ORDER BY Name)",
    "SELECT Id FROM Account WHERE Id IN (SELECT AccountId FROM Contact LIMIT 5)",
    "SELECT COUNT(), Name FROM Account",
    "SELECT COUNT() total FROM Account",
    "SELECT Id FROM Account WHERE FORMULA(Name) = 'x'",
    "SELECT Id FROM Account ORDER BY FIELDS(ALL)",
    "SELECT Id FROM Account WHERE CreatedDate = LAST_N_DAYS",
    "SELECT Type, Industry, COUNT(Id) FROM Account GROUP BY ROLLUP(Type), Industry",
    "SELECT Id FROM Account WHERE Id IN (SELECT AccountId a FROM Contact)",
    "SELECT Id FROM Account WHERE Name = 'line\nbreak'",
    "SELECT COUNT_DISTINCT(Company) distinct FROM Lead",
    "SELECT COUNT(Id) Is FROM Account",
    "SELECT Id FROM Offset",
    "SELECT Id FROM Account WHERE CreatedDate > 2017-04-05T10:41:42.000+0000",
    "SELECT Id FROM Account WHERE CreatedDate > 2017-04-05t10:41:42z",
    "SELECT Id FROM Opportunity WHERE Probability > .5 AND Amount > -.5 AND Amount < +5",
    "SELECT Id FROM Opportunity WHERE CloseDate = NEXT_N_DAYS :5",
    "SELECT Id FROM Account WHERE Name = '\\U00E9'",
    "SELECT Title FROM KnowledgeArticleVersion WHERE PublishStatus = 'online' WITH DATA CATEGORY Geography__c AT usa__c WITH SECURITY_ENFORCED",
    "SELECT * FROM Account",
    "SELECT DISTINCT Name FROM Account",
    "SELECT TOP 5 Name FROM Account",
    "SELECT Name FROM Account JOIN Contact ON Id = AccountId",
    "SELECT COUNT(Id) AS total FROM Account",
    "SELECT Id FROM Account WHERE Name IS NULL",
    "SELECT Id FROM Account FOR UPDATE",
    "SELECT FIELDS(ALL) FROM Account",
    "SELECT Id FROM Account OFFSET 2001",
    "DELETE FROM Account",
    "SELECT Id FROM Account USING LOOKUP Foo BIND Name = 'x'",
    "SELECT Id FROM Account USING LOOKUP Foo WHERE Name = 'x'",
    "SELECT Id FROM Account WHERE A = 1 WITH SECURITY_ENFORCED BIND n = 'x', m = 2",
    "SELECT Id FROM Account BIND n = 'x' ORDER BY Id",
    "SELECT Id FROM Account BIND n = Name",
    "SELECT Id FROM Account BIND n = 'x', m = 2",
    "SELECT Id FROM Account Bind",
    "SELECT Id FROM Account USING LOOKUP",
    "SELECT Id FROM Account LIMIT 5 OFFSET 10 BIND n = 5 FOR VIEW",
    "SELECT Id FROM Account WHERE FORMULA(Name) = 'x'",
    "SELECT Id FROM Account; DELETE FROM Account",
  ];

  // Past Salesforce's 100,000-character limit on a SOQL statement.
  targeted.push(`SELECT Id FROM Account WHERE Name IN (${Array(12_500).fill("'abcdef'").join(', ')})`);

  const seen = new Set();
  const out = [];
  const add = (q) => {
    if (!seen.has(q)) {
      seen.add(q);
      out.push(q);
    }
  };
  targeted.forEach(add);
  const bases = [];
  while (bases.length < variants) {
    const q = query();
    if (!seen.has(q)) bases.push(q);
    add(q);
  }
  // Mutations at the token level.
  const tokenize = (q) => q.match(/'(?:[^'\\]|\\.)*'|[A-Za-z_][A-Za-z0-9_.:]*|[0-9.+-]+[A-Za-z0-9:.+-]*|\S/g) || [];
  const extras = ['AND', 'OR', 'NOT', ',', '(', ')', 'FROM', 'WHERE', 'LIMIT', 'GROUP BY', 'AS', "'x'", '5', 'NULL', 'ORDER BY', 'HAVING', 'WITH', 'IN'];
  let guard = 0;
  while (out.length < variants + mutations + targeted.length && guard++ < mutations * 20) {
    const tokens = tokenize(pick(bases));
    if (tokens.length < 3) continue;
    const i = Math.floor(r() * tokens.length);
    const kind = r();
    if (kind < 0.3) tokens.splice(i, 1);
    else if (kind < 0.5) tokens.splice(i, 0, tokens[i]);
    else if (kind < 0.7 && i + 1 < tokens.length) [tokens[i], tokens[i + 1]] = [tokens[i + 1], tokens[i]];
    else tokens.splice(i, 0, pick(extras));
    add(tokens.join(' '));
  }
  return out;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  for (const q of generate()) console.log(JSON.stringify(q));
}
