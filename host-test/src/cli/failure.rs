//! Start-up errors as people see them: one line on stderr, `<program>: <what happened>. <what to
//! do>`, and for `mcp`, whose client reads only stdout, also the JSON-RPC error answering the
//! client's first request (a client shows that; it shows a server that just exits as a closed
//! connection).

use super::stop_signal;
use crate::mcp::stdio_failure;
use std::process::ExitCode;

/// This program's name, as the first word of its error lines (`crm-host`, `crm-sandbox`).
fn program_name() -> String {
    std::env::args_os()
        .next()
        .and_then(|arg0| {
            let stem = std::path::Path::new(&arg0).file_stem()?;
            Some(stem.to_string_lossy().into_owned())
        })
        .filter(|name| !name.is_empty())
        .unwrap_or_else(|| "crm-host".into())
}

/// A start-up error as the one line stderr and an MCP client show: `<program>: <problem>`.
pub(super) fn one_line(problem: &str) -> String {
    let lines: Vec<&str> = problem
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    format!("{}: {}", program_name(), lines.join(" "))
}

/// `mcp` could not start: its client (on stdin and stdout) gets `line` as the JSON-RPC error
/// answering its first request, within [`stdio_failure::WAIT_FOR_REQUEST`]. A person at a
/// terminal has read it on stderr already.
pub(super) async fn tell_the_client(line: &str) {
    use std::io::IsTerminal;
    if std::io::stdin().is_terminal() {
        return;
    }
    let (input, output) = crate::mcp::stdio::streams();
    let wait = stdio_failure::WAIT_FOR_REQUEST;
    tokio::select! {
        _ = stdio_failure::answer_first_request(input, output, line, wait) => {}
        () = stop_signal() => {}
    }
}

/// Arguments clap refused: its message on stderr as ever (help and version are not errors);
/// for `mcp`, its first line also answers the client, as any start-up error does.
pub(super) fn refuse_arguments(refused: clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    if matches!(
        refused.kind(),
        ErrorKind::DisplayHelp
            | ErrorKind::DisplayVersion
            | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
    ) {
        refused.exit();
    }
    let _ = refused.print();
    let code = u8::try_from(refused.exit_code()).unwrap_or(2);
    if std::env::args_os().skip(1).any(|arg| arg == "mcp") {
        let rendered = refused.to_string();
        let first = rendered.lines().next().unwrap_or_default();
        let first = first.strip_prefix("error: ").unwrap_or(first);
        let line = one_line(&format!(
            "{first}. Fix the server's arguments (see {} mcp --help).",
            program_name()
        ));
        if let Ok(runtime) = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
        {
            runtime.block_on(tell_the_client(&line));
        }
    }
    ExitCode::from(code)
}
