//! The person confirms a write, not the model (`CRM_POLICY_CONFIRM_WRITES=user`): through an
//! MCP client that declares elicitation, a write shows the person a form (the record, each
//! field's current and new value, the link) and only their "accept" sends it; a decline sends
//! nothing and the journal says `declined`; the model's own token is refused; a client that
//! cannot ask is refused under `user` and gets the token flow under `user-or-token`.

use crate::fixtures::{ALL_SCOPES, plugin};
use crate::mcp::{answer, call, tool_error};
use crm_host::mcp::{McpServer, Principal};
use crm_host::{AuditLog, CallRequest, Host};
use crm_sandbox::SandboxCrm;
use rmcp::model::{
    ClientCapabilities, ClientConfig, ElicitRequestParams, ElicitResult, ElicitationAction,
    ElicitationCapability, Implementation,
};
use rmcp::service::{RequestContext, RunningService};
use rmcp::{ClientHandler, ErrorData as McpError, RoleClient, ServiceExt};
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};

/// A person at an MCP client: answers every form with `answer`, and remembers what was asked.
#[derive(Clone)]
struct Person {
    answer: ElicitationAction,
    asked: Arc<Mutex<Vec<String>>>,
}

impl ClientHandler for Person {
    fn get_info(&self) -> ClientConfig {
        let mut capabilities = ClientCapabilities::default();
        capabilities.elicitation = Some(ElicitationCapability::default());
        ClientConfig::new(capabilities, Implementation::new("person", "1"))
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, McpError> {
        if let ElicitRequestParams::FormElicitationParams { message, .. } = request {
            self.asked.lock().unwrap().push(message);
        }
        let result = ElicitResult::new(self.answer.clone());
        Ok(match self.answer {
            ElicitationAction::Accept => result.with_content(json!({"confirm": true})),
            _ => result,
        })
    }
}

/// The acme sandbox with `CRM_POLICY_CONFIRM_WRITES` set to `mode`.
fn acme(mode: &str) -> Arc<Host> {
    let host = Arc::new(Host::new(
        crate::fixtures::runtime(),
        Arc::new(SandboxCrm::new()),
        AuditLog::in_memory(),
    ));
    let mut spec = SandboxCrm::tenant_spec("acme");
    spec.settings = vec![("CRM_POLICY_CONFIRM_WRITES".into(), mode.into())];
    host.add_tenant(spec, plugin()).unwrap();
    host
}

fn principal() -> Principal {
    Principal {
        tenant_id: "acme".into(),
        user_id: "demo-user".into(),
        granted_scopes: ALL_SCOPES.iter().map(|s| s.to_string()).collect(),
        instance_url: Some(SandboxCrm::instance_url("acme")),
        authority: crm_host::mcp::Authority::Process,
    }
}

async fn client<C: ClientHandler>(host: Arc<Host>, handler: C) -> RunningService<RoleClient, C> {
    let (server_end, client_end) = tokio::io::duplex(1 << 20);
    let server = McpServer::for_principal(host, principal());
    tokio::spawn(async move {
        if let Ok(running) = server.serve(server_end).await {
            let _ = running.waiting().await;
        }
    });
    handler.serve(client_end).await.unwrap()
}

/// The deal's amount, read around the MCP server.
async fn amount(host: &Host) -> Value {
    let out = host
        .call(CallRequest {
            tenant_id: "acme".into(),
            user_id: "demo-user".into(),
            granted_scopes: ALL_SCOPES.iter().map(|s| s.to_string()).collect(),
            instance_url: None,
            tool: "crma_get_record".into(),
            input: json!({"object_type": "deals", "record_id": "357300", "properties": ["amount"]})
                .to_string(),
        })
        .await
        .unwrap();
    serde_json::from_str::<Value>(&out).unwrap()["properties"]["amount"].clone()
}

/// The journal's statuses for the deal, newest first.
async fn statuses<C: ClientHandler>(session: &RunningService<RoleClient, C>) -> Vec<String> {
    let listed = answer(
        &session
            .call_tool(call("crm_list_changes", json!({"record_id": "357300"})))
            .await
            .unwrap(),
    );
    listed["changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["status"].as_str().unwrap().to_string())
        .collect()
}

fn raise() -> Value {
    json!({"object_type": "deals", "record_id": "357300", "properties": {"amount": "195000"}})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_person_accepts_and_the_write_is_made_once() {
    let host = acme("user");
    let person = Person {
        answer: ElicitationAction::Accept,
        asked: Arc::default(),
    };
    let asked = person.asked.clone();
    let session = client(host.clone(), person).await;
    let result = session
        .call_tool(call("crma_update_record", raise()))
        .await
        .unwrap();
    assert_eq!(result.is_error, Some(false), "{result:?}");
    let out = answer(&result);
    assert!(out["change_id"].is_string(), "{out}");
    assert!(
        !out.to_string().contains("confirmation_token"),
        "the model never holds a token: {out}"
    );
    assert_eq!(amount(&host).await, "195000");
    let asked = asked.lock().unwrap();
    assert_eq!(asked.len(), 1);
    assert!(
        asked[0].contains("update deals 357300 in HubSpot"),
        "{}",
        asked[0]
    );
    assert!(asked[0].contains("amount: 180000 → 195000"), "{}", asked[0]);
    assert!(
        asked[0].contains("https://app.hubspot.com/contacts/24681357/record/0-3/357300"),
        "{}",
        asked[0]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_decline_sends_nothing_and_the_journal_says_declined() {
    let host = acme("user");
    for answer in [ElicitationAction::Decline, ElicitationAction::Cancel] {
        let person = Person {
            answer,
            asked: Arc::default(),
        };
        let session = client(host.clone(), person).await;
        let result = session
            .call_tool(call("crma_update_record", raise()))
            .await
            .unwrap();
        assert_eq!(tool_error(&result)["error"]["kind"], "declined");
        assert_eq!(amount(&host).await, "180000", "nothing was sent");
    }
    let session = client(host.clone(), ()).await;
    assert_eq!(statuses(&session).await, ["declined", "declined"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_models_own_token_is_refused_and_a_client_that_cannot_ask_is_told_why() {
    let host = acme("user");
    let person = Person {
        answer: ElicitationAction::Accept,
        asked: Arc::default(),
    };
    let session = client(host.clone(), person).await;
    for input in [
        json!({"object_type": "deals", "record_id": "357300", "properties": {"amount": "1"},
               "confirmation_token": "cf1.made-up"}),
        json!({"object_type": "deals", "record_id": "357300", "properties": {"amount": "1"},
               "preview": true}),
    ] {
        let result = session
            .call_tool(call("crma_update_record", input))
            .await
            .unwrap();
        assert_eq!(tool_error(&result)["error"]["kind"], "invalid-input");
    }
    // A client without elicitation: refused under `user`, nothing sent.
    let session = client(host.clone(), ()).await;
    let result = session
        .call_tool(call("crma_update_record", raise()))
        .await
        .unwrap();
    let error = tool_error(&result);
    assert_eq!(error["error"]["kind"], "forbidden");
    assert!(
        error["error"]["message"]
            .as_str()
            .unwrap()
            .contains("cannot ask its user"),
        "{error}"
    );
    assert_eq!(amount(&host).await, "180000");
    // Reads go on.
    let read = session
        .call_tool(call(
            "crma_get_record",
            json!({"object_type": "deals", "record_id": "357300"}),
        ))
        .await
        .unwrap();
    assert_eq!(read.is_error, Some(false));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn under_user_or_token_a_client_that_cannot_ask_uses_the_token() {
    let host = acme("user-or-token");
    let session = client(host.clone(), ()).await;
    let mut preview_input = raise();
    preview_input["preview"] = json!(true);
    let preview = answer(
        &session
            .call_tool(call("crma_update_record", preview_input))
            .await
            .unwrap(),
    );
    let token = preview["preview"]["confirmation_token"].as_str().unwrap();
    let mut apply = raise();
    apply["confirmation_token"] = json!(token);
    let result = session
        .call_tool(call("crma_update_record", apply))
        .await
        .unwrap();
    assert_eq!(result.is_error, Some(false), "{result:?}");
    assert_eq!(amount(&host).await, "195000");
}

/// The same person on the 2026-07-28 era (`server/discover`, no server-to-client requests):
/// the write answers `input_required` with the form and a signed, single-use request state;
/// rmcp's client asks the person and calls again with the answer.
async fn stateless_client(host: Arc<Host>, person: Person) -> RunningService<RoleClient, Person> {
    use rmcp::model::ProtocolVersion;
    use rmcp::{ClientLifecycleMode, ClientServiceExt};
    let (server_end, client_end) = tokio::io::duplex(1 << 20);
    let server = McpServer::for_principal(host, principal());
    tokio::spawn(async move {
        if let Ok(running) = server.serve(server_end).await {
            let _ = running.waiting().await;
        }
    });
    let client = person
        .serve_with_lifecycle(
            client_end,
            ClientLifecycleMode::Discover {
                preferred_versions: vec![ProtocolVersion::V_2026_07_28],
            },
        )
        .await
        .unwrap();
    assert_eq!(
        client.peer_info().unwrap().protocol_version,
        ProtocolVersion::V_2026_07_28
    );
    client
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_the_2026_era_the_write_waits_for_input_and_only_an_accept_sends_it() {
    let host = acme("user");
    let person = Person {
        answer: ElicitationAction::Decline,
        asked: Arc::default(),
    };
    let asked = person.asked.clone();
    let session = stateless_client(host.clone(), person).await;
    let result = session
        .call_tool(call("crma_update_record", raise()))
        .await
        .unwrap();
    assert_eq!(tool_error(&result)["error"]["kind"], "declined");
    assert_eq!(amount(&host).await, "180000", "declined: nothing sent");
    assert!(asked.lock().unwrap()[0].contains("amount: 180000 → 195000"));

    let person = Person {
        answer: ElicitationAction::Accept,
        asked: Arc::default(),
    };
    let session = stateless_client(host.clone(), person).await;
    let result = session
        .call_tool(call("crma_update_record", raise()))
        .await
        .unwrap();
    assert_eq!(result.is_error, Some(false), "{result:?}");
    assert_eq!(amount(&host).await, "195000");
    assert_eq!(statuses(&session).await, ["applied", "declined"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_the_2026_era_a_forged_or_reused_request_state_writes_nothing() {
    use rmcp::model::{CallToolResponse, ProtocolVersion, RequestMetaObject};
    let host = acme("user");
    let person = Person {
        answer: ElicitationAction::Accept,
        asked: Arc::default(),
    };
    let session = stateless_client(host.clone(), person).await;
    // Driving the rounds by hand: the first answer is input_required with a request state.
    let first = session
        .peer()
        .call_tool_once(call("crma_update_record", raise()))
        .await
        .unwrap();
    let CallToolResponse::InputRequired(required) = first else {
        panic!("expected input_required, got {first:?}");
    };
    let state = required.request_state.clone().unwrap();
    let accept = json!({"confirm": {"action": "accept", "content": {"confirm": true}}});
    let answers: rmcp::model::InputResponses = serde_json::from_value(accept).unwrap();
    let mut meta = RequestMetaObject::new();
    meta.set_protocol_version(ProtocolVersion::V_2026_07_28);
    let retry = |state: String| {
        let mut params = call("crma_update_record", raise());
        params.request_state = Some(state);
        params.input_responses = Some(answers.clone());
        params.meta = Some(meta.clone());
        params
    };
    // A forged state is no token the host signed: refused, nothing sent.
    let forged = session
        .peer()
        .call_tool_once(retry("cf1.forged.state".into()))
        .await
        .unwrap();
    let CallToolResponse::Complete(forged) = forged else {
        panic!("{forged:?}")
    };
    assert_eq!(tool_error(&forged)["error"]["kind"], "invalid-input");
    assert_eq!(amount(&host).await, "180000");
    // The real one writes once; used again it is refused.
    let done = session
        .peer()
        .call_tool_once(retry(state.clone()))
        .await
        .unwrap();
    let CallToolResponse::Complete(done) = done else {
        panic!("{done:?}")
    };
    assert_eq!(done.is_error, Some(false), "{done:?}");
    assert_eq!(amount(&host).await, "195000");
    let again = session.peer().call_tool_once(retry(state)).await.unwrap();
    let CallToolResponse::Complete(again) = again else {
        panic!("{again:?}")
    };
    assert_eq!(tool_error(&again)["error"]["kind"], "invalid-input");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_the_2026_era_a_declined_state_is_used_up_and_a_forged_one_journals_nothing() {
    use rmcp::model::{CallToolResponse, ProtocolVersion, RequestMetaObject};
    let host = acme("user");
    let person = Person {
        answer: ElicitationAction::Accept,
        asked: Arc::default(),
    };
    let session = stateless_client(host.clone(), person).await;
    let first = session
        .peer()
        .call_tool_once(call("crma_update_record", raise()))
        .await
        .unwrap();
    let CallToolResponse::InputRequired(required) = first else {
        panic!("expected input_required, got {first:?}");
    };
    let state = required.request_state.clone().unwrap();
    let mut meta = RequestMetaObject::new();
    meta.set_protocol_version(ProtocolVersion::V_2026_07_28);
    let retry = |state: &str, answer: Value| {
        let mut params = call("crma_update_record", raise());
        params.request_state = Some(state.to_string());
        params.input_responses = Some(serde_json::from_value(json!({"confirm": answer})).unwrap());
        params.meta = Some(meta.clone());
        params
    };
    let complete = |response: CallToolResponse| match response {
        CallToolResponse::Complete(result) => result,
        other => panic!("{other:?}"),
    };
    // A forged state with a "no": nothing is sent and nothing is journalled.
    let forged = session
        .peer()
        .call_tool_once(retry("cf1.forged.state", json!({"action": "decline"})))
        .await
        .unwrap();
    assert_eq!(tool_error(&complete(forged))["error"]["kind"], "declined");
    assert!(statuses(&session).await.is_empty());
    // The real state declined, then the same state "accepted": the token is used up.
    let no = session
        .peer()
        .call_tool_once(retry(&state, json!({"action": "decline"})))
        .await
        .unwrap();
    assert_eq!(tool_error(&complete(no))["error"]["kind"], "declined");
    let yes = session
        .peer()
        .call_tool_once(retry(
            &state,
            json!({"action": "accept", "content": {"confirm": true}}),
        ))
        .await
        .unwrap();
    assert_eq!(tool_error(&complete(yes))["error"]["kind"], "invalid-input");
    assert_eq!(amount(&host).await, "180000");
    assert_eq!(statuses(&session).await, ["declined"]);
}
