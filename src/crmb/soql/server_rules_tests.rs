//! Issue 37, point 5: SOQL that Salesforce's ANTLR grammar accepts and its server refuses, and
//! the documented forms the validator used to refuse. One test per rule, each naming the SOQL
//! and SOSL Reference page it rests on, with the near misses that must stay accepted.

use super::*;

/// The refusal of `query`, which must contain `expected`.
#[track_caller]
fn refused(query: &str, expected: &str) -> SoqlError {
    match validate(query) {
        Ok(_) => panic!("accepted, expected a refusal with {expected:?}: {query}"),
        Err(error) => {
            assert!(
                error.reason.contains(expected),
                "{query}\n    reason {:?}\n    does not contain {expected:?}",
                error.reason
            );
            error
        }
    }
}

#[track_caller]
fn accepted(query: &str) {
    if let Err(error) = validate(query) {
        panic!("refused: {query}\n    {error}");
    }
}

/// Comparison Operators, Considerations for Semi-Join and Anti-Join Queries, Subquery limits:
/// "You can't use subqueries with OR."
/// https://developer.salesforce.com/docs/atlas.en-us.soql_sosl.meta/soql_sosl/sforce_api_calls_soql_select_comparisonoperators.htm
#[test]
fn a_semi_join_combined_with_or_is_refused() {
    let reason = "combined with OR: run one query per OR branch";
    let error = refused(
        "SELECT Id FROM Account WHERE Name = 'x' OR Id IN (SELECT AccountId FROM Contact)",
        reason,
    );
    assert_eq!((error.line, error.column), (1, 41));
    for query in [
        "SELECT Id FROM Account WHERE Id IN (SELECT AccountId FROM Contact) OR Name = 'x'",
        "SELECT Id FROM Account WHERE Id NOT IN (SELECT AccountId FROM Opportunity) OR Type = 'y'",
        "SELECT Id FROM Account WHERE (Id IN (SELECT AccountId FROM Contact) AND Type = 'y') OR \
         Name = 'x'",
        "SELECT Id FROM Account WHERE Type = 'y' AND (Name = 'x' OR Id IN (SELECT AccountId FROM \
         Contact))",
    ] {
        refused(query, reason);
    }
    for query in [
        "SELECT Id FROM Account WHERE Name = 'x' AND Id IN (SELECT AccountId FROM Contact)",
        "SELECT Id FROM Account WHERE (Name = 'x' OR Type = 'y') AND Id IN (SELECT AccountId \
         FROM Contact)",
        "SELECT Id FROM Account WHERE Name IN ('a', 'b') OR Type NOT IN ('c')",
        "SELECT Id FROM Account WHERE Id IN (SELECT AccountId FROM Contact WHERE Email = 'a' OR \
         Phone = 'b')",
    ] {
        accepted(query);
    }
}

/// Comparison Operators, Considerations for Semi-Join and Anti-Join Queries, Basic limits:
/// "You can't use the NOT operator as a conjunction with semi-joins and anti-joins. [...]
/// Instead of using the NOT operator, write the query in the appropriate semi-join or
/// anti-join form."
/// https://developer.salesforce.com/docs/atlas.en-us.soql_sosl.meta/soql_sosl/sforce_api_calls_soql_select_comparisonoperators.htm
#[test]
fn not_applied_to_a_semi_join_is_refused() {
    let reason = "NOT can't be applied to a semi-join or anti-join: write the other form";
    let error = refused(
        "SELECT Id FROM Account WHERE NOT Id IN (SELECT AccountId FROM Contact)",
        reason,
    );
    assert_eq!((error.line, error.column), (1, 30));
    for query in [
        "SELECT Id FROM Account WHERE NOT (Id IN (SELECT AccountId FROM Contact))",
        "SELECT Id FROM Account WHERE NOT Id NOT IN (SELECT AccountId FROM Contact)",
        "SELECT Id FROM Account WHERE Name = 'x' AND (NOT Id IN (SELECT AccountId FROM Contact))",
        "SELECT Id FROM Account WHERE NOT (Name = 'x' AND Id IN (SELECT AccountId FROM Contact))",
    ] {
        refused(query, reason);
    }
    for query in [
        "SELECT Id FROM Account WHERE Id NOT IN (SELECT AccountId FROM Contact)",
        "SELECT Id FROM Account WHERE (NOT Name = 'x') AND Id IN (SELECT AccountId FROM Contact)",
        "SELECT Id FROM Account WHERE Id IN (SELECT AccountId FROM Contact WHERE NOT Email = \
         null)",
    ] {
        accepted(query);
    }
}

/// HAVING: "The difference is that you can include aggregate functions in a HAVING clause, but
/// not in a WHERE clause."
/// https://developer.salesforce.com/docs/atlas.en-us.soql_sosl.meta/soql_sosl/sforce_api_calls_soql_select_having.htm
#[test]
fn aggregate_functions_in_where_are_refused() {
    let error = refused(
        "SELECT AccountId FROM Opportunity WHERE SUM(Amount) > 10000 GROUP BY AccountId",
        "aggregate functions such as SUM() can't be used in WHERE: filter groups with HAVING",
    );
    assert_eq!((error.line, error.column), (1, 41));
    for (query, function) in [
        ("SELECT Id FROM Account WHERE COUNT(Id) > 1", "COUNT()"),
        (
            "SELECT Id FROM Opportunity WHERE max(CloseDate) > 2024-01-01",
            "MAX()",
        ),
        (
            "SELECT Id FROM Opportunity WHERE FORMAT(AVG(Amount)) = '1'",
            "AVG()",
        ),
        (
            "SELECT Id FROM Account WHERE Id IN (SELECT AccountId FROM Opportunity WHERE \
             COUNT_DISTINCT(Name) > 1)",
            "COUNT_DISTINCT()",
        ),
        (
            "SELECT Id FROM Lead WHERE Name = 'x' AND MIN(CreatedDate) < TODAY",
            "MIN()",
        ),
    ] {
        refused(query, &format!("such as {function} can't be used in WHERE"));
    }
    for query in [
        "SELECT AccountId, SUM(Amount) FROM Opportunity GROUP BY AccountId HAVING SUM(Amount) > \
         10000",
        "SELECT Id FROM Opportunity WHERE CALENDAR_YEAR(CloseDate) = 2024 AND Amount > 10000",
        "SELECT Id FROM Opportunity WHERE toLabel(StageName) = 'Won'",
    ] {
        accepted(query);
    }
}

/// convertCurrency(), Considerations and Workarounds: "You can't use the convertCurrency()
/// function in a WHERE clause. If you do, an error is returned. Use the following syntax [...]
/// WHERE Object_name Operator ISO_CODEvalue".
/// https://developer.salesforce.com/docs/atlas.en-us.soql_sosl.meta/soql_sosl/sforce_api_calls_soql_querying_currency_fields.htm
#[test]
fn convert_currency_in_where_is_refused() {
    let reason = "convertCurrency() can't be used in WHERE: compare the field with an amount in a \
                  currency instead, e.g. WHERE Amount > USD5000";
    let error = refused(
        "SELECT Id FROM Opportunity WHERE convertCurrency(Amount) > 5000",
        reason,
    );
    assert_eq!((error.line, error.column), (1, 34));
    refused(
        "SELECT Id FROM Account WHERE Name = 'x' AND CONVERTCURRENCY(AnnualRevenue) > 1",
        reason,
    );
    accepted("SELECT Id, convertCurrency(Amount) FROM Opportunity WHERE Amount > USD5000");
    accepted("SELECT Id FROM Opportunity WHERE Amount > EUR100.50 ORDER BY Amount");
}

/// Comparison Operators, Considerations for Semi-Join and Anti-Join Queries, Basic limits:
/// "You can't use more than two IN or NOT IN statements per WHERE clause", and the note under
/// Multiple Semi-Joins or Anti-Joins: "You can use at most two subqueries in a single semi-join
/// or anti-join query."
/// https://developer.salesforce.com/docs/atlas.en-us.soql_sosl.meta/soql_sosl/sforce_api_calls_soql_select_comparisonoperators.htm
#[test]
fn more_than_two_semi_joins_in_one_where_are_refused() {
    let two = "SELECT Id FROM Account WHERE Id IN (SELECT AccountId FROM Contact) AND Id NOT IN \
               (SELECT AccountId FROM Opportunity)";
    accepted(two);
    let error = refused(
        &format!("{two} AND Id IN (SELECT AccountId FROM Case)"),
        "a WHERE clause can hold at most 2 semi-joins or anti-joins",
    );
    assert_eq!((error.line, error.column), (1, 125));
    // IN with values is no semi-join; a child subquery's WHERE is a WHERE clause of its own.
    accepted(&format!(
        "{two} AND Type IN ('a', 'b') AND Name NOT IN ('c')"
    ));
    accepted(
        "SELECT Id, (SELECT Id FROM Contacts WHERE Id IN (SELECT WhoId FROM CampaignMember) AND \
         Id NOT IN (SELECT ContactId FROM Case)) FROM Account WHERE Id IN (SELECT AccountId FROM \
         Opportunity) AND Id NOT IN (SELECT AccountId FROM Asset)",
    );
}

/// Understanding Relationship Query Limitations: "No more than 20 parent-to-child relationships
/// can be specified in a query."
/// https://developer.salesforce.com/docs/atlas.en-us.soql_sosl.meta/soql_sosl/sforce_api_calls_soql_relationships_query_limits.htm
#[test]
fn more_than_twenty_child_subqueries_are_refused() {
    let children = |n: usize| -> Vec<String> {
        (1..=n)
            .map(|i| format!("(SELECT Id FROM Children{i}__r)"))
            .collect()
    };
    let query = |items: Vec<String>| format!("SELECT Id, {} FROM Account", items.join(", "));
    accepted(&query(children(20)));
    let error = refused(
        &query(children(21)),
        "a query can name at most 20 parent-to-child relationships",
    );
    let column = query(children(20)).find(" FROM Account").unwrap() + 3;
    assert_eq!((error.line, error.column), (1, column));
    // Nested subqueries count too: 18 beside one that holds one more make 20, 19 make 21.
    let mut nested = children(18);
    nested.push("(SELECT Id, (SELECT Id FROM Notes) FROM Children19__r)".into());
    accepted(&query(nested.clone()));
    nested.insert(0, "(SELECT Id FROM Children0__r)".into());
    refused(&query(nested), "at most 20 parent-to-child relationships");
}

/// Understanding Relationship Query Limitations: "In each specified relationship, no more than
/// five levels can be specified in a child-to-parent relationship. For example,
/// Contact.Account.Owner.FirstName (three levels)."
/// https://developer.salesforce.com/docs/atlas.en-us.soql_sosl.meta/soql_sosl/sforce_api_calls_soql_relationships_query_limits.htm
#[test]
fn more_than_five_parent_levels_are_refused() {
    let reason = "levels through child-to-parent relationships and Salesforce allows at most 5";
    // The page's own example, counted as it counts: three levels.
    accepted("SELECT Contact.Account.Owner.FirstName FROM Contact");
    // Five levels, written bare, after the object's name or after its alias.
    accepted("SELECT Account.Owner.Manager.Manager.Name FROM Contact");
    accepted("SELECT Contact.Account.Owner.Manager.Manager.Name FROM Contact");
    accepted("SELECT c.Account.Owner.Manager.Manager.Name FROM Contact c");
    let error = refused(
        "SELECT Id, Account.Owner.Manager.Manager.Manager.Name FROM Contact",
        reason,
    );
    assert_eq!((error.line, error.column), (1, 12));
    assert!(
        error
            .reason
            .contains("select Account.Owner.Manager.Manager.Id instead"),
        "{}",
        error.reason
    );
    for query in [
        "SELECT Contact.Account.Owner.Manager.Manager.Manager.Name FROM Contact",
        "SELECT Id FROM Contact WHERE Account.Owner.Manager.Manager.Manager.Name = 'x'",
        "SELECT Id FROM Contact ORDER BY Account.Owner.Manager.Manager.Manager.Name",
        "SELECT toLabel(Account.Owner.Manager.Manager.Manager.Status__c) FROM Contact",
        "SELECT Name, (SELECT A.B.C.D.E.F.Name FROM Contacts) FROM Account",
    ] {
        refused(query, reason);
    }
}

/// WHERE: "Strings in WHERE clauses can't exceed 4,000 characters. This limit doesn't apply to
/// SOQL queries in Apex if the WHERE clause includes the IN operator" (this tool sends REST
/// queries, not Apex).
/// https://developer.salesforce.com/docs/atlas.en-us.soql_sosl.meta/soql_sosl/sforce_api_calls_soql_select_conditionexpression.htm
#[test]
fn strings_over_four_thousand_characters_in_where_are_refused() {
    let reason = "is 4001 characters long and Salesforce allows at most 4,000 in a WHERE clause";
    let at_limit = "x".repeat(4_000);
    let over = "x".repeat(4_001);
    accepted(&format!("SELECT Id FROM Account WHERE Name = '{at_limit}'"));
    let error = refused(
        &format!("SELECT Id FROM Account WHERE Name = '{over}'"),
        reason,
    );
    assert_eq!((error.line, error.column), (1, 37));
    for query in [
        format!("SELECT Id FROM Account WHERE Description LIKE '{over}'"),
        format!("SELECT Id FROM Account WHERE Name IN ('a', '{over}')"),
        format!(
            "SELECT Id FROM Account WHERE Id IN (SELECT AccountId FROM Contact WHERE Name = \
             '{over}')"
        ),
    ] {
        refused(&query, reason);
    }
    // An escape is one character of the value.
    let escaped = format!("{}\\n", "x".repeat(3_999));
    accepted(&format!("SELECT Id FROM Account WHERE Name = '{escaped}'"));
    // Many strings, each within the limit, are fine together.
    accepted(&format!(
        "SELECT Id FROM Account WHERE Name IN ('{at_limit}', '{at_limit}')"
    ));
}

/// TYPEOF: "TYPEOF can't be used in queries with functions in the SELECT clause. The following
/// example is not valid because the TYPEOF includes the FORMAT function." (the page's invalid
/// and valid examples are the first two queries here).
/// https://developer.salesforce.com/docs/atlas.en-us.soql_sosl.meta/soql_sosl/sforce_api_calls_soql_select_typeof.htm
#[test]
fn functions_with_typeof_are_refused() {
    let reason = "TYPEOF can't be used in a query with functions in its SELECT list";
    let error = refused(
        "SELECT TYPEOF What WHEN Account THEN Id, FORMAT(LastModifiedDate) LastModifiedDate__f \
         WHEN Opportunity THEN Id END FROM Task",
        reason,
    );
    assert_eq!((error.line, error.column), (1, 42));
    assert!(error.reason.contains("(FORMAT() here)"), "{}", error.reason);
    accepted(
        "SELECT TYPEOF What WHEN Account THEN Id, LastModifiedDate WHEN Opportunity THEN Id END \
         FROM Task",
    );
    for query in [
        "SELECT TYPEOF What WHEN Account THEN Name ELSE toLabel(Type) END FROM Event",
        "SELECT toLabel(Status), TYPEOF What WHEN Account THEN Name END FROM Task",
        "SELECT TYPEOF What WHEN Account THEN Name END, FORMAT(ActivityDate) d FROM Task",
    ] {
        refused(query, reason);
    }
    accepted("SELECT Id, toLabel(Status) FROM Task WHERE What.Type = 'Account'");
}

/// Quoted String Escape Sequences lists "\f or \F | Form feed" among the escapes SOQL defines
/// (the ANTLR grammar refuses them).
/// https://developer.salesforce.com/docs/atlas.en-us.soql_sosl.meta/soql_sosl/sforce_api_calls_soql_select_quotedstringescapes.htm
#[test]
fn the_form_feed_escape_is_accepted() {
    accepted("SELECT Id FROM Account WHERE Name = 'page\\fbreak'");
    accepted("SELECT Id FROM Account WHERE Name = 'page\\Fbreak'");
    accepted("SELECT Id FROM Account WHERE Name LIKE 'page\\f%'");
    accepted("SELECT Id FROM Account WHERE Name IN ('a\\fb', 'c')");
    refused(
        "SELECT Id FROM Account WHERE Name = 'page\\gbreak'",
        "the valid escapes are \\' \\\" \\\\ \\n \\r \\t \\b \\f \\uXXXX",
    );
}

/// FORMULA() (Beta): "Use the FORMULA() function in a WHERE clause to filter records based on
/// arithmetic operations on two field values. The FORMULA() function is not supported in the
/// SELECT clause." Syntax: WHERE FORMULA('fieldName op fieldName') comparisonOperator
/// literalValue, op + or -.
/// https://developer.salesforce.com/docs/platform/salesforce-soql-sosl/guide/sforce-api-calls-soql-select-formula.html
#[test]
fn formula_compares_two_fields_in_where_only() {
    for query in [
        "SELECT Id FROM Opportunity WHERE FORMULA('Amount - ExpectedRevenue') > 100",
        "SELECT Id FROM Opportunity WHERE formula('Amount+ExpectedRevenue') <= 5000.50",
        "SELECT Id FROM Opportunity WHERE IsClosed = false AND FORMULA('CloseDate - \
         LastActivityDate') > 30",
        "SELECT Id FROM Opportunity WHERE (NOT FORMULA('Amount - ExpectedRevenue') = 0)",
        "SELECT Id FROM Account WHERE Id IN (SELECT AccountId FROM Opportunity WHERE \
         FORMULA('Amount - ExpectedRevenue') != 0)",
    ] {
        accepted(query);
    }
    let only_in_where = "FORMULA() (beta) works only on the left of a WHERE condition";
    let error = refused(
        "SELECT Id, FORMULA('Amount - ExpectedRevenue') FROM Opportunity",
        only_in_where,
    );
    assert_eq!((error.line, error.column), (1, 12));
    for query in [
        "SELECT Id FROM Opportunity ORDER BY FORMULA('Amount - ExpectedRevenue')",
        "SELECT StageName FROM Opportunity GROUP BY StageName HAVING FORMULA('Amount - \
         ExpectedRevenue') > 1",
        "SELECT Id FROM Opportunity WHERE FORMAT(FORMULA('Amount - ExpectedRevenue')) > 1",
    ] {
        refused(query, only_in_where);
    }
    let shape = "FORMULA() takes one quoted expression of two fields joined by + or -";
    for query in [
        "SELECT Id FROM Opportunity WHERE FORMULA(Amount) > 100",
        "SELECT Id FROM Opportunity WHERE FORMULA('Amount * Probability') > 100",
        "SELECT Id FROM Opportunity WHERE FORMULA('Amount - 100') > 100",
    ] {
        refused(query, shape);
    }
    refused(
        "SELECT Id FROM Opportunity WHERE FORMULA('Amount - ExpectedRevenue') IN (1, 2)",
        "FORMULA('...') is compared with =, !=, <, <=, > or >= and one value",
    );
}
