//! What a registry version changes on this host, tenant by tenant: decided here from what was
//! applied and what is listed ([`plan`]), then carried out through [`Effects`], so that one
//! tenant that cannot be built never stops another's change.
//!
//! A tenant whose listed entry cannot be built here is taken *out of service* on this host,
//! never kept on the entry it had: the new entry may be a tighter policy or a moved broker, and
//! serving the old one would quietly undo the operator's change (fail closed). It is tried
//! again at every apply, so it comes back as soon as it builds.

use super::rows::Row;
use crate::mcp::tenants::TenantEntry;
use foldhash::{HashMap, HashSet};
use std::collections::BTreeMap;
use std::sync::Arc;

/// One tenant as this host applied it. A served tenant is kept as its entry's fingerprint
/// alone (a host may list a hundred thousand, and what it serves them on is built from the
/// entry already); an out-of-service one keeps its entry, to be built again.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Applied {
    /// Served on the entry with this fingerprint.
    Serving(Fingerprint),
    /// Listed with this entry, which could not be built here, for this reason.
    OutOfService(Arc<TenantEntry>, String),
    /// Listed with a registry row this host cannot read, for this reason: out of service
    /// until the row changes.
    Unreadable(String),
}

/// What tells two listed entries apart: 128 bits of two seeded hashes of the whole entry
/// (foldhash's quality variant: a hundred thousand of them at a start). Two different entries
/// collide with a chance near 2^-128; the operator writes them, so nobody picks entries to
/// collide.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Fingerprint(u64, u64);

impl Fingerprint {
    pub(crate) fn of(entry: &TenantEntry) -> Self {
        use std::hash::BuildHasher;
        let half = |seed: u64| foldhash::quality::FixedState::with_seed(seed).hash_one(entry);
        Fingerprint(half(0x6372_6d2d_686f_7374), half(0x7265_6769_7374_7279))
    }
}

/// What to do for one tenant.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Step<'a> {
    /// Served on the listed entry already: leave it (and its calls, connections, component).
    Keep,
    /// New, changed, or out of service here: build it from the listed entry.
    Build(&'a Arc<TenantEntry>),
    /// No longer listed: stop serving it.
    Remove,
    /// Listed with a row this host cannot read (why): out of service here.
    Unreadable(&'a str),
}

/// The side of applying that touches the host.
pub(crate) trait Effects {
    /// Registers the tenant on the host from `entry`, or says why it cannot be here.
    fn build(&mut self, entry: &TenantEntry) -> Result<(), String>;
    /// Refuses the tenant's calls here, saying `why`, until it is built again.
    fn take_out(&mut self, tenant: &str, why: &str);
    /// Stops serving the tenant (no longer listed).
    fn remove(&mut self, tenant: &str);
}

/// Each tenant's step, in a stable order (listed tenants as listed, then the removed ones).
pub(crate) fn plan<'a>(
    applied: &HashMap<String, Applied>,
    listed: &'a [Arc<TenantEntry>],
) -> Vec<(String, Step<'a>)> {
    let mut steps: Vec<(String, Step<'a>)> = listed
        .iter()
        .map(|entry| {
            let step = match applied.get(&entry.id) {
                Some(Applied::Serving(served)) if *served == Fingerprint::of(entry) => Step::Keep,
                _ => Step::Build(entry),
            };
            (entry.id.clone(), step)
        })
        .collect();
    let listed_ids: HashSet<&str> = listed.iter().map(|entry| entry.id.as_str()).collect();
    let mut gone: Vec<String> = applied
        .keys()
        .filter(|id| !listed_ids.contains(id.as_str()))
        .cloned()
        .collect();
    gone.sort();
    steps.extend(gone.into_iter().map(|id| (id, Step::Remove)));
    steps
}

/// The steps of the tenants' rows that changed (the registry's other tenants are untouched).
pub(crate) fn changed<'a>(
    applied: &HashMap<String, Applied>,
    rows: &'a [(String, Row<Arc<TenantEntry>>)],
) -> Vec<(String, Step<'a>)> {
    rows.iter()
        .map(|(id, row)| {
            let step = match row {
                Row::Set(entry) => match applied.get(id) {
                    Some(Applied::Serving(served)) if *served == Fingerprint::of(entry) => {
                        Step::Keep
                    }
                    _ => Step::Build(entry),
                },
                Row::Removed => Step::Remove,
                Row::Unreadable(why) => Step::Unreadable(why),
            };
            (id.clone(), step)
        })
        .collect()
}

/// Carries `steps` out; returns the state after of every tenant they name that is still
/// listed, in their order. A tenant that fails to build is taken out of service and the others
/// go on.
pub(crate) fn carry_out(
    applied: &HashMap<String, Applied>,
    steps: Vec<(String, Step<'_>)>,
    effects: &mut impl Effects,
) -> Vec<(String, Applied)> {
    let mut now = Vec::with_capacity(steps.len());
    for (id, step) in steps {
        match step {
            Step::Keep => {
                if let Some(state) = applied.get(&id) {
                    now.push((id, state.clone()));
                }
            }
            Step::Build(entry) => {
                let state = match effects.build(entry) {
                    Ok(()) => Applied::Serving(Fingerprint::of(entry)),
                    Err(why) => {
                        effects.take_out(&id, &why);
                        Applied::OutOfService(entry.clone(), why)
                    }
                };
                now.push((id, state));
            }
            Step::Remove => effects.remove(&id),
            Step::Unreadable(why) => {
                effects.take_out(&id, why);
                now.push((id, Applied::Unreadable(why.to_owned())));
            }
        }
    }
    now
}

/// Every tenant out of service here, with why.
pub(crate) fn out_of_service(applied: &HashMap<String, Applied>) -> BTreeMap<String, String> {
    applied
        .iter()
        .filter_map(|(id, state)| match state {
            Applied::OutOfService(_, why) | Applied::Unreadable(why) => {
                Some((id.clone(), why.clone()))
            }
            Applied::Serving(_) => None,
        })
        .collect()
}

/// What changed for the operator to hear of: tenants newly out of service (or for a new
/// reason), and tenants back in service.
pub(crate) fn changes(
    before: &HashMap<String, Applied>,
    after: &HashMap<String, Applied>,
) -> (BTreeMap<String, String>, Vec<String>) {
    let was_out = out_of_service(before);
    let newly_out = out_of_service(after)
        .into_iter()
        .filter(|(id, why)| was_out.get(id) != Some(why))
        .collect();
    let mut back: Vec<String> = after
        .iter()
        .filter(|(id, state)| matches!(state, Applied::Serving(_)) && was_out.contains_key(*id))
        .map(|(id, _)| id.clone())
        .collect();
    back.sort();
    (newly_out, back)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(id: &str, credential_env: &str) -> Arc<TenantEntry> {
        Arc::new(TenantEntry {
            id: id.into(),
            proxy_base: Some("https://broker.example.com".parse().unwrap()),
            credential_env: Some(credential_env.into()),
            instance_url: None,
            policy: Default::default(),
        })
    }

    /// A host on which the variables in `set` are present; records what was done.
    #[derive(Default)]
    struct Recorder {
        set: Vec<&'static str>,
        done: Vec<String>,
    }

    impl Effects for Recorder {
        fn build(&mut self, entry: &TenantEntry) -> Result<(), String> {
            self.done.push(format!("build {}", entry.id));
            let var = entry.credential_env.as_deref().unwrap_or_default();
            match self.set.contains(&var) {
                true => Ok(()),
                false => Err(format!("{var} is not set")),
            }
        }
        fn take_out(&mut self, tenant: &str, why: &str) {
            self.done.push(format!("out {tenant}: {why}"));
        }
        fn remove(&mut self, tenant: &str) {
            self.done.push(format!("remove {tenant}"));
        }
    }

    fn apply(
        applied: &HashMap<String, Applied>,
        listed: &[Arc<TenantEntry>],
        host: &mut Recorder,
    ) -> HashMap<String, Applied> {
        carry_out(applied, plan(applied, listed), host)
            .into_iter()
            .collect()
    }

    #[test]
    fn a_tenant_that_cannot_be_built_stops_no_other_tenant() {
        let mut host = Recorder {
            set: vec!["ACME", "INITECH"],
            ..Recorder::default()
        };
        let listed = [
            entry("acme", "ACME"),
            entry("globex", "GLOBEX"),
            entry("initech", "INITECH"),
        ];
        let now = apply(&HashMap::default(), &listed, &mut host);
        assert_eq!(now["acme"], Applied::Serving(Fingerprint::of(&listed[0])));
        assert_eq!(
            now["initech"],
            Applied::Serving(Fingerprint::of(&listed[2]))
        );
        assert_eq!(
            now["globex"],
            Applied::OutOfService(listed[1].clone(), "GLOBEX is not set".into())
        );
        assert_eq!(
            host.done,
            [
                "build acme",
                "build globex",
                "out globex: GLOBEX is not set",
                "build initech"
            ]
        );
        assert_eq!(
            out_of_service(&now),
            BTreeMap::from([("globex".to_string(), "GLOBEX is not set".to_string())])
        );
    }

    #[test]
    fn unchanged_served_tenants_are_left_alone_and_changed_ones_rebuilt() {
        let mut host = Recorder {
            set: vec!["ACME", "ACME2", "GLOBEX"],
            ..Recorder::default()
        };
        let first = [entry("acme", "ACME"), entry("globex", "GLOBEX")];
        let before = apply(&HashMap::default(), &first, &mut host);
        host.done.clear();
        let second = [entry("acme", "ACME2"), entry("globex", "GLOBEX")];
        let now = apply(&before, &second, &mut host);
        assert_eq!(host.done, ["build acme"], "globex kept as it was");
        assert_eq!(now["acme"], Applied::Serving(Fingerprint::of(&second[0])));
    }

    #[test]
    fn a_served_tenant_whose_new_entry_fails_is_taken_out_not_kept_on_the_old_one() {
        let mut host = Recorder {
            set: vec!["GLOBEX"],
            ..Recorder::default()
        };
        let before = apply(&HashMap::default(), &[entry("globex", "GLOBEX")], &mut host);
        let tighter = entry("globex", "GLOBEX_NEW");
        let now = apply(&before, std::slice::from_ref(&tighter), &mut host);
        assert_eq!(
            now["globex"],
            Applied::OutOfService(tighter, "GLOBEX_NEW is not set".into())
        );
        assert!(
            host.done
                .contains(&"out globex: GLOBEX_NEW is not set".to_string())
        );
    }

    #[test]
    fn a_tenant_out_of_service_is_tried_again_and_comes_back_when_it_builds() {
        let mut host = Recorder::default();
        let listed = [entry("globex", "GLOBEX")];
        let out = apply(&HashMap::default(), &listed, &mut host);
        // The same version again (the heartbeat's retry): still out, tried again.
        host.done.clear();
        let still = apply(&out, &listed, &mut host);
        assert_eq!(host.done[0], "build globex");
        assert_eq!(changes(&out, &still), (BTreeMap::new(), vec![]));
        host.set.push("GLOBEX");
        let back = apply(&still, &listed, &mut host);
        assert_eq!(
            back["globex"],
            Applied::Serving(Fingerprint::of(&listed[0]))
        );
        assert_eq!(
            changes(&still, &back),
            (BTreeMap::new(), vec!["globex".into()])
        );
    }

    #[test]
    fn tenants_no_longer_listed_are_removed_whether_served_or_out_of_service() {
        let mut host = Recorder {
            set: vec!["ACME"],
            ..Recorder::default()
        };
        let before = apply(
            &HashMap::default(),
            &[entry("acme", "ACME"), entry("globex", "GLOBEX")],
            &mut host,
        );
        host.done.clear();
        let now = apply(&before, &[], &mut host);
        assert!(now.is_empty());
        assert_eq!(host.done, ["remove acme", "remove globex"]);
    }

    #[test]
    fn changed_rows_touch_only_their_tenants_and_an_unreadable_row_only_its_own() {
        let mut host = Recorder {
            set: vec!["ACME", "GLOBEX", "INITECH"],
            ..Recorder::default()
        };
        let listed = [
            entry("acme", "ACME"),
            entry("globex", "GLOBEX"),
            entry("initech", "INITECH"),
        ];
        let before = apply(&HashMap::default(), &listed, &mut host);
        host.done.clear();
        let rows = vec![
            ("acme".to_string(), Row::Set(listed[0].clone())),
            (
                "globex".to_string(),
                Row::Unreadable("unknown field `colour`".into()),
            ),
            ("initech".to_string(), Row::Removed),
            ("hooli".to_string(), Row::Set(entry("hooli", "ACME"))),
        ];
        let now: HashMap<String, Applied> = carry_out(&before, changed(&before, &rows), &mut host)
            .into_iter()
            .collect();
        assert_eq!(
            host.done,
            [
                "out globex: unknown field `colour`",
                "remove initech",
                "build hooli"
            ],
            "acme's row is as served: kept, not built again"
        );
        assert_eq!(now["acme"], Applied::Serving(Fingerprint::of(&listed[0])));
        assert_eq!(
            out_of_service(&now),
            BTreeMap::from([("globex".to_string(), "unknown field `colour`".to_string())])
        );
        assert!(!now.contains_key("initech"));
    }
}
