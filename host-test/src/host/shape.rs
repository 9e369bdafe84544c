//! What tenants on one broker under one policy share: the broker's origin, where each CRM sits
//! on it, the settings the component reads and the operator's policy, built once per distinct
//! broker and settings rather than once per tenant. Settings never carry a tenant's id or
//! credential (those stay in the tenant's entry), so sharing them shares nothing private; a
//! host listing a hundred thousand tenants of a few brokers parses a few policies.

use super::{PROXY_BASE_VAR, RESULTS_LABEL};
use crate::egress::Roots;
use crate::governance::HostPolicy;
use crate::hooks::BrokerOrigin;
use foldhash::HashMap;
use std::sync::{Arc, Mutex, Weak};
use url::Url;
use wasmtime_wasi_config::WasiConfigVariables;

/// A tenant's broker, egress roots, component settings and policy.
pub(super) struct Shape {
    pub(super) origin: BrokerOrigin,
    /// Where each CRM's integration sits on the broker, for the egress policy.
    pub(super) roots: Arc<Roots>,
    pub(super) config: Arc<WasiConfigVariables>,
    /// The operator's policy: hidden tools, masked fields, token lifetime.
    pub(super) policy: Arc<HostPolicy>,
}

/// What makes two tenants' shapes the same: the broker, the settings in their order, and
/// whether results go to files.
type Key = (String, Vec<(String, String)>, bool);

/// The shapes in use, each built once; a shape no tenant holds any more is dropped.
#[derive(Default)]
pub(super) struct Shapes(Mutex<HashMap<Key, Weak<Shape>>>);

impl Shapes {
    /// The shape of a tenant on `proxy_base` with `settings` (`CRM_*` only; the broker's own
    /// variable is added here) and, when `results`, a results directory; why not, when the
    /// broker has no host or the policy does not parse.
    pub(super) fn get(
        &self,
        proxy_base: &Url,
        settings: Vec<(String, String)>,
        results: bool,
    ) -> Result<Arc<Shape>, String> {
        let key = (proxy_base.as_str().to_owned(), settings, results);
        let mut shapes = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(shape) = shapes.get(&key).and_then(Weak::upgrade) {
            return Ok(shape);
        }
        let shape = Arc::new(build(proxy_base, &key.1, results)?);
        // Now and then, forget shapes no tenant holds (each was some tenant's, once).
        if shapes.len() >= 64 && shapes.len().is_power_of_two() {
            shapes.retain(|_, shape| shape.strong_count() > 0);
        }
        shapes.insert(key, Arc::downgrade(&shape));
        Ok(shape)
    }
}

fn build(proxy_base: &Url, settings: &[(String, String)], results: bool) -> Result<Shape, String> {
    let origin = BrokerOrigin::from_url(proxy_base)
        .ok_or_else(|| "the proxy base has no host".to_string())?;
    let roots = Roots::new(
        proxy_base,
        settings.iter().map(|(k, v)| (k.as_str(), v.as_str())),
    );
    let mut settings = settings.to_vec();
    settings.push((PROXY_BASE_VAR.into(), proxy_base.to_string()));
    let policy = HostPolicy::from_settings(settings.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .map_err(|e| format!("policy: {e}"))?;
    if results {
        settings.push(("CRM_RESULTS_DIR".into(), RESULTS_LABEL.into()));
    }
    Ok(Shape {
        origin,
        roots: Arc::new(roots),
        config: Arc::new(settings.into_iter().collect()),
        policy: Arc::new(policy),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn tenants_on_one_broker_under_one_policy_share_one_shape_and_others_do_not() {
        let shapes = Shapes::default();
        let broker = Url::parse("https://broker.example.com").unwrap();
        let masked = settings(&[("CRM_POLICY_MASKED_FIELDS", "email")]);
        let a = shapes.get(&broker, masked.clone(), true).unwrap();
        let b = shapes.get(&broker, masked.clone(), true).unwrap();
        assert!(Arc::ptr_eq(&a, &b));
        let plain = shapes.get(&broker, Vec::new(), true).unwrap();
        assert!(!Arc::ptr_eq(&a, &plain), "another policy");
        let other = Url::parse("https://other.example.com").unwrap();
        assert!(!Arc::ptr_eq(
            &a,
            &shapes.get(&other, masked.clone(), true).unwrap()
        ));
        assert!(!Arc::ptr_eq(
            &a,
            &shapes.get(&broker, masked, false).unwrap()
        ));
    }

    #[test]
    fn a_shape_no_tenant_holds_is_forgotten_and_a_bad_policy_is_refused() {
        let shapes = Shapes::default();
        let broker = Url::parse("https://broker.example.com").unwrap();
        let first = shapes.get(&broker, Vec::new(), false).unwrap();
        let weak = Arc::downgrade(&first);
        drop(first);
        assert!(weak.upgrade().is_none(), "the map holds no shape alive");
        assert!(shapes.get(&broker, Vec::new(), false).is_ok());
        let bad = settings(&[("CRM_POLICY_MAX_RECORDS", "forever")]);
        let refused = shapes.get(&broker, bad, false).err().unwrap();
        assert!(refused.starts_with("policy: "), "{refused}");
    }
}
