//! Why a tenant's database did not do what was asked, typed, so that the component and the
//! operator are told what to do next rather than handed SQLite's words.

/// A tenant database error; each case says what to do next.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StoreError {
    /// The database failed or could not be reached (locked, full, unreadable); nothing was
    /// changed, and the same call may be tried again shortly.
    #[error("the workspace's store is unavailable ({0}); nothing was changed: try again shortly")]
    Unavailable(String),
    /// The request broke a rule of the store (a batch or key too large, an unknown kind or
    /// CRM, a value that is not a JSON object): the caller must change it.
    #[error("{0}")]
    Invalid(String),
    /// What was asked for is not there (a pending change of this call).
    #[error("{0}")]
    NotFound(String),
    /// The CRM was disconnected while the call ran, so nothing was written: reconnect it, then
    /// run the call again.
    #[error("{0}")]
    Disconnected(String),
}

impl From<rusqlite::Error> for StoreError {
    fn from(error: rusqlite::Error) -> Self {
        StoreError::Unavailable(error.to_string())
    }
}

impl From<StoreError> for String {
    fn from(error: StoreError) -> Self {
        error.to_string()
    }
}
