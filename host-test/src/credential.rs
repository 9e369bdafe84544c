//! A tenant's broker credential and the header that carries it: the one secret the host adds
//! to a component's requests (the component never sees it).

use http::header::{HeaderName, HeaderValue};
use std::fmt;
use std::sync::Arc;
use wasmtime_wasi_http::Error as HttpError;

/// The header that carries the tenant's signed broker credential.
pub const CREDENTIAL_HEADER: HeaderName = HeaderName::from_static("x-proxy-credential");

/// A tenant's broker credential. Its `Debug` never shows the value.
#[derive(Clone)]
pub struct Credential(Arc<str>);

impl Credential {
    pub fn new(value: impl Into<Arc<str>>) -> Self {
        Credential(value.into())
    }

    pub(crate) fn header_value(&self) -> Result<HeaderValue, HttpError> {
        let mut value = HeaderValue::from_str(&self.0).map_err(|_| {
            HttpError::InternalError(Some(
                "the tenant credential is not a valid header value".into(),
            ))
        })?;
        value.set_sensitive(true);
        Ok(value)
    }
}

impl fmt::Debug for Credential {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Credential(<redacted>)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_do_not_print() {
        let c = Credential::new("secret-token");
        assert!(!format!("{c:?}").contains("secret"));
    }
}
