//! `crma_aggregate_records`: HubSpot's answer to `GROUP BY`. The records a search matches are
//! read a page at a time by the export's keyset walk (every match, past 10,000, paced under
//! the search limit) and folded into at most two keys' groups with exact counts, sums,
//! averages, minima and maxima; only the groups are kept, so memory is flat whatever the
//! number of records. Stage, pipeline, owner and option ids are named; dates are bucketed in
//! the account's time zone.
//!
//! - `decimal`: exact money arithmetic.
//! - `calendar`: day/week/month/quarter/year buckets in a time zone.
//! - `grouping`: the pure fold and the sorted answer.
//! - `labels`: property definitions and the names of stored ids.

mod calendar;
mod decimal;
mod grouping;
mod labels;

pub use calendar::Bucket;

use crate::crma::metadata::account;
use crate::crma::scopes::{self, Operation};
use crate::crma::search::export::ExportPlan;
use crate::crma::search::keyset::KeysetWalk;
use crate::crma::search::{Filter, FilterGroup};
use crate::crma::types::{ObjectType, PropertyName};
use crate::error::{Crm, CrmProblem, ToolError};
use crate::policy::ReadScope;
use crate::schema::string_schema;
use crate::tool::{CrmEffect, Session, Tool};
use calendar::Zone;
use grouping::{Dimension, Function, Labels, MAX_GROUPS, Metric, Order, Row, Tally, TallyError};
use labels::Holds;
use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::borrow::Cow;

/// Most records one call reads: what HubSpot's search pace (800 a second) gets through well
/// inside a call's time limit.
pub(crate) const MAX_RECORDS_READ: u64 = 60_000;
/// Most metrics one call computes.
const MAX_METRICS: usize = 10;

/// One property to group by.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GroupBy {
    /// Property internal name: an enumeration (dealstage, pipeline, hs_analytics_source,
    /// lifecyclestage), an owner (hubspot_owner_id), any other property's value, or a date
    /// (closedate, createdate).
    pub property: PropertyName,
    /// For date properties: day, week (ISO, from Monday), month, quarter or year, in the
    /// account's time zone. Default month. Not for other properties.
    #[serde(default)]
    pub bucket: Option<Bucket>,
}

/// A metric as the input spells it: `count`, or `sum:`, `avg:`, `min:` or `max:` and a
/// numeric property.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(try_from = "String")]
pub struct MetricSpec(Option<Metric>);

impl TryFrom<String> for MetricSpec {
    type Error = String;
    fn try_from(text: String) -> Result<Self, String> {
        let text = text.trim();
        if text == "count" {
            return Ok(MetricSpec(None));
        }
        let refuse = || {
            format!(
                "{text:?} is not a metric: write count, or sum, avg, min or max, a colon and a \
                 number property, e.g. \"sum:amount\""
            )
        };
        let (function, property) = text.split_once(':').ok_or_else(refuse)?;
        let function = match function {
            "sum" => Function::Sum,
            "avg" => Function::Avg,
            "min" => Function::Min,
            "max" => Function::Max,
            _ => return Err(refuse()),
        };
        let property = PropertyName::parse(property).map_err(|_| refuse())?;
        Ok(MetricSpec(Some(Metric {
            function,
            property,
            reads: None,
        })))
    }
}

impl JsonSchema for MetricSpec {
    fn schema_name() -> Cow<'static, str> {
        "MetricSpec".into()
    }
    fn inline_schema() -> bool {
        true
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        string_schema(
            "^(count|(sum|avg|min|max):[A-Za-z0-9_]{1,100})$",
            "count, or sum/avg/min/max of a number property, e.g. \"sum:amount\".",
        )
    }
}

/// Input of `crma_aggregate_records`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AggregateInput {
    /// The object type to aggregate.
    #[schemars(description = "")]
    pub object_type: ObjectType,
    /// Which records count: the same filters as crma_search_records (groups ORed, filters
    /// ANDed; at most 5 groups, 5 filters each, 17 in all).
    #[serde(default)]
    pub filter_groups: Vec<FilterGroup>,
    /// Free text searched in the type's default text properties.
    #[serde(default)]
    pub query: Option<String>,
    /// Up to two properties to group by; none gives only the totals.
    #[serde(default)]
    pub group_by: Vec<GroupBy>,
    /// What to compute per group besides the count, e.g. ["sum:amount", "avg:amount"].
    #[serde(default)]
    pub metrics: Vec<MetricSpec>,
    /// How to sort the groups: "count" or a metric (e.g. "sum:amount") puts the largest
    /// first; by default groups follow their keys (dates in time order, stages and options
    /// in HubSpot's order, other values by name).
    #[serde(default)]
    pub order_by: Option<String>,
}

/// What `crma_aggregate_records` answers.
#[derive(Debug, Serialize, JsonSchema)]
pub struct AggregateOutput {
    /// The object type aggregated.
    object_type: String,
    /// What each group's keys are, in order: the property, and for dates the bucket.
    group_by: Vec<String>,
    /// The zone dates were bucketed in (the account's), when a datetime was grouped by.
    #[serde(skip_serializing_if = "Option::is_none")]
    time_zone: Option<String>,
    /// The account's currency, which money sums are in, when HubSpot said.
    #[serde(skip_serializing_if = "Option::is_none")]
    currency: Option<String>,
    /// Records read and counted: every match unless complete is false.
    records_read: u64,
    /// False when the call stopped at the most records one call reads (the note says so).
    complete: bool,
    /// The groups, sorted as order_by says.
    groups: Vec<GroupOutput>,
    /// Every record counted, in one: the count and each metric.
    totals: GroupOutput,
    /// Anything the figures leave out or could not name.
    #[serde(skip_serializing_if = "Option::is_none")]
    note: Option<String>,
}

/// One group: its keys, how many records it holds and its metrics.
#[derive(Debug, Serialize, JsonSchema)]
struct GroupOutput {
    /// One per group_by entry: the value (a date bucket such as 2026-03, 2026-Q1 or
    /// 2026-W14 for dates; null for records without one) and its name when it has one.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    keys: Vec<KeyOutput>,
    /// Records in the group.
    count: u64,
    /// Metric → exact decimal text (null when no record had a value), e.g.
    /// {"sum:amount": "125000.50"}.
    #[serde(skip_serializing_if = "Map::is_empty")]
    metrics: Map<String, Value>,
}

/// One key of a group.
#[derive(Debug, Serialize, JsonSchema)]
struct KeyOutput {
    /// The stored value or date bucket; null for records without one.
    value: Option<String>,
    /// The value's name: a stage's, pipeline's, owner's or option's.
    #[serde(skip_serializing_if = "Option::is_none")]
    label: Option<String>,
}

impl From<Row> for GroupOutput {
    fn from(row: Row) -> Self {
        GroupOutput {
            keys: row
                .keys
                .into_iter()
                .map(|k| KeyOutput {
                    value: k.value,
                    label: k.label,
                })
                .collect(),
            count: row.count,
            metrics: row.metrics,
        }
    }
}

/// `crma_aggregate_records`.
pub struct AggregateRecords;

impl Tool for AggregateRecords {
    const NAME: &'static str = "crma_aggregate_records";
    const DESCRIPTION: &'static str = "Count and total HubSpot records in one call, like SQL \
        GROUP BY: the filters of crma_search_records, group_by up to two properties (stages, \
        pipelines, owners, enumerations, or dates by day/week/month/quarter/year in the \
        account's time zone) and metrics such as sum:amount, avg:amount, min:amount, \
        max:amount. Reads every match (any number, past 10,000) and returns only the groups, \
        with stage and owner names and exact decimal sums. Examples: pipeline value by stage \
        (deals, group_by dealstage, sum:amount); deals closing per month by owner (group_by \
        closedate month and hubspot_owner_id).";
    const TITLE: &'static str = "Aggregate HubSpot records";
    const EFFECT: CrmEffect = CrmEffect::Reads;
    type Input = AggregateInput;
    type Output = AggregateOutput;

    /// Every property filtered, grouped or computed on, and free text; no record reaches the
    /// answer, only groups.
    fn reads(input: &AggregateInput) -> ReadScope<'_> {
        let named = input
            .filter_groups
            .iter()
            .flat_map(|g| &g.filters)
            .map(|f: &Filter| &f.property)
            .chain(input.group_by.iter().map(|g| &g.property))
            .chain(
                input
                    .metrics
                    .iter()
                    .filter_map(|m| m.0.as_ref())
                    .map(|m| &m.property),
            );
        let free_text = input.query.as_deref().is_some_and(|q| !q.trim().is_empty());
        ReadScope {
            fields: named.map(PropertyName::as_str).collect(),
            free_text_in: free_text.then(|| input.object_type.as_str()),
            ..ReadScope::default()
        }
    }

    fn run(input: AggregateInput, session: &mut Session<'_>) -> Result<AggregateOutput, ToolError> {
        let asked = Asked::check(&input)?;
        scopes::check(
            &session.ctx.granted_scopes,
            &Operation::Read(input.object_type.clone()),
        )?;
        let prepared = prepare(session, &input.object_type, &asked)?;
        let plan = ExportPlan::new(
            input.object_type.clone(),
            input.filter_groups,
            &[],
            input.query,
            prepared.tally.properties(),
            None,
            None,
        )?;
        count(session, &input.object_type, &plan, prepared, asked.order)
    }
}

/// The input's grouping, metrics and order, checked before anything is sent.
struct Asked {
    group_by: Vec<GroupBy>,
    metrics: Vec<Metric>,
    order: Order,
}

impl Asked {
    fn check(input: &AggregateInput) -> Result<Asked, ToolError> {
        if input.group_by.len() > 2 {
            return Err(ToolError::invalid(
                "group_by takes at most two properties; filter on a third instead",
            ));
        }
        if let [a, b] = input.group_by.as_slice()
            && a.property == b.property
            && a.bucket == b.bucket
        {
            return Err(ToolError::invalid(format!(
                "group_by names {} twice the same way",
                a.property.as_str()
            )));
        }
        let mut metrics: Vec<Metric> = Vec::new();
        for metric in input.metrics.iter().filter_map(|m| m.0.clone()) {
            if !metrics.contains(&metric) {
                metrics.push(metric);
            }
        }
        if metrics.len() > MAX_METRICS {
            return Err(ToolError::invalid(format!(
                "{} metrics: at most {MAX_METRICS} in one call",
                metrics.len()
            )));
        }
        let order = match input.order_by.as_deref().map(str::trim) {
            None | Some("") | Some("keys") => Order::Keys,
            Some("count") => Order::Count,
            Some(name) if metrics.iter().any(|m| m.spelling() == name) => {
                Order::Metric(name.to_string())
            }
            Some(name) => {
                return Err(ToolError::invalid(format!(
                    "order_by {name:?} is not count or one of the metrics asked for ({})",
                    metrics
                        .iter()
                        .map(Metric::spelling)
                        .collect::<Vec<_>>()
                        .join(", ")
                )));
            }
        };
        Ok(Asked {
            group_by: input.group_by.clone(),
            metrics,
            order,
        })
    }
}

/// A deal's `amount` is in the deal's own currency (`deal_currency_code`); in an account with
/// several currencies, figures of `amount` would add euros to dollars under one label. They
/// are computed from `amount_in_home_currency` instead, HubSpot's conversion of each deal's
/// amount into the company currency at the account's exchange rate ("Set up and use multiple
/// currencies", <https://knowledge.hubspot.com/object-settings/add-and-edit-your-account-currencies>),
/// and the answer says so. `None` when nothing was converted.
fn convert_deal_amounts(
    object_type: &ObjectType,
    account: Option<&account::AccountDetails>,
    metrics: &mut [Metric],
) -> Option<String> {
    let account = account?;
    let others = account.additional_currencies();
    if object_type.as_str() != "deals" || others.is_empty() {
        return None;
    }
    let home = PropertyName::parse("amount_in_home_currency").ok()?;
    let mut converted = false;
    for metric in metrics
        .iter_mut()
        .filter(|m| m.property.as_str() == "amount")
    {
        metric.reads = Some(home.clone());
        converted = true;
    }
    let company = account.company_currency().unwrap_or("the company currency");
    converted.then(|| {
        format!(
            "this account holds deals in {company} and {}: figures of amount are of \
             amount_in_home_currency, each deal's amount converted by HubSpot into {company} at \
             the account's exchange rate, so no figure adds one currency to another",
            others.join(", ")
        )
    })
}

/// A tally ready to count, with the names of its keys and what the answer says of them.
struct Prepared {
    tally: Tally,
    labels: Vec<Labels>,
    described: Vec<String>,
    time_zone: Option<String>,
    currency: Option<String>,
    notes: Vec<String>,
}

/// Reads the definitions, the account's zone and the names the groups need; a metric on a
/// property that is not a number, or a bucket on one that is not a date, is refused here,
/// before any search.
fn prepare(
    session: &mut Session<'_>,
    object_type: &ObjectType,
    asked: &Asked,
) -> Result<Prepared, ToolError> {
    for metric in &asked.metrics {
        let definition = labels::definition(session, object_type, &metric.property)?;
        if definition.holds(metric.property.as_str()) != Holds::Number {
            return Err(ToolError::invalid(format!(
                "{} is not a number property, so it has no {}: count the records, or group by it",
                metric.property.as_str(),
                metric.function.as_str()
            )));
        }
    }
    let mut notes = Vec::new();
    // The zone for datetime buckets, the currency for sums.
    let needs_account = !asked.metrics.is_empty() || !asked.group_by.is_empty();
    let account = if needs_account {
        match account::account_details(session) {
            Ok(details) => Some(details),
            Err(ToolError::MissingScopes(_)) => None,
            Err(err) => return Err(err),
        }
    } else {
        None
    };
    let currency = account
        .as_ref()
        .and_then(|a| a.company_currency().map(str::to_string));
    let mut metrics = asked.metrics.clone();
    if let Some(converted) = convert_deal_amounts(object_type, account.as_ref(), &mut metrics) {
        notes.push(converted);
    }
    let mut zone_used = None;
    let mut dimensions = Vec::new();
    let mut labels = Vec::new();
    let mut described = Vec::new();
    for group in &asked.group_by {
        let name = group.property.as_str();
        let definition = labels::definition(session, object_type, &group.property)?;
        let holds = definition.holds(name);
        let dates = match (holds, group.bucket) {
            (Holds::Date | Holds::Datetime, bucket) => {
                let bucket = bucket.unwrap_or(Bucket::Month);
                let zone = if holds == Holds::Datetime {
                    let zone = account
                        .as_ref()
                        .and_then(|a| a.time_zone())
                        .and_then(Zone::named);
                    let zone = zone.unwrap_or_else(|| {
                        notes.push(format!(
                            "{name} is bucketed in UTC: the account's time zone could not be read"
                        ));
                        Zone::utc()
                    });
                    zone_used = Some(zone.name().to_string());
                    zone
                } else {
                    Zone::utc()
                };
                described.push(format!("{name} by {}", bucket.as_str()));
                Some((bucket, zone))
            }
            (_, Some(bucket)) => {
                return Err(ToolError::invalid(format!(
                    "{name} is not a date, so it takes no bucket ({}): leave out bucket to \
                     group by its values",
                    bucket.as_str()
                )));
            }
            (_, None) => {
                described.push(name.to_string());
                None
            }
        };
        let named = match holds {
            Holds::Stage | Holds::Pipeline => {
                labels::pipeline_labels(session, object_type, holds == Holds::Stage)
            }
            Holds::Owner => labels::owner_labels(session),
            Holds::Value => Ok(definition.option_labels()),
            _ => Ok(Labels::default()),
        };
        labels.push(match named {
            Ok(named) => named,
            Err(ToolError::MissingScopes(missing)) => {
                notes.push(format!(
                    "{name} values are shown as stored ids, without names: naming them needs \
                     a scope this connection lacks ({})",
                    missing.join(" or ")
                ));
                Labels::default()
            }
            Err(err) => return Err(err),
        });
        dimensions.push(Dimension {
            property: group.property.clone(),
            dates,
        });
    }
    Ok(Prepared {
        tally: Tally::new(dimensions, metrics),
        labels,
        described,
        time_zone: zone_used,
        currency: currency.filter(|_| !asked.metrics.is_empty()),
        notes,
    })
}

/// Walks every match into the tally and answers with the sorted groups.
fn count(
    session: &mut Session<'_>,
    object_type: &ObjectType,
    plan: &ExportPlan,
    prepared: Prepared,
    order: Order,
) -> Result<AggregateOutput, ToolError> {
    let Prepared {
        mut tally,
        labels,
        described,
        time_zone,
        currency,
        mut notes,
    } = prepared;
    let mut pages = KeysetWalk::new(plan);
    // The workspace's record cap (CRM_POLICY_MAX_RECORDS) bounds what one call reads, as it
    // bounds what one call returns or exports.
    let policy_cap = session.config()?.policy.max_records;
    let cap = policy_cap.map_or(MAX_RECORDS_READ, |m| m.min(MAX_RECORDS_READ));
    let mut complete = true;
    'pages: while let Some(page) = pages.next_page(session)? {
        for record in &page.records {
            if tally.records() >= cap {
                complete = false;
                break 'pages;
            }
            tally.add(&record.properties).map_err(|err| match err {
                TallyError::TooManyGroups => ToolError::invalid(format!(
                    "more than {MAX_GROUPS} groups: group by a coarser bucket (month instead \
                     of day) or fewer properties, or filter to fewer records"
                )),
                TallyError::Overflow(property) => ToolError::from(CrmProblem::unexpected_answer(
                    Crm::Hubspot,
                    200,
                    format!("the sum of {property} is past what can be added exactly"),
                )),
            })?;
        }
        session.progress(tally.records(), Some(pages.total().min(cap)));
    }
    if !complete {
        let why = match policy_cap {
            Some(m) if m <= MAX_RECORDS_READ => {
                format!("the workspace reads at most {m} records a call (CRM_POLICY_MAX_RECORDS)")
            }
            _ => format!("one call reads at most {MAX_RECORDS_READ}"),
        };
        notes.push(format!(
            "stopped after {} records of {}: {why}. The figures cover those records only; \
             narrow the filters (for example by closedate or createdate windows) and add the \
             answers up",
            tally.records(),
            pages.total()
        ));
    }
    if tally.unreadable() > 0 {
        notes.push(format!(
            "{} values of the metric properties were not numbers and are left out of the metrics",
            tally.unreadable()
        ));
    }
    let records_read = tally.records();
    let finished = tally.finish(&labels, &order);
    Ok(AggregateOutput {
        object_type: object_type.as_str().to_string(),
        group_by: described,
        time_zone,
        currency,
        records_read,
        complete,
        groups: finished.groups.into_iter().map(GroupOutput::from).collect(),
        totals: finished.totals.into(),
        note: (!notes.is_empty()).then(|| notes.join(". ")),
    })
}

#[cfg(test)]
mod tests;
