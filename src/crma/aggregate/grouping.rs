//! The fold at the heart of `crma_aggregate_records`: records go in a page at a time, each
//! adds itself to its group (one or two keys) and to the totals, and only the groups are kept,
//! so memory grows with the number of groups, never with the number of records. Pure: no
//! session, no HubSpot; [`Tally::finish`] sorts and names the groups with the labels given.

use super::calendar::{Bucket, Zone};
use super::decimal::Decimal;
use crate::crma::types::PropertyName;
use serde_json::{Map, Value};
use std::cmp::Ordering;
use std::collections::BTreeMap;

/// Most groups one call keeps: more would not help anyone reading the answer.
pub(crate) const MAX_GROUPS: usize = 1_000;
/// Decimal places of an average.
const AVERAGE_PLACES: u32 = 2;

/// What a record is grouped by: a property's value, or the date bucket it falls in.
#[derive(Debug, Clone)]
pub(crate) struct Dimension {
    /// The property grouped by.
    pub(crate) property: PropertyName,
    /// For a date or datetime property, the bucket and the zone it is counted in.
    pub(crate) dates: Option<(Bucket, Zone)>,
}

impl Dimension {
    /// The key of `value` (`None` for an empty value or, for dates, one that is not a date).
    fn key(&self, value: Option<&str>) -> Option<String> {
        let value = value.filter(|v| !v.is_empty())?;
        match &self.dates {
            Some((bucket, zone)) => zone.bucket(value, *bucket).map(|(key, _)| key),
            None => Some(value.to_string()),
        }
    }
}

/// An aggregate of a numeric property.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Function {
    Sum,
    Avg,
    Min,
    Max,
}

impl Function {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Function::Sum => "sum",
            Function::Avg => "avg",
            Function::Min => "min",
            Function::Max => "max",
        }
    }
}

/// One metric asked for: a function of a numeric property (the count always comes).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Metric {
    pub(crate) function: Function,
    pub(crate) property: PropertyName,
    /// The property whose values are computed when it is not `property` itself: a deal's
    /// `amount_in_home_currency` for `amount` in an account with several currencies, so a sum
    /// never adds euros to dollars. The answer still names the metric as asked.
    pub(crate) reads: Option<PropertyName>,
}

impl Metric {
    /// The property whose values the metric computes.
    pub(crate) fn read(&self) -> &PropertyName {
        self.reads.as_ref().unwrap_or(&self.property)
    }

    /// How the input and the answer spell it: `sum:amount`.
    pub(crate) fn spelling(&self) -> String {
        format!("{}:{}", self.function.as_str(), self.property.as_str())
    }
}

/// Running figures of one numeric property in one group.
#[derive(Debug, Clone, Copy, Default)]
struct Figures {
    sum: Option<Decimal>,
    values: u64,
    min: Option<Decimal>,
    max: Option<Decimal>,
}

impl Figures {
    fn add(&mut self, value: Decimal) -> Result<(), Overflow> {
        self.sum = Some(
            self.sum
                .unwrap_or(Decimal::ZERO)
                .checked_add(value)
                .ok_or(Overflow)?,
        );
        self.values += 1;
        self.min = Some(self.min.map_or(value, |m| m.min(value)));
        self.max = Some(self.max.map_or(value, |m| m.max(value)));
        Ok(())
    }

    fn value(&self, function: Function) -> Option<Decimal> {
        match function {
            Function::Sum => Some(self.sum.unwrap_or(Decimal::ZERO)),
            Function::Avg => {
                let places = self.sum?.scale().max(AVERAGE_PLACES);
                self.sum?.divided(self.values, places)
            }
            Function::Min => self.min,
            Function::Max => self.max,
        }
    }
}

/// A sum past the range of an exact decimal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Overflow;

/// One group's count and figures.
#[derive(Debug, Clone, Default)]
struct Cell {
    count: u64,
    /// One per numeric property, in [`Tally::numeric`] order.
    figures: Vec<Figures>,
}

/// Why a record could not be counted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum TallyError {
    /// More distinct groups than [`MAX_GROUPS`].
    TooManyGroups,
    /// A sum past the exact range.
    Overflow(String),
}

/// The groups so far.
#[derive(Debug)]
pub(crate) struct Tally {
    dimensions: Vec<Dimension>,
    metrics: Vec<Metric>,
    /// The distinct properties the metrics read.
    numeric: Vec<PropertyName>,
    groups: BTreeMap<Vec<Option<String>>, Cell>,
    totals: Cell,
    /// Values of metric properties that were not numbers, which no figure includes.
    unreadable: u64,
}

impl Tally {
    pub(crate) fn new(dimensions: Vec<Dimension>, metrics: Vec<Metric>) -> Self {
        let mut numeric: Vec<PropertyName> = metrics.iter().map(|m| m.read().clone()).collect();
        numeric.sort();
        numeric.dedup();
        let totals = Cell {
            count: 0,
            figures: vec![Figures::default(); numeric.len()],
        };
        Tally {
            dimensions,
            metrics,
            numeric,
            groups: BTreeMap::new(),
            totals,
            unreadable: 0,
        }
    }

    /// The properties a search must return for this tally.
    pub(crate) fn properties(&self) -> Vec<PropertyName> {
        let mut names: Vec<PropertyName> = self
            .dimensions
            .iter()
            .map(|d| d.property.clone())
            .chain(self.numeric.iter().cloned())
            .collect();
        names.sort();
        names.dedup();
        names
    }

    /// Counts one record, given its properties as HubSpot answered them.
    pub(crate) fn add(&mut self, properties: &Map<String, Value>) -> Result<(), TallyError> {
        let text = |name: &PropertyName| properties.get(name.as_str()).and_then(Value::as_str);
        let key: Vec<Option<String>> = self
            .dimensions
            .iter()
            .map(|d| d.key(text(&d.property)))
            .collect();
        let mut values = Vec::with_capacity(self.numeric.len());
        for name in &self.numeric {
            let value = match text(name).filter(|v| !v.trim().is_empty()) {
                None => None,
                Some(v) => match Decimal::parse(v) {
                    Ok(d) => Some(d),
                    Err(_) => {
                        self.unreadable += 1;
                        None
                    }
                },
            };
            values.push(value);
        }
        if !self.groups.contains_key(&key) && self.groups.len() >= MAX_GROUPS {
            return Err(TallyError::TooManyGroups);
        }
        let width = self.numeric.len();
        let cell = self.groups.entry(key).or_insert_with(|| Cell {
            count: 0,
            figures: vec![Figures::default(); width],
        });
        for target in [cell, &mut self.totals] {
            target.count += 1;
            for (i, value) in values.iter().enumerate() {
                if let Some(value) = value {
                    target.figures[i].add(*value).map_err(|Overflow| {
                        TallyError::Overflow(self.numeric[i].as_str().to_string())
                    })?;
                }
            }
        }
        Ok(())
    }

    /// Records counted.
    pub(crate) fn records(&self) -> u64 {
        self.totals.count
    }

    /// Metric values that were not numbers.
    pub(crate) fn unreadable(&self) -> u64 {
        self.unreadable
    }

    fn metric_values(&self, cell: &Cell) -> Map<String, Value> {
        let values = self
            .metrics
            .iter()
            .map(|metric| {
                let at = self
                    .numeric
                    .binary_search(metric.read())
                    .expect("every metric's property is tallied");
                let value = cell.figures[at].value(metric.function);
                (
                    metric.spelling(),
                    value.map_or(Value::Null, |d| Value::String(d.to_string())),
                )
            })
            .collect();
        crate::sorted_map::json_object(values)
    }

    /// The groups, named by `labels` and sorted by `order`, and the totals.
    pub(crate) fn finish(self, labels: &[Labels], order: &Order) -> Finished {
        let mut rows: Vec<Row> = self
            .groups
            .iter()
            .map(|(key, cell)| Row {
                keys: key
                    .iter()
                    .enumerate()
                    .map(|(i, value)| {
                        let named = value
                            .as_ref()
                            .and_then(|v| labels.get(i).and_then(|l| l.names.get(v)));
                        KeyValue {
                            value: value.clone(),
                            label: named.map(|(label, _)| label.clone()),
                            rank: named.and_then(|(_, rank)| *rank),
                        }
                    })
                    .collect(),
                count: cell.count,
                metrics: self.metric_values(cell),
            })
            .collect();
        rows.sort_by(|a, b| order.compare(a, b));
        Finished {
            totals: Row {
                keys: Vec::new(),
                count: self.totals.count,
                metrics: self.metric_values(&self.totals),
            },
            groups: rows,
        }
    }
}

/// Names for one dimension's values: value → (label, rank in HubSpot's display order, when
/// the values have one).
#[derive(Debug, Clone, Default)]
pub(crate) struct Labels {
    pub(crate) names: BTreeMap<String, (String, Option<usize>)>,
}

/// One key of a group, as answered.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct KeyValue {
    /// The stored value or date bucket; `None` for records without one.
    pub(crate) value: Option<String>,
    /// Its name (a stage's, an owner's, an option's), when it has one.
    pub(crate) label: Option<String>,
    /// Its place in HubSpot's order (stages, pipelines, options).
    rank: Option<usize>,
}

/// A group (or the totals): its keys, count and metric values.
#[derive(Debug, Clone)]
pub(crate) struct Row {
    pub(crate) keys: Vec<KeyValue>,
    pub(crate) count: u64,
    pub(crate) metrics: Map<String, Value>,
}

/// The answer of a finished tally.
#[derive(Debug)]
pub(crate) struct Finished {
    pub(crate) groups: Vec<Row>,
    pub(crate) totals: Row,
}

/// How groups are sorted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Order {
    /// By the keys: dates in time order, stages and options in HubSpot's order, other values
    /// by name; records without a value last.
    Keys,
    /// Largest count first.
    Count,
    /// Largest value of this metric first (groups without one last).
    Metric(String),
}

impl Order {
    fn compare(&self, a: &Row, b: &Row) -> Ordering {
        let by_keys = || {
            a.keys
                .iter()
                .zip(&b.keys)
                .map(|(x, y)| compare_keys(x, y))
                .find(|o| o.is_ne())
                .unwrap_or(Ordering::Equal)
        };
        match self {
            Order::Keys => by_keys(),
            Order::Count => b.count.cmp(&a.count).then_with(by_keys),
            Order::Metric(name) => {
                let value = |row: &Row| {
                    row.metrics
                        .get(name)
                        .and_then(Value::as_str)
                        .and_then(|v| Decimal::parse(v).ok())
                };
                // `Some` sorts above `None`, so reversing puts the largest first and the
                // groups without a value last.
                value(b).cmp(&value(a)).then_with(by_keys)
            }
        }
    }
}

/// Missing values last; ranked values (HubSpot's order) before unranked; then by name.
fn compare_keys(a: &KeyValue, b: &KeyValue) -> Ordering {
    let missing = |k: &KeyValue| k.value.is_none();
    missing(a)
        .cmp(&missing(b))
        .then_with(|| match (a.rank, b.rank) {
            (Some(x), Some(y)) => x.cmp(&y),
            (Some(_), None) => Ordering::Less,
            (None, Some(_)) => Ordering::Greater,
            (None, None) => {
                let text = |k: &KeyValue| k.label.clone().or_else(|| k.value.clone());
                text(a)
                    .map(|t| t.to_lowercase())
                    .cmp(&text(b).map(|t| t.to_lowercase()))
            }
        })
}
