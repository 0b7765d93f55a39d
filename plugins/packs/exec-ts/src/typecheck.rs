//! The type check before code runs: the real TypeScript compiler (7.x, the
//! native port) checks the code against the declarations of the packs the
//! caller may reach, confined like code, in a fresh folder. A type error
//! comes back with the line and column of the code as it was sent, before
//! anything ran.

use std::{
    path::{Path, PathBuf},
    time::{Duration, Instant},
};

use pack_sdk::{Catalog, PackError};

use crate::node::{ExecOutput, Runner};

/// What node gives code besides the packs, loosely typed.
const GLOBALS: &str = include_str!("globals.d.ts");
/// The code's file in the check's folder; its line numbers are the code's.
const CODE_FILE: &str = "code.ts";
/// How long a check may take.
const CHECK_TIMEOUT: Duration = Duration::from_secs(30);
/// Why a type check cannot run, and how to make it.
pub const NO_COMPILER: &str = "type checks need the TypeScript compiler: `npm install typescript@7`, then set \
     `typescript` in [packs.exec_ts] config to the `node_modules/typescript` folder";

/// The TypeScript compiler: its native binary and what it reads (its own
/// folder, which holds the `lib.*.d.ts`).
#[derive(Debug, Clone)]
pub struct Checker {
    tsc: PathBuf,
    runtime: Vec<PathBuf>,
}

impl Checker {
    /// From the `typescript` config: the `typescript` npm package's folder
    /// (7.x: its native compiler is the platform package beside it) or the
    /// `tsc` binary itself.
    pub fn find(typescript: &Path) -> Result<Self, String> {
        let tsc = if typescript.is_dir() {
            native_tsc(typescript).ok_or_else(|| {
                format!(
                    "`typescript` = {:?} has no native compiler for {}-{}: it must be the folder of \
                     the `typescript` npm package, version 7 or newer, installed on this machine \
                     (`npm install typescript@7`)",
                    typescript.display(),
                    std::env::consts::OS,
                    std::env::consts::ARCH,
                )
            })?
        } else if typescript.is_file() {
            typescript.to_path_buf()
        } else {
            return Err(format!(
                "`typescript` = {:?} does not exist; give the folder of the `typescript` npm package \
                 (7 or newer, e.g. ~/node_modules/typescript after `npm install typescript@7`)",
                typescript.display()
            ));
        };
        let tsc = tsc
            .canonicalize()
            .map_err(|e| format!("{}: {e}", tsc.display()))?;
        let runtime = tsc.parent().map(Path::to_path_buf).into_iter().collect();
        Ok(Self { tsc, runtime })
    }

    /// Check `code` against the declarations of `catalog`: `Ok` when it
    /// type-checks, else an `INVALID_ARGUMENT` naming the first error's line
    /// and column, with every error in the run shape's `stderr`.
    pub async fn check(
        &self,
        runner: &Runner,
        catalog: &Catalog,
        code: &str,
        started: Instant,
    ) -> Result<(), PackError> {
        let declarations = declarations::typescript(catalog, &Default::default())?;
        let dir = tempfile::Builder::new()
            .prefix("packhost-typecheck-")
            .tempdir()
            .map_err(|e| PackError::internal(format!("no folder for the type check: {e}")))?;
        // `export {}`: the code is a module (top-level await), on a line of
        // its own after the code's last.
        let files = [
            (CODE_FILE, format!("{code}\nexport {{}};\n")),
            ("packs.d.ts", declarations),
            ("globals.d.ts", GLOBALS.to_owned()),
        ];
        for (name, text) in &files {
            std::fs::write(dir.path().join(name), text)
                .map_err(|e| PackError::internal(format!("cannot write {name}: {e}")))?;
        }
        let mut args: Vec<std::ffi::OsString> = [
            "--noEmit",
            "--strict",
            "--skipLibCheck",
            "--target",
            "es2022",
            "--module",
            "esnext",
            "--moduleResolution",
            "bundler",
            "--lib",
            "es2022",
            "--types",
            "",
            "--pretty",
            "false",
            "--singleThreaded",
        ]
        .map(Into::into)
        .into();
        args.extend(files.iter().map(|(name, _)| (*name).into()));
        let policy = runner.tool_policy(&self.runtime, dir.path());
        let output = runner
            .run(
                &self.tsc,
                &args,
                dir.path(),
                &policy,
                &Default::default(),
                CHECK_TIMEOUT,
                started,
            )
            .await?;
        match output.exit_code {
            0 => Ok(()),
            // 1 and 2: errors found (with or without outputs skipped).
            1 | 2 if output.stdout.contains(": error TS") => Err(type_errors(output)),
            code => Err(PackError::internal(format!(
                "the TypeScript compiler failed (exit code {code}): {}{}",
                output.stdout.trim(),
                output.stderr.trim()
            ))),
        }
    }
}

/// The native compiler of a `typescript` 7 package: its platform package,
/// a sibling in `node_modules` or inside the package.
fn native_tsc(package: &Path) -> Option<PathBuf> {
    let arch = match std::env::consts::ARCH {
        "x86_64" => "x64",
        "aarch64" => "arm64",
        other => other,
    };
    let platform = format!("@typescript/typescript-{}-{arch}", std::env::consts::OS);
    let beside = package.parent().map(|modules| modules.join(&platform));
    let inside = package.join("node_modules").join(&platform);
    beside
        .into_iter()
        .chain([inside])
        .map(|dir| dir.join("lib/tsc"))
        .find(|tsc| tsc.is_file())
}

/// `code.ts(3,29): error TS2322: ...` lines as the code's own: `line 3,
/// column 29: error TS2322: ...`; the first one is the message.
fn type_errors(output: ExecOutput) -> PackError {
    let diagnostics: Vec<String> = output
        .stdout
        .lines()
        .map(
            |line| match line.strip_prefix(CODE_FILE).and_then(position) {
                Some((line_no, column, rest)) => format!("line {line_no}, column {column}: {rest}"),
                None => line.to_owned(),
            },
        )
        .collect();
    let errors = diagnostics
        .iter()
        .filter(|d| d.contains("error TS"))
        .count();
    let first = diagnostics
        .iter()
        .find(|d| d.contains("error TS"))
        .cloned()
        .unwrap_or_default();
    let more = match errors {
        0 | 1 => String::new(),
        n => format!(" ({} more in `stderr`)", n - 1),
    };
    let result = ExecOutput {
        stdout: String::new(),
        stderr: diagnostics.join("\n") + "\n",
        exit_code: 1,
        ..output
    };
    PackError::invalid_argument(format!(
        "the code does not type-check against the packs' declarations, so it did not run: {first}{more}"
    ))
    .with_help("fix the calls to match the declarations (`exec_ts.declarations` shows them), or pass `typecheck: false`")
    .with_result(&result)
}

/// `(3,29): rest` → `(3, 29, rest)`.
fn position(text: &str) -> Option<(u32, u32, &str)> {
    let (inside, rest) = text.strip_prefix('(')?.split_once("): ")?;
    let (line, column) = inside.split_once(',')?;
    Some((line.parse().ok()?, column.parse().ok()?, rest))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_point_at_the_codes_own_line_and_column() {
        let output = ExecOutput {
            stdout:
                "code.ts(3,29): error TS2322: Type 'number' is not assignable to type 'string'.\n\
                     code.ts(5,1): error TS2304: Cannot find name 'nope'.\n"
                    .to_owned(),
            exit_code: 1,
            ..ExecOutput::default()
        };
        let error = type_errors(output);
        assert_eq!(error.code(), pack_sdk::codes::INVALID_ARGUMENT);
        assert!(
            error.message().ends_with(
                "did not run: line 3, column 29: error TS2322: Type 'number' is not assignable to type 'string'. (1 more in `stderr`)"
            ),
            "{}",
            error.message()
        );
    }

    #[test]
    fn a_missing_compiler_says_what_to_install() {
        let error = Checker::find(Path::new("/nonexistent/typescript")).unwrap_err();
        assert!(error.contains("npm install typescript@7"), "{error}");
    }
}
