//! The tool registry behind the generic `tools` interface: names, descriptions, input
//! schemas, and dispatch from a name and JSON input to a typed tool.

use crate::client::{self, Answer, HintReader};
use crate::config::{Config, ConfigError};
use crate::context::CallContext;
use crate::error::ToolError;
use crate::http::{Request, Transport};
use crate::mapping::{CreatedRecord, MappingStore};
use crate::schema::input_schema;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::Value;

/// What `list-tools` returns for one tool.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolSpec {
    pub name: &'static str,
    pub description: &'static str,
    pub input_schema: String,
    pub read_only: bool,
}

/// Everything a running tool may use: who it acts for, where the CRMs are, and the only way out.
pub struct Session<'a> {
    pub ctx: &'a CallContext,
    config: Result<&'a Config, &'a ConfigError>,
    transport: &'a mut dyn Transport,
    store: Option<&'a mut dyn MappingStore>,
}

impl<'a> Session<'a> {
    pub fn new(
        ctx: &'a CallContext,
        config: Result<&'a Config, &'a ConfigError>,
        transport: &'a mut dyn Transport,
    ) -> Self {
        Session {
            ctx,
            config,
            transport,
            store: None,
        }
    }

    /// Gives the tools the host's mapping store for this tenant.
    pub fn with_store(mut self, store: &'a mut dyn MappingStore) -> Self {
        self.store = Some(store);
        self
    }

    /// The tenant's mapping store.
    pub fn store(&mut self) -> Result<&mut (dyn MappingStore + 'a), ToolError> {
        self.store.as_deref_mut().ok_or_else(|| {
            ToolError::Unavailable(
                "this host keeps no local mapping store; ask the workspace admin".into(),
            )
        })
    }

    /// Keeps a created record's id in the mapping store. The record exists whatever happens
    /// here, so a failure is returned as a warning for the output, never as the call's error.
    pub fn remember_created(&mut self, record: CreatedRecord) -> Option<String> {
        let stored = self
            .store()
            .map_err(|e| e.to_string())
            .and_then(|store| store.record_created(&record).map_err(|e| e.to_string()));
        stored
            .err()
            .map(|why| format!("the record was created, but its id was not kept locally ({why})"))
    }

    /// Wall-clock time in milliseconds since the Unix epoch.
    pub fn now_unix_millis(&mut self) -> u64 {
        self.transport.now_unix_millis()
    }

    /// The tenant's configuration; a missing or broken one is a connection problem for an admin.
    pub fn config(&self) -> Result<&'a Config, ToolError> {
        self.config.map_err(|err| {
            ToolError::NotConnected(format!(
                "{err}. The workspace's CRM connection is not set up correctly: reconnect it in \
                 the integration settings or ask the workspace admin"
            ))
        })
    }

    /// Sends a request with the retry rules of [`client::execute`]; `read_hint` is the CRM's
    /// own reader of when to try again.
    pub fn send(&mut self, request: &Request, read_hint: HintReader) -> Result<Answer, ToolError> {
        let limits = self.config()?.limits;
        client::execute(self.transport, &limits, request, read_hint)
    }
}

/// One tool: a typed input (its schema is derived from the type) and a run function.
pub trait Tool {
    const NAME: &'static str;
    /// Written for a language model: what the tool does and when to use it.
    const DESCRIPTION: &'static str;
    /// True when the tool never writes to a CRM.
    const READ_ONLY: bool;
    type Input: DeserializeOwned + JsonSchema;
    fn run(input: Self::Input, session: &mut Session<'_>) -> Result<Value, ToolError>;
}

/// A registry row: the tool's metadata and its entry points, monomorphised per tool.
struct Entry {
    name: &'static str,
    description: &'static str,
    read_only: bool,
    schema: fn() -> String,
    call: fn(&str, &mut Session<'_>) -> Result<Value, ToolError>,
}

const fn entry<T: Tool>() -> Entry {
    Entry {
        name: T::NAME,
        description: T::DESCRIPTION,
        read_only: T::READ_ONLY,
        schema: input_schema::<T::Input>,
        call: call::<T>,
    }
}

fn call<T: Tool>(input: &str, session: &mut Session<'_>) -> Result<Value, ToolError> {
    let input: T::Input = serde_json::from_str(input)
        .map_err(|err| ToolError::invalid(format!("{}: {err}", T::NAME)))?;
    T::run(input, session)
}

/// Every tool this build offers: only ones that work end to end.
const REGISTRY: &[Entry] = &[
    entry::<crate::crmb::tools::RunSoqlQuery>(),
    entry::<crate::crmb::tools::GetObjectFields>(),
    entry::<crate::crmb::tools::GetRecord>(),
    entry::<crate::crmb::tools::CreateRecord>(),
    entry::<crate::crmb::tools::UpdateRecord>(),
    entry::<crate::crmb::tools::GenerateRecordUrl>(),
    entry::<crate::crma::tools::SearchRecords>(),
    entry::<crate::crma::tools::GetRecord>(),
    entry::<crate::crma::tools::CreateRecord>(),
    entry::<crate::crma::tools::UpdateRecord>(),
    entry::<crate::crma::tools::MergeCompanies>(),
    entry::<crate::crma::associations::GetAssociations>(),
    entry::<crate::crma::associations::CreateAssociation>(),
    entry::<crate::crma::activity::LogActivity>(),
    entry::<crate::crma::tools::ListOwners>(),
    entry::<crate::crma::tools::ListUsers>(),
    entry::<crate::crma::metadata::ListRoles>(),
    entry::<crate::crma::metadata::GetPipelineStages>(),
    entry::<crate::crma::metadata::GetProperties>(),
    entry::<crate::crma::metadata::GetAccountDetails>(),
    entry::<crate::crma::sync::SyncUsers>(),
    entry::<crate::crma::metadata::GenerateRecordUrl>(),
];

/// The specs of every tool, for `list-tools`.
pub fn list_tools() -> Vec<ToolSpec> {
    REGISTRY
        .iter()
        .map(|e| ToolSpec {
            name: e.name,
            description: e.description,
            input_schema: (e.schema)(),
            read_only: e.read_only,
        })
        .collect()
}

/// Runs one tool by name on JSON input and returns its JSON output.
pub fn call_tool(name: &str, input: &str, session: &mut Session<'_>) -> Result<String, ToolError> {
    let entry = REGISTRY.iter().find(|e| e.name == name).ok_or_else(|| {
        let names: Vec<_> = REGISTRY.iter().map(|e| e.name).collect();
        ToolError::invalid(format!(
            "there is no tool named {name:?}; the tools are: {}",
            names.join(", ")
        ))
    })?;
    let output = (entry.call)(input, session)?;
    Ok(output.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::tests::ScriptedTransport;

    #[test]
    fn every_tool_has_an_object_schema_that_refuses_unknown_fields() {
        for spec in list_tools() {
            let schema: Value = serde_json::from_str(&spec.input_schema).unwrap();
            assert_eq!(schema["type"], "object", "{}", spec.name);
            assert_eq!(schema["additionalProperties"], false, "{}", spec.name);
            assert_eq!(
                schema["$schema"],
                "https://json-schema.org/draft/2020-12/schema"
            );
            assert!(
                spec.description.len() > 40,
                "{} needs a real description",
                spec.name
            );
        }
    }

    #[test]
    fn unknown_tools_and_fields_are_invalid_input_with_nothing_sent() {
        let ctx = CallContext::default();
        let err = ConfigError {
            key: "X",
            problem: "unset".into(),
        };
        let mut transport = ScriptedTransport::default();
        let mut session = Session::new(&ctx, Err(&err), &mut transport);
        let e = call_tool("crmb_delete_record", "{}", &mut session).unwrap_err();
        assert!(
            matches!(&e, ToolError::InvalidInput(m) if m.contains("crmb_get_record")),
            "{e:?}"
        );
        let e = call_tool(
            "crmb_get_record",
            r#"{"object":"Account","record_id":"001000000000001","colour":"red"}"#,
            &mut session,
        )
        .unwrap_err();
        assert!(
            matches!(&e, ToolError::InvalidInput(m) if m.contains("unknown field `colour`")),
            "{e:?}"
        );
        let e = call_tool("crmb_get_record", "not json", &mut session).unwrap_err();
        assert!(matches!(e, ToolError::InvalidInput(_)));
        assert!(transport.sent.is_empty());
    }
}
