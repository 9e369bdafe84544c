//! Tests for the SOQL validator.
//!
//! The valid queries are taken from Salesforce's SOQL and SOSL Reference (and the Apex Developer
//! Guide for the WITH modes); a few marked "composed" follow a page's syntax where the page shows
//! the syntax but no full query. Pages:
//! - SOQL SELECT Examples: developer.salesforce.com/docs/platform/salesforce-soql-sosl/guide/sforce-api-calls-soql-select-examples.html
//! - SOQL SELECT Syntax: .../guide/sforce-api-calls-soql-select.md
//! - Aggregate Functions: .../guide/sforce-api-calls-soql-select-agg-functions.html
//! - GROUP BY ROLLUP / GROUP BY CUBE / GROUPING(): .../sforce-api-calls-soql-select-groupby-rollup.html,
//!   .../sforce-api-calls-soql-select-groupby-cube.html, .../sforce-api-calls-soql-select-grouping.md
//! - Date Functions: .../guide/sforce-api-calls-soql-select-date-functions.html
//! - Date Formats and Date Literals in WHERE:
//!   developer.salesforce.com/docs/atlas.en-us.soql_sosl.meta/api/sforce_api_calls_soql_select_dateformats.htm
//! - WHERE (condition expression), Logical Operators, Comparison Operators (semi-/anti-joins):
//!   .../sforce_api_calls_soql_select_conditionexpression.htm, .../sforce-api-calls-soql-select-logicaloperators.html,
//!   .../sforce-api-calls-soql-select-comparisonoperators.html (semi-join examples as mirrored at
//!   khaidoan.wikidot.com/salesforce-developer-soql-joins)
//! - Query Multi-Select Picklists: .../sforce_api_calls_soql_querying_multiselect_picklists.htm
//! - Quoted String Escape Sequences, Reserved Characters: .../sforce_api_calls_soql_select_quotedstringescapes.htm,
//!   .../sforce_api_calls_soql_select_reservedcharacters.htm
//! - TYPEOF: .../guide/sforce-api-calls-soql-select-typeof.html; Understanding Relationship Query
//!   Limitations (TYPEOF example): .../sforce_api_calls_soql_relationships_query_limits.htm
//! - Using Relationship Queries (five levels): .../sforce_api_calls_soql_relationships_query_using.htm
//! - Alias Notation: .../sforce_api_calls_soql_alias.htm
//! - USING SCOPE, WITH, WITH DATA CATEGORY / dataCategorySelection:
//!   .../sforce-api-calls-soql-select-using-scope.md, .../sforce_api_calls_soql_select_with.htm,
//!   .../sforce-api-calls-soql-select-with-datacategory.md
//! - SELECT / FIELDS(): .../sforce-api-calls-soql-select-fields.md
//! - FORMAT(), convertCurrency(), toLabel(): .../sforce_api_calls_soql_select_format.htm,
//!   .../sforce-api-calls-soql-querying-currency-fields.md, .../sforce-api-calls-soql-select-tolabel.md
//! - Location-Based SOQL Queries: .../sforce_api_calls_soql_geolocate.htm
//! - OFFSET: .../sforce_api_calls_soql_select_offset.htm
//! - FOR VIEW and FOR REFERENCE: .../sforce-api-calls-soql-select-for-view-for-reference.html
//! - Apex: Filter SOQL Queries Using WITH SECURITY_ENFORCED (apex_classes_with_security_enforced.htm),
//!   Enforce User Mode for Database Operations (apex_classes_enforce_usermode.htm)

use super::*;

/// Queries that must be accepted.
pub(super) const VALID: &[&str] = &[
    // What Salesforce's grammar accepts and we once refused (issue 21): datetimes as Salesforce
    // itself writes them (+0000) and in lower case, numbers with a bare fraction or a plus
    // sign, space before a date literal's colon, ordinary words as aliases and object names,
    // and one WITH per filter.
    "SELECT Id FROM Account WHERE CreatedDate > 2017-04-05T10:41:42.000+0000",
    "SELECT Id FROM Account WHERE CreatedDate > 2017-04-05t10:41:42z",
    "SELECT Id FROM Opportunity WHERE Probability > .5 AND Amount > -.5 AND Amount < +5",
    "SELECT Id FROM Opportunity WHERE CloseDate = NEXT_N_DAYS :5",
    "SELECT COUNT_DISTINCT(Company) distinct FROM Lead",
    "SELECT COUNT(Id) Is FROM Account",
    "SELECT Id FROM Offset",
    "SELECT Title FROM KnowledgeArticleVersion WHERE PublishStatus = 'online' WITH DATA CATEGORY Geography__c AT usa__c WITH SECURITY_ENFORCED",
    "SELECT Id FROM Account WHERE Name LIKE 'a\\%b'",
    "SELECT Id FROM Account USING LOOKUP Foo BIND Name = 'x'",
    "SELECT Id FROM Account BIND n = 'x', m = 2",
    // Also Salesforce's grammar (issue 21, second pass): Time values, AS before an object's
    // alias, a sign apart from its number, keywords inside dotted paths, several USING
    // entries, a raw carriage return inside a string, a field named TypeOf.
    "SELECT Id FROM Event WHERE StartTime__c > 09:30:00Z AND EndTime__c < 17:00:00.000+05:30",
    "SELECT Id FROM Event WHERE StartTime__c IN (09:30:00z, 10:00:00-0800)",
    "SELECT a.Id FROM Account AS a WHERE a.Name = 'x'",
    "SELECT Id FROM Contact c, c.Account AS a WHERE a.Name = 'x'",
    "SELECT Id FROM Account WHERE Amount = - 5 OR Amount IN (+ 3, - .5)",
    "SELECT Owner.By, Update.Name FROM Account WHERE Owner.For = 'x' ORDER BY Rollup.Name",
    "SELECT Id FROM Account USING SCOPE mine, LOOKUP Foo WHERE Name = 'x'",
    "SELECT Id FROM Account WHERE Name = 'carriage\\rreturn' OR Name = 'raw\rreturn'",
    "SELECT TYPEOF FROM Account",
    "SELECT FORMAT(MIN(Amount)) m, Foo(toLabel(Bar)) FROM Opportunity GROUP BY ROLLUP(Foo(A(B)), C)",
    "SELECT Id FROM Account WHERE Id IN (SELECT AccountId FROM Contact AS c WITH UserId = '005')",
    // SOQL SELECT Examples
    "SELECT Id, Name, BillingCity FROM Account",
    "SELECT Id FROM Contact WHERE Name LIKE 'A%' AND MailingCity = 'California'",
    "SELECT Name FROM Account ORDER BY Name DESC NULLS LAST",
    "SELECT Name FROM Account WHERE Industry = 'media' LIMIT 125",
    "SELECT Name FROM Account WHERE Industry = 'media' ORDER BY BillingPostalCode ASC NULLS LAST LIMIT 125",
    "SELECT COUNT() FROM Contact",
    "SELECT LeadSource, COUNT(Name) FROM Lead GROUP BY LeadSource",
    "SELECT Name, COUNT(Id) FROM Account GROUP BY Name HAVING COUNT(Id) > 1",
    "SELECT Name, Id FROM Merchandise__c ORDER BY Name OFFSET 100",
    "SELECT Name, Id FROM Merchandise__c ORDER BY Name LIMIT 20 OFFSET 100",
    "SELECT Contact.FirstName, Contact.Account.Name FROM Contact",
    "SELECT Id, Name, Account.Name FROM Contact WHERE Account.Industry = 'media'",
    "SELECT Name, (SELECT LastName FROM Contacts) FROM Account",
    "SELECT Account.Name, (SELECT Contact.LastName FROM Account.Contacts) FROM Account",
    "SELECT Name, (SELECT LastName FROM Contacts WHERE CreatedBy.Alias = 'x') FROM Account WHERE Industry = 'media'",
    "SELECT Id, FirstName__c, Mother_of_Child__r.FirstName__c FROM Daughter__c WHERE Mother_of_Child__r.LastName__c LIKE 'C%'",
    "SELECT Name, (SELECT Name FROM Line_Items__r) FROM Merchandise__c WHERE Name LIKE 'Acme%'",
    "SELECT Id, Owner.Name FROM Task WHERE Owner.FirstName LIKE 'B%'",
    "SELECT Id, Who.FirstName, Who.LastName FROM Task WHERE Owner.FirstName LIKE 'B%'",
    "SELECT Id, What.Name FROM Event",
    "SELECT Name, (SELECT CreatedBy.Name FROM Notes) FROM Account",
    "SELECT Amount, Id, Name, (SELECT Quantity, ListPrice, PricebookEntry.UnitPrice, PricebookEntry.Name FROM OpportunityLineItems) FROM Opportunity",
    "SELECT UserId, LoginTime FROM LoginHistory",
    "SELECT UserId, COUNT(Id) FROM LoginHistory WHERE LoginTime > 2010-09-20T22:16:30.000Z AND LoginTime < 2010-09-21T22:16:30.000Z GROUP BY UserId",
    "SELECT Id, Name, IsActive, SobjectType, DeveloperName, Description FROM RecordType",
    // SOQL SELECT Syntax
    "SELECT count() FROM Contact",
    "SELECT Contact.Firstname, Contact.Account.Name FROM Contact",
    "SELECT FIELDS(STANDARD) FROM Contact",
    // Aggregate Functions
    "SELECT AVG(Amount) FROM Opportunity",
    "SELECT CampaignId, AVG(Amount) FROM Opportunity GROUP BY CampaignId",
    "SELECT COUNT() FROM Account WHERE Name LIKE 'a%'",
    "SELECT COUNT(Id) FROM Account WHERE Name LIKE 'a%'",
    "SELECT COUNT_DISTINCT(Company) FROM Lead",
    "SELECT MIN(CreatedDate), FirstName, LastName FROM Contact GROUP BY FirstName, LastName",
    "SELECT Name, MAX(BudgetedCost) FROM Campaign GROUP BY Name",
    "SELECT SUM(Amount) FROM Opportunity WHERE IsClosed = false AND Probability > 60",
    "SELECT Name n, MAX(Amount) max FROM Opportunity GROUP BY Name",
    "SELECT LeadSource FROM Lead GROUP BY LeadSource",
    "SELECT LeadSource, COUNT(Name) FROM Lead GROUP BY LeadSource HAVING COUNT(Name) > 100",
    "SELECT LeadSource, COUNT(Name) FROM Lead GROUP BY LeadSource HAVING COUNT(Name) > 100 and LeadSource > 'Phone'",
    // GROUP BY ROLLUP, GROUP BY CUBE, GROUPING()
    "SELECT LeadSource, COUNT(Name) cnt\nFROM Lead\nGROUP BY ROLLUP(LeadSource)",
    "SELECT Status, LeadSource, COUNT(Name) cnt\nFROM Lead\nGROUP BY ROLLUP(Status, LeadSource)",
    "SELECT LeadSource, Rating,\n    GROUPING(LeadSource) grpLS, GROUPING(Rating) grpRating,\n    COUNT(Name) cnt\nFROM Lead\nGROUP BY ROLLUP(LeadSource, Rating)",
    "SELECT Type, BillingCountry,\n    GROUPING(Type) grpType, GROUPING(BillingCountry) grpCty,\n    COUNT(id) accts\nFROM Account\nGROUP BY CUBE(Type, BillingCountry)\nORDER BY GROUPING(Type), GROUPING(BillingCountry)",
    // Date Functions
    "SELECT CALENDAR_YEAR(CreatedDate), SUM(Amount)\nFROM Opportunity\nGROUP BY CALENDAR_YEAR(CreatedDate)",
    "SELECT CreatedDate, Amount FROM Opportunity WHERE CALENDAR_YEAR(CreatedDate) = 2009",
    "SELECT HOUR_IN_DAY(convertTimezone(CreatedDate)), SUM(Amount) FROM Opportunity GROUP BY HOUR_IN_DAY(convertTimezone(CreatedDate))",
    // composed from the Date Functions table
    "SELECT DAY_ONLY(CreatedDate) day, COUNT(Id) n FROM Task GROUP BY DAY_ONLY(CreatedDate) ORDER BY DAY_ONLY(CreatedDate) DESC",
    "SELECT FISCAL_QUARTER(CloseDate), FISCAL_YEAR(CloseDate), SUM(Amount) FROM Opportunity GROUP BY FISCAL_QUARTER(CloseDate), FISCAL_YEAR(CloseDate)",
    "SELECT Id FROM Opportunity WHERE CALENDAR_MONTH(CloseDate) = 12 AND WEEK_IN_YEAR(CloseDate) >= 50",
    // Date Formats and Date Literals in WHERE
    "SELECT Id\nFROM Account\nWHERE CreatedDate > 2005-10-08T01:02:03Z",
    "SELECT Id FROM Account WHERE CreatedDate > 1999-01-01T23:01:01+01:00",
    "SELECT Id FROM Account WHERE CreatedDate > 1999-01-01T23:01:01-08:00",
    "SELECT Id FROM Opportunity WHERE CloseDate = 1999-01-01",
    "SELECT Id FROM Account WHERE CreatedDate = YESTERDAY",
    "SELECT Id FROM Account WHERE CreatedDate > TODAY",
    "SELECT Id FROM Opportunity WHERE CloseDate = TOMORROW",
    "SELECT Id FROM Account WHERE CreatedDate > LAST_WEEK",
    "SELECT Id FROM Account WHERE CreatedDate < THIS_WEEK",
    "SELECT Id FROM Opportunity WHERE CloseDate = NEXT_WEEK",
    "SELECT Id FROM Opportunity WHERE CloseDate > LAST_MONTH",
    "SELECT Id FROM Account WHERE CreatedDate < THIS_MONTH",
    "SELECT Id FROM Opportunity WHERE CloseDate = NEXT_MONTH",
    "SELECT Id FROM Account WHERE CreatedDate = LAST_90_DAYS",
    "SELECT Id FROM Opportunity WHERE CloseDate > NEXT_90_DAYS",
    "SELECT Id FROM Account WHERE CreatedDate = LAST_N_DAYS:365",
    "SELECT Id FROM Opportunity WHERE CloseDate > NEXT_N_DAYS:15",
    "SELECT Id FROM Opportunity WHERE CloseDate = N_DAYS_AGO:25",
    "SELECT Id FROM Opportunity WHERE CloseDate > NEXT_N_WEEKS:4",
    "SELECT Id FROM Account WHERE CreatedDate = LAST_N_WEEKS:52",
    "SELECT Id FROM Opportunity WHERE CloseDate = N_WEEKS_AGO:3",
    "SELECT Id FROM Opportunity WHERE CloseDate > NEXT_N_MONTHS:2",
    "SELECT Id FROM Account WHERE CreatedDate = LAST_N_MONTHS:12",
    "SELECT Id FROM Opportunity WHERE CloseDate = N_MONTHS_AGO:6",
    "SELECT Id FROM Account WHERE CreatedDate = THIS_QUARTER",
    "SELECT Id FROM Account WHERE CreatedDate > LAST_QUARTER",
    "SELECT Id FROM Account WHERE CreatedDate < NEXT_QUARTER",
    "SELECT Id FROM Account WHERE CreatedDate < NEXT_N_QUARTERS:2",
    "SELECT Id FROM Account WHERE CreatedDate > LAST_N_QUARTERS:2",
    "SELECT Id FROM Opportunity WHERE CloseDate = N_QUARTERS_AGO:3",
    "SELECT Id FROM Opportunity WHERE CloseDate = THIS_YEAR",
    "SELECT Id FROM Opportunity WHERE CloseDate > LAST_YEAR",
    "SELECT Id FROM Opportunity WHERE CloseDate < NEXT_YEAR",
    "SELECT Id FROM Opportunity WHERE CloseDate < NEXT_N_YEARS:5",
    "SELECT Id FROM Opportunity WHERE CloseDate > LAST_N_YEARS:5",
    "SELECT Id FROM Opportunity WHERE CloseDate = N_YEARS_AGO:2",
    "SELECT Id FROM Account WHERE CreatedDate = THIS_FISCAL_QUARTER",
    "SELECT Id FROM Account WHERE CreatedDate > LAST_FISCAL_QUARTER",
    "SELECT Id FROM Account WHERE CreatedDate < NEXT_FISCAL_QUARTER",
    "SELECT Id FROM Account WHERE CreatedDate < NEXT_N_FISCAL_QUARTERS:6",
    "SELECT Id FROM Account WHERE CreatedDate > LAST_N_FISCAL_QUARTERS:6",
    "SELECT Id FROM Opportunity WHERE CloseDate = N_FISCAL_QUARTERS_AGO:6",
    "SELECT Id FROM Opportunity WHERE CloseDate = THIS_FISCAL_YEAR",
    "SELECT Id FROM Opportunity WHERE CloseDate > LAST_FISCAL_YEAR",
    "SELECT Id FROM Opportunity WHERE CloseDate < NEXT_FISCAL_YEAR",
    "SELECT Id FROM Opportunity WHERE CloseDate < NEXT_N_FISCAL_YEARS:3",
    "SELECT Id FROM Opportunity WHERE CloseDate > LAST_N_FISCAL_YEARS:3",
    "SELECT Id FROM Opportunity WHERE CloseDate = N_FISCAL_YEARS_AGO:3",
    // WHERE and Logical Operators
    "SELECT Name FROM Account WHERE Name LIKE 'A%'",
    "SELECT Id FROM Contact WHERE Name LIKE 'A%' AND MailingState='California'",
    "SELECT Name FROM Account WHERE CreatedDate > 2011-04-26T10:00:00-08:00",
    "SELECT Amount FROM Opportunity WHERE CALENDAR_YEAR(CreatedDate) = 2011",
    "SELECT Id FROM Contact WHERE LastName = 'Young' or Account.Name = 'Quarry'",
    "SELECT Name FROM Account WHERE AnnualRevenue > 0 AND (NOT Type = 'Prospect')",
    // Comparison Operators, semi-joins and anti-joins
    "SELECT AccountId, FirstName, lastname FROM Contact WHERE lastname LIKE 'appl_%'",
    "SELECT Name FROM Account WHERE BillingState IN ('California', 'New York')",
    "SELECT Name FROM Account WHERE BillingState NOT IN ('California', 'New York')",
    "SELECT Id, Name FROM Account WHERE Id IN (SELECT AccountId FROM Opportunity WHERE StageName = 'Closed Lost')",
    "SELECT Id FROM Task WHERE WhoId IN (SELECT Id FROM Contact WHERE MailingCity = 'Twin Falls')",
    "SELECT Id FROM Account WHERE Id NOT IN (SELECT AccountId FROM Opportunity WHERE IsClosed = false)",
    "SELECT Id FROM Opportunity WHERE AccountId NOT IN (SELECT AccountId FROM Contact WHERE LeadSource = 'Web')",
    "SELECT Id, Name FROM Account WHERE Id IN (SELECT AccountId FROM Contact WHERE LastName LIKE 'apple%') AND Id IN (SELECT AccountId FROM Opportunity WHERE isClosed = false)",
    "SELECT Id, (SELECT Id FROM OpportunityLineItems) FROM Opportunity WHERE Id IN (SELECT OpportunityId FROM OpportunityLineItem WHERE totalPrice > 10000)",
    "SELECT Id FROM Idea WHERE (Id IN (SELECT ParentId FROM Vote WHERE CreatedDate > LAST_WEEK AND Parent.Type='Idea'))",
    "SELECT Id FROM Idea WHERE (Idea.Title LIKE 'Vacation%') AND (Idea.LastCommentDate > YESTERDAY) AND (Id IN (SELECT ParentId FROM Vote WHERE CreatedById = '005x0000000sMgYAAU' AND Parent.Type='Idea'))",
    "SELECT Id FROM Account WHERE Name != 'Acme' AND Name <> 'Globex' AND NumberOfEmployees <= 500 AND NumberOfEmployees >= 5",
    // Query Multi-Select Picklists
    "SELECT Id, MSP1__c FROM CustObj__c WHERE MSP1__c = 'AAA;BBB'",
    "SELECT Id, MSP1__c from CustObj__c WHERE MSP1__c includes ('AAA;BBB','CCC')",
    "SELECT Id, MSP1__c FROM CustObj__c WHERE MSP1__c EXCLUDES ('AAA')",
    // Quoted String Escape Sequences and Reserved Characters
    "SELECT Id FROM Account WHERE Name LIKE 'Ter%'",
    "SELECT Id FROM Account WHERE Name LIKE 'Ter\\%'",
    "SELECT Id FROM Account WHERE Name LIKE 'Ter\\%%'",
    "SELECT Id\nFROM Account\nWHERE Name = 'Bob\\'s BBQ'",
    "SELECT Id FROM Account WHERE Name = 'a\\\\b\\n\\r\\t\\b\\\"\\N\\R\\T\\B \\u00e9' AND Site LIKE '100\\_\\%'",
    // TYPEOF
    "SELECT TYPEOF What WHEN Account THEN Phone, NumberOfEmployees WHEN Opportunity THEN Amount, CloseDate ELSE Name, Email END FROM Event",
    "SELECT \n  TYPEOF What\n    WHEN Account THEN Phone, NumberOfEmployees\n    WHEN Opportunity THEN Amount, CloseDate\n    ELSE Name, Email\n  END\nFROM Event WHERE ID='00Ux0000000abcd'",
    "SELECT TYPEOF What WHEN Account THEN Phone WHEN Opportunity THEN Amount END FROM Event",
    "SELECT Description FROM Event WHERE What.Type IN ('Account', 'Opportunity')",
    "SELECT Id, TYPEOF Owner WHEN User THEN UserType END, CreatedBy.UserType FROM Lead",
    // Using Relationship Queries: five levels of parent-to-child relationships
    "SELECT Name,\n  (SELECT LastName,\n    (SELECT AssetLevel,\n      (SELECT Description,\n        (SELECT LineItemNumber FROM WorkOrderLineItems)\n      FROM WorkOrders)\n    FROM Assets)\n  FROM Contacts)\nFROM Account",
    // Alias Notation
    "SELECT count()\nFROM Contact c, c.Account a\nWHERE a.name = 'MyriadPubs'",
    // USING SCOPE (composed from the syntax and the scope table)
    "SELECT Id, Name FROM Account USING SCOPE mine",
    "SELECT Id FROM Task USING SCOPE delegated WHERE IsClosed = false",
    "SELECT Id FROM Opportunity USING SCOPE everything ORDER BY CloseDate",
    // WITH, WITH DATA CATEGORY
    "SELECT Title FROM KnowledgeArticleVersion WHERE PublishStatus='online' WITH DATA CATEGORY Geography__c ABOVE usa__c",
    "SELECT Id FROM UserProfileFeed WITH UserId='005D0000001AamR' ORDER BY CreatedDate DESC, Id DESC LIMIT 20",
    "SELECT Title FROM Question WHERE LastReplyDate > 2005-10-08T01:02:03Z WITH DATA CATEGORY Geography__c AT (usa__c, uk__c)",
    "SELECT UrlName FROM KnowledgeArticleVersion WHERE PublishStatus='draft' WITH DATA CATEGORY Geography__c AT usa__c AND Product__c ABOVE_OR_BELOW mobile_phones__c",
    "SELECT Title FROM Question WHERE LastReplyDate < 2005-10-08T01:02:03Z WITH DATA CATEGORY Product__c AT mobile_phones__c",
    "SELECT Title, Summary FROM KnowledgeArticleVersion WHERE PublishStatus='Online' AND Language = 'en_US' WITH DATA CATEGORY Geography__c ABOVE_OR_BELOW europe__c AND Product__c BELOW All__c",
    "SELECT Id, Title FROM Offer__kav WHERE PublishStatus='Draft' AND Language = 'en_US' WITH DATA CATEGORY Geography__c AT (france__c,usa__c) AND Product__c ABOVE dsl__c",
    // Apex: WITH SECURITY_ENFORCED, WITH USER_MODE / SYSTEM_MODE
    "SELECT Id, (SELECT LastName FROM Contacts), (SELECT Description FROM Opportunities) FROM Account WITH SECURITY_ENFORCED",
    "SELECT Id, parent.Name, parent.Website FROM Account WITH SECURITY_ENFORCED",
    "SELECT Id, (SELECT LastName FROM Contacts) FROM Account WHERE Name like 'Acme' WITH SECURITY_ENFORCED",
    "SELECT Id FROM Account WITH USER_MODE",
    "SELECT Id FROM Account WITH SYSTEM_MODE",
    // FIELDS()
    "SELECT FIELDS(ALL) FROM Account LIMIT 200",
    "SELECT FIELDS(CUSTOM) FROM Account LIMIT 200",
    "SELECT Name, Id, FIELDS(CUSTOM) FROM Account LIMIT 200",
    "SELECT someCustomField__c, FIELDS(STANDARD) FROM Account",
    "SELECT Account.Name, (SELECT FIELDS(ALL) FROM Account.Contacts LIMIT 200) FROM Account",
    // FORMAT(), convertCurrency(), toLabel()
    "SELECT FORMAT(lastModifiedDate) FROM Opportunity",
    "SELECT Id, LastModifiedDate, FORMAT(LastModifiedDate) formattedDate FROM Account",
    "SELECT amount, FORMAT(amount) Amt, convertCurrency(amount) editDate, FORMAT(convertCurrency(amount)) convertedCurrency FROM Opportunity where id = '12345'",
    "SELECT FORMAT(MIN(closedate)) Amt FROM opportunity",
    "SELECT Id, convertCurrency(AnnualRevenue)\nFROM Account",
    "SELECT Id, Name FROM Opportunity WHERE Amount > USD5000",
    "SELECT Id FROM Opportunity WHERE Amount >= EUR100.50 AND Amount < JPY7000",
    "SELECT Company, toLabel(Recordtype.Name) FROM Lead",
    "SELECT Company, Status, toLabel(Status) translatedStatus FROM Lead",
    "SELECT Company, toLabel(Status)\nFROM Lead\nWHERE toLabel(Status) = 'le Draft'",
    // Location-Based SOQL Queries
    "SELECT Name, Location__latitude__s, Location__longitude__s\nFROM Warehouse__c",
    "SELECT Name, Location__c\nFROM Warehouse__c",
    "SELECT Name, StreetAddress__c\nFROM Warehouse__c\nWHERE DISTANCE(Location__c, GEOLOCATION(37.775,-122.418), 'mi') < 20\nORDER BY DISTANCE(Location__c, GEOLOCATION(37.775,-122.418), 'mi')\nLIMIT 10",
    "SELECT Id, Name, BillingAddress\nFROM Account\nWHERE DISTANCE(BillingAddress, GEOLOCATION(37.775,-122.418), 'km') < 20",
    // OFFSET
    "SELECT Name\nFROM Merchandise__c\nWHERE Price__c > 5.0\nORDER BY Name\nLIMIT 100\nOFFSET 10",
    "SELECT Name, Id,\n    (\n        SELECT Name FROM Opportunities LIMIT 10 OFFSET 2\n    )\nFROM Account\nORDER BY Name\nLIMIT 1",
    "SELECT Id FROM Account ORDER BY Id LIMIT 10 OFFSET 2000",
    // FOR VIEW and FOR REFERENCE
    "SELECT Name, ID FROM Contact  LIMIT 1 FOR VIEW",
    "SELECT Name, ID FROM Contact LIMIT 1 FOR REFERENCE",
    // Forms the brief lists that the pages show only in prose (composed)
    "select id, name from account where name = 'acme' order by name asc nulls first limit 5",
    "SeLeCt Id FrOm Account WhErE IsDeleted = TRUE Or Name = NULL",
    "SELECT\tId,\tName\r\nFROM\tAccount\r\nWHERE\tAmount__c > -100.5\r\n",
    "SELECT Id FROM Account WHERE CreatedDate >= 2026-11-20T00:00:00.000+05:30 AND LastActivityDate = 2026-11-20",
    "SELECT Id FROM Opportunity WHERE (StageName = 'Won' OR StageName = 'Closed') AND (Amount > 1000 OR Probability > 50)",
    "SELECT Id FROM Opportunity WHERE NOT (StageName IN ('Won', 'Lost') OR Amount = null)",
    "SELECT Name, (SELECT Id FROM Contacts ORDER BY LastName LIMIT 3) FROM Account WHERE Id IN (SELECT AccountId FROM Opportunity WHERE Amount > USD5000) LIMIT 10 FOR VIEW",
    "SELECT ns__Field__c, ns__Rel__r.Name FROM ns__X__c WHERE ns__Field__c != null",
    "SELECT Id FROM Order WHERE Status = 'Draft'",
    "SELECT Id, Name FROM Group WHERE Type = 'Queue'",
    "SELECT Id FROM Account WHERE Name LIKE 'O\\'Brien%' ORDER BY CreatedDate DESC NULLS FIRST, Name ASC",
    "SELECT Id FROM Account LIMIT 0",
];

/// Queries that must be refused, with a part of the reason that says what to change.
const INVALID: &[(&str, &str)] = &[
    // What Salesforce's grammar refuses and we once took (issue 21, second pass).
    (
        "SELECT Id FROM Event WHERE StartTime__c = 09:30:00",
        "malformed time",
    ),
    (
        "SELECT Id FROM Event WHERE StartTime__c = 24:00:00Z",
        "malformed time",
    ),
    (
        "SELECT Id FROM Account WHERE CreatedDate = LAST_5_DAYS",
        "LAST_5_DAYS is not a SOQL date literal",
    ),
    (
        "SELECT Id FROM Account WHERE CreatedDate = LAST_N_HOURS:5",
        "LAST_N_HOURS is not a SOQL date literal",
    ),
    (
        "SELECT Id FROM Account WHERE Name = 'a\\uFFFF'",
        "\\uFFFF is not a character",
    ),
    (
        "SELECT Name, TRUE() FROM Account",
        "TRUE is a SOQL keyword, not a function",
    ),
    (
        "SELECT ASC(Status) FROM Case",
        "ASC is a SOQL keyword, not a function",
    ),
    (
        "SELECT convertCurrency(HAVING(Amount)) FROM Opportunity",
        "HAVING is a SOQL keyword",
    ),
    (
        "SELECT FORMAT(MIN(MAX(Amount))) FROM Opportunity",
        "functions nest at most two deep",
    ),
    (
        "SELECT Foo(Bar, Baz) FROM Account",
        "takes exactly one field",
    ),
    ("SELECT Foo('x') FROM Account", "takes a field, not a value"),
    ("SELECT Id FROM Account WHERE Foo() = 1", "needs one field"),
    (
        "SELECT ROLLUP(Name) FROM Account",
        "only works as the whole GROUP BY",
    ),
    (
        "SELECT GEOLOCATION(1, 2) FROM Account",
        "only works as DISTANCE's second argument",
    ),
    (
        "SELECT Id FROM Account WHERE DISTANCE(Loc__c, GEOLOCATION(BELOW, 2), 'mi') < 5",
        "GEOLOCATION takes two numbers",
    ),
    (
        "SELECT Id FROM Account WHERE DISTANCE(Loc__c, Other__c, 'mi') < 5",
        "DISTANCE takes a location field",
    ),
    (
        "SELECT COUNT(Id) FROM Account GROUP BY DISTANCE(Loc__c, GEOLOCATION(1, 2), 'mi')",
        "DISTANCE() works only on its own",
    ),
    (
        "SELECT Id FROM Account USING SCOPE NULLS",
        "USING SCOPE needs a scope name",
    ),
    (
        "SELECT Id FROM Account USING SCOPE offset",
        "USING SCOPE needs a scope name",
    ),
    (
        "SELECT Id FROM Account WHERE Id IN (SELECT AccountId FROM Contact OFFSET 5)",
        "takes only WHERE and one WITH filter, not OFFSET",
    ),
    (
        "SELECT Id FROM Account WHERE Id IN (SELECT AccountId FROM Contact GROUP BY AccountId)",
        "not GROUP",
    ),
    (
        "SELECT Id FROM Account WHERE Id IN (SELECT AccountId FROM Contact WHERE Email != null WITH SECURITY_ENFORCED)",
        "put WITH SECURITY_ENFORCED, USER_MODE or SYSTEM_MODE on the outer query",
    ),
    ("SELECT Id FROM Account AS AS", "aliases don't use AS"),
    (
        "SELECT Id FROM Account WHERE Name = 'line\nbreak'",
        "cannot span lines",
    ),
    ("SELECT Id FROM Account FOR VIEW, REFERENCE", "keep one"),
    (
        "SELECT Id FROM Account WHERE Name = 'a\\qb'",
        "invalid escape sequence \\q",
    ),
    (
        "SELECT Id FROM Account WHERE NOT NOT Name = 'a'",
        "NOT NOT is not SOQL",
    ),
    (
        "SELECT COUNT('x') FROM Account",
        "takes a field, not a value",
    ),
    ("SELECT Id, AS FROM Account", "aliases don't use AS"),
    ("SELECT Id FROM Update", "UPDATE is a reserved word"),
    (
        "SELECT Name, COUNT(Id) FROM Account GROUP BY Name HAVING COUNT() > 1",
        "COUNT() only works alone",
    ),
    // What Salesforce's grammar refuses and we once let through (issue 21), each refusal
    // saying what to write instead.
    (
        "SELECT Id FROM Account WHERE Name = 'A' AND NOT Industry = 'B'",
        "A AND (NOT B)",
    ),
    (
        "SELECT Id FROM Account WHERE NOT Name = 'A' OR Industry = 'B'",
        "(NOT A) OR B",
    ),
    ("SELECT Id, Limit FROM Account", "LIMIT is a reserved word"),
    (
        "SELECT Id FROM Account WHERE Name = 'a\\%b'",
        "LIKE patterns only",
    ),
    (
        "SELECT COUNT(Id, Name) FROM Account",
        "COUNT() takes exactly one field",
    ),
    ("SELECT SUM() FROM Opportunity", "SUM() needs one field"),
    (
        "SELECT COUNT(Id) FROM Account HAVING COUNT(Id) > 1",
        "needs a GROUP BY",
    ),
    (
        "SELECT Id FROM Account WHERE Id IN (SELECT AccountId FROM Contact ORDER BY Name)",
        "not ORDER BY: remove it from the subquery",
    ),
    (
        "SELECT Id FROM Account WHERE Id IN (SELECT AccountId FROM Contact LIMIT 5)",
        "not LIMIT: remove it from the subquery",
    ),
    ("SELECT COUNT(), Name FROM Account", "must be alone"),
    ("SELECT Name, COUNT() FROM Account", "must be alone"),
    (
        "SELECT COUNT() total FROM Account",
        "COUNT() takes no alias",
    ),
    (
        "SELECT Id FROM Account ORDER BY FIELDS(ALL)",
        "only works in the SELECT list",
    ),
    (
        "SELECT Id FROM Account WHERE CreatedDate = LAST_N_DAYS",
        "LAST_N_DAYS:30",
    ),
    (
        "SELECT Type, Industry, COUNT(Id) FROM Account GROUP BY ROLLUP(Type), Industry",
        "can't be mixed",
    ),
    (
        "SELECT Id FROM Account WHERE Id IN (SELECT AccountId a FROM Contact)",
        "takes no alias",
    ),
    (
        "SELECT Id FROM Account WHERE Name = 'line\nbreak'",
        "cannot span lines",
    ),
    // FIELDS(ALL) and FIELDS(CUSTOM) are unbounded and need LIMIT 200 or less (SOQL and SOSL
    // Reference, "FIELDS()", Bounded and Unbounded Queries); FIELDS(STANDARD) does not.
    ("SELECT FIELDS(ALL) FROM Account", "need LIMIT 200 or less"),
    (
        "SELECT FIELDS(CUSTOM) FROM Account LIMIT 201",
        "need LIMIT 200 or less",
    ),
    (
        "SELECT Name, fields(all) FROM Account LIMIT 5000",
        "need LIMIT 200 or less",
    ),
    (
        "SELECT Name, (SELECT FIELDS(ALL) FROM Contacts) FROM Account LIMIT 10",
        "need LIMIT 200 or less",
    ),
    ("", "the query is empty"),
    ("  \n\t  ", "the query is empty"),
    (
        "INSERT INTO Account (Name) VALUES ('x')",
        "INSERT changes data",
    ),
    (
        "UPDATE Account SET Name = 'x' WHERE Id = '001'",
        "UPDATE changes data",
    ),
    (
        "delete FROM Account WHERE Id = '001'",
        "DELETE changes data",
    ),
    ("UPSERT Account", "UPSERT changes data"),
    ("MERGE Account", "MERGE changes data"),
    ("UNDELETE Account", "UNDELETE changes data"),
    ("FIND {Acme} IN ALL FIELDS RETURNING Account(Name)", "SOSL"),
    ("DESCRIBE Account", "must start with SELECT"),
    (
        "SELECT Id FROM Account; DELETE FROM Account",
        "';' is not allowed",
    ),
    ("SELECT Id FROM Account;", "';' is not allowed"),
    (
        "SELECT Id FROM Account WHERE Name = 'a' FOR UPDATE",
        "FOR UPDATE locks records",
    ),
    (
        "SELECT Id FROM Account LIMIT 1 UPDATE VIEWSTAT",
        "read-only query",
    ),
    ("SELECT * FROM Account", "SELECT * is not SOQL"),
    ("SELECT Id, * FROM Account", "SELECT * is not SOQL"),
    ("SELECT COUNT(*) FROM Account", "COUNT(*) is not SOQL"),
    (
        "SELECT Id FROM Account WHERE Name = 'Acme",
        "unterminated string",
    ),
    (
        "SELECT Id FROM Account WHERE Name = 'Ac\\qme'",
        "invalid escape sequence \\q",
    ),
    (
        "SELECT Id FROM Account WHERE Name = 'caf\\u00e'",
        "four hex digits",
    ),
    ("SELECT Id FROM Account WHERE (Name = 'a'", "never closed"),
    (
        "SELECT Id FROM Account WHERE Name = 'a')",
        "no matching '('",
    ),
    ("SELECT COUNT(Id FROM Account", "never closed"),
    ("SELECT Id, Name", "missing FROM"),
    ("SELECT Id WHERE Name = 'a'", "missing FROM before WHERE"),
    ("SELECT Id FROM", "FROM needs an object name"),
    (
        "SELECT Id FROM WHERE Name = 'x'",
        "FROM needs an object name",
    ),
    ("SELECT Id FROM ORDER BY Name", "FROM needs an object name"),
    ("SELECT FROM Account", "SELECT list is empty"),
    ("SELECT", "SELECT list is empty"),
    ("SELECT Id, FROM Account", "remove this ',' before FROM"),
    (
        "SELECT Id FROM Account LIMIT 10 garbage",
        "after the end of the query",
    ),
    (
        "SELECT Id FROM Account WHERE Name = 'a' 'b'",
        "after the end of the query",
    ),
    ("SELECT Id FROM Account OFFSET 2001", "maximum of 2000"),
    (
        "SELECT Id FROM Account LIMIT -1",
        "LIMIT takes a non-negative whole number",
    ),
    (
        "SELECT Id FROM Account LIMIT 10.5",
        "LIMIT takes a non-negative whole number",
    ),
    (
        "SELECT Id FROM Account LIMIT ten",
        "LIMIT takes a non-negative whole number",
    ),
    (
        "SELECT Id FROM Account LIMIT",
        "LIMIT takes a non-negative whole number",
    ),
    (
        "SELECT Id FROM Account LIMIT 99999999999999999999999",
        "LIMIT takes a non-negative whole number",
    ),
    (
        "SELECT Id FROM Account OFFSET '5'",
        "OFFSET takes a non-negative whole number",
    ),
    ("SELECT `Name` FROM Account", "backticks are not SOQL"),
    (
        "SELECT Id FROM Account WHERE Name = \"Acme\"",
        "single quotes",
    ),
    ("SELECT Id FROM Account -- all of them", "comments (--)"),
    ("SELECT Id /* ids */ FROM Account", "comments (/* */"),
    (
        "SELECT Id FROM Account WHERE Name = :acctName",
        "bind variables",
    ),
    (
        "SELECT Id FROM Account WHERE Name = Acme",
        "unquoted value Acme",
    ),
    (
        "SELECT Id FROM Account WHERE Name == 'Acme'",
        "'==' is not SOQL",
    ),
    ("SELECT Id FROM Account WHERE Email IS NULL", "no IS NULL"),
    (
        "SELECT Id FROM Account WHERE Amount BETWEEN 1 AND 5",
        "no BETWEEN",
    ),
    (
        "SELECT Id FROM Account WHERE A = 1 AND B = 2 OR C = 3",
        "AND and OR are mixed",
    ),
    (
        "SELECT Id FROM Account a JOIN Contact c ON c.AccountId = a.Id",
        "no JOIN",
    ),
    ("SELECT COUNT(Id) AS total FROM Account", "don't use AS"),
    ("SELECT DISTINCT Name FROM Account", "no DISTINCT"),
    (
        "SELECT Id FROM Account LIMIT 10 WHERE Name = 'a'",
        "WHERE is out of place",
    ),
    (
        "SELECT Id FROM Account ORDER BY Name WHERE Name = 'a'",
        "WHERE is out of place",
    ),
    (
        "SELECT Id FROM Account WHERE CreatedDate > 2024-13-01",
        "malformed date",
    ),
    (
        "SELECT Id FROM Account WHERE CreatedDate > 2024-01-01T25:00:00Z",
        "malformed date",
    ),
    (
        "SELECT Id FROM Account WHERE CreatedDate > 2024-01-01T10:00:00",
        "needs a time zone",
    ),
    (
        "SELECT Id FROM Account WHERE CreatedDate = LAST_N_DAYS:",
        "whole number right after the colon",
    ),
    (
        "SELECT Id FROM Account WHERE CreatedDate = TODAY:5",
        "TODAY takes no number",
    ),
    (
        "SELECT Id FROM Account WHERE Id IN ()",
        "value list is empty",
    ),
    (
        "SELECT Id FROM Account WHERE Id IN 'a'",
        "IN needs its values in parentheses",
    ),
    (
        "SELECT Id FROM Account WHERE Region__c INCLUDES 'a'",
        "INCLUDES needs its values in parentheses",
    ),
    (
        "SELECT Id FROM Account WHERE Id IN (SELECT Id, Name FROM Contact)",
        "exactly one Id",
    ),
    (
        "SELECT Id FROM Account WHERE Id IN (SELECT COUNT() FROM Contact)",
        "exactly one Id",
    ),
    (
        "SELECT Id FROM Account WHERE Id IN (SELECT AccountId FROM Contact WHERE Id IN (SELECT WhoId FROM Task))",
        "can't contain another one",
    ),
    (
        "SELECT Name, (SELECT LastName, (SELECT AssetLevel, (SELECT Description, (SELECT LineItemNumber, (SELECT Id FROM Children__r) FROM WorkOrderLineItems) FROM WorkOrders) FROM Assets) FROM Contacts) FROM Account",
        "nest at most 4 levels",
    ),
    (
        "SELECT TYPEOF What WHEN Account THEN Phone FROM Event",
        "closed with END",
    ),
    (
        "SELECT TYPEOF What ELSE Name END FROM Event",
        "WHEN after the TYPEOF field",
    ),
    (
        "SELECT Id FROM Account WHERE Name NOT LIKE 'a%'",
        "no NOT LIKE",
    ),
    (
        "SELECT Id FROM Account WHERE Amount > 10 && Amount < 20",
        "combine conditions with AND and OR",
    ),
    (
        "[SELECT Id FROM Account]",
        "square brackets are Apex syntax",
    ),
    (
        "SELECT Id FROM Account ORDER BY Name NULLS",
        "FIRST or LAST after NULLS",
    ),
    ("SELECT Id FROM Account\u{a0}WHERE Name = 'a'", "U+00A0"),
    (
        "SELECT Id FROM Account WHERE",
        "a condition such as Name = 'Acme'",
    ),
    (
        "SELECT Id FROM Account WHERE LIMIT 5",
        "a condition such as Name = 'Acme'",
    ),
    ("SELECT Id FROM Account ORDER BY", "a field to order by"),
    ("SELECT Id FROM Account USING SCOPE", "scope name"),
    (
        "SELECT Id FROM Account WITH",
        "WITH needs SECURITY_ENFORCED",
    ),
    (
        "SELECT Id FROM KnowledgeArticleVersion WITH DATA CATEGORY Geography__c NEAR usa__c",
        "AT, ABOVE, BELOW or ABOVE_OR_BELOW",
    ),
    (
        "SELECT Id FROM Account WHERE Name = ('a','b')",
        "only allowed after IN",
    ),
    (
        "SELECT Id FROM Account WHERE Amount > 5USD",
        "malformed number",
    ),
    (
        "SELECT Id FROM Account WHERE CreatedDate > DAY_ONLY(LastModifiedDate)",
        "function call can't be used as a value",
    ),
    ("SELECT Id FROM Account WHERE Name", "a comparison operator"),
    (
        "SELECT Id FROM Account WHERE Name !'a'",
        "'!' alone is not SOQL",
    ),
    (
        "SELECT Name (SELECT LastName FROM Contacts) FROM Account",
        "put a ',' before a (SELECT ...) subquery",
    ),
    ("SELECT Id, (Name) FROM Account", "starts a child subquery"),
    (
        "SELECT Id FROM (SELECT Id FROM Account)",
        "FROM needs an object name",
    ),
    (
        "SELECT Id FROM Account FOR SHARE",
        "VIEW or REFERENCE after FOR",
    ),
    (
        "SELECT Id FROM Account WHERE Name = 'a' ?",
        "placeholders are not supported",
    ),
    (
        "SELECT Id FROM Account WHERE Name = 'a' @",
        "unexpected character '@'",
    ),
    (
        "SELECT Id FROM Account WHERE Amount > 1 + 2",
        "SOQL has no arithmetic",
    ),
];

/// Refusals whose position matters: (query, line, column).
const POSITIONS: &[(&str, usize, usize)] = &[
    ("", 1, 1),
    ("SELECT Id FROM Account FOR UPDATE", 1, 24),
    ("SELECT *\nFROM Account", 1, 8),
    ("SELECT Id\nFROM Account\nWHERE Name = 'Acme", 3, 14),
    ("SELECT Id FROM Account\r\nWHERE Name = \"x\"", 2, 14),
    ("SELECT Id\rFROM Account\rWHERE Name = \"x\"", 3, 14),
    ("\tSELECT Id FROM Account LIMIT 5 OFFSET 3000", 1, 40),
    (
        "SELECT Id FROM Account WHERE Name = 'Caf\u{e9}' AND Name = Acme",
        1,
        55,
    ),
    ("SELECT Id FROM Account WHERE Name = 'x\\z'", 1, 39),
    (
        "SELECT Id FROM Account WHERE (Name = 'a'\n  AND (Amount > 5)",
        1,
        30,
    ),
    (
        "SELECT Id FROM Account WHERE A = 1\n  AND B = 2\n  OR C = 3",
        3,
        3,
    ),
    ("UPDATE Account SET Name = 'x'", 1, 1),
    ("SELECT Id, Name", 1, 16),
    ("  SELECT Id FROM Account;", 1, 25),
];

fn reason_of(query: &str) -> Option<String> {
    validate(query).err().map(|error| error.reason)
}

#[test]
fn accepts_documented_queries() {
    assert!(VALID.len() >= 100, "only {} valid queries", VALID.len());
    let failures: Vec<String> = VALID
        .iter()
        .filter_map(|query| {
            validate(query)
                .err()
                .map(|error| format!("{query:?}\n    refused: {error}"))
        })
        .collect();
    assert!(
        failures.is_empty(),
        "{} valid queries refused:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn refuses_invalid_queries_saying_why() {
    assert!(
        INVALID.len() >= 30,
        "only {} invalid queries",
        INVALID.len()
    );
    let failures: Vec<String> = INVALID
        .iter()
        .filter_map(|(query, expected)| match reason_of(query) {
            None => Some(format!(
                "{query:?}\n    was accepted; expected a refusal with {expected:?}"
            )),
            Some(reason) if !reason.contains(expected) => Some(format!(
                "{query:?}\n    reason {reason:?}\n    does not contain {expected:?}"
            )),
            Some(_) => None,
        })
        .collect();
    assert!(
        failures.is_empty(),
        "{} invalid queries mishandled:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn reports_where_the_problem_is() {
    let failures: Vec<String> = POSITIONS
        .iter()
        .filter_map(|&(query, line, column)| match validate(query) {
            Ok(_) => Some(format!("{query:?} was accepted")),
            Err(error) if (error.line, error.column) != (line, column) => Some(format!(
                "{query:?}\n    at {}:{}, expected {line}:{column} ({})",
                error.line, error.column, error.reason
            )),
            Err(_) => None,
        })
        .collect();
    assert!(
        failures.is_empty(),
        "wrong positions:\n{}",
        failures.join("\n")
    );
}

#[test]
fn error_displays_position_and_reason() {
    let error = validate("SELECT Id FROM Account FOR UPDATE").unwrap_err();
    assert_eq!(
        error.to_string(),
        "SOQL error at line 1, column 24: FOR UPDATE locks records and is not allowed in a \
         read-only query: remove it"
    );
    let boxed: Box<dyn std::error::Error> = Box::new(error);
    assert!(boxed.to_string().starts_with("SOQL error at line 1"));
}

#[test]
fn text_is_kept_exactly_as_written() {
    let text = "  select Id,\n\tName FROM Account\r\n WHERE Name = 'Bob\\'s'  ";
    assert_eq!(validate(text).unwrap().text(), text);
}

#[test]
fn reports_the_outer_object_as_written() {
    let cases = [
        ("SELECT Id FROM Opportunity", "Opportunity"),
        ("select id from opportunity", "opportunity"),
        ("SELECT Id FROM My_Obj__c WHERE Name = 'x'", "My_Obj__c"),
        ("SELECT ns__Field__c FROM ns__X__c", "ns__X__c"),
        (
            "SELECT count() FROM Contact c, c.Account a WHERE a.name = 'MyriadPubs'",
            "Contact",
        ),
        (
            "SELECT Name, (SELECT LastName FROM Contacts) FROM Account",
            "Account",
        ),
        (
            "SELECT Id FROM Account WHERE Id IN (SELECT AccountId FROM Contact)",
            "Account",
        ),
    ];
    for (query, object) in cases {
        assert_eq!(validate(query).unwrap().object(), object, "{query}");
    }
}

#[test]
fn lists_child_subqueries_and_semi_joins() {
    let query = validate(
        "SELECT Name, (SELECT LastName FROM Contacts), (SELECT Amount FROM Opportunities)\n\
         FROM Account\n\
         WHERE Id IN (SELECT AccountId FROM Contact) AND Id NOT IN (SELECT AccountId FROM Opportunity)\n\
         LIMIT 50",
    )
    .unwrap();
    assert_eq!(query.object(), "Account");
    assert_eq!(
        query.subquery_relationships(),
        ["Contacts", "Opportunities"]
    );
    assert_eq!(query.semi_join_objects(), ["Contact", "Opportunity"]);
    assert!(!query.is_aggregate());
    assert_eq!(query.has_limit(), Some(50));
}

#[test]
fn lists_dotted_and_nested_child_subqueries_in_written_order() {
    let dotted = validate(
        "SELECT Account.Name, (SELECT Contact.LastName FROM Account.Contacts) FROM Account",
    )
    .unwrap();
    assert_eq!(dotted.subquery_relationships(), ["Account.Contacts"]);

    let nested = validate(
        "SELECT Name, (SELECT LastName, (SELECT AssetLevel, (SELECT Description, (SELECT \
         LineItemNumber FROM WorkOrderLineItems) FROM WorkOrders) FROM Assets) FROM Contacts), \
         (SELECT Id FROM Cases) FROM Account",
    )
    .unwrap();
    assert_eq!(
        nested.subquery_relationships(),
        [
            "Contacts",
            "Assets",
            "WorkOrders",
            "WorkOrderLineItems",
            "Cases"
        ]
    );
    assert!(nested.semi_join_objects().is_empty());
}

#[test]
fn finds_semi_joins_inside_child_subqueries() {
    let query = validate(
        "SELECT Id, (SELECT Id FROM OpportunityLineItems WHERE PricebookEntryId IN (SELECT Id \
         FROM PricebookEntry WHERE IsActive = true)) FROM Opportunity WHERE Id IN (SELECT \
         OpportunityId FROM OpportunityLineItem WHERE totalPrice > 10000)",
    )
    .unwrap();
    assert_eq!(query.subquery_relationships(), ["OpportunityLineItems"]);
    assert_eq!(
        query.semi_join_objects(),
        ["PricebookEntry", "OpportunityLineItem"]
    );
}

#[test]
fn no_subqueries_means_empty_lists() {
    let query = validate("SELECT Id FROM Account").unwrap();
    assert!(query.subquery_relationships().is_empty());
    assert!(query.semi_join_objects().is_empty());
}

#[test]
fn detects_aggregate_queries() {
    let cases = [
        ("SELECT COUNT() FROM Contact", true),
        ("select count(id) from account", true),
        ("SELECT COUNT_DISTINCT(Company) FROM Lead", true),
        ("SELECT SUM(Amount) total FROM Opportunity", true),
        (
            "SELECT CampaignId, AVG(Amount) FROM Opportunity GROUP BY CampaignId",
            true,
        ),
        (
            "SELECT MIN(CreatedDate), MAX(CreatedDate) FROM Contact",
            true,
        ),
        ("SELECT FORMAT(MIN(closedate)) Amt FROM opportunity", true),
        ("SELECT LeadSource FROM Lead GROUP BY LeadSource", true),
        (
            "SELECT LeadSource, COUNT(Name) cnt FROM Lead GROUP BY ROLLUP(LeadSource)",
            true,
        ),
        ("SELECT Name FROM Account", false),
        ("SELECT CALENDAR_YEAR(CreatedDate) FROM Opportunity", false),
        (
            "SELECT FORMAT(Amount), toLabel(StageName) FROM Opportunity",
            false,
        ),
        (
            "SELECT Name, (SELECT COUNT() FROM Contacts) FROM Account",
            false,
        ),
        (
            "SELECT Id FROM Account WHERE Id IN (SELECT AccountId FROM Contact)",
            false,
        ),
    ];
    for (query, aggregate) in cases {
        assert_eq!(
            validate(query).unwrap().is_aggregate(),
            aggregate,
            "{query}"
        );
    }
}

#[test]
fn reports_only_the_outer_limit() {
    let cases = [
        ("SELECT Id FROM Account", None),
        ("SELECT Id FROM Account LIMIT 0", Some(0)),
        ("SELECT Id FROM Account LIMIT 200 OFFSET 10", Some(200)),
        (
            "SELECT Name, (SELECT Id FROM Contacts LIMIT 5) FROM Account",
            None,
        ),
        (
            "SELECT Name, (SELECT Id FROM Contacts LIMIT 5) FROM Account LIMIT 7 FOR VIEW",
            Some(7),
        ),
        (
            "SELECT Id, (SELECT Id FROM Contacts LIMIT 3) FROM Account",
            None,
        ),
        (
            "SELECT Id FROM Account limit 18446744073709551615",
            Some(u64::MAX),
        ),
    ];
    for (query, limit) in cases {
        assert_eq!(validate(query).unwrap().has_limit(), limit, "{query}");
    }
}

#[test]
fn enforces_the_length_limit_in_characters() {
    // Multi-byte characters: the limit counts characters, not bytes. An IN list of strings of
    // 1,000 characters, since one string over 4,000 in WHERE is refused on its own.
    let mut at_limit = "SELECT Id FROM Account WHERE Name IN (".to_owned();
    let item = format!("'{}', ", "é".repeat(1_000));
    while at_limit.chars().count() + 2 * item.chars().count() < MAX_QUERY_CHARS {
        at_limit.push_str(&item);
    }
    let fill = MAX_QUERY_CHARS - at_limit.chars().count() - 3;
    at_limit.push_str(&format!("'{}')", "é".repeat(fill)));
    assert_eq!(at_limit.chars().count(), MAX_QUERY_CHARS);
    assert!(validate(&at_limit).is_ok());

    let over = format!("{}é')", &at_limit[..at_limit.len() - 2]);
    let error = validate(&over).unwrap_err();
    assert!(
        error.reason.contains("the limit is 100000"),
        "{}",
        error.reason
    );
    assert_eq!((error.line, error.column), (1, MAX_QUERY_CHARS + 1));
}

#[test]
fn error_positions_follow_line_breaks_before_the_limit() {
    let over = format!(
        "SELECT Id\nFROM Account\nWHERE Name = '{}'",
        "x".repeat(MAX_QUERY_CHARS)
    );
    let error = validate(&over).unwrap_err();
    let third_line_start = "SELECT Id\nFROM Account\n".chars().count();
    assert_eq!(
        (error.line, error.column),
        (3, MAX_QUERY_CHARS - third_line_start + 1)
    );
}

#[test]
fn lexer_errors_before_the_statement_word_still_name_dml() {
    // The statement word is judged first, so a DML statement is refused as DML even when it
    // also contains something the lexer rejects.
    let reason = reason_of("DELETE FROM Account WHERE Name = \"x\"").unwrap();
    assert!(reason.contains("DELETE changes data"), "{reason}");
}

#[test]
fn every_sql_habit_hint_still_fires_on_the_sql_it_is_for() {
    for (query, hint) in [
        ("SELECT * FROM Account", "SELECT * is not SOQL"),
        ("SELECT DISTINCT Name FROM Account", "SOQL has no DISTINCT"),
        ("SELECT TOP 5 Name FROM Account", "SOQL has no TOP"),
        (
            "SELECT Name FROM Account JOIN Contact ON Id = AccountId",
            "SOQL has no JOIN",
        ),
        (
            "SELECT COUNT(Id) AS total FROM Account",
            "aliases don't use AS",
        ),
        ("SELECT Name AS n FROM Account", "aliases don't use AS"),
        (
            "SELECT Id FROM Account WHERE Name IS NULL",
            "SOQL has no IS NULL",
        ),
    ] {
        let reason = reason_of(query).unwrap_or_default();
        assert!(reason.contains(hint), "{query}: {reason}");
    }
}
