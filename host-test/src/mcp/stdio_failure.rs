//! `crm-host mcp` when it cannot start: the client gets an MCP error it shows.
//!
//! A client that starts a stdio server and sees it exit without a word shows only that the
//! connection closed (or that a line on stdout was not JSON-RPC), so its user never learns why.
//! A server that cannot serve therefore reads the client's first request (`initialize`, from any
//! client) and answers it with a JSON-RPC error whose message is the same one line the process
//! writes to stderr; then it exits. Notifications, responses and lines that are not JSON-RPC get
//! no answer.

use serde_json::{Value, json};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader};

/// JSON-RPC's "Internal error": the server cannot do what was asked, whatever it was.
pub const INTERNAL_ERROR: i64 = -32603;

/// How long a server that cannot start waits for its client's first request.
pub const WAIT_FOR_REQUEST: Duration = Duration::from_secs(10);

/// The most bytes read from the client while waiting for its first request.
const MOST_READ: u64 = 4 << 20;

/// What one line from the client is, to a server that cannot serve.
#[derive(Debug, Clone, PartialEq)]
pub enum Incoming {
    /// A request, with its id: answered.
    Request(Value),
    /// A notification, a response, a batch or a line that is not JSON-RPC: not answered.
    Ignored,
}

/// What `line` (one JSON-RPC message, as stdio frames them) is.
pub fn classify(line: &str) -> Incoming {
    let Ok(Value::Object(message)) = serde_json::from_str::<Value>(line.trim()) else {
        return Incoming::Ignored;
    };
    match (message.get("method"), message.get("id")) {
        // MCP's ids are strings or numbers (never null).
        (Some(Value::String(_)), Some(id @ (Value::String(_) | Value::Number(_)))) => {
            Incoming::Request(id.clone())
        }
        _ => Incoming::Ignored,
    }
}

/// The JSON-RPC error response to the request `id`, saying `message` (one line, no newline).
pub fn error_response(id: &Value, message: &str) -> String {
    json!({
        "jsonrpc": "2.0",
        "id": id,
        "error": {"code": INTERNAL_ERROR, "message": message},
    })
    .to_string()
}

/// The answer to `line` from a server that cannot serve, when it is a request.
pub fn answer(line: &str, message: &str) -> Option<String> {
    match classify(line) {
        Incoming::Request(id) => Some(error_response(&id, message)),
        Incoming::Ignored => None,
    }
}

/// Reads `input` until the client's first request and answers it on `output` with `message`,
/// for at most `wait`. Whether a request was answered (not when the client closed its end,
/// sent none in time, or is gone).
pub async fn answer_first_request<R, W>(
    input: R,
    mut output: W,
    message: &str,
    wait: Duration,
) -> bool
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let read_and_answer = async {
        let mut input = BufReader::new(input.take(MOST_READ));
        let mut line = Vec::new();
        loop {
            line.clear();
            if input.read_until(b'\n', &mut line).await? == 0 {
                return Ok(false);
            }
            if let Some(reply) = answer(&String::from_utf8_lossy(&line), message) {
                output.write_all(format!("{reply}\n").as_bytes()).await?;
                output.flush().await?;
                return Ok(true);
            }
        }
    };
    let answered: std::io::Result<bool> = match tokio::time::timeout(wait, read_and_answer).await {
        Ok(answered) => answered,
        Err(_elapsed) => Ok(false),
    };
    answered.unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAID: &str = "crm-host: cannot create the data directory /x: Not a directory. Pass \
                        --data-dir <a folder you can write> or set XDG_DATA_HOME.";

    fn parsed(reply: &str) -> Value {
        serde_json::from_str(reply).unwrap()
    }

    #[test]
    fn a_request_gets_an_error_with_its_own_id_and_the_line() {
        let initialize = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{}}"#;
        let reply = parsed(&answer(initialize, SAID).unwrap());
        assert_eq!(
            reply,
            json!({"jsonrpc": "2.0", "id": 0,
                   "error": {"code": -32603, "message": SAID}})
        );
        let named = r#" {"jsonrpc":"2.0","id":"req-7","method":"tools/list"} "#;
        assert_eq!(parsed(&answer(named, SAID).unwrap())["id"], "req-7");
        assert!(!error_response(&json!(1), SAID).contains('\n'), "one line");
    }

    #[test]
    fn notifications_responses_and_malformed_lines_get_no_answer() {
        for line in [
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            r#"{"jsonrpc":"2.0","id":3,"result":{}}"#,
            r#"{"jsonrpc":"2.0","id":null,"method":"ping"}"#,
            r#"{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":7}"#,
            r#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"ping""#,
            "not json",
            "",
            "\u{fffd}\u{fffd}",
        ] {
            assert_eq!(classify(line), Incoming::Ignored, "{line}");
            assert_eq!(answer(line, SAID), None, "{line}");
        }
    }

    #[tokio::test]
    async fn the_first_request_is_answered_after_whatever_came_before_it() {
        let input = "garbage\n{\"jsonrpc\":\"2.0\",\"method\":\"notifications/x\"}\n\
                     {\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"initialize\"}\n\
                     {\"jsonrpc\":\"2.0\",\"id\":6,\"method\":\"tools/list\"}\n";
        let mut output = Vec::new();
        let answered =
            answer_first_request(input.as_bytes(), &mut output, SAID, WAIT_FOR_REQUEST).await;
        assert!(answered);
        let written = String::from_utf8(output).unwrap();
        assert_eq!(written.lines().count(), 1, "{written}");
        assert!(written.ends_with('\n'));
        assert_eq!(parsed(&written)["id"], 5);
    }

    #[tokio::test]
    async fn a_closed_or_silent_client_gets_nothing() {
        let mut output = Vec::new();
        let closed = "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/x\"}\n";
        assert!(
            !answer_first_request(closed.as_bytes(), &mut output, SAID, WAIT_FOR_REQUEST).await
        );
        // A request with no newline yet, from a client that never finishes it.
        let (mut client, server) = tokio::io::duplex(64);
        client
            .write_all(b"{\"jsonrpc\":\"2.0\",\"id\":1")
            .await
            .unwrap();
        let started = std::time::Instant::now();
        let wait = Duration::from_millis(50);
        assert!(!answer_first_request(server, &mut output, SAID, wait).await);
        assert!(started.elapsed() < Duration::from_secs(5));
        assert!(output.is_empty());
        drop(client);
    }
}
