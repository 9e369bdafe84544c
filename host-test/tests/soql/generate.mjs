// A deterministic SOQL corpus for the differential (our validator vs. Salesforce's grammar).
//
//   node generate.mjs [seed]   -> JSON Lines, one query string a line, on stdout
//
// Four parts, deduplicated, in this order:
//   1. documentation-style examples (shapes the SOQL and SOSL Reference shows);
//   2. systematic coverage: every operator x every value class, every date literal,
//      every SELECT-item kind, every WITH / GROUP BY / ORDER BY / trailer form;
//   3. grammar-driven random variants of whole queries (every clause, random case
//      and whitespace);
//   4. mutations: token deletion / duplication / swap / insertion / replacement,
//      reserved words as names, and the targeted mistakes listed in the issue,
//      each applied to several bases.
// Same seed, same corpus, on every machine: the PRNG is our own (sfc32), nothing
// reads the clock or Math.random.

export const DEFAULT_SEED = 0x50c1d1ff;

/** sfc32 (Chris Doty-Humphrey's Small Fast Counter), seeded through splitmix32. */
export function prng(seed) {
  let s = seed >>> 0;
  const splitmix = () => {
    s = (s + 0x9e3779b9) >>> 0;
    let z = s;
    z = Math.imul(z ^ (z >>> 16), 0x85ebca6b) >>> 0;
    z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35) >>> 0;
    return (z ^ (z >>> 16)) >>> 0;
  };
  let a = splitmix(), b = splitmix(), c = splitmix(), d = 1;
  const next = () => {
    const t = (((a + b) >>> 0) + d) >>> 0;
    d = (d + 1) >>> 0;
    a = b ^ (b >>> 9);
    b = (c + (c << 3)) >>> 0;
    c = ((c << 21) | (c >>> 11)) >>> 0;
    c = (c + t) >>> 0;
    return t / 4294967296;
  };
  for (let i = 0; i < 12; i++) next();
  return next;
}

// ---------------------------------------------------------------------------------------------
// Vocabulary
// ---------------------------------------------------------------------------------------------

const OBJECTS = ['Account', 'Contact', 'Opportunity', 'Lead', 'Case', 'Task', 'Event', 'User', 'Invoice__c', 'ns__Widget__c', 'Group'];
const FIELDS = ['Id', 'Name', 'Industry', 'Type', 'Phone', 'OwnerId', 'CreatedDate', 'Description', 'Rating', 'Custom__c', 'ns__Score__c', 'IsDeleted', 'LastModifiedDate', 'BillingCity', 'AnnualRevenue', 'NumberOfEmployees'];
const PATHS = ['Owner.Name', 'Account.Name', 'Account.Owner.Email', 'Parent.Parent.Name', 'CreatedBy.Profile.Name', 'Rel__r.Name', 'Rel__r.Other__r.Value__c', 'ns__Parent__r.ns__Code__c', 'Who.Name', 'What.Type'];
const STRING_FIELDS = ['Name', 'Industry', 'BillingCity', 'Description', 'Custom__c', 'Account.Name', 'Owner.Name'];
const NUM_FIELDS = ['AnnualRevenue', 'NumberOfEmployees', 'Amount', 'Probability', 'ns__Score__c'];
const DATE_FIELDS = ['CreatedDate', 'CloseDate', 'LastModifiedDate', 'ActivityDate', 'SystemModstamp'];
const BOOL_FIELDS = ['IsDeleted', 'IsClosed', 'IsWon', 'Active__c'];
const ID_FIELDS = ['Id', 'OwnerId', 'AccountId', 'WhatId', 'CreatedById'];
const MULTI_FIELDS = ['Interests__c', 'Regions__c'];
const GROUP_FIELDS = ['Industry', 'Type', 'LeadSource', 'StageName', 'Rating', 'OwnerId'];
const CHILD_RELS = ['Contacts', 'Opportunities', 'Cases', 'Tasks', 'Notes', 'Invoices__r', 'ns__Widgets__r'];
const ALIASES = ['total', 'cnt', 'n', 'avgAmt', 'maxDate', 'x1', 'Amt', 'c'];
const SCOPES = ['mine', 'team', 'everything', 'delegated', 'mineAndMyGroups', 'my_territory', 'my_team_territory'];

const STRINGS = [
  "'Acme'", "''", "'O\\'Brien'", "'a\\\\b'", "'line\\nbreak'", "'tab\\there'", "'cr\\rhere'",
  "'bell\\bx'", "'say \\\"hi\\\"'", "'\\u00e9t\\u00e9'", "'\\U00E9'", "'\\u20AC'", "'caf\u00e9'",
  "'\\N\\R\\T\\B'", "'semi;colon'", "'100%'", "'under_score'", "'*star*'", "'#hash'", "'a\"b'",
];
const LIKE_STRINGS = ["'Acme%'", "'%corp%'", "'A_me'", "'100\\%'", "'under\\_score%'", "'%'", "'O\\'B%'", "'\\u00e9%'"];
const NUMBERS = ['0', '1', '42', '-7', '+5', '3.14', '.5', '-.5', '+.25', '-0.001', '1000000', '00012', '2147483648', '99999999999999999999'];
const DATES = ['2024-01-31', '1999-12-31', '2024-02-29'];
const DATETIMES = [
  '2024-01-31T09:00:00Z', '2024-01-31T09:00:00z', '2024-01-31t09:00:00Z', '2017-04-05t10:41:42z',
  '2017-04-05T10:41:42.000+0000', '2024-01-31T09:00:00+0000', '2024-01-31T09:00:00-0800',
  '2024-01-31T09:00:00+05:30', '2024-01-31T09:00:00-08:00', '2024-02-29T23:59:59.999Z', '2024-01-31T09:00:00.5Z',
];
const TIMES = ['10:00:00Z', '23:59:59.999Z', '08:30:00.000+0000', '08:30:00-08:00'];
const DATE_LITERALS = [
  'YESTERDAY', 'TODAY', 'TOMORROW', 'LAST_WEEK', 'THIS_WEEK', 'NEXT_WEEK', 'LAST_MONTH', 'THIS_MONTH',
  'NEXT_MONTH', 'LAST_90_DAYS', 'NEXT_90_DAYS', 'THIS_QUARTER', 'LAST_QUARTER', 'NEXT_QUARTER',
  'THIS_YEAR', 'LAST_YEAR', 'NEXT_YEAR', 'THIS_FISCAL_QUARTER', 'LAST_FISCAL_QUARTER',
  'NEXT_FISCAL_QUARTER', 'THIS_FISCAL_YEAR', 'LAST_FISCAL_YEAR', 'NEXT_FISCAL_YEAR', 'today', 'Last_Week',
];
const N_LITERAL_NAMES = [
  'LAST_N_DAYS', 'NEXT_N_DAYS', 'N_DAYS_AGO', 'NEXT_N_WEEKS', 'LAST_N_WEEKS', 'N_WEEKS_AGO',
  'NEXT_N_MONTHS', 'LAST_N_MONTHS', 'N_MONTHS_AGO', 'NEXT_N_QUARTERS', 'LAST_N_QUARTERS',
  'N_QUARTERS_AGO', 'NEXT_N_YEARS', 'LAST_N_YEARS', 'N_YEARS_AGO', 'NEXT_N_FISCAL_QUARTERS',
  'LAST_N_FISCAL_QUARTERS', 'N_FISCAL_QUARTERS_AGO', 'NEXT_N_FISCAL_YEARS', 'LAST_N_FISCAL_YEARS',
  'N_FISCAL_YEARS_AGO',
];
const N_LITERALS = [
  ...N_LITERAL_NAMES.map((n, i) => `${n}:${[1, 5, 30, 365, 2][i % 5]}`),
  'LAST_N_DAYS : 5', 'NEXT_N_DAYS :5', 'N_DAYS_AGO: 3', 'last_n_days:7', 'LAST_N_DAYS:\n30', 'LAST_N_DAYS:0',
];
const CURRENCY = ['USD5000', 'EUR100.50', 'JPY1000', 'usd10'];
const OPS = ['=', '!=', '<>', '<', '<=', '>', '>='];
const DATE_FUNCS = ['CALENDAR_MONTH', 'CALENDAR_QUARTER', 'CALENDAR_YEAR', 'DAY_IN_MONTH', 'DAY_IN_WEEK', 'DAY_IN_YEAR', 'DAY_ONLY', 'FISCAL_MONTH', 'FISCAL_QUARTER', 'FISCAL_YEAR', 'HOUR_IN_DAY', 'WEEK_IN_MONTH', 'WEEK_IN_YEAR'];
const AGG_FUNCS = ['COUNT', 'COUNT_DISTINCT', 'SUM', 'AVG', 'MIN', 'MAX'];
const TYPEOFS = [
  'TYPEOF What WHEN Account THEN Phone, NumberOfEmployees WHEN Opportunity THEN Amount, CloseDate ELSE Name, Email END',
  'TYPEOF Owner WHEN User THEN FirstName, LastName END',
  'TYPEOF Who WHEN Contact THEN Email ELSE Name END',
  'TYPEOF What WHEN Account THEN Name WHEN Case THEN CaseNumber WHEN Opportunity THEN StageName END',
];
const DATA_CATEGORY = [
  'DATA CATEGORY Geography__c AT usa__c',
  'DATA CATEGORY Geography__c ABOVE europe__c',
  'DATA CATEGORY Geography__c BELOW (asia__c, europe__c)',
  'DATA CATEGORY Geography__c ABOVE_OR_BELOW usa__c AND Product__c AT mobile_phones__c',
  'DATA CATEGORY Product__c AT (desktop__c, mobile_phones__c) AND Geography__c BELOW north_america__c',
];
const WITHS = ['SECURITY_ENFORCED', 'USER_MODE', 'SYSTEM_MODE', ...DATA_CATEGORY];

// SOQL's reserved words (the reference's list) and the grammar's other keywords.
const RESERVED = ['AND', 'ASC', 'DESC', 'EXCLUDES', 'FIRST', 'FROM', 'GROUP', 'HAVING', 'IN', 'INCLUDES', 'LAST', 'LIKE', 'LIMIT', 'NOT', 'NULL', 'NULLS', 'OR', 'SELECT', 'WHERE', 'WITH'];
const KEYWORDS = ['ORDER', 'BY', 'OFFSET', 'FOR', 'VIEW', 'REFERENCE', 'UPDATE', 'TYPEOF', 'WHEN', 'THEN', 'ELSE', 'END', 'USING', 'SCOPE', 'DATA', 'CATEGORY', 'AT', 'ABOVE', 'BELOW', 'ROLLUP', 'CUBE', 'COUNT', 'FIELDS', 'TRUE', 'FALSE', 'AS', 'BIND', 'LOOKUP', 'DISTANCE', 'GEOLOCATION', 'CASE', 'TRACKING', 'VIEWSTAT', 'SECURITY_ENFORCED', 'USER_MODE', 'Limit', 'Order', 'Offset'];

// ---------------------------------------------------------------------------------------------
// 1. Documentation-style examples (the reference's own shapes), plus the issue's limits
// ---------------------------------------------------------------------------------------------

function docExamples() {
  const long = (n) => {
    // A valid query of exactly n characters: an IN list padded with one filler string.
    const head = "SELECT Id FROM Account WHERE Name IN (";
    const item = "'abcdefghij', ";
    let body = '';
    while (head.length + body.length + item.length + 10 < n) body += item;
    const filler = n - head.length - body.length - 3; // quotes + ')'
    return `${head}${body}'${'x'.repeat(filler)}')`;
  };
  return [
    'SELECT Id, Name, BillingCity FROM Account',
    'SELECT count() FROM Contact',
    'SELECT Contact.Firstname, Contact.Account.Name FROM Contact',
    'SELECT FIELDS(STANDARD) FROM Contact',
    'SELECT FIELDS(ALL) FROM Account LIMIT 200',
    'SELECT FIELDS(CUSTOM) FROM Account LIMIT 200',
    'SELECT Name, Id, FIELDS(CUSTOM) FROM Account LIMIT 200',
    'SELECT someCustomField__c, FIELDS(STANDARD) FROM Account',
    'SELECT Account.Name, (SELECT FIELDS(ALL) FROM Account.Contacts LIMIT 200) FROM Account',
    'SELECT FIELDS(ALL) FROM Account',
    'SELECT FIELDS(CUSTOM) FROM Account LIMIT 201',
    'SELECT FIELDS(ALL) FROM Account LIMIT 500',
    'SELECT Id, FIELDS(ALL) FROM User LIMIT 200',
    "SELECT Id FROM Contact WHERE Name LIKE 'A%' AND MailingCity = 'California'",
    "SELECT Name FROM Account WHERE CreatedDate > 2011-04-26T10:00:00-08:00",
    "SELECT Amount FROM Opportunity WHERE CALENDAR_YEAR(CreatedDate) = 2011",
    "SELECT Id FROM Case WHERE Contact.LastName = null",
    "SELECT AccountId, FirstName, lastname FROM Contact WHERE lastname LIKE 'appl%'",
    "SELECT Name, Id FROM Merchandise__c ORDER BY Name OFFSET 100",
    "SELECT Name, Id FROM Merchandise__c ORDER BY Name LIMIT 20 OFFSET 100",
    "SELECT Name FROM Merchandise__c WHERE Price__c > 5.0 ORDER BY Name LIMIT 100 OFFSET 10",
    "SELECT Name FROM Merchandise__c ORDER BY Name LIMIT 100 OFFSET 2000",
    "SELECT Name FROM Merchandise__c ORDER BY Name LIMIT 100 OFFSET 2001",
    "SELECT Name FROM Merchandise__c OFFSET 20000",
    'SELECT Name, (SELECT LastName FROM Contacts) FROM Account',
    'SELECT Account.Name, (SELECT Contact.LastName FROM Account.Contacts) FROM Account',
    "SELECT Name, (SELECT LastName FROM Contacts WHERE CreatedBy.Alias = 'x') FROM Account WHERE Industry = 'media'",
    "SELECT Id, Name FROM Account WHERE Id IN (SELECT AccountId FROM Opportunity WHERE StageName = 'Closed Lost')",
    "SELECT Id FROM Account WHERE Id NOT IN (SELECT AccountId FROM Opportunity WHERE IsClosed = false)",
    "SELECT Id, Name FROM Account WHERE Id IN (SELECT AccountId FROM Contact WHERE LastName LIKE 'apple%') AND Id IN (SELECT AccountId FROM Opportunity WHERE isClosed = false)",
    "SELECT Id FROM Opportunity WHERE AccountId NOT IN (SELECT AccountId FROM Contact WHERE LeadSource = 'Web')",
    "SELECT Id FROM Idea WHERE (Id IN (SELECT ParentId FROM Vote WHERE CreatedDate > LAST_WEEK AND Parent.Type='Idea'))",
    "SELECT Name FROM Account WHERE BillingState IN ('California', 'New York')",
    "SELECT Id, MSP1__c FROM CustObj__c WHERE MSP1__c INCLUDES ('AAA;BBB','CCC')",
    "SELECT Id, MSP1__c FROM CustObj__c WHERE MSP1__c EXCLUDES ('AAA')",
    "SELECT Id FROM Account WHERE CreatedDate = YESTERDAY",
    "SELECT Id FROM Account WHERE CreatedDate > TODAY",
    "SELECT Id FROM Opportunity WHERE CloseDate = NEXT_N_DAYS:15",
    "SELECT Id FROM Account WHERE CreatedDate = LAST_N_DAYS:365",
    "SELECT Id FROM Opportunity WHERE CloseDate = N_FISCAL_YEARS_AGO:2",
    "SELECT Id FROM Account WHERE CreatedDate > 2005-10-08T01:02:03Z",
    "SELECT Id FROM Account WHERE CreatedDate > 1999-01-01T23:01:01+01:00",
    "SELECT Id FROM Account WHERE CreatedDate > 1999-01-01T23:01:01-08:00",
    "SELECT Id FROM Opportunity WHERE CloseDate > 1999-01-01",
    "SELECT LeadSource, COUNT(Name) FROM Lead GROUP BY LeadSource",
    "SELECT LeadSource, COUNT(Name) cnt FROM Lead GROUP BY ROLLUP(LeadSource)",
    "SELECT Status, LeadSource, COUNT(Name) cnt FROM Lead GROUP BY ROLLUP(Status, LeadSource)",
    "SELECT Type, BillingCountry, GROUPING(Type) grpType, GROUPING(BillingCountry) grpCty, COUNT(id) accts FROM Account GROUP BY CUBE(Type, BillingCountry) ORDER BY GROUPING(Type), GROUPING(BillingCountry)",
    "SELECT LeadSource, COUNT(Name) FROM Lead GROUP BY LeadSource HAVING COUNT(Name) > 100",
    "SELECT Name, Count(Id) FROM Account GROUP BY Name HAVING Count(Id) > 1",
    "SELECT LeadSource, COUNT(Name) FROM Lead GROUP BY LeadSource HAVING COUNT(Name) > 100 AND LeadSource > 'Phone'",
    "SELECT AVG(Amount) FROM Opportunity",
    "SELECT CampaignId, AVG(Amount) FROM Opportunity GROUP BY CampaignId",
    "SELECT COUNT_DISTINCT(Company) FROM Lead",
    "SELECT MIN(CreatedDate), FirstName, LastName FROM Contact GROUP BY FirstName, LastName",
    "SELECT Name, MAX(BudgetedCost) FROM Campaign GROUP BY Name",
    "SELECT SUM(Amount) FROM Opportunity WHERE IsClosed = false AND Probability > 60",
    "SELECT AVG(Amount) avg FROM Opportunity",
    "SELECT Name n, MAX(Amount) max FROM Opportunity GROUP BY Name",
    "SELECT CALENDAR_YEAR(CreatedDate), SUM(Amount) FROM Opportunity GROUP BY CALENDAR_YEAR(CreatedDate)",
    "SELECT HOUR_IN_DAY(convertTimezone(CreatedDate)), SUM(Amount) FROM Opportunity GROUP BY HOUR_IN_DAY(convertTimezone(CreatedDate))",
    "SELECT Id, convertCurrency(AnnualRevenue) FROM Account",
    "SELECT Id, Name FROM Opportunity WHERE Amount > USD5000",
    "SELECT Company, toLabel(Status) FROM Lead WHERE toLabel(Status) = 'le Draft'",
    "SELECT FORMAT(Amount) Amt FROM Opportunity",
    "SELECT FORMAT(MIN(closedate)) Amt FROM opportunity",
    "SELECT Id, LastModifiedDate, FORMAT(LastModifiedDate) formattedDate FROM Account",
    "SELECT Name FROM Account ORDER BY Name DESC NULLS LAST",
    "SELECT Name FROM Account ORDER BY Name ASC NULLS FIRST, Id",
    "SELECT Id, CaseNumber, Account.Id, Account.Name FROM Case ORDER BY Account.Name",
    "SELECT Name FROM Account WHERE Industry = 'media' LIMIT 125",
    "SELECT Name FROM Account WHERE Industry = 'media' ORDER BY BillingPostalCode ASC NULLS LAST LIMIT 125",
    "SELECT Id FROM Account USING SCOPE Mine",
    "SELECT Name FROM Account USING SCOPE Team",
    "SELECT Title FROM KnowledgeArticleVersion WHERE PublishStatus='online' WITH DATA CATEGORY Geography__c ABOVE usa__c",
    "SELECT Id FROM Question WHERE LastReplyDate > 2005-10-08T01:02:03Z WITH DATA CATEGORY Geography__c AT (usa__c, uk__c)",
    "SELECT UrlName FROM KnowledgeArticleVersion WHERE PublishStatus='draft' WITH DATA CATEGORY Geography__c AT usa__c AND Product__c ABOVE_OR_BELOW mobile_phones__c",
    "SELECT Title, Summary FROM KnowledgeArticleVersion WHERE PublishStatus='Online' AND Language = 'en_US' WITH DATA CATEGORY Geography__c ABOVE_OR_BELOW europe__c AND Product__c BELOW All__c",
    "SELECT Id, Name FROM Account WITH SECURITY_ENFORCED",
    "SELECT Id, (SELECT LastName FROM Contacts), (SELECT Description FROM Opportunities) FROM Account WITH SECURITY_ENFORCED",
    "SELECT Id FROM Account WITH USER_MODE",
    "SELECT Id FROM Account WITH SYSTEM_MODE",
    "SELECT Name, Phone FROM Account FOR VIEW",
    "SELECT Name, Phone FROM Account FOR REFERENCE",
    "SELECT Id FROM Account LIMIT 2 FOR UPDATE",
    "SELECT Id FROM Account FOR UPDATE",
    "SELECT Title FROM FAQ__kav WHERE Keyword='Apex' and Language = 'en_US' and KnowledgeArticleVersion = 'ka230000000PCiy' UPDATE VIEWSTAT",
    "SELECT Title FROM FAQ__kav WHERE PublishStatus='online' and Language = 'en_US' and KnowledgeArticleVersion = 'ka230000000PCiy' UPDATE TRACKING",
    "SELECT Id FROM Event WHERE What.Type IN ('Account', 'Opportunity')",
    "SELECT TYPEOF What WHEN Account THEN Phone, NumberOfEmployees WHEN Opportunity THEN Amount, CloseDate ELSE Name, Email END FROM Event",
    "SELECT Id, TYPEOF Owner WHEN User THEN FirstName END FROM Case",
    "SELECT Name, Location__c FROM Warehouse__c WHERE DISTANCE(Location__c, GEOLOCATION(37.775,-122.418), 'mi') < 20",
    "SELECT Name, StreetAddress__c FROM Warehouse__c WHERE DISTANCE(Location__c, GEOLOCATION(37.775,-122.418), 'mi') < 20 ORDER BY DISTANCE(Location__c, GEOLOCATION(37.775,-122.418), 'mi') LIMIT 10",
    "SELECT Id, Name, DISTANCE(Location__c, GEOLOCATION(37.775,-122.418), 'km') dist FROM Warehouse__c",
    "SELECT Id FROM Account WHERE Name = 'Joe\\'s'",
    "SELECT Id FROM Account WHERE Name LIKE 'Joe\\_%'",
    "SELECT Name FROM Account WHERE Name LIKE 'Acme\\%'",
    "SELECT Name FROM Account WHERE (Name = 'Acme' OR Name = 'Global') AND Industry = 'Media'",
    "SELECT Name FROM Account WHERE NOT Name = 'Acme'",
    "SELECT Name FROM Account WHERE NOT (Name = 'Acme' OR Industry = 'Media')",
    "SELECT Id FROM Account WHERE Name != null",
    "SELECT Id FROM Contact WHERE MailingCity = 'San Francisco' OR MailingCity = 'Oakland'",
    "SELECT Name, (SELECT Id, (SELECT Id, (SELECT Id, (SELECT Id FROM Attachments) FROM Notes) FROM Contacts) FROM ChildAccounts) FROM Account",
    long(100000),
    long(100001),
  ];
}

// ---------------------------------------------------------------------------------------------
// Building blocks
// ---------------------------------------------------------------------------------------------

function makeBuilder(r) {
  const pick = (xs) => xs[Math.floor(r() * xs.length)];
  const chance = (p) => r() < p;
  const int = (lo, hi) => lo + Math.floor(r() * (hi - lo + 1));
  const some = (lo, hi, f) => Array.from({ length: int(lo, hi) }, f);

  const value = () => {
    const k = r();
    if (k < 0.3) return pick(STRINGS);
    if (k < 0.5) return pick(NUMBERS);
    if (k < 0.6) return pick([...DATES, ...DATETIMES]);
    if (k < 0.7) return pick(DATE_LITERALS);
    if (k < 0.78) return pick(N_LITERALS);
    if (k < 0.83) return pick(CURRENCY);
    if (k < 0.86) return pick(TIMES);
    return pick(['null', 'NULL', 'true', 'false', 'TRUE', 'False']);
  };

  const semiJoin = () => {
    let q = `SELECT ${pick(['AccountId', 'Id', 'WhatId', 'OwnerId', 'ParentId', 'ns__Account__c'])} FROM ${pick(['Contact', 'Opportunity', 'Case', 'Task', 'Invoice__c'])}`;
    if (chance(0.6)) q += ` WHERE ${comparison(false)}`;
    return q;
  };

  const comparison = (allowJoin = true) => {
    const k = r();
    if (k < 0.18) return `${pick([...FIELDS, ...PATHS])} ${pick(OPS)} ${value()}`;
    if (k < 0.28) return `${pick(STRING_FIELDS)} ${pick(OPS)} ${pick(STRINGS)}`;
    if (k < 0.36) return `${pick(STRING_FIELDS)} ${chance(0.2) ? 'like' : 'LIKE'} ${pick(LIKE_STRINGS)}`;
    if (k < 0.45) return `${pick(DATE_FIELDS)} ${pick(OPS)} ${pick([...DATES, ...DATETIMES, ...DATE_LITERALS, ...N_LITERALS])}`;
    if (k < 0.51) return `${pick(NUM_FIELDS)} ${pick(OPS)} ${pick([...NUMBERS, ...CURRENCY])}`;
    if (k < 0.55) return `${pick(BOOL_FIELDS)} ${pick(['=', '!='])} ${pick(['true', 'false', 'TRUE', 'null'])}`;
    if (k < 0.64) return `${pick(STRING_FIELDS)} ${pick(['IN', 'NOT IN', 'in', 'not in'])} (${some(1, 4, () => pick(STRINGS)).join(pick([', ', ',']))})`;
    if (k < 0.67) return `${pick(DATE_FIELDS)} IN (${some(1, 3, () => pick([...DATES, ...DATE_LITERALS])).join(', ')})`;
    if (k < 0.72) return `${pick(MULTI_FIELDS)} ${pick(['INCLUDES', 'EXCLUDES', 'includes'])} (${some(1, 3, () => pick(["'a;b'", "'c'", "'AAA;BBB'", "'x y'"])).join(', ')})`;
    if (k < 0.8 && allowJoin) return `${pick(ID_FIELDS)} ${pick(['IN', 'NOT IN'])} (${semiJoin()})`;
    if (k < 0.86) return `${pick(DATE_FUNCS)}(${pick(DATE_FIELDS)}) ${pick(OPS)} ${int(1, 2030)}`;
    if (k < 0.89) return `toLabel(${pick(['Status', 'Industry'])}) = ${pick(STRINGS)}`;
    if (k < 0.92) return `DISTANCE(Location__c, GEOLOCATION(${pick(['37.775', '-33.9', '0'])}, ${pick(['-122.418', '151.2', '0.5'])}), '${pick(['mi', 'km'])}') ${pick(['<', '>'])} ${pick(['20', '5.5', '100'])}`;
    if (k < 0.95) return `${pick(ID_FIELDS)} = '${pick(['001000000000001', '001000000000001AAA', '005xx000001Sv6tAAC'])}'`;
    return `${pick(FIELDS)} ${pick(OPS)} ${pick(['null', "'x'", '5'])}`;
  };

  // WHERE conditions: AND/OR chains, parenthesised groups, NOT as the reference allows it
  // (NOT applies to one expression; mixing AND/OR or NOT with AND/OR takes parentheses).
  const condition = (depth = 0, allowJoin = true) => {
    const k = r();
    if (depth >= 3 || k < 0.3) return comparison(allowJoin);
    if (k < 0.4) return `(${condition(depth + 1, allowJoin)})`;
    if (k < 0.5) return `NOT (${condition(depth + 1, allowJoin)})`;
    if (k < 0.55) return `NOT ${comparison(allowJoin)}`;
    const joiner = pick(['AND', 'OR', 'and', 'or']);
    const n = int(2, 4);
    const parts = [];
    for (let i = 0; i < n; i++) {
      const c = r();
      if (c < 0.6) parts.push(comparison(allowJoin));
      else if (c < 0.75) parts.push(`(NOT ${comparison(allowJoin)})`);
      else parts.push(`(${condition(depth + 1, allowJoin)})`);
    }
    return parts.join(` ${joiner} `);
  };

  const having = () => {
    const one = () => `${pick(['COUNT(Id)', 'SUM(Amount)', 'AVG(Amount)', 'MAX(CreatedDate)', 'COUNT_DISTINCT(Name)', 'MIN(Amount)'])} ${pick(OPS)} ${pick(['1', '10', '100.5', '2024-01-01', 'USD100'])}`;
    const k = r();
    if (k < 0.5) return one();
    if (k < 0.7) return `${one()} ${pick(['AND', 'OR'])} ${one()}`;
    if (k < 0.85) return `${pick(GROUP_FIELDS)} ${pick(OPS)} ${pick(STRINGS)} AND ${one()}`;
    return `NOT (${one()})`;
  };

  const childQuery = (level = 1, maxLevel = 1) => {
    const items = some(1, 3, () => pick(['Id', 'LastName', 'Email', 'Subject', 'Amount', 'CreatedDate', 'Owner.Name', 'toLabel(Status)', 'FORMAT(Amount)']));
    if (level < maxLevel) items.push(`(${childQuery(level + 1, maxLevel)})`);
    let q = `SELECT ${[...new Set(items)].join(', ')} FROM ${pick([...CHILD_RELS, 'Account.Contacts'])}`;
    if (chance(0.35)) q += ` WHERE ${condition(2, false)}`;
    if (chance(0.25)) q += ` ORDER BY ${pick(['Id', 'CreatedDate DESC', 'LastName NULLS LAST'])}`;
    if (chance(0.3)) q += ` LIMIT ${pick(['1', '5', '200'])}`;
    return q;
  };

  const plainItem = () => {
    const k = r();
    if (k < 0.4) return pick(FIELDS);
    if (k < 0.55) return pick(PATHS);
    if (k < 0.62) return `toLabel(${pick(['Status', 'Industry', 'Rating'])})${chance(0.3) ? ' ' + pick(ALIASES) : ''}`;
    if (k < 0.68) return `FORMAT(${pick(['Amount', 'CloseDate', 'LastModifiedDate'])})${chance(0.4) ? ' ' + pick(ALIASES) : ''}`;
    if (k < 0.72) return `convertCurrency(${pick(['Amount', 'AnnualRevenue'])})${chance(0.3) ? ' ' + pick(ALIASES) : ''}`;
    if (k < 0.8) return `(${childQuery()})`;
    if (k < 0.86) return pick(TYPEOFS);
    if (k < 0.9) return `FIELDS(${pick(['STANDARD', 'STANDARD', 'ALL', 'CUSTOM', 'standard'])})`;
    if (k < 0.93) return `DISTANCE(Location__c, GEOLOCATION(37.775, -122.418), 'mi')${chance(0.5) ? ' dist' : ''}`;
    return pick(['Id', 'Name']);
  };

  const aggItem = () => {
    const k = r();
    if (k < 0.45) return `${pick(AGG_FUNCS)}(${pick(['Id', 'Amount', 'Name', 'CreatedDate', 'AnnualRevenue', 'Account.Name'])})${chance(0.5) ? ' ' + pick(ALIASES) : ''}`;
    if (k < 0.55) return `FORMAT(${pick(['MIN', 'MAX', 'SUM'])}(${pick(['Amount', 'CloseDate'])}))${chance(0.5) ? ' ' + pick(ALIASES) : ''}`;
    if (k < 0.6) return `convertCurrency(SUM(Amount))${chance(0.5) ? ' ' + pick(ALIASES) : ''}`;
    return 'COUNT(Id)';
  };

  const clausesAfterFrom = (q, opts) => {
    const { aggregate, groups } = opts;
    if (chance(0.06)) q += ` USING SCOPE ${pick(SCOPES)}`;
    if (chance(0.7)) q += ` WHERE ${condition()}`;
    if (chance(0.1)) q += ` WITH ${pick(WITHS)}`;
    if (aggregate && groups.length) {
      const k = r();
      if (k < 0.15) q += ` GROUP BY ROLLUP(${groups.join(', ')})`;
      else if (k < 0.25) q += ` GROUP BY CUBE(${groups.join(', ')})`;
      else q += ` GROUP BY ${groups.join(', ')}`;
      if (chance(0.35)) q += ` HAVING ${having()}`;
    }
    if (chance(0.4)) {
      const keys = aggregate
        ? some(1, 2, () => pick([...groups.length ? groups : ['COUNT(Id)'], 'COUNT(Id)', 'SUM(Amount)', 'MAX(CreatedDate)']))
        : some(1, 3, () => pick([...FIELDS, ...PATHS, "DISTANCE(Location__c, GEOLOCATION(1, 2), 'km')"]));
      q += ` ORDER BY ${keys.map((f) => `${f}${pick(['', '', ' ASC', ' DESC', ' asc'])}${pick(['', '', ' NULLS FIRST', ' NULLS LAST'])}`).join(', ')}`;
    }
    if (chance(0.55)) q += ` LIMIT ${pick(['1', '10', '200', '2000', '50000', '0'])}`;
    if (chance(0.15)) q += ` OFFSET ${pick(['0', '5', '100', '1999', '2000', '2001', '5000'])}`;
    if (chance(0.06)) q += ` ${pick(['FOR VIEW', 'FOR REFERENCE', 'FOR UPDATE', 'UPDATE TRACKING', 'UPDATE VIEWSTAT'])}`;
    return q;
  };

  const query = () => {
    const aggregate = chance(0.25);
    let items;
    let groups = [];
    if (aggregate) {
      groups = [...new Set(some(0, 2, () => pick(chance(0.8) ? GROUP_FIELDS : DATE_FUNCS.slice(0, 3).map((f) => `${f}(CreatedDate)`))))];
      items = [...groups, ...some(1, 3, aggItem)];
      if (groups.length === 0 && chance(0.2)) items = ['COUNT()'];
    } else {
      items = [...new Set(some(1, 5, plainItem))];
    }
    let q = `SELECT ${items.join(', ')} FROM ${pick(OBJECTS)}`;
    return clausesAfterFrom(q, { aggregate, groups });
  };

  return { pick, chance, int, some, value, comparison, condition, having, childQuery, plainItem, aggItem, query, semiJoin };
}

// ---------------------------------------------------------------------------------------------
// 2. Systematic coverage
// ---------------------------------------------------------------------------------------------

function systematic() {
  const out = [];
  const base = 'SELECT Id FROM Account WHERE ';
  const valuesByClass = { STRINGS, NUMBERS, DATES, DATETIMES, TIMES, DATE_LITERALS, N_LITERALS, CURRENCY, OTHER: ['null', 'true', 'FALSE'] };
  for (const op of OPS) for (const vs of Object.values(valuesByClass)) for (const v of vs) out.push(`${base}Field__c ${op} ${v}`);
  for (const v of [...STRINGS, ...LIKE_STRINGS]) out.push(`${base}Name LIKE ${v}`);
  for (const v of [...NUMBERS, ...DATES, ...DATE_LITERALS.slice(0, 3), 'null']) out.push(`${base}Field__c LIKE ${v}`);
  for (const op of ['IN', 'NOT IN', 'INCLUDES', 'EXCLUDES']) {
    out.push(`${base}Field__c ${op} ('a')`, `${base}Field__c ${op} ('a', 'b', 'c')`, `${base}Field__c ${op} (1, 2.5, -3)`,
      `${base}Field__c ${op} (2024-01-01, TODAY, LAST_N_DAYS:3)`, `${base}Field__c ${op} (null)`, `${base}Field__c ${op} ()`,
      `${base}Field__c ${op} 'a'`, `${base}Field__c ${op} ('a',)`);
  }
  for (const op of ['IN', 'NOT IN']) out.push(`${base}Id ${op} (SELECT AccountId FROM Contact)`, `${base}Id ${op} (SELECT AccountId FROM Contact WHERE Email != null)`,
    `${base}Id ${op} (SELECT AccountId FROM Contact WHERE Email != null WITH SECURITY_ENFORCED)`);
  for (const n of N_LITERAL_NAMES) out.push(`${base}CreatedDate = ${n}:4`, `${base}CreatedDate = ${n}`, `${base}CreatedDate = ${n}:-1`);
  for (const d of DATE_LITERALS) out.push(`${base}CreatedDate = ${d}:4`);
  for (const f of DATE_FUNCS) out.push(`SELECT ${f}(CreatedDate) d, COUNT(Id) FROM Opportunity GROUP BY ${f}(CreatedDate)`, `${base}${f}(CreatedDate) = 3`);
  for (const f of AGG_FUNCS) {
    out.push(`SELECT ${f}(Amount) FROM Opportunity`, `SELECT ${f}(Amount) a FROM Opportunity`, `SELECT Type, ${f}(Amount) FROM Opportunity GROUP BY Type`,
      `SELECT ${f}() FROM Opportunity`, `SELECT ${f}(Amount, Id) FROM Opportunity`, `SELECT ${f}(Amount) FROM Opportunity GROUP BY Type HAVING ${f}(Amount) > 5`,
      `SELECT Type FROM Opportunity GROUP BY Type ORDER BY ${f}(Amount) DESC`);
  }
  for (const w of WITHS) out.push(`SELECT Id FROM KnowledgeArticleVersion WITH ${w}`, `SELECT Id FROM Account WHERE Name = 'x' WITH ${w} LIMIT 5`);
  for (const w of ["WITH RecordVisibilityContext (maxDescriptorPerRecord=100, supportsDomains=true, supportsDelegates=true)", "WITH UserId = '005000000000001'", "WITH SECURITY_ENFORCED WITH USER_MODE", "WITH DATA CATEGORY Geography__c AT usa__c WITH SECURITY_ENFORCED"])
    out.push(`SELECT Id FROM Account ${w}`);
  for (const s of SCOPES) out.push(`SELECT Id FROM Account USING SCOPE ${s}`, `SELECT Id FROM Account a USING SCOPE ${s} WHERE a.Name = 'x'`);
  for (const g of ['Type', 'Type, Industry', 'ROLLUP(Type)', 'ROLLUP(Type, Industry)', 'CUBE(Type)', 'CUBE(Type, Industry)', 'CALENDAR_YEAR(CreatedDate)', 'ROLLUP(CALENDAR_YEAR(CreatedDate))'])
    out.push(`SELECT COUNT(Id) FROM Account GROUP BY ${g}`, `SELECT COUNT(Id) FROM Account GROUP BY ${g} HAVING COUNT(Id) > 1 ORDER BY COUNT(Id) DESC LIMIT 5`);
  for (const dir of ['', ' ASC', ' DESC']) for (const nulls of ['', ' NULLS FIRST', ' NULLS LAST']) out.push(`SELECT Id FROM Account ORDER BY Name${dir}${nulls}`, `SELECT Id FROM Account ORDER BY Name${dir}${nulls}, Id${dir}`);
  for (const lim of ['0', '1', '2000', '50000', '2147483647', '2147483648', '-1', '1.5', '+1']) out.push(`SELECT Id FROM Account LIMIT ${lim}`);
  for (const off of ['0', '1', '2000', '2001', '100000', '-1', '1.5']) out.push(`SELECT Id FROM Account ORDER BY Id LIMIT 10 OFFSET ${off}`);
  for (const t of ['FOR VIEW', 'FOR REFERENCE', 'FOR UPDATE', 'FOR VIEW, REFERENCE', 'FOR VIEW FOR REFERENCE', 'UPDATE TRACKING', 'UPDATE VIEWSTAT', 'UPDATE TRACKING, VIEWSTAT', 'FOR VIEW UPDATE TRACKING', 'UPDATE', 'FOR'])
    out.push(`SELECT Id FROM Account LIMIT 1 ${t}`, `SELECT Id FROM Account ${t}`);
  for (const u of ['USING LOOKUP Foo', 'USING SCOPE mine, LOOKUP Foo', 'USING LOOKUP', 'USING SCOPE'])
    out.push(`SELECT Id FROM Account ${u}`, `SELECT Id FROM Account ${u} WHERE Name = 'x'`);
  for (const b of ["BIND n = 'x'", "BIND n = 'x', m = 2", "BIND n = 2024-01-01", "BIND n = Name", 'BIND'])
    out.push(`SELECT Id FROM Account ${b}`, `SELECT Id FROM Account LIMIT 5 OFFSET 1 ${b} FOR VIEW`, `SELECT Id FROM Account ${b} ORDER BY Id`);
  for (const t of TYPEOFS) out.push(`SELECT Id, ${t} FROM Event`, `SELECT ${t} FROM Task WHERE Subject = 'x'`, `SELECT Id, ${t} t FROM Event`);
  out.push('SELECT TYPEOF What WHEN Account THEN Phone END FROM Event', 'SELECT TYPEOF What ELSE Name END FROM Event', 'SELECT TYPEOF What WHEN Account THEN Phone FROM Event',
    'SELECT TYPEOF What WHEN Account THEN END FROM Event', 'SELECT Id, (SELECT TYPEOF What WHEN Account THEN Phone END FROM Tasks) FROM Account');
  for (const f of ['STANDARD', 'ALL', 'CUSTOM', 'standard', 'Bogus', '']) for (const lim of ['', ' LIMIT 200', ' LIMIT 201', ' LIMIT 1'])
    out.push(`SELECT FIELDS(${f}) FROM Account${lim}`);
  out.push('SELECT Name, (SELECT FIELDS(ALL) FROM Contacts LIMIT 200) FROM Account LIMIT 1', 'SELECT Name, (SELECT FIELDS(ALL) FROM Contacts) FROM Account LIMIT 10',
    'SELECT FIELDS(STANDARD), (SELECT Id FROM Contacts) FROM Account', 'SELECT FIELDS(ALL), FIELDS(CUSTOM) FROM Account LIMIT 5');
  // Child-subquery depth: 1 .. 6 nested levels below the outer query.
  for (let depth = 1; depth <= 6; depth++) {
    let inner = 'SELECT Id FROM Notes';
    for (let i = 1; i < depth; i++) inner = `SELECT Id, (${inner}) FROM Children${i}__r`;
    out.push(`SELECT Name, (${inner}) FROM Account`);
  }
  // Child-to-parent path depth.
  for (let depth = 1; depth <= 7; depth++) out.push(`SELECT ${Array.from({ length: depth }, (_, i) => `Parent${i}__r`).join('.')}.Name FROM Account`);
  // Parenthesis nesting depth.
  for (const depth of [5, 31, 32, 33, 40]) out.push(`SELECT Id FROM Account WHERE ${'('.repeat(depth)}Name = 'x'${')'.repeat(depth)}`);
  // NOT / AND / OR combinations, with and without parentheses.
  const A = "Name = 'a'", B = "Type = 'b'", C = 'Amount > 5';
  out.push(
    `${base}${A} AND ${B}`, `${base}${A} OR ${B}`, `${base}${A} AND ${B} AND ${C}`, `${base}${A} OR ${B} OR ${C}`,
    `${base}${A} AND ${B} OR ${C}`, `${base}${A} OR ${B} AND ${C}`, `${base}(${A} AND ${B}) OR ${C}`, `${base}${A} AND (${B} OR ${C})`,
    `${base}NOT ${A}`, `${base}NOT (${A})`, `${base}NOT ${A} AND ${B}`, `${base}NOT ${A} OR ${B}`, `${base}${A} AND NOT ${B}`, `${base}${A} OR NOT ${B}`,
    `${base}(NOT ${A}) AND ${B}`, `${base}${A} AND (NOT ${B})`, `${base}NOT (${A} AND ${B})`, `${base}NOT (${A} OR ${B}) AND ${C}`,
    `${base}NOT NOT ${A}`, `${base}NOT (NOT ${A})`, `${base}((${A}))`, `${base}(${A}) AND (${B}) AND (${C})`, `${base}NOT`, `${base}${A} AND`, `${base}AND ${A}`,
    `${base}${A} AND NOT (${B} OR ${C})`, `${base}(${A} OR ${B}) AND NOT ${C}`,
  );
  return out;
}

// ---------------------------------------------------------------------------------------------
// 4. Targeted mistakes (the issue's list), each on several bases
// ---------------------------------------------------------------------------------------------

function targeted() {
  return [
    // malformed functions
    'SELECT COUNT(Id, Name) FROM Account', 'SELECT SUM() FROM Opportunity', 'SELECT MAX(Amount, CloseDate) FROM Opportunity',
    'SELECT COUNT(Id FROM Account', 'SELECT COUNT Id) FROM Account', 'SELECT toLabel() FROM Lead', 'SELECT FORMAT(Amount, Id) FROM Opportunity',
    'SELECT CALENDAR_YEAR() FROM Opportunity', 'SELECT COUNT(*) FROM Account', 'SELECT COUNT(DISTINCT Name) FROM Account',
    "SELECT COUNT('x') FROM Account", 'SELECT SUM(5) FROM Opportunity', 'SELECT MAX(COUNT(Id)) FROM Account', 'SELECT FORMAT(MIN(MAX(Amount))) FROM Opportunity',
    // HAVING without GROUP BY
    'SELECT COUNT(Id) FROM Account HAVING COUNT(Id) > 1', "SELECT Name FROM Account WHERE Name = 'x' HAVING COUNT(Id) > 1",
    'SELECT Type, COUNT(Id) FROM Account HAVING COUNT(Id) > 1 GROUP BY Type', 'SELECT Type FROM Account GROUP BY Type HAVING',
    // ORDER BY / LIMIT / OFFSET inside a semi-join
    'SELECT Id FROM Account WHERE Id IN (SELECT AccountId FROM Contact ORDER BY Name)', 'SELECT Id FROM Account WHERE Id IN (SELECT AccountId FROM Contact LIMIT 5)',
    'SELECT Id FROM Account WHERE Id NOT IN (SELECT AccountId FROM Contact WHERE Name = \'x\' ORDER BY Name LIMIT 1)', 'SELECT Id FROM Account WHERE Id IN (SELECT AccountId FROM Contact OFFSET 5)',
    'SELECT Id FROM Account WHERE Id IN (SELECT AccountId FROM Contact GROUP BY AccountId)', 'SELECT Id FROM Account WHERE Id IN (SELECT AccountId, Id FROM Contact)',
    'SELECT Id FROM Account WHERE Id IN (SELECT COUNT() FROM Contact)', 'SELECT Id FROM Account WHERE Id IN (SELECT AccountId FROM Contact FOR VIEW)',
    // COUNT() beside fields or aliased
    'SELECT COUNT(), Name FROM Account', 'SELECT Name, COUNT() FROM Account', 'SELECT COUNT() total FROM Account', 'SELECT COUNT() FROM Account GROUP BY Name',
    'SELECT COUNT(), COUNT() FROM Account', 'SELECT Id, (SELECT COUNT() FROM Contacts) FROM Account', 'SELECT count ( ) FROM Account',
    // FORMULA() / FIELDS() in wrong clauses
    "SELECT Id FROM Account WHERE FORMULA(Name) = 'x'", 'SELECT FORMULA(Name) FROM Account', 'SELECT Id FROM Account ORDER BY FIELDS(ALL)',
    "SELECT Id FROM Account WHERE FIELDS(STANDARD) = 'x'", 'SELECT Id FROM Account GROUP BY FIELDS(ALL)', 'SELECT COUNT(FIELDS(ALL)) FROM Account',
    'SELECT Id FROM Account WHERE Id IN (SELECT FIELDS(ALL) FROM Contact)', 'SELECT FIELDS(ALL) x FROM Account LIMIT 1',
    // N-literal without :n, and :n on literals without N
    'SELECT Id FROM Account WHERE CreatedDate = LAST_N_DAYS', 'SELECT Id FROM Account WHERE CreatedDate > N_DAYS_AGO AND Name = \'x\'',
    'SELECT Id FROM Account WHERE CreatedDate = TODAY:5', 'SELECT Id FROM Account WHERE CreatedDate = LAST_N_DAYS:', 'SELECT Id FROM Account WHERE CreatedDate = LAST_N_DAYS:x',
    'SELECT Id FROM Account WHERE CreatedDate = LAST_N_DAYS:1.5', 'SELECT Id FROM Account WHERE CreatedDate = LAST_N_DAYS::5', 'SELECT Id FROM Account WHERE CreatedDate IN (LAST_N_DAYS)',
    'SELECT Id FROM Account WHERE CreatedDate = LAST_N_BOGUS:5', 'SELECT Id FROM Account WHERE CreatedDate = LAST_5_DAYS',
    // ROLLUP / CUBE mixed with plain fields
    'SELECT Type, Industry, COUNT(Id) FROM Account GROUP BY ROLLUP(Type), Industry', 'SELECT Type, Industry, COUNT(Id) FROM Account GROUP BY Type, CUBE(Industry)',
    'SELECT Type, COUNT(Id) FROM Account GROUP BY ROLLUP(Type), CUBE(Industry)', 'SELECT Type FROM Account GROUP BY ROLLUP()', 'SELECT Type FROM Account GROUP BY ROLLUP Type',
    // alias on a semi-join field
    'SELECT Id FROM Account WHERE Id IN (SELECT AccountId a FROM Contact)', 'SELECT Id FROM Account WHERE Id IN (SELECT AccountId AS a FROM Contact)',
    // raw line break inside a string
    "SELECT Id FROM Account WHERE Name = 'line\nbreak'", "SELECT Id FROM Account WHERE Name = 'cr\rbreak'", "SELECT Id FROM Account WHERE Name LIKE 'a\n%'", "SELECT Id FROM Account WHERE Name = 'tab\there'",
    "SELECT Id, DISTANCE(Loc__c, GEOLOCATION(1, 2), 'm\ni') FROM Account",
    // NOT mixed with AND/OR without parens
    "SELECT Id FROM Account WHERE NOT Name = 'a' AND Type = 'b'", "SELECT Id FROM Account WHERE NOT Name = 'a' OR Type = 'b'",
    "SELECT Id FROM Account WHERE Name = 'a' AND NOT Type = 'b'", "SELECT Id FROM Account WHERE Name = 'a' OR NOT Type = 'b' OR Amount > 1",
    // escapes \% \_ outside LIKE
    "SELECT Id FROM Account WHERE Name = 'a\\%b'", "SELECT Id FROM Account WHERE Name = 'a\\_b'", "SELECT Id FROM Account WHERE Name IN ('a\\%')",
    "SELECT Id FROM Account WHERE Name LIKE 'a\\%b'", "SELECT Id FROM Account WHERE Name LIKE 'a\\_b'", "SELECT Id FROM Account WHERE Name != 'a\\_'",
    // other escapes
    "SELECT Id FROM Account WHERE Name = 'a\\fb'", "SELECT Id FROM Account WHERE Name = 'a\\qb'", "SELECT Id FROM Account WHERE Name = 'a\\u12'",
    "SELECT Id FROM Account WHERE Name = 'a\\uGGGG'", "SELECT Id FROM Account WHERE Name = 'a\\uFFFF'", "SELECT Id FROM Account WHERE Name = 'a\\'", "SELECT Id FROM Account WHERE Name = 'a\\\\'",
    "SELECT Id FROM Account WHERE Name = 'a\\0'", "SELECT Id FROM Account WHERE Name = 'a\\U0041'", "SELECT Id FROM Account WHERE Name = 'a\\\"'",
    // SQL habits
    'SELECT * FROM Account', 'SELECT DISTINCT Name FROM Account', 'SELECT TOP 5 Name FROM Account', 'SELECT Name FROM Account JOIN Contact ON Account.Id = Contact.AccountId',
    'SELECT Name FROM Account a INNER JOIN Contact c ON a.Id = c.AccountId', 'SELECT COUNT(Id) AS total FROM Account', 'SELECT Name AS n FROM Account', 'SELECT Id FROM Account AS a',
    'SELECT Id FROM Account WHERE Name IS NULL', 'SELECT Id FROM Account WHERE Name IS NOT NULL', 'SELECT Id FROM Account WHERE Amount BETWEEN 1 AND 5',
    'SELECT Id FROM Account UNION SELECT Id FROM Contact', "SELECT Id FROM Account WHERE Name = \"Acme\"", 'SELECT Id FROM Account;', 'SELECT Id FROM Account LIMIT 5;',
    'SELECT Id FROM Account; DELETE FROM Account', 'DELETE FROM Account', "UPDATE Account SET Name = 'x'", "INSERT INTO Account (Name) VALUES ('x')",
    'SELECT Id FROM Account -- comment', 'SELECT Id FROM Account /* c */', 'SELECT Id FROM Account // c', 'select id from account order by name desc limit 5',
    'SELECT Id FROM Account WHERE Name == \'x\'', 'SELECT Id FROM Account WHERE Amount =< 5', 'SELECT Id FROM Account WHERE Amount < = 5', 'SELECT Id FROM Account WHERE Amount > = 5',
    'SELECT Id FROM Account WHERE Amount ! = 5', 'SELECT Id FROM Account WHERE Amount < > 5', 'SELECT Id FROM Account WHERE Id = :acctId', 'SELECT Id FROM Account WHERE Id IN :ids',
    'SELECT Id FROM Account LIMIT :n', 'SELECT Id FROM Account WHERE Name LIKE :pattern', 'SELECT Id FROM Account OFFSET :o', 'SELECT Id FROM Account WHERE Amount = 1e5',
    'SELECT Id FROM Account WHERE Amount = 1.', 'SELECT Id FROM Account WHERE Amount = --5', 'SELECT Id FROM Account WHERE Amount = - 5', 'SELECT Id FROM Account WHERE Amount = 0x1F',
    'SELECT Id FROM Account WHERE CreatedDate > 2024-1-31', 'SELECT Id FROM Account WHERE CreatedDate > 2024-01-31T09:00Z', 'SELECT Id FROM Account WHERE CreatedDate > 2024-01-31T09:00:00',
    'SELECT Id FROM Account WHERE CreatedDate > 2024-01-31 09:00:00Z', "SELECT Id FROM Account WHERE CreatedDate > '2024-01-31'", 'SELECT Id FROM Account WHERE CreatedDate > 2024-01-31T09:00:00+05',
    'SELECT Id FROM Account WHERE CreatedDate > 2024-13-45', 'SELECT Id FROM Account WHERE CreatedDate > 2024-01-31T25:61:61Z',
    'SELECT Id FROM Account WHERE Amount > USD', 'SELECT Id FROM Account WHERE Amount > US5', 'SELECT Id FROM Account WHERE Amount > USD-5', 'SELECT Id FROM Account WHERE Amount > USD5.5.5',
    'SELECT Id FROM Account WHERE Field__c = Other__c', 'SELECT Id FROM Account WHERE Amount + Other__c > 5', 'SELECT Id FROM Account WHERE 5 = Amount', "SELECT Id FROM Account WHERE 'x' = Name",
    // clause order and duplicates
    'SELECT Id FROM Account LIMIT 5 WHERE Name = \'x\'', 'SELECT Id FROM Account ORDER BY Name WHERE Name = \'x\'', 'SELECT Id FROM Account OFFSET 5 LIMIT 5',
    'SELECT Id FROM Account LIMIT 5 LIMIT 6', 'SELECT Id FROM Account WHERE Name = \'x\' WHERE Type = \'y\'', 'SELECT Id FROM Account GROUP BY Id ORDER BY Id HAVING COUNT(Id) > 1',
    'SELECT Id FROM Account FOR VIEW LIMIT 5', 'SELECT Id FROM Account WITH SECURITY_ENFORCED WHERE Name = \'x\'', 'SELECT Id FROM Account USING SCOPE mine USING SCOPE team',
    'SELECT Id FROM Account WHERE Name = \'x\' USING SCOPE mine', 'SELECT FROM Account', 'SELECT Id Account', 'SELECT Id FROM', 'SELECT Id, FROM Account', 'SELECT Id,, Name FROM Account',
    'SELECT Id FROM Account, Contact', 'SELECT Id FROM Account a, a.Contacts c', 'SELECT Id FROM Account ORDER BY', 'SELECT Id FROM Account GROUP BY', 'SELECT Id FROM Account LIMIT',
    'SELECT Id FROM Account WHERE', 'SELECT Id FROM Account WHERE Name', 'SELECT Id FROM Account WHERE Name =', 'SELECT Id FROM Account WHERE = 5', 'SELECT Id FROM Account WHERE (Name = \'x\'',
    'SELECT Id FROM Account WHERE Name = \'x\')', 'SELECT Id FROM Account WHERE ()', 'SELECT (Id) FROM Account', 'SELECT Id FROM (SELECT Id FROM Account)', '(SELECT Id FROM Account)',
    'SELECT Id FROM Account ORDER BY Name NULLS', 'SELECT Id FROM Account ORDER BY Name NULLS MIDDLE', 'SELECT Id FROM Account ORDER BY Name ASC DESC', 'SELECT Id FROM Account ORDER BY NULLS FIRST',
    'SELECT Id FROM Account ORDER BY Name DESC, ', 'SELECT Id FROM Account ORDER BY 1', "SELECT Id FROM Account ORDER BY 'Name'", 'SELECT Id FROM Account LIMIT 5 OFFSET',
    // aliases
    'SELECT Name n, Name n2 FROM Account', 'SELECT Id FROM Account a WHERE a.Name = \'x\'', 'SELECT a.Id FROM Account a', 'SELECT Name Owner.Name FROM Account', 'SELECT COUNT(Id) a.b FROM Account',
    'SELECT Name, (SELECT Id FROM Contacts) c FROM Account', 'SELECT Id, TYPEOF What WHEN Account THEN Name END w FROM Event', "SELECT Name 'alias' FROM Account", 'SELECT Name 5 FROM Account',
    'SELECT COUNT(Id) Is FROM Account', 'SELECT COUNT(Id) distinct FROM Account', 'SELECT COUNT(Id) top FROM Account', 'SELECT COUNT(Id) join FROM Account', 'SELECT COUNT(Id) count FROM Account',
    // deep and large
    `SELECT Id FROM Account WHERE Name IN (${Array.from({ length: 1000 }, (_, i) => `'n${i}'`).join(', ')})`,
    `SELECT ${Array.from({ length: 500 }, (_, i) => `Field${i}__c`).join(', ')} FROM Account`,
    `SELECT Id FROM Account WHERE ${Array.from({ length: 200 }, (_, i) => `Name = 'n${i}'`).join(' OR ')}`,
    'SELECT Id FROM Account WHERE Name = \'\u00e9\u00e8\' AND Description = \'\u65e5\u672c\'', 'SELECT Na\u00efme__c FROM Account', 'SELECT Id FROM Account\u00a0WHERE Name = \'x\'',
    'SELECT Id FROM Account\r\nWHERE Name = \'x\'\r\nLIMIT 5', '\n\tSELECT Id\n\tFROM Account\n', 'SELECT\tId\tFROM\tAccount', '   ', '', 'SELECT', 'select', 'SELECT Id FROM Account WHERE Name = \'unterminated',
    ...serverRules(),
  ];
}

// Rules Salesforce's server applies and the grammar does not check (issue 37), each beside the
// near miss that stays valid; exceptions.json judges them by the reference page that states them.
function serverRules() {
  const semi = (object) => `Id IN (SELECT AccountId FROM ${object})`;
  const children = (n) => Array.from({ length: n }, (_, i) => `(SELECT Id FROM Children${i + 1}__r)`).join(', ');
  const text = (n) => `'${'x'.repeat(n)}'`;
  return [
    // a semi-join with OR; NOT applied to a semi-join
    `SELECT Id FROM Account WHERE Name = 'x' OR ${semi('Contact')}`, `SELECT Id FROM Account WHERE Name = 'x' AND ${semi('Contact')}`,
    `SELECT Id FROM Account WHERE (${semi('Contact')} AND Type = 'y') OR Name = 'x'`, `SELECT Id FROM Account WHERE (Name = 'x' OR Type = 'y') AND ${semi('Contact')}`,
    `SELECT Id FROM Account WHERE NOT ${semi('Contact')}`, `SELECT Id FROM Account WHERE NOT (${semi('Contact')})`,
    'SELECT Id FROM Account WHERE Id NOT IN (SELECT AccountId FROM Contact)', `SELECT Id FROM Account WHERE (NOT Name = 'x') AND ${semi('Contact')}`,
    // more than two semi-joins in one WHERE
    `SELECT Id FROM Account WHERE ${semi('Contact')} AND ${semi('Opportunity')}`,
    `SELECT Id FROM Account WHERE ${semi('Contact')} AND ${semi('Opportunity')} AND ${semi('Case')}`,
    `SELECT Id FROM Account WHERE ${semi('Contact')} AND ${semi('Opportunity')} AND Type IN ('a', 'b')`,
    // aggregate functions and convertCurrency() in WHERE
    'SELECT AccountId FROM Opportunity WHERE SUM(Amount) > 10000 GROUP BY AccountId', 'SELECT AccountId FROM Opportunity GROUP BY AccountId HAVING SUM(Amount) > 10000',
    'SELECT Id FROM Account WHERE COUNT(Id) > 1', 'SELECT Id FROM Opportunity WHERE MAX(CloseDate) > 2024-01-01', "SELECT Id FROM Opportunity WHERE FORMAT(AVG(Amount)) = '1'",
    'SELECT Id FROM Opportunity WHERE convertCurrency(Amount) > 5000', 'SELECT Id, convertCurrency(Amount) FROM Opportunity WHERE Amount > USD5000',
    // child subqueries: 20 and 21
    `SELECT Id, ${children(20)} FROM Account`, `SELECT Id, ${children(21)} FROM Account`,
    // child-to-parent levels (also 1..7 levels in systematic())
    'SELECT Contact.Account.Owner.FirstName FROM Contact', 'SELECT Account.Owner.Manager.Manager.Name FROM Contact',
    'SELECT c.Account.Owner.Manager.Manager.Name FROM Contact c', 'SELECT Id FROM Contact WHERE Account.Owner.Manager.Manager.Manager.Name = \'x\'',
    // strings of 4,000 and 4,001 characters in WHERE
    `SELECT Id FROM Account WHERE Name = ${text(4000)}`, `SELECT Id FROM Account WHERE Name = ${text(4001)}`,
    `SELECT Id FROM Account WHERE Description LIKE ${text(4001)}`, `SELECT Id FROM Account WHERE Name IN (${text(4000)}, ${text(4000)})`,
    // functions with TYPEOF (the first two are the TYPEOF page's invalid and valid examples)
    'SELECT TYPEOF What WHEN Account THEN Id, FORMAT(LastModifiedDate) LastModifiedDate__f WHEN Opportunity THEN Id END FROM Task',
    'SELECT TYPEOF What WHEN Account THEN Id, LastModifiedDate WHEN Opportunity THEN Id END FROM Task',
    'SELECT toLabel(Status), TYPEOF What WHEN Account THEN Name END FROM Task', 'SELECT Id, toLabel(Status) FROM Task WHERE What.Type = \'Account\'',
    // the \f / \F escape (documented; the grammar refuses it)
    "SELECT Id FROM Account WHERE Name = 'page\\Fbreak'", "SELECT Id FROM Account WHERE Name LIKE 'page\\f%'",
    // FORMULA() (beta): WHERE only, two fields joined by + or -
    "SELECT Id FROM Opportunity WHERE FORMULA('Amount - ExpectedRevenue') > 100", "SELECT Id FROM Opportunity WHERE IsClosed = false AND FORMULA('CloseDate - LastActivityDate') > 30",
    "SELECT Id, FORMULA('Amount - ExpectedRevenue') FROM Opportunity", "SELECT Id FROM Opportunity WHERE FORMULA('Amount * Probability') > 100",
    "SELECT Id FROM Opportunity ORDER BY FORMULA('Amount - ExpectedRevenue')",
  ];
}

// Reserved words and keywords in each name position.
function reservedAsNames() {
  const out = [];
  for (const w of [...RESERVED, ...KEYWORDS]) {
    out.push(
      `SELECT ${w} FROM Account`,
      `SELECT Id, ${w} FROM Account`,
      `SELECT Id FROM ${w}`,
      `SELECT Id FROM Account ${w}`,
      `SELECT Name ${w} FROM Account`,
      `SELECT COUNT(Id) ${w} FROM Account`,
      `SELECT Id FROM Account WHERE ${w} = 'x'`,
      `SELECT Id FROM Account ORDER BY ${w}`,
      `SELECT Id FROM Account WHERE Name = ${w}`,
      `SELECT Id FROM Account a WHERE ${w}.Name = 'x'`,
      `SELECT Owner.${w} FROM Account`,
    );
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Mutations
// ---------------------------------------------------------------------------------------------

/** SOQL-ish tokens: strings, datetimes/dates/times, numbers, names (with dots and an N-literal's
 *  :n), two-character operators, single characters. */
export function tokenize(q) {
  const re = /'(?:[^'\\]|\\.)*'?|\d{4}-\d{2}-\d{2}(?:[Tt][\d:.]+(?:[Zz]|[+-]\d{2}:?\d{2})?)?|\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:[Zz]|[+-]\d{2}:?\d{2})|[+-]?(?:\d+\.?\d*|\.\d+)|[A-Za-z_$][\w$.]*(?:\s*:\s*\d+)?|<=|>=|!=|<>|\S/gsu;
  return q.match(re) || [];
}

const INSERTS = ['AND', 'OR', 'NOT', ',', '(', ')', 'FROM', 'WHERE', 'LIMIT 5', 'GROUP BY Id', 'ORDER BY Id', 'HAVING', 'WITH', 'IN', 'AS', "'x'", '5', 'NULL', '=', 'SELECT', 'COUNT()', 'FIELDS(ALL)', 'OFFSET 10', 'FOR VIEW', 'USING SCOPE mine', ':x', '.', 'NULLS LAST', 'DESC', 'LIKE', 'TODAY', 'LAST_N_DAYS'];

function mutate(q, r, pick) {
  const tokens = tokenize(q);
  if (tokens.length < 2) return q;
  const i = Math.floor(r() * tokens.length);
  const k = r();
  if (k < 0.22) tokens.splice(i, 1); // delete
  else if (k < 0.37) tokens.splice(i, 0, tokens[i]); // duplicate
  else if (k < 0.52 && i + 1 < tokens.length) [tokens[i], tokens[i + 1]] = [tokens[i + 1], tokens[i]]; // swap
  else if (k < 0.72) tokens.splice(i, 0, pick(INSERTS)); // insert
  else if (k < 0.86) tokens[i] = pick([...RESERVED, ...KEYWORDS]); // replace by a keyword
  else if (k < 0.93) tokens[i] = pick([...OPS, 'LIKE', 'IN', 'INCLUDES', ',', '(', ')']); // replace by an operator
  else {
    // drop a span of 2..4 tokens
    tokens.splice(i, 2 + Math.floor(r() * 3));
  }
  return tokens.join(' ');
}

// ---------------------------------------------------------------------------------------------
// Case and whitespace variation (a query means the same in any case and spacing)
// ---------------------------------------------------------------------------------------------

function reshape(q, r, pick) {
  const tokens = tokenize(q);
  const kw = new Set(['SELECT', 'FROM', 'WHERE', 'AND', 'OR', 'NOT', 'IN', 'LIKE', 'GROUP', 'BY', 'ORDER', 'LIMIT', 'OFFSET', 'HAVING', 'WITH', 'ASC', 'DESC', 'NULLS', 'FIRST', 'LAST', 'FOR', 'VIEW', 'REFERENCE', 'USING', 'SCOPE', 'TYPEOF', 'WHEN', 'THEN', 'ELSE', 'END', 'INCLUDES', 'EXCLUDES', 'ROLLUP', 'CUBE', 'COUNT']);
  const style = pick(['lower', 'mixed', 'same']);
  const spaced = tokens.map((t) => {
    if (!kw.has(t.toUpperCase())) return t;
    if (style === 'lower') return t.toLowerCase();
    if (style === 'mixed') return t[0] + t.slice(1).toLowerCase();
    return t;
  });
  let out = '';
  for (let i = 0; i < spaced.length; i++) {
    const t = spaced[i];
    const prev = spaced[i - 1];
    const tight = prev !== undefined && (t === ',' || t === ')' || prev === '(' || t === '(' && /\w$/.test(prev));
    const sep = i === 0 ? '' : tight && r() < 0.7 ? '' : pick([' ', ' ', ' ', '  ', '\n', '\n  ', '\t', '\r\n']);
    out += sep + t;
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// The corpus
// ---------------------------------------------------------------------------------------------

export function generate({ seed = DEFAULT_SEED, variants = 2200, mutations = 1500, reshaped = 300, perTargetBases = 2 } = {}) {
  const r = prng(seed);
  const b = makeBuilder(r);
  const { pick } = b;
  const seen = new Set();
  const out = [];
  const add = (q) => {
    if (typeof q === 'string' && !seen.has(q)) {
      seen.add(q);
      out.push(q);
      return true;
    }
    return false;
  };

  docExamples().forEach(add);
  systematic().forEach(add);
  targeted().forEach(add);
  reservedAsNames().forEach(add);

  // 3. Random grammar-driven variants.
  const bases = [];
  let guard = 0;
  while (bases.length < variants && guard++ < variants * 10) {
    const q = b.query();
    if (add(q)) bases.push(q);
  }

  // The targeted mistakes grafted onto random bases: each mistake's clause on other queries.
  const grafts = [
    (q) => q.replace(/ FROM /, ' , COUNT() FROM '),
    (q) => q.replace(/^SELECT /, 'SELECT COUNT(Id, Name), '),
    (q) => `${q.split(/ (?:GROUP BY|ORDER BY|LIMIT|OFFSET|FOR|UPDATE) /)[0]} HAVING COUNT(Id) > 1`,
    (q) => q.replace(/ WHERE /, ' WHERE NOT Name = \'x\' AND '),
    (q) => q.replace(/ WHERE /, " WHERE Name = 'a\\%' AND "),
    (q) => q.replace(/ WHERE /, ' WHERE CreatedDate = LAST_N_DAYS AND '),
    (q) => q.replace(/ WHERE /, ' WHERE CreatedDate = LAST_N_DAYS : 7 AND '),
    (q) => q.replace(/ WHERE /, " WHERE Name = 'a\nb' AND "),
    (q) => q.replace(/ WHERE /, " WHERE Id IN (SELECT AccountId FROM Contact ORDER BY Id) AND "),
    (q) => q.replace(/ WHERE /, " WHERE Id IN (SELECT AccountId acc FROM Contact) AND "),
    (q) => q.replace(/ WHERE /, " WHERE FIELDS(ALL) = 'x' AND "),
    (q) => q.replace(/ FROM /, ' , FORMULA(Name) FROM '),
    (q) => q.replace(/$/, ' FOR UPDATE'),
    (q) => q.replace(/ FROM (\w+)/, ' FROM $1 AS a'),
    (q) => q.replace(/^SELECT /, 'SELECT DISTINCT '),
    (q) => q.replace(/^SELECT /, 'SELECT TOP 5 '),
    (q) => q.replace(/ WHERE /, ' WHERE Name IS NULL AND '),
    (q) => q.replace(/ WHERE /, ' WHERE Id = :bindVar AND '),
  ];
  for (const graft of grafts) {
    for (let i = 0; i < perTargetBases * 4; i++) add(graft(pick(bases)));
  }

  // Case and whitespace variants of random bases (valid stays valid).
  for (let i = 0; i < reshaped; i++) add(reshape(pick(bases), r, pick));

  // Token mutations.
  const mutationBases = [...bases, ...docExamples().filter((q) => q.length < 2000)];
  const target = out.length + mutations;
  guard = 0;
  while (out.length < target && guard++ < mutations * 20) {
    let q = pick(mutationBases);
    q = mutate(q, r, pick);
    if (r() < 0.2) q = mutate(q, r, pick);
    add(q);
  }
  return out;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const seed = process.argv[2] ? Number(process.argv[2]) : DEFAULT_SEED;
  const lines = generate({ seed }).map((q) => JSON.stringify(q));
  process.stdout.write(lines.join('\n') + '\n');
}
