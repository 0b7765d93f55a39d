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
//!
//! Offers per caller. A pack whose manifest says `offers_per_caller` is
//! asked, with the caller's context, for what that caller sees:
//! [`PROMPTS_LIST`], [`RESOURCES_LIST`], [`TEMPLATES_LIST`]. The host lists
//! these only to callers that may call the pack, prompts named as its
//! static ones (`pack.name`, or `name` with `prefix = false`). Then:
//! - [`PROMPTS_GET`], [`COMPLETE`] and [`RESOURCES_READ`] come for any
//!   name or URI the lists gave, with the prompt's own name, and also for
//!   names and URIs they did not give: a pack answers `NOT_FOUND` for what
//!   it does not serve this caller, and the host tries the next pack, or
//!   answers the client as for a name that does not exist.
//! - [`RESOURCES_SUBSCRIBE`] is a call that runs while the caller is
//!   subscribed to one URI: the pack refuses a URI it does not serve at
//!   once (`NOT_FOUND`), says [`SUBSCRIBED`] once it follows the URI, and
//!   [`RESOURCE_UPDATED`] each time it changed. The host drops (cancels)
//!   the call when the caller unsubscribes or goes away; a call that ends
//!   by itself ends the subscription.

/// Pack, render a prompt: arguments `{"name", "arguments"}` (the
/// arguments an object of strings); the result is MCP's `GetPromptResult`.
pub const PROMPTS_GET: &str = "prompts/get";

/// Pack, read a resource: arguments `{"uri"}`; the result is MCP's
/// `ReadResourceResult`.
pub const RESOURCES_READ: &str = "resources/read";

/// Host, list the resources this call's caller may read: arguments `{}`;
/// the result is `{"resources", "resourceTemplates"}` under MCP's names
/// (its kept results first, then its packs'). And (offers per caller)
/// pack, list this caller's resources: arguments `{}`; the result is MCP's
/// `ListResourcesResult` (one page).
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

/// Pack, list this caller's prompts: arguments `{}`; the result is MCP's
/// `ListPromptsResult` (one page), prompts under their own names.
pub const PROMPTS_LIST: &str = "prompts/list";

/// Pack, list this caller's resource templates: arguments `{}`; the result
/// is MCP's `ListResourceTemplatesResult` (one page).
pub const TEMPLATES_LIST: &str = "resources/templates/list";

/// Pack, follow a resource for this caller until the call is dropped:
/// arguments `{"uri"}` (see the module doc).
pub const RESOURCES_SUBSCRIBE: &str = "resources/subscribe";

/// Pack, a user's browser came back from signing in elsewhere to the
/// host's `/oauth/callback/<pack>`: arguments `{"query"}` (the URL's query,
/// as sent: `state`, `code` or `error`); the result is the page to show,
/// `{"status", "title", "text"}` (an HTTP status and plain text). The call
/// has no caller: the browser carries no token, so the query alone must
/// say whose sign-in it finishes.
pub const SIGN_IN_RETURNED: &str = "sign-in/returned";

/// Host, tell this call's client that what its URL elicitation
/// `{"elicitationId"}` sent the user to do is done (MCP's
/// `notifications/elicitation/complete`); the result is `{}`. A wire
/// without it (2026-07-28) has nothing to tell.
pub const ELICITATION_COMPLETE: &str = "notifications/elicitation/complete";

/// Host, record in the audit trail what happened to a user's credential to
/// an upstream server: arguments `{"org", "user", "integration", "action"}`,
/// the action one of `granted`, `used`, `refreshed`, `revoked`; the result
/// is `{}` (also when the trail is off). Never a token.
pub const AUDIT_CREDENTIAL: &str = "audit/credential";

/// Host, I follow the URI of this [`RESOURCES_SUBSCRIBE`] call now:
/// arguments `{}`; the result is `{}`. The client's subscribe succeeds.
pub const SUBSCRIBED: &str = "resources/subscribed";

/// Host, the resource this [`RESOURCES_SUBSCRIBE`] call follows changed:
/// arguments `{"uri"}` (the URI subscribed to); the result is `{}`. Its
/// subscriber, and no one else, hears `notifications/resources/updated`.
pub const RESOURCE_UPDATED: &str = "notifications/resources/updated";

/// Pack, here is where several instances share state: the key of the
/// config object (a `postgres://` URL) the host adds, beside the pack's own
/// settings, for a pack whose manifest says `shares_state` (no other pack's
/// config ever holds it). Not a call: the constructor reads it.
pub const STATE_DATABASE: &str = "packhost/state_database";

/// Pack, can you serve calls now (what you depend on answers)? Arguments
/// `{}`; the result is `{}`, or an error saying why not. Asked, with no
/// caller, by the host's `GET /readyz` of a pack whose manifest says
/// `checks_ready`, so a load balancer sends calls elsewhere meanwhile.
pub const READY: &str = "health/ready";
