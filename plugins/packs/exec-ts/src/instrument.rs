//! What the pack adds to the code before node runs it, in place: every
//! line, and every column before an insertion on its line, stays where it
//! was, so stack traces point at the code as sent.
//! - The value of the last expression, like a notebook's: the statement is
//!   wrapped in a call of the prelude's answer function.
//! - Each `catch (e)` starts with a call of the prelude's `caught`: a
//!   `ReferenceError` for an unknown name says what exists there too, as it
//!   does when nothing catches it.

use swc_common::{BytePos, FileName, SourceFile, SourceMap, Spanned, sync::Lrc};
use swc_ecma_ast::{CatchClause, Module, ModuleItem, Pat, Stmt};
use swc_ecma_parser::{Parser, StringInput, Syntax};
use swc_ecma_visit::{Visit, VisitWith};

/// What the prelude answers with (`prelude.mjs`).
const ANSWER: &str = "await globalThis[Symbol.for(\"packhost.answer\")](";
/// What the prelude names unknown names with (`prelude.mjs`).
const CAUGHT: &str = "globalThis[Symbol.for(\"packhost.caught\")]";

/// `js` parsed as a JavaScript module, in its own source file: the module
/// and whether the parser had to recover from errors, or `Err` when it
/// could not parse at all.
pub(crate) fn parse_module(js: &str) -> (Lrc<SourceFile>, Result<(Module, bool), ()>) {
    let cm: Lrc<SourceMap> = Default::default();
    let file = cm.new_source_file(Lrc::new(FileName::Anon), js.to_owned());
    let mut parser = Parser::new(
        Syntax::Es(Default::default()),
        StringInput::from(&*file),
        None,
    );
    let parsed = parser
        .parse_module()
        .map(|module| (module, !parser.take_errors().is_empty()))
        .map_err(drop);
    (file, parsed)
}

/// The module `js` as node runs it; with `answer`, its last top-level
/// statement, when it is an expression, hands its value to the answer
/// function. Unchanged when it does not parse (node then says why).
pub fn instrument(js: &str, answer: bool) -> String {
    let (file, parsed) = parse_module(js);
    let Ok((module, _)) = parsed else {
        return js.to_owned();
    };
    let offset = |pos: BytePos| (pos - file.start_pos).0 as usize;
    let mut catches = Catches::default();
    module.visit_with(&mut catches);
    let mut inserts: Vec<(usize, String)> = catches
        .0
        .into_iter()
        .map(|(at, error)| (offset(at), format!("{CAUGHT}({error});")))
        .collect();
    if let (true, Some(ModuleItem::Stmt(Stmt::Expr(last)))) = (answer, module.body.last()) {
        let span = last.expr.span();
        inserts.push((offset(span.lo), ANSWER.to_owned()));
        inserts.push((offset(span.hi), ");".to_owned()));
    }
    inserts.sort_by_key(|(at, _)| *at);
    let mut out =
        String::with_capacity(js.len() + inserts.iter().map(|(_, s)| s.len()).sum::<usize>());
    let mut from = 0;
    for (at, text) in inserts {
        out.push_str(&js[from..at]);
        out.push_str(&text);
        from = at;
    }
    out.push_str(&js[from..]);
    out
}

/// Where [`instrument`] put the answer function in `js`: its line and
/// column (1-based, the column in UTF-16 units as node counts) and width.
/// The prelude takes the width off the later columns of that line, so a
/// stack points at the code as sent.
pub fn answered_at(js: &str) -> Option<(usize, usize, usize)> {
    let at = js.find(ANSWER)?;
    let before = &js[..at];
    let line_start = before.rfind('\n').map_or(0, |nl| nl + 1);
    let line = before.matches('\n').count() + 1;
    let column = before[line_start..].encode_utf16().count() + 1;
    Some((line, column, ANSWER.len()))
}

/// Where `code` does not parse, as the first line of an error:
/// `SyntaxError: Expression expected (line 3, column 19)`; `None` when it
/// parses.
pub fn syntax_error(code: &str, typescript: bool) -> Option<String> {
    let cm: Lrc<SourceMap> = Default::default();
    let file = cm.new_source_file(Lrc::new(FileName::Anon), code.to_owned());
    let syntax = if typescript {
        Syntax::Typescript(Default::default())
    } else {
        Syntax::Es(Default::default())
    };
    let mut parser = Parser::new(syntax, StringInput::from(&*file), None);
    let error = match parser.parse_module() {
        Err(error) => error,
        Ok(_) => parser.take_errors().into_iter().next()?,
    };
    let at = cm.lookup_char_pos(error.span().lo);
    Some(format!(
        "SyntaxError: {} (line {}, column {})",
        error.kind().msg(),
        at.line,
        at.col_display + 1
    ))
}

/// Where each `catch` clause that names its error starts (just inside its
/// `{`), and that name.
#[derive(Default)]
struct Catches(Vec<(BytePos, String)>);

impl Visit for Catches {
    fn visit_catch_clause(&mut self, clause: &CatchClause) {
        if let Some(Pat::Ident(error)) = &clause.param {
            self.0
                .push((clause.body.span.lo + BytePos(1), error.id.sym.to_string()));
        }
        clause.visit_children_with(self);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_expression_is_answered_in_place() {
        let js = "const a = 1;\na + 1\n";
        assert_eq!(
            instrument(js, true),
            format!("const a = 1;\n{ANSWER}a + 1);\n")
        );
        assert_eq!(instrument(js, false), js);
        let spread = "const a = 1;\n[\n  a,\n  2,\n];\n// done\n";
        let answered = instrument(spread, true);
        assert_eq!(
            answered.lines().count(),
            spread.lines().count(),
            "{answered}"
        );
        assert!(
            answered.contains(&format!("{ANSWER}[\n  a,\n  2,\n]);;\n// done")),
            "{answered}"
        );
    }

    #[test]
    fn other_endings_have_no_value() {
        for js in [
            "const a = 1;",
            "if (x) { y }",
            "function f() {}",
            "export const z = 2;",
            "",
            "a +",
        ] {
            assert_eq!(instrument(js, true), js);
        }
    }

    #[test]
    fn the_answer_is_found_where_it_was_put() {
        let answered = instrument("const a = 1;\nconst b = '€'; a + b\n", true);
        assert_eq!(answered_at(&answered), Some((2, 16, ANSWER.len())));
        assert_eq!(answered_at(&instrument("const a = 1;", true)), None);
    }

    #[test]
    fn a_syntax_error_is_one_line_with_its_line_and_column() {
        assert_eq!(
            syntax_error("const a = 1;\n\nconst x: number = ;\n", true).as_deref(),
            Some("SyntaxError: Expression expected (line 3, column 19)")
        );
        let js = syntax_error("const a = 1;\nconst b = (;\n", false).unwrap();
        assert!(
            js.starts_with("SyntaxError: ") && js.ends_with("(line 2, column 12)"),
            "{js}"
        );
        assert_eq!(syntax_error("const a: number = 1;", true), None);
    }

    #[test]
    fn catch_clauses_that_name_their_error_start_with_caught() {
        let js = "try { a } catch (e) { b }\nfunction f() {\n  try {} catch (err) {\n    try {} catch (inner) {}\n  }\n}\ntry {} catch {}\ntry {} catch ({ message }) {}\n";
        assert_eq!(
            instrument(js, false),
            format!(
                "try {{ a }} catch (e) {{{CAUGHT}(e); b }}\nfunction f() {{\n  try {{}} catch (err) {{{CAUGHT}(err);\n    try {{}} catch (inner) {{{CAUGHT}(inner);}}\n  }}\n}}\ntry {{}} catch {{}}\ntry {{}} catch ({{ message }}) {{}}\n"
            )
        );
        // Inside the answered expression too.
        let last = "(() => { try { a } catch (e) { return 1 } })()";
        assert_eq!(
            instrument(last, true),
            format!("{ANSWER}(() => {{ try {{ a }} catch (e) {{{CAUGHT}(e); return 1 }} }})());")
        );
    }
}
