//! TypeScript → JavaScript in-process, so `node` never needs a loader.
//!
//! First try swc's strip-only mode: every type annotation becomes whitespace,
//! so the JavaScript keeps the line and column of every token and node's
//! stack traces point at the original TypeScript. Syntax that needs code
//! generated (`enum`, `namespace`, parameter properties) is not strippable:
//! then the file is transformed instead, which keeps the code working but not
//! the columns.

use std::{
    io::Write,
    sync::{Arc, Mutex},
};

use swc_common::{GLOBALS, Globals, SourceMap, errors::Handler, sync::Lrc};
use swc_ts_fast_strip::{ErrorCode, Mode, Options, operate};

/// Why a file could not be stripped: a first line `SyntaxError: … (line L,
/// column C)`, then compiler-style diagnostics naming the file, line and
/// column in the original code, with a caret excerpt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StripError(pub String);

/// The JavaScript for the TypeScript `code` of file `filename` (the name is
/// only used in diagnostics).
pub fn strip_types(code: &str, filename: &str) -> Result<String, StripError> {
    match run(code, filename, Mode::StripOnly) {
        Err((ErrorCode::UnsupportedSyntax, _)) => {
            run(code, filename, Mode::Transform).map_err(|(_, text)| StripError(text))
        }
        other => other.map_err(|(_, text)| StripError(text)),
    }
}

/// Diagnostics land here instead of the host's stderr.
#[derive(Clone, Default)]
struct Sink(Arc<Mutex<Vec<u8>>>);

impl Write for Sink {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn run(code: &str, filename: &str, mode: Mode) -> Result<String, (ErrorCode, String)> {
    let sink = Sink::default();
    let cm: Lrc<SourceMap> = Default::default();
    let handler = Handler::with_emitter_writer(Box::new(sink.clone()), Some(cm.clone()));
    let options = Options {
        // Always ES modules: `import`, `export` and top-level `await` work.
        module: Some(true),
        filename: Some(filename.to_owned()),
        mode,
        ..Options::default()
    };
    let result = GLOBALS.set(&Globals::new(), || {
        operate(&cm, &handler, code.to_owned(), options)
    });
    drop(handler);
    match result {
        Ok(output) => Ok(output.code),
        Err(error) => {
            let diagnostics =
                String::from_utf8_lossy(&sink.0.lock().unwrap_or_else(|e| e.into_inner()))
                    .trim_end()
                    .to_owned();
            // The first line says what and where, as a thrown error's does.
            let text = match (
                crate::instrument::syntax_error(code, true),
                diagnostics.is_empty(),
            ) {
                (Some(first), true) => first,
                (Some(first), false) => format!("{first}\n{diagnostics}"),
                (None, true) => format!("{filename}: TypeScript {}: {}", error.code, error.message),
                (None, false) => format!("{filename}: TypeScript syntax error\n{diagnostics}"),
            };
            Err((error.code, text))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn types_become_whitespace_and_positions_stay() {
        let js = strip_types("const x: number = 42;\nconsole.log(x);\n", "a.ts").unwrap();
        assert_eq!(js, "const x         = 42;\nconsole.log(x);\n");
    }

    #[test]
    fn interfaces_and_type_imports_vanish() {
        let js = strip_types(
            "import type { A } from './a.ts';\ninterface P { x: number }\nexport const p = { x: 1 } as P;\n",
            "b.ts",
        )
        .unwrap();
        assert!(!js.contains("interface"), "{js}");
        assert!(!js.contains("import type"), "{js}");
        assert!(js.contains("export const p = { x: 1 }"), "{js}");
        assert_eq!(js.lines().count(), 3, "{js}");
    }

    #[test]
    fn enums_are_transformed_instead() {
        let js = strip_types(
            "enum Color { Red, Green }\nconsole.log(Color.Green);\n",
            "e.ts",
        )
        .unwrap();
        assert!(!js.contains("enum Color"), "{js}");
        assert!(js.contains("Green"), "{js}");
    }

    #[test]
    fn top_level_await_parses() {
        let js = strip_types("const v: number = await Promise.resolve(1);\n", "t.ts").unwrap();
        assert!(js.contains("await Promise.resolve(1)"), "{js}");
    }

    #[test]
    fn a_syntax_error_names_the_file_and_original_line() {
        let err = strip_types("const a = 1;\n\nconst x: number = ;\n", "input.ts").unwrap_err();
        assert!(
            err.0
                .starts_with("SyntaxError: Expression expected (line 3, column 19)\n"),
            "{}",
            err.0
        );
        assert!(err.0.contains("input.ts:3:"), "{}", err.0);
        assert!(err.0.contains("const x: number = ;"), "{}", err.0);
    }
}
