//! `exec_ts.execute`: a program in a fresh realm of a warm worker, or in a
//! fresh node process when it needs node (`route.rs`); and
//! `exec_ts.declarations`, what its code can call.

use std::{collections::BTreeMap, path::PathBuf, sync::Arc, time::Instant};

use pack_sdk::{Context, Outline, PackError};
use schemars::JsonSchema;
use serde::Deserialize;

use crate::{
    instrument,
    node::ExecOutput,
    notebook::Language,
    route::{Route, route},
    state::{State, default_timeout, timeout_of},
    strip::strip_types,
    typecheck::NO_COMPILER,
};

/// `exec_ts.execute` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ExecuteArgs {
    /// The program: an ES module (`import`, `export` and top-level `await`
    /// work).
    pub code: String,
    /// `typescript` (types are stripped, then node runs it) or `javascript`.
    #[serde(default)]
    pub language: Language,
    /// Absolute path of the working directory (bare imports resolve from its
    /// `node_modules`), inside the folders the pack's `cwd_roots` config
    /// allows; read-only unless the config says otherwise. Default: a fresh
    /// empty directory, removed afterwards.
    #[serde(default)]
    pub cwd: Option<String>,
    /// Extra environment variables for the process (on top of the allowed
    /// host variables).
    #[serde(default)]
    pub env: Option<BTreeMap<String, String>>,
    /// Time limit in milliseconds; past it the whole process group is killed
    /// and `exitCode` is 124.
    #[serde(default = "default_timeout")]
    #[schemars(range(min = 1))]
    pub timeout: u64,
    /// Check TypeScript against the packs' declarations first: a type error
    /// is an `INVALID_ARGUMENT` with its line and column, and nothing runs.
    /// Default: the pack's `typecheck` config (false unless set).
    #[serde(default)]
    pub typecheck: Option<bool>,
}

pub(crate) async fn execute(
    state: Arc<State>,
    args: ExecuteArgs,
    ctx: Context,
) -> Result<ExecOutput, PackError> {
    let started = Instant::now();
    let timeout = timeout_of(args.timeout)?;
    let cwd = match &args.cwd {
        None => None,
        Some(cwd) => {
            let path = PathBuf::from(cwd);
            if !path.is_absolute() || !path.is_dir() {
                return Err(PackError::invalid_argument(format!(
                    "`cwd` {cwd:?} is not an absolute path to an existing directory; \
                     pass one, or leave `cwd` out to run in a fresh empty directory"
                )));
            }
            Some(state.inside_roots(
                "`cwd`",
                &path,
                "leave `cwd` out to run in a fresh empty directory",
                beneath::open_inside,
            )?)
        }
    };
    let typecheck = args
        .typecheck
        .unwrap_or(state.typecheck && args.language == Language::Typescript);
    if typecheck {
        if args.language == Language::Javascript {
            return Err(PackError::invalid_argument(
                "`typecheck` is for TypeScript; pass `language: \"typescript\"` or leave `typecheck` out",
            ));
        }
        let checker = state
            .checker
            .as_ref()
            .ok_or_else(|| PackError::invalid_argument(NO_COMPILER))?;
        checker
            .check(&state.runner, &ctx.catalog(), &args.code, started)
            .await?;
    }
    let js = match args.language {
        Language::Javascript => args.code.clone(),
        Language::Typescript => match strip_types(&args.code, "input.ts") {
            Ok(js) => js,
            Err(e) => return Err(ExecOutput::syntax_error(e.0, started)),
        },
    };
    let instrumented = instrument::instrument(&js, true);
    let env = args.env.unwrap_or_default();
    let shared = ctx.shared_catalog();
    let realms = state
        .realms
        .as_ref()
        .filter(|_| cwd.is_none() && env.is_empty())
        .filter(|_| route(&js, |name| is_code_name(shared.outline(), name)) == Route::Realm);
    let mut output = match realms {
        Some(realms) => {
            realms
                .run(&instrumented, &shared, timeout, started, &ctx)
                .await?
        }
        None => {
            state
                .runner
                .run_module(
                    instrumented,
                    cwd.as_ref().map(|cwd| (cwd, state.cwd_writable)),
                    &env,
                    timeout,
                    started,
                    &ctx,
                )
                .await?
        }
    };
    // Node names no line for a module that does not compile: the parser does.
    if output.exit_code != 0
        && output
            .thrown
            .as_ref()
            .is_some_and(|t| t.error.starts_with("SyntaxError:"))
        && let Some(first) = instrument::syntax_error(&js, false)
    {
        return Err(ExecOutput::syntax_error(
            format!("{first}\n{}", output.stderr),
            started,
        ));
    }
    output.show_thrown_line(&args.code);
    output.into_result("the code")
}

/// Whether `name` is one the prelude makes a global: a pack's or an alias.
fn is_code_name(catalog: &Outline, name: &str) -> bool {
    catalog.tools.iter().any(|tool| tool.pack == name)
        || catalog.prompts.iter().any(|prompt| prompt.pack == name)
        || catalog.aliases.contains_key(name)
}

pub(crate) async fn declarations(
    _: Arc<State>,
    args: declarations::DeclarationsArgs,
    ctx: Context,
) -> Result<declarations::Declared, PackError> {
    let declarations = declarations::typescript(&ctx.catalog(), &args.into())?;
    Ok(declarations::Declared { declarations })
}
