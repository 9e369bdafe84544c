//! The operator's answer form, through a real MCP client over stdio. By default each answer
//! comes once, as text, and tools list no output schemas (a client must refuse a result
//! without `structuredContent` from a tool that declares one); `--answers structured` adds
//! `structuredContent`, the same JSON, and the output schemas it is checked against.

use crate::mcp::{call, stdio_command, temp_dir, tool_error};
use rmcp::service::RunningService;
use rmcp::transport::TokioChildProcess;
use rmcp::{RoleClient, ServiceExt};
use serde_json::{Value, json};

/// A failing call's answer: `isError`, no `structuredContent` (a client would check it
/// against the success schema), and the kind and message as text, in either form.
async fn assert_an_error_reads_as_text(client: &RunningService<RoleClient, ()>) {
    let failed = client
        .call_tool(call(
            "crmb_get_record",
            json!({"object": "Account", "record_id": "not-an-id"}),
        ))
        .await
        .unwrap();
    assert_eq!(tool_error(&failed)["error"]["kind"], "invalid-input");
}

/// The first content block's text, as JSON.
fn text_json(result: &rmcp::model::CallToolResult) -> Value {
    let text = &result.content[0].as_text().expect("a text block").text;
    serde_json::from_str(text).expect("the text is the answer as JSON")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn by_default_answers_come_once_as_text_and_tools_list_no_output_schema() {
    let dir = temp_dir("answers-text");
    let mut command = stdio_command(&dir, &[]);
    command.env_remove("CRM_HOST_ANSWERS");
    let transport = TokioChildProcess::new(command).unwrap();
    let client = ().serve(transport).await.unwrap();

    let tools = client.list_all_tools().await.unwrap();
    assert_eq!(tools.len(), 30);
    for tool in &tools {
        assert!(tool.output_schema.is_none(), "{}", tool.name);
        assert!(tool.title.is_some(), "{}", tool.name);
    }

    let query = client
        .call_tool(call(
            "crmb_run_soql_query",
            json!({"query": "SELECT Id, Name, Amount FROM Opportunity LIMIT 5"}),
        ))
        .await
        .unwrap();
    assert_eq!(query.is_error, Some(false));
    assert!(query.structured_content.is_none(), "{query:?}");
    assert_eq!(query.content.len(), 1, "one copy of the answer");
    let out = text_json(&query);
    let rows = out["records"].as_array().unwrap();
    assert!(!rows.is_empty(), "{out}");
    for row in rows {
        let id = row["Id"].as_str().unwrap();
        assert!(
            row["record_url"]
                .as_str()
                .unwrap()
                .ends_with(&format!("/{id}")),
            "{row}"
        );
    }
    // Errors read the same in either form.
    assert_an_error_reads_as_text(&client).await;

    client.cancel().await.unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn structured_answers_carry_structured_content_and_the_same_json_as_text() {
    let dir = temp_dir("answers-structured");
    let transport =
        TokioChildProcess::new(stdio_command(&dir, &[("CRM_HOST_ANSWERS", "structured")])).unwrap();
    let client = ().serve(transport).await.unwrap();

    let tools = client.list_all_tools().await.unwrap();
    for tool in &tools {
        let schema = tool.output_schema.as_ref().expect(&tool.name);
        assert_eq!(schema.get("type"), Some(&json!("object")), "{}", tool.name);
    }
    let query = client
        .call_tool(call(
            "crmb_run_soql_query",
            json!({"query": "SELECT Id, Name, Amount FROM Opportunity LIMIT 5"}),
        ))
        .await
        .unwrap();
    assert_eq!(query.is_error, Some(false));
    let structured = query.structured_content.clone().expect("structuredContent");
    assert_eq!(structured, text_json(&query), "the text is the same JSON");
    assert!(!structured["records"].as_array().unwrap().is_empty());
    assert_an_error_reads_as_text(&client).await;

    client.cancel().await.unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}
