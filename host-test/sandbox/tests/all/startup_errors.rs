//! Start-up errors people can see (issue 40): a server that cannot start says why in one line on
//! stderr and exits non-zero; `mcp` also answers its client's first request with that line as a
//! JSON-RPC error, and writes nothing but JSON-RPC on stdout. The data directory is the
//! platform's (XDG_DATA_HOME), never the working directory.

use crate::fixtures::{cache_home, temp_dir};
use serde_json::{Value, json};
use std::io::{Read, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const BINARY: &str = env!("CARGO_BIN_EXE_crm-sandbox");

/// The README's Claude Desktop arguments.
const CLAUDE_DESKTOP: [&str; 5] = ["mcp", "--tenant", "acme", "--user", "you@example.com"];

/// `crm-sandbox` with the run's component cache, in `cwd`, its data under `xdg_data_home`.
fn sandbox(cwd: &Path, xdg_data_home: &Path, args: &[&str]) -> Command {
    let mut command = Command::new(BINARY);
    command
        .current_dir(cwd)
        .env("XDG_CACHE_HOME", cache_home())
        .env("XDG_DATA_HOME", xdg_data_home)
        .args(args);
    command
}

/// What a process wrote and how it ended, given `input` on a stdin held open throughout: a
/// server that cannot start must answer and exit without waiting for its client to hang up.
fn run_holding_stdin(mut command: Command, input: &str) -> std::process::Output {
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(input.as_bytes()).unwrap();
    let drain = |mut from: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            let _ = from.read_to_end(&mut bytes);
            bytes
        })
    };
    let stdout = drain(Box::new(child.stdout.take().unwrap()));
    let stderr = drain(Box::new(child.stderr.take().unwrap()));
    let deadline = Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("still running 60 s after its first request, stdin open");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    drop(stdin);
    std::process::Output {
        status,
        stdout: stdout.join().unwrap(),
        stderr: stderr.join().unwrap(),
    }
}

fn initialize(id: Value) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"}}})
    .to_string()
}

/// Every stdout line parsed as a JSON-RPC message.
fn json_rpc_lines(stdout: &[u8]) -> Vec<Value> {
    String::from_utf8_lossy(stdout)
        .lines()
        .map(|line| {
            let message: Value = serde_json::from_str(line)
                .unwrap_or_else(|e| panic!("stdout carried a non-JSON line {line:?}: {e}"));
            assert_eq!(message["jsonrpc"], "2.0", "{line}");
            message
        })
        .collect()
}

#[test]
fn mcp_that_cannot_make_its_data_directory_answers_the_client_with_why_and_exits() {
    let dir = temp_dir("startup-no-data-dir");
    std::fs::create_dir_all(&dir).unwrap();
    // A data home under a regular file: made by no one, root included ("Not a directory").
    let file = dir.join("a-file");
    std::fs::write(&file, b"").unwrap();
    let input = format!(
        "not json\n{}\n{}\n{}\n",
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 9}}),
        initialize(json!("init-1")),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
    );
    let out = run_holding_stdin(sandbox(&dir, &file.join("x"), &CLAUDE_DESKTOP), &input);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");

    let said = stderr.trim_end();
    assert_eq!(stderr.lines().count(), 1, "one line on stderr: {stderr}");
    let data_dir = file.join("x").join("crm-host");
    assert_eq!(
        said,
        format!(
            "crm-sandbox: cannot create the data directory {}: Not a directory. Pass \
             --data-dir <a folder you can write> or set XDG_DATA_HOME.",
            data_dir.display()
        )
    );
    // Only the first request is answered, with its own id, and nothing else is on stdout.
    let messages = json_rpc_lines(&out.stdout);
    assert_eq!(
        messages,
        [json!({"jsonrpc": "2.0", "id": "init-1",
                "error": {"code": -32603, "message": said}})]
    );
    assert!(!dir.join("crm-host-data").exists(), "nothing in the cwd");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn mcp_given_arguments_it_refuses_answers_the_client_too() {
    let dir = temp_dir("startup-bad-args");
    std::fs::create_dir_all(&dir).unwrap();
    let out = run_holding_stdin(
        sandbox(&dir, &dir.join("xdg"), &["mcp", "--tenat", "acme"]),
        &format!("{}\n", initialize(json!(0))),
    );
    assert_eq!(out.status.code(), Some(2));
    let messages = json_rpc_lines(&out.stdout);
    assert_eq!(messages.len(), 1, "{messages:?}");
    assert_eq!(messages[0]["id"], 0);
    let message = messages[0]["error"]["message"].as_str().unwrap();
    assert!(
        message.starts_with("crm-sandbox: unexpected argument '--tenat' found.")
            && message.contains("crm-sandbox mcp --help"),
        "{message}"
    );
    assert!(!message.contains('\n'));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--tenat"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn serve_that_cannot_start_says_why_on_stderr_only() {
    let dir = temp_dir("startup-serve");
    std::fs::create_dir_all(&dir).unwrap();
    let missing = dir.join("missing.toml");
    let out = sandbox(
        &dir,
        &dir.join("xdg"),
        &["serve", "--listen", "127.0.0.1:0"],
    )
    .arg("--tenants")
    .arg(&missing)
    .stdin(Stdio::null())
    .output()
    .unwrap();
    assert!(!out.status.success());
    assert!(
        out.stdout.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.starts_with(&format!("crm-sandbox: --tenants {}: ", missing.display())),
        "{stderr}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn state_goes_to_xdg_data_home_not_the_working_directory() {
    let dir = temp_dir("startup-xdg");
    let cwd = dir.join("cwd");
    std::fs::create_dir_all(&cwd).unwrap();
    let out = sandbox(&cwd, &dir.join("xdg"), &["tools"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let tenant = dir.join("xdg/crm-host/acme");
    assert!(tenant.join("mappings.sqlite").is_file());
    assert!(tenant.join("results").is_dir());
    assert_eq!(
        std::fs::read_dir(&cwd).unwrap().count(),
        0,
        "nothing in the cwd"
    );
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(dir.join("xdg/crm-host"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o700);
    }
    let _ = std::fs::remove_dir_all(&dir);
}
