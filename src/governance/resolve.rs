//! `crm_resolve_change`: settling a create whose outcome is unknown (sent, and no clear answer
//! came: a timeout after send, a reset) by asking the CRM, rather than letting the assistant
//! try again and make the record twice. A create with the same input is refused while such an
//! entry stays unknown (see the gate).

use super::crm::{Candidate, CrmDirectory};
use super::current::same_value;
use super::tools::journalled;
use crate::error::ToolError;
use crate::journal::{Change, ChangeKind, ChangeStatus};
use crate::tool::{CrmEffect, Session, Tool};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::marker::PhantomData;

/// How far before the journal's time a CRM's creation time may read (clocks disagree a
/// little); the values sent decide the match.
const CLOCK_SKEW_MS: u64 = 5 * 60_000;

/// Input of `crm_resolve_change`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ResolveInput {
    /// The change whose outcome is unknown (from the write's outcome-unknown error, or
    /// crm_list_changes).
    change_id: String,
}

/// What `crm_resolve_change` found.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct ResolvedOutput {
    /// The change looked for.
    change_id: String,
    /// "applied" (the record exists: do not create it again), "failed" (it was never made:
    /// creating it again is safe) or "ambiguous" (several records match: check them in the
    /// CRM; the change stays unknown).
    outcome: String,
    /// The record the create made, when it was applied.
    #[serde(skip_serializing_if = "Option::is_none")]
    record_id: Option<String>,
    /// The matching records, when several match.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    candidates: Vec<String>,
    /// What to tell the user.
    message: String,
}

/// `crm_resolve_change`.
pub(crate) struct ResolveChange<C>(PhantomData<C>);

impl<C: CrmDirectory> Tool for ResolveChange<C> {
    const NAME: &'static str = "crm_resolve_change";
    const DESCRIPTION: &'static str = "Find out whether a create whose outcome is unknown \
        (the write was sent but no answer came: outcome-unknown) was made, by looking for the \
        record in the CRM, and settle the change journal: applied with the record's id, or \
        failed when it provably never reached the CRM. Use it instead of creating again, which \
        could make the record twice; a create with the same input is refused until it is \
        resolved.";
    const TITLE: &'static str = "Resolve an unknown create";
    const EFFECT: CrmEffect = CrmEffect::Reads;
    type Input = ResolveInput;
    type Output = ResolvedOutput;

    fn run(input: ResolveInput, session: &mut Session<'_>) -> Result<ResolvedOutput, ToolError> {
        let change = journalled(session, &input.change_id)?;
        unresolved_create(&change)?;
        let governed = C::governed(change.entry.crm);
        let since = change.at_ms.saturating_sub(CLOCK_SKEW_MS);
        let created = &change.entry.new_values;
        let window = governed.created_since(session, &change.entry.object, created, since)?;
        let read = window.candidates.len();
        let matching: Vec<String> = window
            .candidates
            .into_iter()
            .filter(|c| carries(c, created))
            .map(|c| c.id)
            .collect();
        let product = change.entry.crm.product();
        let (outcome, record_id, message) = match matching.as_slice() {
            [id] => {
                settle(session, &change.id, ChangeStatus::Applied, Some(id))?;
                let message = format!(
                    "the create reached {product}: record {id} exists. Do not create it again."
                );
                ("applied", Some(id.clone()), message)
            }
            [] => {
                let waited = session.now_unix_millis().saturating_sub(change.at_ms);
                let lag = governed.lookup_lag_ms();
                if waited < lag {
                    let seconds = (lag - waited).div_ceil(1000).max(1);
                    return Err(ToolError::Unavailable(format!(
                        "no matching {} record shows in {product} yet, and a new one can take a \
                         little while to appear there: call crm_resolve_change again in \
                         {seconds} s. Do not create it again meanwhile.",
                        change.entry.object
                    )));
                }
                // "Never made" only of a window read whole: a record past the pages read may
                // be the one, and saying "failed" would invite the duplicate this prevents.
                if !window.complete {
                    return Err(ToolError::Unavailable(format!(
                        "{read} {} records were created in {product} since the write and none \
                         of those read carries its values, but more were created than one \
                         lookup reads, so the outcome is still unknown: check in {product} \
                         (records created since {}), or call crm_resolve_change again. Do not \
                         create it again meanwhile.",
                        change.entry.object,
                        crate::time::iso_utc(since),
                    )));
                }
                settle(session, &change.id, ChangeStatus::Failed, None)?;
                let message = format!(
                    "the create never reached {product}: no {} record with its values exists. \
                     It is safe to create it again.",
                    change.entry.object
                );
                ("failed", None, message)
            }
            several => {
                return Ok(ResolvedOutput {
                    change_id: change.id,
                    outcome: "ambiguous".into(),
                    record_id: None,
                    candidates: several.to_vec(),
                    message: format!(
                        "{} {product} records carry the create's values; check them in \
                         {product} (one may be older, or a duplicate). The change stays unknown.",
                        several.len()
                    ),
                });
            }
        };
        Ok(ResolvedOutput {
            change_id: change.id,
            outcome: outcome.into(),
            record_id,
            candidates: Vec::new(),
            message,
        })
    }
}

/// The change is a create whose outcome is unknown, or why there is nothing to resolve.
fn unresolved_create(change: &Change) -> Result<(), ToolError> {
    if change.entry.kind != ChangeKind::Create {
        return Err(ToolError::invalid(format!(
            "change {} is not a create; only a create whose outcome is unknown is resolved here \
             (an update can simply be checked and made again)",
            change.id
        )));
    }
    let status = match change.status {
        ChangeStatus::Unknown => return Ok(()),
        ChangeStatus::Applied => "applied",
        ChangeStatus::Failed => "failed",
        ChangeStatus::Pending => {
            return Err(ToolError::invalid(format!(
                "change {} is still being written: its call has not ended (or its host stopped; \
                 then the change turns unknown once the call's time limit has passed, a few \
                 minutes at most). Call crm_resolve_change with it again then",
                change.id
            )));
        }
        ChangeStatus::Declined => "declined by the user (nothing was sent)",
    };
    Err(ToolError::invalid(format!(
        "change {} is {status}; there is nothing to resolve",
        change.id
    )))
}

/// Whether a candidate holds every value the create sent (compared as the CRM stores them).
fn carries(candidate: &Candidate, created: &Map<String, Value>) -> bool {
    created.iter().all(|(field, sent)| {
        let held = candidate
            .values
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(field))
            .map_or(&Value::Null, |(_, v)| v);
        same_value(sent, held)
    })
}

fn settle(
    session: &mut Session<'_>,
    id: &str,
    status: ChangeStatus,
    record_id: Option<&str>,
) -> Result<(), ToolError> {
    session
        .journal()?
        .resolve(id, status, record_id)
        .map_err(|e| ToolError::Unavailable(format!("{e}; try again shortly")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_candidate_matches_when_it_holds_every_value_sent_as_the_crm_stores_it() {
        let created = json!({"dealname": "Renewal", "amount": 1200, "pipeline": "default"});
        let created = created.as_object().unwrap();
        let held = |values: Value| Candidate {
            id: "1".into(),
            values: values.as_object().unwrap().clone(),
        };
        // HubSpot keeps every value as text.
        assert!(carries(
            &held(
                json!({"dealname": "Renewal", "amount": "1200", "pipeline": "default", "createdate": "x"})
            ),
            created
        ));
        assert!(!carries(
            &held(json!({"dealname": "Renewal", "amount": "1300", "pipeline": "default"})),
            created
        ));
        assert!(!carries(&held(json!({"dealname": "Renewal"})), created));
    }
}
