//! The host's audit trail: one JSON line per tool call and per outgoing request.
//!
//! It is written by the host, around the component and inside the HTTP hooks, so the
//! component cannot skip it. It holds who, what, outcome and timing, never a credential and
//! never record contents (paths carry ids at most; query strings are dropped).

use serde::Serialize;
use std::io::Write;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// One audit line.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum AuditEvent {
    /// A tool call, written when it ends.
    ToolCall {
        /// The call's id; the change journal keeps it with every change the call made.
        call_id: String,
        tenant: String,
        user: String,
        tool: String,
        /// Fingerprint of the component version that served the call.
        plugin_version: String,
        /// `ok`, a `tool-error` case name, or `host-error`.
        outcome: String,
        duration_ms: u64,
        /// Peak linear memory of the component during the call.
        peak_memory_bytes: u64,
    },
    /// An outgoing request, written when it is answered or refused.
    Request {
        tenant: String,
        method: String,
        /// The path only: the query string may carry record contents (SOQL filters).
        path: String,
        status: Option<u16>,
        /// `ok`, `denied` with the reason, or the transport failure.
        outcome: String,
        /// The CRM's or broker's correlation id, when the response carried one.
        correlation_id: Option<String>,
        duration_ms: u64,
    },
}

/// Where audit lines go.
///
/// Lines are written off the hot path: a call serialises its line and appends it to a buffer
/// in memory (one copy, no system call); a background thread writes the buffer out in one
/// `write` every [`FLUSH_INTERVAL`], and the buffer is written out when the last clone is
/// dropped or [`AuditLog::flush`] is called, so a clean stop loses nothing.
#[derive(Clone)]
pub struct AuditLog {
    /// `None` drops lines without serialising them.
    sink: Option<Arc<Sink>>,
    memory: Option<Arc<Mutex<Vec<AuditEvent>>>>,
    /// Sees every event as it is recorded (the server's metrics count from the audit trail,
    /// so a figure and the lines behind it never disagree).
    observer: Option<Arc<dyn AuditObserver>>,
}

/// Something that watches the audit trail, e.g. the operator's metrics.
pub trait AuditObserver: Send + Sync {
    fn observe(&self, event: &AuditEvent);
}

/// How long a line may wait in memory before the background thread writes it out.
pub const FLUSH_INTERVAL: Duration = Duration::from_millis(100);

/// A buffer this large is written out at once by the call that filled it, so a burst of
/// lines never holds much memory.
const FLUSH_AT_BYTES: usize = 64 << 10;

/// Lines waiting to be written, and the writer they go to.
struct Sink {
    pending: Mutex<Vec<u8>>,
    /// Locked for the whole of a write-out, so batches reach the writer in order.
    writer: Mutex<Box<dyn Write + Send>>,
}

impl Sink {
    /// Writes out whatever is waiting, in one `write_all`, then flushes the writer.
    fn write_out(&self) -> std::io::Result<()> {
        let mut writer = self.writer.lock().unwrap_or_else(|e| e.into_inner());
        let batch = std::mem::take(&mut *self.pending.lock().unwrap_or_else(|e| e.into_inner()));
        if batch.is_empty() {
            return Ok(());
        }
        writer.write_all(&batch).and_then(|()| writer.flush())
    }

    /// As [`Sink::write_out`], reporting a failure on stderr: an audit write failure must
    /// not break the user's call.
    fn write_out_or_report(&self) {
        if let Err(err) = self.write_out() {
            eprintln!("audit log write failed: {err}");
        }
    }
}

impl Drop for Sink {
    fn drop(&mut self) {
        self.write_out_or_report();
    }
}

impl AuditLog {
    /// Appends JSON lines to a file.
    pub fn to_file(path: &Path) -> std::io::Result<Self> {
        let file = crate::private_fs::options()
            .create(true)
            .append(true)
            .open(path)?;
        Ok(Self::to_writer(Box::new(file)))
    }

    /// Writes JSON lines to `writer`, batched (see [`AuditLog`]).
    pub fn to_writer(writer: Box<dyn Write + Send>) -> Self {
        let sink = Arc::new(Sink {
            pending: Mutex::default(),
            writer: Mutex::new(writer),
        });
        // The thread holds the sink weakly: dropping the last log still writes out and ends it.
        let weak = Arc::downgrade(&sink);
        let flusher = std::thread::Builder::new()
            .name("audit-flush".into())
            .spawn(move || {
                loop {
                    std::thread::sleep(FLUSH_INTERVAL);
                    match weak.upgrade() {
                        Some(sink) => sink.write_out_or_report(),
                        None => break,
                    }
                }
            });
        if let Err(err) = flusher {
            // Lines still reach the writer, at the next full buffer, flush or drop.
            eprintln!("audit log: no background flush ({err}); lines are written at exit");
        }
        AuditLog {
            sink: Some(sink),
            memory: None,
            observer: None,
        }
    }

    /// Drops lines (the CLI without `--audit`, benchmarks).
    pub fn discard() -> Self {
        AuditLog {
            sink: None,
            memory: None,
            observer: None,
        }
    }

    /// Keeps events in memory, for tests to inspect.
    pub fn in_memory() -> Self {
        AuditLog {
            sink: None,
            memory: Some(Arc::default()),
            observer: None,
        }
    }

    /// Events kept by an [`AuditLog::in_memory`] log.
    pub fn events(&self) -> Vec<AuditEvent> {
        self.memory
            .as_ref()
            .map(|m| m.lock().unwrap().clone())
            .unwrap_or_default()
    }

    /// The same log, with `observer` seeing every event recorded from now on.
    pub fn observed_by(mut self, observer: Arc<dyn AuditObserver>) -> Self {
        self.observer = Some(observer);
        self
    }

    pub fn record(&self, event: AuditEvent) {
        if let Some(observer) = &self.observer {
            observer.observe(&event);
        }
        if let Some(sink) = &self.sink {
            let line = json_line(&event, now_ms());
            let full = {
                let mut pending = sink.pending.lock().unwrap_or_else(|e| e.into_inner());
                pending.extend_from_slice(&line);
                pending.len() >= FLUSH_AT_BYTES
            };
            if full {
                sink.write_out_or_report();
            }
        }
        if let Some(memory) = &self.memory {
            memory.lock().unwrap_or_else(|e| e.into_inner()).push(event);
        }
    }

    /// Writes out every line recorded so far (the CLI calls it before exiting; dropping the
    /// last clone does the same).
    pub fn flush(&self) -> std::io::Result<()> {
        self.sink.as_ref().map_or(Ok(()), |sink| sink.write_out())
    }
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or_default()
}

/// One audit line: the event's fields and `at_ms`, keys in sorted order, and a newline.
fn json_line(event: &AuditEvent, at_ms: u64) -> Vec<u8> {
    let mut line = serde_json::to_value(event).expect("audit events serialize");
    line["at_ms"] = at_ms.into();
    let mut bytes = serde_json::to_vec(&line).expect("audit lines serialize");
    bytes.push(b'\n');
    bytes
}

/// Milliseconds, for audit durations.
pub fn millis(duration: Duration) -> u64 {
    duration.as_millis().min(u64::MAX as u128) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A writer the test can read back.
    #[derive(Clone, Default)]
    struct Shared(Arc<Mutex<Vec<u8>>>);

    impl Write for Shared {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(bytes);
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    impl Shared {
        fn lines(&self) -> Vec<serde_json::Value> {
            String::from_utf8(self.0.lock().unwrap().clone())
                .unwrap()
                .lines()
                .map(|l| serde_json::from_str(l).unwrap())
                .collect()
        }
    }

    fn call(n: u64) -> AuditEvent {
        AuditEvent::ToolCall {
            call_id: format!("{n:016x}"),
            tenant: "acme".into(),
            user: "u".into(),
            tool: format!("tool-{n}"),
            plugin_version: "0123456789abcdef".into(),
            outcome: "ok".into(),
            duration_ms: n,
            peak_memory_bytes: 1 << 20,
        }
    }

    #[test]
    fn a_line_is_the_event_and_its_time_as_compact_json_with_sorted_keys() {
        let request = AuditEvent::Request {
            tenant: "acme".into(),
            method: "GET".into(),
            path: "/services/data/v62.0/sobjects/Account/001".into(),
            status: Some(200),
            outcome: "ok".into(),
            correlation_id: None,
            duration_ms: 3,
        };
        let line = String::from_utf8(json_line(&request, 1_700_000_000_123)).unwrap();
        assert_eq!(
            line,
            "{\"at_ms\":1700000000123,\"correlation_id\":null,\"duration_ms\":3,\"event\":\"request\",\
             \"method\":\"GET\",\"outcome\":\"ok\",\"path\":\"/services/data/v62.0/sobjects/Account/001\",\
             \"status\":200,\"tenant\":\"acme\"}\n"
        );
    }

    #[test]
    fn every_line_reaches_the_writer_in_order_when_the_last_clone_is_dropped() {
        let out = Shared::default();
        let log = AuditLog::to_writer(Box::new(out.clone()));
        let other = log.clone();
        // Enough lines to fill the buffer more than once.
        let count = 2 * FLUSH_AT_BYTES as u64 / 100;
        for n in 0..count {
            if n % 2 == 0 { &log } else { &other }.record(call(n));
        }
        drop(log);
        drop(other);
        let lines = out.lines();
        assert_eq!(lines.len() as u64, count);
        for (n, line) in lines.iter().enumerate() {
            assert_eq!(line["tool"], format!("tool-{n}"));
            assert_eq!(line["event"], "tool_call");
            assert!(line["at_ms"].as_u64().unwrap() > 0);
        }
    }

    #[test]
    fn flush_writes_out_what_was_recorded() {
        let out = Shared::default();
        let log = AuditLog::to_writer(Box::new(out.clone()));
        log.record(call(1));
        log.flush().unwrap();
        assert_eq!(out.lines().len(), 1);
        log.flush().unwrap();
        assert_eq!(out.lines().len(), 1, "nothing written twice");
    }

    #[test]
    fn lines_are_written_in_the_background_without_a_flush() {
        let out = Shared::default();
        let log = AuditLog::to_writer(Box::new(out.clone()));
        log.record(call(1));
        // Waits for the background thread (a bound, not a timing assertion).
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        while out.lines().is_empty() && std::time::Instant::now() < deadline {
            std::thread::sleep(FLUSH_INTERVAL / 4);
        }
        assert_eq!(out.lines().len(), 1);
        drop(log);
    }

    #[test]
    fn a_file_log_holds_every_line_once_dropped() {
        let path =
            std::env::temp_dir().join(format!("crm-audit-unit-{}.jsonl", std::process::id()));
        let _ = std::fs::remove_file(&path);
        let log = AuditLog::to_file(&path).unwrap();
        for n in 0..10 {
            log.record(call(n));
        }
        drop(log);
        let text = std::fs::read_to_string(&path).unwrap();
        let _ = std::fs::remove_file(&path);
        assert_eq!(text.lines().count(), 10);
        assert!(text.ends_with('\n'));
    }

    #[test]
    fn in_memory_keeps_events_and_discard_keeps_nothing() {
        let memory = AuditLog::in_memory();
        memory.record(call(1));
        assert_eq!(memory.events(), vec![call(1)]);
        let discard = AuditLog::discard();
        discard.record(call(1));
        assert!(discard.events().is_empty());
        discard.flush().unwrap();
    }
}
