//! How a tool's answer reaches an MCP client: as the JSON text alone (the default), or as
//! `structuredContent` with the same JSON as text beside it. The text is what clients pass to
//! the model, and all most of them read; the structured copy is for clients that consume typed
//! results, and doubles every answer's bytes, so it is the operator's choice (`--answers
//! structured`) for a platform whose clients use it.

/// The form of every tool answer a server gives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum AnswerForm {
    /// The JSON as a text block only, and no `outputSchema` (a client must refuse a result
    /// without `structuredContent` from a tool that declares one): one copy on the wire. What
    /// the peer CRM servers give, and what a model reads either way.
    #[default]
    Text,
    /// `structuredContent` and the same JSON as a text block (as MCP asks of a tool with an
    /// output schema); tools list their `outputSchema`, which clients check each answer
    /// against. For clients that read structured results.
    Structured,
}
