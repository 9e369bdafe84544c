//! One HubSpot call: scopes checked first, then sent, then errors mapped and JSON parsed.

use super::errors::map_error;
use super::rate_limits;
use super::scopes::{Operation, check};
use crate::error::{Crm, CrmProblem, ToolError};
use crate::http::{Effect, Request, WriteMethod};
use crate::proxy;
use crate::retry::Answer;
use crate::tool::Session;
use serde::de::DeserializeOwned;
use serde_json::Value;

/// What a HubSpot call does on the wire, which fixes its method and whether it may be retried.
pub(crate) enum Sending {
    /// `GET`.
    Read,
    /// A search `POST`ed with its query in the body: a read.
    Search(Value),
    /// A create or change, with its body when it has one (a v4 association `PUT` has none).
    Write(WriteMethod, Option<Value>),
}

/// A HubSpot request as data: what it does (for the scope check), how, where and with what.
pub(crate) struct Call<'a> {
    pub operation: Operation,
    pub sending: Sending,
    pub path: Vec<&'a str>,
    pub query: Vec<(&'a str, String)>,
    /// Named in not-found messages.
    pub subject: String,
}

impl<'a> Call<'a> {
    pub(crate) fn get(
        operation: Operation,
        path: Vec<&'a str>,
        subject: impl Into<String>,
    ) -> Self {
        Call {
            operation,
            sending: Sending::Read,
            path,
            query: Vec::new(),
            subject: subject.into(),
        }
    }

    pub(crate) fn with_query(mut self, query: Vec<(&'a str, String)>) -> Self {
        self.query = query;
        self
    }

    /// A search: `POST` with the query in `body`, still a read.
    pub(crate) fn searching(mut self, body: Value) -> Self {
        self.sending = Sending::Search(body);
        self
    }

    /// A write with `method`, and its body when it has one.
    pub(crate) fn writing(mut self, method: WriteMethod, body: Option<Value>) -> Self {
        self.sending = Sending::Write(method, body);
        self
    }

    fn effect(&self) -> Effect {
        match self.sending {
            Sending::Read | Sending::Search(_) => Effect::Read,
            Sending::Write(..) => Effect::Write,
        }
    }
}

/// Checks the scopes (nothing is sent when they fall short), sends, and returns the JSON
/// answer (`null` for a 204).
pub(crate) fn send(session: &mut Session<'_>, call: Call<'_>) -> Result<Value, ToolError> {
    send_for(session, call)
}

/// As [`send`], reading the answer as the typed wire struct `T` of HubSpot's documented shape,
/// so a missing required field is an error here rather than a `null` further on. An answer
/// that cannot be read is `UNEXPECTED_ANSWER` for a read; for a write, which HubSpot has then
/// accepted, it is an unknown outcome to check before redoing the change.
pub(crate) fn send_for<T: DeserializeOwned>(
    session: &mut Session<'_>,
    call: Call<'_>,
) -> Result<T, ToolError> {
    send_reading(session, call, |body| serde_json::from_slice(body))
}

/// As [`send_for`], with the answer's text handed to `read`, which may borrow from it: a page
/// of records is mapped straight from HubSpot's text.
pub(crate) fn send_reading<T>(
    session: &mut Session<'_>,
    call: Call<'_>,
    read: impl FnOnce(&[u8]) -> Result<T, serde_json::Error>,
) -> Result<T, ToolError> {
    check(&session.ctx.granted_scopes, &call.operation)?;
    let config = session.config()?;
    let query: Vec<(&str, &str)> = call.query.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let url = proxy::crm_a(config, &call.path, &query)?;
    let request = match &call.sending {
        Sending::Read => Request::read(Crm::Hubspot, url),
        Sending::Search(body) => Request::search(Crm::Hubspot, url, body),
        Sending::Write(method, body) => Request::write(Crm::Hubspot, *method, url, body.as_ref()),
    };
    let Answer { response, hint } = session.send(&request, rate_limits::hint)?;
    if !response.is_success() {
        return Err(map_error(
            &response,
            hint,
            &session.ctx.granted_scopes,
            &call.subject,
        ));
    }
    let body: &[u8] = if response.status == 204 || response.body.iter().all(u8::is_ascii_whitespace)
    {
        b"null"
    } else {
        &response.body
    };
    read(body).map_err(|err| match call.effect() {
        // A write whose answer cannot be read may still have happened.
        Effect::Write => ToolError::OutcomeUnknown(format!(
            "HubSpot answered {} but the answer could not be read ({err}); check {} in HubSpot \
             before redoing the change",
            response.status, call.subject
        )),
        Effect::Read => CrmProblem::unexpected_answer(
            Crm::Hubspot,
            response.status,
            format!(
                "the answer about {} was not as HubSpot documents it: {err}",
                call.subject
            ),
        )
        .into(),
    })
}
