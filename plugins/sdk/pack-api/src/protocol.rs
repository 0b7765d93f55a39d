//! MCP's features besides tools, crossing the ABI without changing it.
//!
//! The ABI's types are frozen (see the crate doc), so what MCP adds beyond
//! tools travels through the two calls that exist, under names no pack
//! function can have (they hold a `/`, which identifiers do not): the host
//! calls [`Pack::call`](crate::Pack::call) with [`PROMPTS_GET`],
//! [`RESOURCES_READ`] or [`COMPLETE`] on a pack whose manifest declares
//! prompts or resources, and a pack asks its caller's client through
//! [`CallContext::call_tool`](crate::CallContext::call_tool) with
//! [`INPUT`] (and changes which of its functions it serves with
//! [`OFFER`]). A pack built before these existed never declares nor asks,
//! so it loads and works unchanged.
//!
//! Code mode reaches the caller's prompts and resources the other way,
//! through [`CallContext::call_tool`](crate::CallContext::call_tool) or
//! [`CallContext::call_with`](crate::CallContext::call_with) (keyword
//! arguments only) with [`PROMPTS_GET`] (`{"name"}` as the prompt is
//! listed, [`crate::CatalogPrompt::listed`]), [`RESOURCES_READ`] and
//! [`RESOURCES_LIST`]: the host answers them for the call's caller as it
//! answers that caller's MCP client.

/// Pack, render a prompt: arguments `{"name", "arguments"}` (the
/// arguments an object of strings); the result is MCP's `GetPromptResult`.
pub const PROMPTS_GET: &str = "prompts/get";

/// Pack, read a resource: arguments `{"uri"}`; the result is MCP's
/// `ReadResourceResult`.
pub const RESOURCES_READ: &str = "resources/read";

/// Host, list the resources this call's caller may read: arguments `{}`;
/// the result is `{"resources", "resourceTemplates"}` under MCP's names
/// (its kept results first, then its packs').
pub const RESOURCES_LIST: &str = "resources/list";

/// Pack, complete an argument of a prompt or resource template: arguments
/// MCP's `CompleteRequest` params; the result is MCP's `CompleteResult`.
pub const COMPLETE: &str = "completion/complete";

/// Host, put these questions to the client of this call: arguments are
/// MCP's `inputRequests` (key -> `{"method", "params"}`, the method one of
/// `elicitation/create`, `sampling/createMessage`, `roots/list`); the
/// result holds an answer per key (MCP's `inputResponses`). The host sends
/// them the way the caller's wire asks (a request to the client, or an
/// `input_required` result answered by the client's retry).
pub const INPUT: &str = "input/requests";

/// Host, serve only these of my functions from now on: arguments
/// `{"functions": [names]}`, names the pack's manifest declares; the result
/// is `{}`. Every client hears that the tool list changed. A pack that
/// never says it serves all its functions.
pub const OFFER: &str = "functions/offer";
