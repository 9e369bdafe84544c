//! Comparing the stored mappings of one kind with the observed ones, both in key order, one
//! key at a time: what a sync writes and what it counts. The decision is pure ([`plan`] over
//! any [`Listings`]); [`StoreListings`] feeds it from the mapping store a page at a time and
//! stages its writes in batches, so any number of mappings passes through in flat memory.

use crate::mapping::{MAX_BATCH, Mapping, MappingKind, MappingStore, StoreError};
use schemars::JsonSchema;
use serde::Serialize;

/// What a sync changed, for one kind or in all.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, JsonSchema)]
pub(super) struct Counts {
    /// Mappings made for users or owners seen for the first time.
    pub(super) created: u32,
    /// Mappings whose fields changed (restored ones included).
    pub(super) updated: u32,
    /// Mappings that stayed as they were.
    pub(super) unchanged: u32,
    /// Mappings marked deleted (kept locally): archived owners, users gone from the account.
    pub(super) soft_deleted: u32,
    /// Soft-deleted mappings that came back (also counted in `updated`).
    pub(super) restored: u32,
}

impl std::ops::Add for Counts {
    type Output = Counts;
    fn add(self, other: Counts) -> Counts {
        Counts {
            created: self.created + other.created,
            updated: self.updated + other.updated,
            unchanged: self.unchanged + other.unchanged,
            soft_deleted: self.soft_deleted + other.soft_deleted,
            restored: self.restored + other.restored,
        }
    }
}

/// The two listings of one kind that [`plan`] walks, each in strictly ascending key order,
/// and where its writes go.
pub(super) trait Listings {
    /// The next stored mapping, `None` after the last.
    fn next_stored(&mut self) -> Result<Option<Mapping>, StoreError>;
    /// The next observed mapping, `None` after the last.
    fn next_observed(&mut self) -> Result<Option<Mapping>, StoreError>;
    /// Takes one write.
    fn write(&mut self, mapping: Mapping) -> Result<(), StoreError>;
}

/// What one key comes to, stored or observed or both: the write to make, if any, counted.
/// A stored mapping no longer observed is soft-deleted, its fields kept.
fn decide(
    stored: Option<Mapping>,
    observed: Option<Mapping>,
    counts: &mut Counts,
) -> Option<Mapping> {
    match (stored, observed) {
        (None, None) => None,
        (None, Some(new)) => {
            counts.created += 1;
            Some(new)
        }
        (Some(old), Some(new)) if old == new => {
            counts.unchanged += 1;
            None
        }
        (Some(old), Some(new)) => {
            match (old.deleted, new.deleted) {
                (false, true) => counts.soft_deleted += 1,
                (true, false) => {
                    counts.restored += 1;
                    counts.updated += 1;
                }
                _ => counts.updated += 1,
            }
            Some(new)
        }
        (Some(gone), None) if gone.deleted => {
            counts.unchanged += 1;
            None
        }
        (Some(mut gone), None) => {
            gone.deleted = true;
            counts.soft_deleted += 1;
            Some(gone)
        }
    }
}

/// Compares the stored mappings of one kind with the observed ones, walking both in key
/// order: each write goes to `listings` as it is decided, in key order, and the counts come
/// back. Holds one mapping of each listing at a time.
pub(super) fn plan(listings: &mut impl Listings) -> Result<Counts, StoreError> {
    let mut counts = Counts::default();
    let mut stored = listings.next_stored()?;
    let mut observed = listings.next_observed()?;
    loop {
        // The smaller key goes first, alone; equal keys go together.
        let (old, new) = match (stored.take(), observed.take()) {
            (None, None) => return Ok(counts),
            (Some(old), Some(new)) if old.crm_id < new.crm_id => {
                observed = Some(new);
                (Some(old), None)
            }
            (Some(old), Some(new)) if old.crm_id > new.crm_id => {
                stored = Some(old);
                (None, Some(new))
            }
            pair => pair,
        };
        if old.is_some() {
            stored = listings.next_stored()?;
        }
        if new.is_some() {
            observed = listings.next_observed()?;
        }
        if let Some(write) = decide(old, new, &mut counts) {
            listings.write(write)?;
        }
    }
}

/// One listing read a page at a time, checked to come in strictly ascending key order and of
/// the kind asked for (the merge in [`plan`] is only right on sorted input).
struct Cursor {
    kind: MappingKind,
    page: std::vec::IntoIter<Mapping>,
    /// The last key read; the next page starts after it.
    after: Option<String>,
    done: bool,
}

impl Cursor {
    fn new(kind: MappingKind) -> Self {
        Cursor {
            kind,
            page: Vec::new().into_iter(),
            after: None,
            done: false,
        }
    }

    /// The next mapping, reading the next page with `fetch` (after a key, at most a batch)
    /// when this one is used up; an empty page ends the listing.
    fn next(
        &mut self,
        fetch: impl FnOnce(Option<&str>, usize) -> Result<Vec<Mapping>, StoreError>,
    ) -> Result<Option<Mapping>, StoreError> {
        if let Some(next) = self.page.next() {
            return Ok(Some(next));
        }
        if self.done {
            return Ok(None);
        }
        let page = fetch(self.after.as_deref(), MAX_BATCH)?;
        let mut last = self.after.as_deref();
        for m in &page {
            if m.kind != self.kind || last.is_some_and(|last| m.crm_id.as_str() <= last) {
                return Err(StoreError(format!(
                    "the store listed mapping {:?} out of key order",
                    m.crm_id
                )));
            }
            last = Some(&m.crm_id);
        }
        match page.last() {
            Some(m) => self.after = Some(m.crm_id.clone()),
            None => self.done = true,
        }
        self.page = page.into_iter();
        Ok(self.page.next())
    }
}

/// The stored and observed listings of one kind in the call's open change, and its writes,
/// staged a batch at a time.
pub(super) struct StoreListings<'s> {
    store: &'s mut dyn MappingStore,
    stored: Cursor,
    observed: Cursor,
    writes: Vec<Mapping>,
    /// Whether any write was staged.
    wrote: bool,
}

impl<'s> StoreListings<'s> {
    pub(super) fn new(store: &'s mut dyn MappingStore, kind: MappingKind) -> Self {
        StoreListings {
            store,
            stored: Cursor::new(kind),
            observed: Cursor::new(kind),
            writes: Vec::new(),
            wrote: false,
        }
    }

    /// Stages the writes still held; whether any write was staged in all.
    pub(super) fn finish(mut self) -> Result<bool, StoreError> {
        self.flush()?;
        Ok(self.wrote)
    }

    fn flush(&mut self) -> Result<(), StoreError> {
        if !self.writes.is_empty() {
            self.store.write(&self.writes)?;
            self.writes.clear();
            self.wrote = true;
        }
        Ok(())
    }
}

impl Listings for StoreListings<'_> {
    fn next_stored(&mut self) -> Result<Option<Mapping>, StoreError> {
        let (store, kind) = (&mut *self.store, self.stored.kind);
        self.stored
            .next(|after, limit| store.list_page(kind, after, limit))
    }

    fn next_observed(&mut self) -> Result<Option<Mapping>, StoreError> {
        let (store, kind) = (&mut *self.store, self.observed.kind);
        self.observed
            .next(|after, limit| store.observed_page(kind, after, limit))
    }

    fn write(&mut self, mapping: Mapping) -> Result<(), StoreError> {
        self.writes.push(mapping);
        if self.writes.len() >= MAX_BATCH {
            self.flush()?;
        }
        Ok(())
    }
}
