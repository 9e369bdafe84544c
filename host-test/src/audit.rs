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
#[derive(Clone)]
pub struct AuditLog {
    sink: Arc<Mutex<Box<dyn Write + Send>>>,
    memory: Option<Arc<Mutex<Vec<AuditEvent>>>>,
}

impl AuditLog {
    /// Appends JSON lines to a file.
    pub fn to_file(path: &Path) -> std::io::Result<Self> {
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)?;
        Ok(Self::to_writer(Box::new(file)))
    }

    pub fn to_writer(writer: Box<dyn Write + Send>) -> Self {
        AuditLog {
            sink: Arc::new(Mutex::new(writer)),
            memory: None,
        }
    }

    /// Drops lines (benchmarks).
    pub fn discard() -> Self {
        Self::to_writer(Box::new(std::io::sink()))
    }

    /// Keeps events in memory as well, for tests to inspect.
    pub fn in_memory() -> Self {
        AuditLog {
            sink: Arc::new(Mutex::new(Box::new(std::io::sink()))),
            memory: Some(Arc::default()),
        }
    }

    /// Events kept by an [`AuditLog::in_memory`] log.
    pub fn events(&self) -> Vec<AuditEvent> {
        self.memory
            .as_ref()
            .map(|m| m.lock().unwrap().clone())
            .unwrap_or_default()
    }

    pub fn record(&self, event: AuditEvent) {
        let at_ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_millis() as u64)
            .unwrap_or_default();
        let mut line = serde_json::to_value(&event).expect("audit events serialize");
        line["at_ms"] = at_ms.into();
        let mut sink = self.sink.lock().unwrap_or_else(|e| e.into_inner());
        // An audit write failure must not break the user's call; it is reported on stderr.
        if let Err(err) = writeln!(sink, "{line}").and_then(|()| sink.flush()) {
            eprintln!("audit log write failed: {err}");
        }
        if let Some(memory) = &self.memory {
            memory.lock().unwrap_or_else(|e| e.into_inner()).push(event);
        }
    }
}

/// Milliseconds, for audit durations.
pub fn millis(duration: Duration) -> u64 {
    duration.as_millis().min(u64::MAX as u128) as u64
}
