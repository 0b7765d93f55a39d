//! The host's own reasons a call fails: the facts in the variants, the
//! sentence in `Display`, the stable code and the fix beside it. A pack's
//! failures arrive as they are ([`Failure::from_pack_json`]); every
//! `CallError` becomes a [`Failure`] the same way, whether the call came from
//! `run`, `tools/call` or code.

use std::{fmt, time::Duration};

use pack_api::codes;
use packhost_command::FrontError;
use serde_json::Value;

use super::LoadError;
use crate::{
    failure::Failure,
    render::{did_you_mean, list, no_function},
    tool_name::RUN_TOOL,
};

/// What a caller may name, listed when it names something else: nothing
/// outside its allow-list.
#[derive(Debug)]
pub(crate) struct Known {
    /// Whether it may use `run`.
    pub(crate) run: bool,
    pub(crate) aliases: Vec<String>,
    pub(crate) packs: Vec<String>,
}

/// Why the host refused or ended a call.
#[derive(Debug)]
pub(crate) enum CallError {
    /// `run` got something other than `{"command": "..."}`.
    RunArguments {
        got: Value,
    },
    /// The command front could not read the command.
    Command(FrontError),
    /// A name that is neither an alias nor `pack.function`.
    UnknownTool {
        name: String,
        known: Known,
    },
    /// A call of a name only the code pack's Python could resolve (`abs(-3)`),
    /// without the code pack.
    NotACall {
        name: String,
        known: Known,
        code_pack: String,
        /// Whether it is loaded (and the caller's allow-list leaves it out).
        loaded: bool,
    },
    /// Code, and no code pack the caller may use to run it.
    NoCodePack {
        code_pack: String,
        /// The `server` key that names it.
        key: &'static str,
        /// Whether it is loaded (and the caller's allow-list leaves it out).
        loaded: bool,
    },
    UnknownPack {
        pack: String,
        packs: Vec<String>,
    },
    UnknownFunction {
        pack: String,
        function: String,
        functions: Vec<String>,
    },
    /// A server pack whose server has not answered yet.
    NoFunctionsYet {
        pack: String,
        origin: String,
        /// Its last failure, when known.
        why: Option<String>,
    },
    TooManyPositional {
        target: String,
        max: usize,
        got: usize,
        signature: String,
    },
    TwoValues {
        target: String,
        name: String,
        signature: String,
    },
    /// The arguments do not fit the input schema.
    BadArguments {
        tool: String,
        problems: Vec<String>,
        signature: String,
    },
    /// Code calling tools that call tools, too deep.
    TooDeep {
        name: String,
        max: u32,
    },
    /// Code sent arguments that are not JSON.
    ArgumentsNotJson {
        name: String,
        error: String,
    },
    Cancelled,
    /// The user declined a call an `[approval.<rule>]` asked about.
    Declined {
        tool: String,
        rule: String,
    },
    /// A call an `[approval.<rule>]` asks about, and its client cannot be
    /// asked (`why`).
    ApprovalUnavailable {
        tool: String,
        rule: String,
        why: String,
    },
    /// The call reached its own time limit: its pack's, or the function's
    /// (`own`) when that is less.
    OutOfTime {
        tool: String,
        pack: String,
        limit: Duration,
        own: bool,
    },
    /// The call that made this one (code mode) ran out of time.
    CutByCaller {
        tool: String,
        left: Duration,
    },
    Panicked {
        tool: String,
        before_start: bool,
    },
    ResultNotJson {
        tool: String,
        error: String,
    },
    /// A function that returns content returned a result that is not a
    /// content result, or blocks that are not MCP's.
    BadContent {
        tool: String,
        error: String,
    },
    /// The host's own task for a call from code failed.
    HostTask {
        error: String,
    },
    /// A call asked its client something, and no client can be asked
    /// (the call was not made over MCP).
    NoClientToAsk {
        pack: String,
    },
    /// The pack's library, listed from the catalog cache, did not load.
    NotLoaded {
        error: LoadError,
    },
}

impl CallError {
    /// The stable code of the result.
    pub(crate) fn code(&self) -> &'static str {
        use CallError::*;
        match self {
            RunArguments { .. }
            | TooManyPositional { .. }
            | TwoValues { .. }
            | BadArguments { .. }
            | TooDeep { .. }
            | ArgumentsNotJson { .. } => codes::INVALID_ARGUMENT,
            Command(e) => e.code(),
            UnknownTool { .. }
            | NotACall { .. }
            | UnknownFunction { .. }
            | NoFunctionsYet { .. } => codes::UNKNOWN_FUNCTION,
            NoCodePack { .. } | UnknownPack { .. } => codes::UNKNOWN_PACK,
            NotLoaded { error } => error.code(),
            Cancelled => codes::CANCELLED,
            Declined { .. } => codes::DECLINED,
            ApprovalUnavailable { .. } => codes::APPROVAL_UNAVAILABLE,
            NoClientToAsk { .. } => codes::INPUT_UNAVAILABLE,
            OutOfTime { .. } | CutByCaller { .. } => codes::TIMEOUT,
            Panicked { .. } | ResultNotJson { .. } | BadContent { .. } | HostTask { .. } => {
                codes::INTERNAL
            }
        }
    }

    /// What would be right, when there is something to say.
    pub(crate) fn help(&self) -> Option<String> {
        use CallError::*;
        let help = match self {
            RunArguments { .. } => "example: {\"command\": \"proj.list()\"}".to_owned(),
            UnknownTool { .. } => {
                "call a pack function as `pack.function(...)` or a configured alias".to_owned()
            }
            NotACall {
                code_pack,
                loaded: true,
                ..
            } => format!(
                "call a pack function as `pack.function(...)` or a configured alias; other names \
                 run as Python for a token whose `tools` allow `{code_pack}.run`"
            ),
            NotACall { code_pack, .. } => format!(
                "call a pack function as `pack.function(...)` or a configured alias; other names \
                 run as Python once the code pack `{code_pack}` is loaded"
            ),
            NoCodePack {
                code_pack,
                loaded: true,
                ..
            } => format!(
                "send one call with literal arguments, e.g. `proj.list()`; or add `{code_pack}.*` \
                 to this token's `tools` in its [[auth.tokens]] entry"
            ),
            NoCodePack { code_pack, key, .. } => format!(
                "send one call with literal arguments, e.g. `proj.list()`; or load the code pack: \
                 [packs.{code_pack}] in packs.toml (or set `server.{key}`)"
            ),
            TooManyPositional { signature, .. }
            | TwoValues { signature, .. }
            | BadArguments { signature, .. } => format!("expected {signature}"),
            OutOfTime {
                pack, own: true, ..
            } => format!(
                "this is the function's own limit, set by pack `{pack}` (`timeout_ms` of \
                 `[packs.{pack}]` can only lower it)"
            ),
            OutOfTime { pack, .. } => format!(
                "raise `timeout_ms` in `[packs.{pack}]` (or `server.timeout_ms`) if the work needs \
                 longer"
            ),
            CutByCaller { .. } => {
                "give the calling code more time, or make its calls sooner".to_owned()
            }
            ApprovalUnavailable { tool, rule, .. } => format!(
                "call it from an MCP client that supports elicitation, or leave `{tool}` out of \
                 `[approval.{rule}]` in packs.toml"
            ),
            NotLoaded { .. } => "fix it and restart packhost; `packhost check` loads every pack \
                                 and says what it finds"
                .to_owned(),
            _ => return None,
        };
        Some(help)
    }
}

impl fmt::Display for CallError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use CallError::*;
        match self {
            RunArguments { got } => write!(
                f,
                "`run` takes one argument, `command` (a string); got {got}"
            ),
            Command(e) => write!(f, "{e}"),
            UnknownTool { name, known } | NotACall { name, known, .. } => {
                let tools = known
                    .run
                    .then(|| RUN_TOOL.to_owned())
                    .into_iter()
                    .chain(known.aliases.iter().cloned())
                    .chain(known.packs.iter().map(|p| format!("{p}.*")));
                write!(
                    f,
                    "unknown tool `{name}`; {}tools: {}",
                    did_you_mean(name, known.aliases.iter().map(String::as_str)),
                    list(tools)
                )
            }
            NoCodePack {
                code_pack, loaded, ..
            } => write!(
                f,
                "this command is not a single call `pack.function(...)`, so it would run as code \
                 in pack `{code_pack}`, which {}",
                if *loaded {
                    "this caller's token does not allow"
                } else {
                    "is not loaded"
                }
            ),
            UnknownPack { pack, packs } => write!(
                f,
                "unknown pack `{pack}`; {}loaded packs: {}",
                did_you_mean(pack, packs.iter().map(String::as_str)),
                list(packs)
            ),
            UnknownFunction {
                pack,
                function,
                functions,
            } => f.write_str(&no_function(
                pack,
                function,
                functions.iter().map(String::as_str),
            )),
            NoFunctionsYet { pack, origin, why } => {
                write!(
                    f,
                    "pack `{pack}` has no functions yet: its server ({origin}) has not answered"
                )?;
                if let Some(why) = why {
                    write!(f, " (last try: {why})")?;
                }
                write!(f, "; its tools appear when it does")
            }
            TooManyPositional {
                target, max, got, ..
            } => write!(
                f,
                "`{target}` takes at most {max} positional argument(s), got {got}"
            ),
            TwoValues { target, name, .. } => write!(
                f,
                "`{target}` got two values for `{name}`: one positional, one by keyword"
            ),
            BadArguments { tool, problems, .. } => write!(f, "`{tool}`: {}", problems.join("; ")),
            TooDeep { name, max } => write!(
                f,
                "calls nest deeper than {max} levels (`{name}`); is code calling itself?"
            ),
            ArgumentsNotJson { name, error } => {
                write!(f, "arguments of `{name}` are not JSON: {error}")
            }
            Cancelled => f.write_str("the client cancelled the call"),
            Declined { tool, rule } => write!(
                f,
                "the user declined the call of `{tool}` (approval rule `[approval.{rule}]`); it \
                 was not made"
            ),
            ApprovalUnavailable { tool, rule, why } => write!(
                f,
                "`{tool}` needs the user's approval (`[approval.{rule}]` in packs.toml) and {why}; \
                 it was not made"
            ),
            OutOfTime { tool, limit, .. } => write!(
                f,
                "`{tool}` did not finish within its time limit of {}",
                human(*limit)
            ),
            CutByCaller { tool, left } => write!(
                f,
                "`{tool}` was cut when the call that made it ran out of time ({} were left when it \
                 started)",
                human(*left)
            ),
            Panicked {
                tool,
                before_start: true,
            } => write!(f, "`{tool}` panicked before it started"),
            Panicked { tool, .. } => write!(f, "`{tool}` panicked"),
            ResultNotJson { tool, error } => {
                write!(f, "`{tool}` returned a result that is not JSON: {error}")
            }
            BadContent { tool, error } => {
                write!(
                    f,
                    "`{tool}` returned content the host cannot serve: {error}"
                )
            }
            HostTask { error } => write!(f, "host task failed: {error}"),
            NoClientToAsk { pack } => write!(
                f,
                "pack `{pack}` asked the caller a question, and this call has no MCP client to \
                 ask; call it from an MCP client that can answer"
            ),
            NotLoaded { error } => write!(f, "{error}"),
        }
    }
}

impl From<CallError> for Failure {
    fn from(error: CallError) -> Self {
        let failure = Failure::new(error.code(), error.to_string());
        match error.help() {
            Some(help) => failure.with_help(help),
            None => failure,
        }
    }
}

fn human(d: Duration) -> String {
    if d.as_millis().is_multiple_of(1000) {
        format!("{} s", d.as_secs())
    } else {
        format!("{} ms", d.as_millis())
    }
}
