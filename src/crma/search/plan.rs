//! The plan of a keyset walk over every match of a search: the caller's filters, free text
//! and properties, sorted by `hs_object_id` and asked page by page for the records above the
//! last id seen. Checked once, before anything is sent; `to_file` exports and
//! `crma_aggregate_records` walk it.

use super::{
    Direction, Filter, FilterGroup, MAX_FILTERS, MAX_FILTERS_PER_GROUP, MAX_LIMIT, Operator,
    Search, Sort,
};
use crate::crma::types::{ObjectType, PropertyName};
use crate::error::ToolError;
use serde_json::Value;
use std::collections::BTreeSet;
use std::time::Duration;

/// The property an export pages by: the record id, which HubSpot sorts and compares as a number.
pub(crate) const KEY: &str = "hs_object_id";
/// Records asked for in each request: HubSpot's largest search page.
pub(crate) const PAGE_SIZE: u32 = MAX_LIMIT;
/// The least time between the starts of two search requests: 4 a second, under the search
/// API's 5 a second per account.
pub(crate) const PACE: Duration = Duration::from_millis(250);

fn key() -> PropertyName {
    PropertyName::parse(KEY).expect("a valid property name")
}

/// An export, checked: the caller's filters, free text and properties, in the export's own
/// order and page size.
#[derive(Debug)]
pub(crate) struct ExportPlan {
    search: Search,
}

impl ExportPlan {
    /// Checks everything an export cannot take; nothing is sent when this fails.
    ///
    /// - `cursor`: the export starts at the first match and goes to the last in one call.
    /// - `sorts`: the export's order is `hs_object_id` ascending; that is how it pages.
    /// - `limit`: the export writes every match, [`PAGE_SIZE`] a request.
    /// - a lower bound on `hs_object_id` (`GT`, `GTE`, `BETWEEN`): the export adds its own to
    ///   every group; other filters on `hs_object_id` (upper bounds, `EQ`, `IN`, ...) are
    ///   ANDed with it and narrow the export as they narrow a search.
    /// - filters HubSpot would refuse once the export adds its own to every group: more than
    ///   [`MAX_FILTERS_PER_GROUP`] in a group or [`MAX_FILTERS`] in all.
    pub(crate) fn new(
        object_type: ObjectType,
        filter_groups: Vec<FilterGroup>,
        sorts: &[Sort],
        query: Option<String>,
        properties: Vec<PropertyName>,
        limit: Option<u32>,
        cursor: Option<&str>,
    ) -> Result<Self, ToolError> {
        if cursor.is_some() {
            return Err(ToolError::invalid(
                "to_file writes every match, from the first to the last, in one call: it takes \
                 no cursor. Leave out cursor to export everything, or leave out to_file to go on \
                 paging inline with the cursor",
            ));
        }
        if !sorts.is_empty() {
            return Err(ToolError::invalid(format!(
                "to_file writes records in {KEY} order, ascending (that is how it pages past \
                 10,000 results), so it takes no sorts: leave out sorts, and sort the file \
                 afterwards if another order is needed"
            )));
        }
        if limit.is_some() {
            return Err(ToolError::invalid(format!(
                "to_file writes every match, {PAGE_SIZE} a request, so it takes no limit: leave \
                 out limit, or leave out to_file for one page of at most {MAX_LIMIT} records"
            )));
        }
        let search = Search {
            object_type,
            filter_groups,
            sorts: vec![Sort {
                property: key(),
                direction: Direction::Ascending,
            }],
            query,
            properties,
            limit: PAGE_SIZE,
            after: None,
            string_properties: BTreeSet::new(),
        };
        search.validate()?;
        check_key_filters(&search.filter_groups)?;
        check_room_for_the_key_filter(&search.filter_groups)?;
        Ok(ExportPlan { search })
    }

    /// The object type exported.
    pub(crate) fn object_type(&self) -> &ObjectType {
        &self.search.object_type
    }

    /// The caller's filter groups.
    pub(crate) fn filter_groups(&self) -> &[FilterGroup] {
        &self.search.filter_groups
    }

    /// The properties known to be strings, whose `IN` / `NOT_IN` values go lower-case.
    pub(crate) fn with_string_properties(mut self, string_properties: BTreeSet<String>) -> Self {
        self.search.string_properties = string_properties;
        self
    }

    /// The body of the request for the records above `after` (from the first match when
    /// `None`): the caller's search sorted by `hs_object_id` ascending, [`PAGE_SIZE`] records,
    /// never an `after` offset, and `hs_object_id GT after` ANDed into every filter group (or
    /// as the one group when the caller gave none).
    pub(crate) fn body(&self, after: Option<u64>) -> Result<Value, ToolError> {
        let Some(last) = after else {
            return self.search.body();
        };
        let above = Filter {
            property: key(),
            operator: Operator::Gt,
            value: Some(Value::String(last.to_string())),
            values: None,
            high_value: None,
        };
        let mut search = self.search.clone();
        if search.filter_groups.is_empty() {
            search.filter_groups.push(FilterGroup {
                filters: vec![above],
            });
        } else {
            for group in &mut search.filter_groups {
                group.filters.push(above.clone());
            }
        }
        search.body()
    }
}

/// Refuses a lower bound on `hs_object_id`: the export sets its own in every group.
fn check_key_filters(groups: &[FilterGroup]) -> Result<(), ToolError> {
    for (g, group) in groups.iter().enumerate() {
        for filter in &group.filters {
            let lower_bound = matches!(
                filter.operator,
                Operator::Gt | Operator::Gte | Operator::Between
            );
            if filter.property.as_str() == KEY && lower_bound {
                return Err(ToolError::invalid(format!(
                    "filter group {}: to_file pages by {KEY} itself (each request after the \
                     first adds {KEY} GT <the last id written> to every filter group), so a \
                     lower bound of your own on {KEY} ({}) would be a second one in the same \
                     group; the export does not send that. Remove that filter; upper bounds \
                     (LT, LTE), EQ, IN and the other operators on {KEY} are fine",
                    g + 1,
                    filter.operator.wire()
                )));
            }
        }
    }
    Ok(())
}

/// Refuses filters HubSpot would refuse once the export adds one to every group.
fn check_room_for_the_key_filter(groups: &[FilterGroup]) -> Result<(), ToolError> {
    for (g, group) in groups.iter().enumerate() {
        if group.filters.len() >= MAX_FILTERS_PER_GROUP {
            return Err(ToolError::invalid(format!(
                "filter group {} has {} filters; to_file adds one more to every group ({KEY} GT \
                 <the last id written>, how it pages past 10,000) and HubSpot allows at most \
                 {MAX_FILTERS_PER_GROUP} per group: remove a filter from that group (an IN list \
                 or a BETWEEN can stand for two)",
                g + 1,
                group.filters.len()
            )));
        }
    }
    let given: usize = groups.iter().map(|g| g.filters.len()).sum();
    let sent = given + groups.len();
    if sent > MAX_FILTERS {
        return Err(ToolError::invalid(format!(
            "{given} filters in {} groups; to_file adds one to every group ({KEY} GT <the last id \
             written>, how it pages past 10,000), {sent} in all, and HubSpot allows at most \
             {MAX_FILTERS}: remove {} filters",
            groups.len(),
            sent - MAX_FILTERS
        )));
    }
    Ok(())
}
