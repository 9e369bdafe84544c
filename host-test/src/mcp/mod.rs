//! The Model Context Protocol server: the tenant's component's tools, served to any MCP client
//! (`crm-host mcp` over stdio, `crm-host serve` over Streamable HTTP).
//!
//! Who a request acts for is a [`Principal`]: fixed for a stdio process, and for HTTP put in
//! the request by the bearer-token check before MCP sees it — never taken from a header, a tool
//! argument or a session id. Everything else (tools, files, mappings) follows from it.

pub mod admin;
mod confirm;
pub mod convert;
pub mod files;
pub mod http;
pub mod jwt;
pub mod stdio;
pub mod stdio_failure;
pub mod task_cap;
pub mod tasks;
pub mod tenants;

use crate::host::{CallError, CallRequest, Host};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, Implementation, ListResourcesResult, ListToolsResult,
    PaginatedRequestParams, ProtocolVersion, ReadResourceRequestParams, ReadResourceResponse,
    ServerCapabilities, ServerConfig,
};
use rmcp::service::{NotificationContext, RequestContext};
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler};
use std::sync::Arc;

/// A progress sink that queues each report and a task that sends them, in order, as
/// `notifications/progress` with the client's token; the task ends when the sink is dropped.
fn progress_sink(
    peer: rmcp::service::Peer<RoleServer>,
    token: rmcp::model::ProgressToken,
) -> (crate::progress::ProgressSink, tokio::task::JoinHandle<()>) {
    let (queue, mut reports) = tokio::sync::mpsc::unbounded_channel::<(u64, Option<u64>)>();
    let reporting = tokio::spawn(async move {
        while let Some((done, total)) = reports.recv().await {
            let mut note = rmcp::model::ProgressNotificationParam::new(token.clone(), done as f64);
            if let Some(total) = total {
                note = note.with_total(total as f64);
            }
            if peer.notify_progress(note).await.is_err() {
                break;
            }
        }
    });
    let sink = Arc::new(move |done, total| {
        let _ = queue.send((done, total));
    });
    (sink, reporting)
}

/// Whom a call acts for: the tenant, the workspace user, and what the tenant granted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Principal {
    pub tenant_id: String,
    pub user_id: String,
    pub granted_scopes: Vec<String>,
    /// Salesforce org URL for record links.
    pub instance_url: Option<String>,
    /// Who vouched for this principal. An HTTP session belongs to a tenant, a user and the
    /// authority together: another token of the same user from another provider is a stranger.
    pub authority: Authority,
}

impl Principal {
    /// Who this principal's results, tasks and sessions belong to: one notion everywhere. The
    /// operator's users (stdio, the tenants file's tokens) share one namespace; a provider's
    /// subjects are the provider's own.
    pub fn owner(&self) -> crate::tenant_db::ResultOwner {
        use crate::tenant_db::ResultOwner;
        match &self.authority {
            Authority::Provider(issuer) => ResultOwner::vouched_by(issuer, &self.user_id),
            Authority::Process | Authority::Token(_) => ResultOwner::of(&self.user_id),
        }
    }
}

/// What vouched for a [`Principal`].
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Authority {
    /// The operator who started the process (the CLI, MCP over stdio).
    Process,
    /// A bearer token listed in the tenants file, by its SHA-256.
    Token(String),
    /// An identity provider's signed token, by the provider's issuer.
    Provider(String),
}

/// The MCP server over a [`Host`]. Cheap to clone: one per session shares the host.
#[derive(Clone)]
pub struct McpServer {
    host: Arc<Host>,
    /// The stdio process's one principal; `None` over HTTP, where each request carries its own.
    fixed: Option<Principal>,
    /// Cancelled when the session's last handle is dropped (the session closed or expired), so
    /// the tasks it started end with it.
    _alive: Arc<tokio_util::sync::DropGuard>,
    ended: tokio_util::sync::CancellationToken,
    /// How many tasks each principal may run at once; over HTTP one cap shared by every
    /// session ([`McpServer::with_task_cap`]).
    task_cap: Arc<task_cap::TaskCap>,
}

impl McpServer {
    /// A server acting for one principal on every request (stdio).
    pub fn for_principal(host: Arc<Host>, principal: Principal) -> Self {
        Self::new(host, Some(principal))
    }

    /// A server that reads each request's principal from the HTTP request (Streamable HTTP),
    /// where the bearer-token check put it.
    pub fn per_request(host: Arc<Host>) -> Self {
        Self::new(host, None)
    }

    fn new(host: Arc<Host>, fixed: Option<Principal>) -> Self {
        let ended = tokio_util::sync::CancellationToken::new();
        McpServer {
            host,
            fixed,
            _alive: Arc::new(ended.clone().drop_guard()),
            ended,
            task_cap: Arc::new(task_cap::TaskCap::new(
                http::limits::DEFAULT_TASKS_PER_PRINCIPAL,
            )),
        }
    }

    /// Counts this server's tasks against `cap`, which other servers (sessions) share.
    pub fn with_task_cap(mut self, cap: Arc<task_cap::TaskCap>) -> Self {
        self.task_cap = cap;
        self
    }

    fn principal(&self, extensions: &rmcp::model::Extensions) -> Result<Principal, McpError> {
        if let Some(fixed) = &self.fixed {
            return Ok(fixed.clone());
        }
        extensions
            .get::<::http::request::Parts>()
            .and_then(|parts| parts.extensions.get::<Principal>())
            .cloned()
            .ok_or_else(|| McpError::invalid_request("no authenticated principal", None))
    }

    /// The tools as `principal`'s client lists them; `can_ask`: the client declared MCP
    /// elicitation, so under `user-or-token` the person confirms its writes.
    async fn tools(
        &self,
        principal: &Principal,
        can_ask: bool,
    ) -> Result<Vec<rmcp::model::Tool>, McpError> {
        let tenant = &principal.tenant_id;
        let host_error = |e: CallError| McpError::internal_error(e.to_string(), None);
        let specs = self.host.list_tools(tenant).await.map_err(host_error)?;
        let metadata = self.host.tool_metadata(tenant).await.map_err(host_error)?;
        let listing = self.host.listing(tenant).await.map_err(host_error)?;
        let policy = self.host.policy(tenant).map_err(host_error)?;
        let person_confirms =
            confirm::person_confirms(policy.confirm_writes, policy.confirm_by, can_ask);
        let mut tools: Vec<_> = specs
            .iter()
            .map(|spec| {
                let meta = metadata.iter().find(|m| m.name == spec.name);
                let mut tool = convert::tool(spec, meta, self.host.answer_form());
                let governed = listing.tool(&spec.name).is_some_and(|(_, g)| g);
                if person_confirms && governed {
                    confirm::as_the_person_confirms(&mut tool);
                }
                tool
            })
            .collect();
        tools.push(files::read_tool(self.host.answer_form()));
        Ok(tools)
    }
}

/// Whether the client can ask its user (it declared MCP elicitation): in the 2026-07-28 era
/// each request carries its capabilities, before it the session's `initialize` did.
fn can_ask(context: &RequestContext<RoleServer>) -> bool {
    context
        .meta
        .client_capabilities()
        .is_some_and(|c| c.elicitation.is_some())
        || context
            .peer
            .peer_info()
            .is_some_and(|info| info.capabilities.elicitation.is_some())
}

impl ServerHandler for McpServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tool_list_changed()
                .enable_resources()
                .enable_tasks()
                .build(),
        )
        .with_server_info(Implementation::new("crm-host", env!("CARGO_PKG_VERSION")))
        .with_instructions(
            "Tools over the workspace's HubSpot (crma_*) and Salesforce (crmb_*) connections. \
             Nothing is ever deleted. Large query results are JSON Lines files: read them as \
             resources or page through them with crm_read_result_file.",
        )
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        let Ok(principal) = self.principal(&context.extensions) else {
            return;
        };
        let tenant = principal.tenant_id;
        let mut swaps = self.host.swaps();
        let peer = context.peer.clone();
        let ended = self.ended.clone();
        tokio::spawn(async move {
            // Ends with the session (closed, expired or dropped), a failed send, or the host.
            loop {
                let swapped = tokio::select! {
                    () = ended.cancelled() => break,
                    swapped = swaps.recv() => swapped,
                };
                match swapped {
                    Ok(swapped) if *swapped == *tenant => {
                        if peer.notify_tool_list_changed().await.is_err() {
                            break;
                        }
                    }
                    Ok(_) | Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {}
                    Err(tokio::sync::broadcast::error::RecvError::Closed) => break,
                }
            }
        });
    }

    /// The 2026-07-28 era's way of hearing about changes (`listen`): tool-list changes only.
    fn accepted_subscription_filter(
        &self,
        requested: &rmcp::model::SubscriptionFilter,
    ) -> Option<rmcp::model::SubscriptionFilter> {
        Some(requested.clone())
    }

    async fn listen(
        &self,
        subscription: rmcp::service::SubscriptionContext,
    ) -> Result<(), McpError> {
        let principal = self.principal(&subscription.request_context().extensions)?;
        let sink = subscription.sink().clone();
        let peer = subscription.request_context().peer.clone();
        let mut swaps = self.host.swaps();
        // The client going away does not cancel a subscription: look, so that a closed stdin
        // ends the server at once rather than after rmcp's drain timeout.
        let mut closed_check = tokio::time::interval(std::time::Duration::from_millis(200));
        loop {
            tokio::select! {
                () = subscription.cancelled() => return Ok(()),
                _ = closed_check.tick() => {
                    if peer.is_transport_closed() {
                        return Ok(());
                    }
                }
                swapped = swaps.recv() => match swapped {
                    Ok(tenant) if *tenant == *principal.tenant_id => {
                        if sink.notify_tool_list_changed().await.is_err() {
                            return Ok(());
                        }
                    }
                    Ok(_) | Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {}
                    Err(tokio::sync::broadcast::error::RecvError::Closed) => return Ok(()),
                },
            }
        }
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        let principal = self.principal(&context.extensions)?;
        Ok(ListToolsResult::with_all_items(
            self.tools(&principal, can_ask(&context)).await?,
        ))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let principal = self.principal(&context.extensions)?;
        let input = serde_json::Value::Object(request.arguments.unwrap_or_default());
        if request.name == files::READ_TOOL {
            return files::read_tool_call(&self.host, &principal, &input).map(Into::into);
        }
        // A tenant out of service here is told so as a result, as its call would be.
        let (listing, policy) = match self
            .host
            .listing(&principal.tenant_id)
            .await
            .and_then(|listing| Ok((listing, self.host.policy(&principal.tenant_id)?)))
        {
            Ok(found) => found,
            Err(err) => return convert::failure(err).map(Into::into),
        };
        // A governed write takes a preview's token; the workspace may want the person, not
        // the model, to give it.
        let Some((_, governed_write)) = listing
            .tool(&request.name)
            .filter(|(spec, _)| policy.hides(&spec.name, spec.read_only).is_none())
        else {
            return Err(McpError::invalid_params(
                format!("there is no tool named {:?}", request.name),
                None,
            ));
        };
        // The 2026-07-28 era carries the client's era and capabilities in each request.
        let stateless = context.meta.protocol_version() == Some(ProtocolVersion::V_2026_07_28)
            || context
                .peer
                .peer_info()
                .is_some_and(|info| info.protocol_version == ProtocolVersion::V_2026_07_28);
        let can_ask = can_ask(&context);
        let flow = confirm::flow(
            policy.confirm_by,
            policy.confirm_writes,
            governed_write,
            &input,
            can_ask,
        );
        let call = CallRequest {
            tenant_id: principal.tenant_id.clone(),
            user_id: principal.user_id.clone(),
            granted_scopes: principal.granted_scopes.clone(),
            instance_url: principal.instance_url.clone(),
            tool: request.name.to_string(),
            input: input.to_string(),
        };
        match flow {
            confirm::Flow::AsAsked => {}
            confirm::Flow::Refuse(kind, message) => {
                return Ok(convert::tool_error(kind, &message).into());
            }
            confirm::Flow::AskUser if stateless => {
                return confirm::ask_user_statelessly(
                    &self.host,
                    &principal,
                    call,
                    request.request_state.clone(),
                    request.input_responses.clone(),
                    context.ct.clone(),
                )
                .await;
            }
            confirm::Flow::AskUser => {
                return confirm::ask_user(
                    &self.host,
                    &principal,
                    call,
                    &context.peer,
                    context.ct.clone(),
                )
                .await
                .map(Into::into);
            }
        }
        let client_has_tasks = context
            .meta
            .client_capabilities()
            .is_some_and(|c| c.supports_tasks())
            || context
                .peer
                .peer_info()
                .is_some_and(|info| info.capabilities.supports_tasks());
        if tasks::runs_as_task(&request.name, &input, client_has_tasks) {
            return Ok(self.task_cap.start(&self.host, &principal, call));
        }
        let cancelled = context.ct.clone();
        // A client that sent a progressToken hears how an export, sync or long query goes.
        let (progress, reporting) = match context.meta.get_progress_token() {
            Some(token) => {
                let (sink, reporting) = progress_sink(context.peer.clone(), token);
                (Some(sink), Some(reporting))
            }
            None => (None, None),
        };
        let outcome = self
            .host
            .call_with(
                call,
                cancelled.cancelled_owned(),
                crate::host::CallOptions {
                    progress,
                    time_limit: None,
                    owner: Some(principal.owner()),
                },
            )
            .await;
        // Every progress notification goes out before the result.
        if let Some(reporting) = reporting {
            let _ = reporting.await;
        }
        let result = match outcome {
            Ok(output) => {
                let paths = match self.fixed {
                    Some(_) => convert::FilePaths::Local,
                    None => convert::FilePaths::Resources,
                };
                Ok(convert::success(&output, paths, self.host.answer_form()))
            }
            Err(err) => convert::failure(err),
        };
        result.map(Into::into)
    }

    async fn get_task(
        &self,
        request: rmcp::model::GetTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::GetTaskResult, McpError> {
        let principal = self.principal(&context.extensions)?;
        tasks::get(&self.host, &principal, request)
    }

    async fn cancel_task(
        &self,
        request: rmcp::model::CancelTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        let principal = self.principal(&context.extensions)?;
        tasks::cancel(&self.host, &principal, request)
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, McpError> {
        let principal = self.principal(&context.extensions)?;
        Ok(ListResourcesResult::with_all_items(files::list(
            &self.host, &principal,
        )?))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        let principal = self.principal(&context.extensions)?;
        files::read(&self.host, &principal, &request.uri).map(Into::into)
    }
}
