//! `progress`: how far a long call has come, passed on to whoever asked (an MCP client that sent
//! a `progressToken`). Reports are thinned to at most one every [`EVERY`] (the last one always
//! goes) and only ever grow, so a client is told a few times a second, never flooded, and never
//! sees progress go back.

use crate::bindings::crm::plugin::progress as wit;
use std::sync::Arc;
use std::time::{Duration, Instant};
use wasmtime::component::HasData;

/// Where a call's progress goes: `(done, total)`. Called on the host's side of the component,
/// so it must not block: a sink that sends over the network queues the report.
pub type ProgressSink = Arc<dyn Fn(u64, Option<u64>) + Send + Sync>;

/// The least time between two reports passed on.
pub const EVERY: Duration = Duration::from_millis(250);

/// One call's reporting: its sink, the last report passed on, and the newest one held back.
#[derive(Default)]
pub(crate) struct CallProgress {
    sink: Option<ProgressSink>,
    last: Option<(Instant, u64)>,
    held: Option<(u64, Option<u64>)>,
}

impl CallProgress {
    pub(crate) fn new(sink: Option<ProgressSink>) -> Self {
        CallProgress {
            sink,
            last: None,
            held: None,
        }
    }

    /// Passes on the newest report held back by the thinning, when the call has ended: the
    /// last word is always the last count.
    pub(crate) fn flush(&mut self) {
        if let (Some(sink), Some((done, total))) = (&self.sink, self.held.take()) {
            self.last = Some((Instant::now(), done));
            sink(done, total);
        }
    }

    /// Whether a report of `done` (of `total`) at `now` is passed on: the first, the last
    /// (`done` reaching `total`), and otherwise one every [`EVERY`]; never one that does not
    /// grow.
    fn passes(&self, done: u64, total: Option<u64>, now: Instant) -> bool {
        match self.last {
            None => true,
            Some((_, before)) if done <= before => false,
            Some(_) if total.is_some_and(|t| done >= t) => true,
            Some((at, _)) => now.duration_since(at) >= EVERY,
        }
    }

    fn report(&mut self, done: u64, total: Option<u64>) {
        let Some(sink) = &self.sink else {
            return;
        };
        let now = Instant::now();
        if self.passes(done, total, now) {
            self.last = Some((now, done));
            self.held = None;
            sink(done, total);
        } else if self.last.is_none_or(|(_, before)| done > before) {
            self.held = Some((done, total));
        }
    }
}

/// The `progress` capability, for the linker: its host data is the call's [`CallProgress`].
pub(crate) struct Progress;

impl HasData for Progress {
    type Data<'a> = &'a mut CallProgress;
}

impl wit::Host for &mut CallProgress {
    fn report(&mut self, done: u64, total: Option<u64>) {
        CallProgress::report(self, done, total);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    #[test]
    fn reports_are_thinned_only_grow_and_the_last_always_goes() {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let into = seen.clone();
        let mut progress = CallProgress::new(Some(Arc::new(move |done, total| {
            into.lock().unwrap().push((done, total));
        })));
        progress.report(200, Some(1000));
        // At once after: thinned, and a step back is never passed on.
        progress.report(400, Some(1000));
        progress.report(100, Some(1000));
        // The end always goes.
        progress.report(1000, Some(1000));
        assert_eq!(
            *seen.lock().unwrap(),
            [(200, Some(1000)), (1000, Some(1000))]
        );
        let t0 = Instant::now();
        let later = CallProgress {
            sink: None,
            last: Some((t0, 5)),
            held: None,
        };
        assert!(!later.passes(6, None, t0 + EVERY / 2));
        assert!(later.passes(6, None, t0 + EVERY));
        assert!(!later.passes(5, None, t0 + EVERY * 4));
        // A report held back by the thinning goes out when the call ends.
        let mut syncing = CallProgress::new(Some(Arc::new({
            let into = seen.clone();
            move |done, total| into.lock().unwrap().push((done, total))
        })));
        seen.lock().unwrap().clear();
        syncing.report(100, None);
        syncing.report(700, None);
        syncing.flush();
        syncing.flush();
        assert_eq!(*seen.lock().unwrap(), [(100, None), (700, None)]);
        // Without a sink nothing is kept.
        let mut silent = CallProgress::new(None);
        silent.report(1, None);
        assert!(silent.last.is_none());
    }
}
