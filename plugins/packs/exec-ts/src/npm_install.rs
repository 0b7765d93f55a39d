//! `exec_ts.npm_install`: npm in a session folder, confined, through a
//! proxy that reaches the registry only; allowed lifecycle scripts after.

use std::{
    os::fd::OwnedFd,
    path::Path,
    sync::Arc,
    time::{Duration, Instant},
};

use pack_sdk::{Context, PackError};
use schemars::JsonSchema;
use serde::Deserialize;

use crate::{
    node::{self, ExecOutput},
    notebook, npm,
    scratch::Scratch,
    state::{State, blocking, refused, timeout_of},
};

/// Default time limit of `npm install` (ms).
const DEFAULT_NPM_TIMEOUT_MS: u64 = 300_000;

pub(crate) fn default_npm_timeout() -> u64 {
    DEFAULT_NPM_TIMEOUT_MS
}

/// `exec_ts.npm_install` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct NpmInstallArgs {
    /// Session id.
    pub session_id: String,
    /// Packages to add (`name`, `name@version`, or the absolute path of a
    /// local package folder or tarball inside the pack's `cwd_roots`, copied
    /// in); none installs what `package.json` lists.
    #[serde(default)]
    pub packages: Vec<String>,
    /// Time limit in milliseconds.
    #[serde(default = "default_npm_timeout")]
    #[schemars(range(min = 1))]
    pub timeout: u64,
}

pub(crate) async fn npm_install(
    state: Arc<State>,
    args: NpmInstallArgs,
    ctx: Context,
) -> Result<ExecOutput, PackError> {
    let started = Instant::now();
    let timeout = timeout_of(args.timeout)?;
    if let Some(flag) = args
        .packages
        .iter()
        .find(|p| p.starts_with('-') || p.is_empty())
    {
        return Err(PackError::invalid_argument(format!(
            "`packages` entry {flag:?} is not a package; give names like `lodash` or `zod@3`"
        )));
    }
    let id = args.session_id;
    let dir = state
        .in_session_run(&ctx, id.clone(), |nb, meta| Ok(nb.dir(&meta.id)))
        .await?;
    // npm reads a local package where it is: only inside `cwd_roots`.
    let local: Vec<OwnedFd> = args
        .packages
        .iter()
        .filter_map(|spec| {
            let path = spec.strip_prefix("file:").unwrap_or(spec);
            path.starts_with('/').then(|| {
                state.inside_roots(
                    "local package",
                    Path::new(path),
                    "install it from the registry",
                    beneath::locate_inside,
                )
            })
        })
        .collect::<Result<_, _>>()
        .map_err(refused)?;
    let output = install(&state, &dir, &args.packages, local, timeout, started).await?;
    let session = id.clone();
    let wrote = match output.exit_code {
        0 => blocking(&state, move |state| state.notebooks.npm_wrote(&session)).await?,
        _ => None,
    };
    if let Some(package_json) = wrote {
        // What npm wrote in package.json is the session's from now on.
        state
            .in_session(&ctx, id, move |nb, mut meta| {
                nb.set_package_json(&mut meta, &package_json)?;
                nb.save(&meta)?;
                nb.installed(&meta)
            })
            .await?;
    }
    output.into_result("npm install")
}

/// `npm install [packages]` in the session folder `dir` (`local`: the
/// local packages among them, opened), then the allowed lifecycle scripts:
/// the run, whatever its exit code.
pub(crate) async fn install(
    state: &Arc<State>,
    dir: &Path,
    packages: &[String],
    local: Vec<OwnedFd>,
    timeout: Duration,
    started: Instant,
) -> Result<ExecOutput, PackError> {
    state.runner.tools.node()?;
    let npm = state.runner.tools.npm.clone().ok_or_else(|| {
        let message = "npm is not installed: no `npm` beside node nor on PATH; install it (e.g. `apt-get install npm`)";
        PackError::not_found(message).with_result(&ExecOutput::refused(message))
    })?;
    // npm's cache and temporary files are the session's own (never the
    // host user's ~/.npm, which is neither readable nor shared).
    let session = dir.to_owned();
    let tmp = blocking(state, move |_| {
        Scratch::new(&session, ".packhost", "npm-")
            .map_err(|e| notebook::io_error(&session.join(".packhost"), e))
    })
    .await?;
    // The proxy serves until this call ends, when it is dropped.
    let (network, proxy) = state.npm.egress().map_err(|e| {
        let message = format!("cannot start npm's egress proxy: {e}");
        PackError::internal(message.clone()).with_result(&ExecOutput::refused(message))
    })?;
    let mut env = node::tmpdir(tmp.path());
    env.insert(
        "npm_config_cache".to_owned(),
        dir.join(".packhost/npm-cache").display().to_string(),
    );
    env.insert("npm_config_update_notifier".to_owned(), "false".to_owned());
    env.extend(state.npm.env(proxy.as_ref()));
    let policy = state.runner.npm_policy(dir, local, network);
    let runner = &state.runner;
    let install = npm::install_args(packages);
    let installed = runner
        .run(&npm, &install, dir, &policy, &env, timeout, started)
        .await?;
    let session = dir.to_owned();
    let scripted = match installed.exit_code {
        0 => blocking(state, move |state| Ok(state.npm.scripted(&session))).await?,
        _ => Vec::new(),
    };
    let mut output = if scripted.is_empty() {
        installed
    } else {
        let rebuild = npm::rebuild_args(&scripted);
        let left = timeout.saturating_sub(started.elapsed());
        let rebuilt = runner
            .run(&npm, &rebuild, dir, &policy, &env, left, started)
            .await?;
        installed.followed_by(rebuilt)
    };
    npm::note_refusals(&mut output, proxy.as_ref());
    Ok(output)
}
