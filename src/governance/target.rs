//! What a write does, as each CRM's governance reads it back from the request itself at the
//! last seam before the wire (each CRM's `GovernedCrm::target`): the policy, the preview
//! and the journal judge what is actually sent, whichever tool built it.

use crate::error::Crm;
use crate::journal::ChangeKind;
use serde_json::{Map, Value};

/// What kind of change a write makes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WriteKind {
    /// A new record or activity.
    Create,
    /// New values for fields of an existing record.
    Update {
        /// The record changed.
        record_id: String,
    },
    /// HubSpot's merge of one company into another.
    Merge {
        /// The company that remains.
        record_id: String,
        /// The company merged into it.
        merged_id: String,
    },
    /// A link between two existing records.
    Associate {
        /// The record linked from.
        record_id: String,
        /// The type of the record linked to.
        to_object: String,
        /// The record linked to.
        to_record_id: String,
    },
}

impl WriteKind {
    /// The kind of change the journal keeps it as.
    pub fn change_kind(&self) -> ChangeKind {
        match self {
            WriteKind::Create => ChangeKind::Create,
            WriteKind::Update { .. } => ChangeKind::Update,
            WriteKind::Merge { .. } => ChangeKind::Merge,
            WriteKind::Associate { .. } => ChangeKind::Association,
        }
    }

    /// The existing record the change is to, when there is one.
    pub fn record_id(&self) -> Option<&str> {
        match self {
            WriteKind::Create => None,
            WriteKind::Update { record_id }
            | WriteKind::Merge { record_id, .. }
            | WriteKind::Associate { record_id, .. } => Some(record_id),
        }
    }
}

/// One write, as the request says it.
#[derive(Debug, Clone, PartialEq)]
pub struct WriteTarget {
    /// The CRM written to.
    pub crm: Crm,
    /// What the write does.
    pub kind: WriteKind,
    /// The object type written (`contacts`, `Account`); for a link, the type linked from.
    pub object: String,
    /// The field values the request sends (HubSpot's `properties`, Salesforce's body).
    pub fields: Map<String, Value>,
}
