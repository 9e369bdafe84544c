//! How a tool's answer reaches an MCP client: as `structuredContent` with the same JSON as text
//! beside it (MCP's recommended form), or as the text alone. An operator's choice for the
//! platform its clients make: most pass only the text to the model, and then the structured
//! copy doubles every answer's bytes for nothing.

/// The form of every tool answer a server gives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum AnswerForm {
    /// `structuredContent` and the same JSON as a text block; tools list their `outputSchema`.
    /// The MCP specification's recommended form, for clients that read structured results.
    #[default]
    Structured,
    /// The JSON as a text block only, and no `outputSchema` (a client must refuse a result
    /// without `structuredContent` from a tool that declares one): one copy on the wire.
    Text,
}
