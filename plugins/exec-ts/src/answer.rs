//! The value of a program's last expression, like a notebook's: the
//! statement is wrapped in a call of the prelude's answer function, in
//! place, so every line and the columns before it stay where they were.

use swc_common::{BytePos, FileName, SourceMap, Spanned, sync::Lrc};
use swc_ecma_ast::{ModuleItem, Stmt};
use swc_ecma_parser::{Parser, StringInput, Syntax};

/// What the prelude answers with (`prelude.mjs`).
const ANSWER: &str = "await globalThis[Symbol.for(\"packhost.answer\")](";

/// `js` with its last top-level statement, when it is an expression, handed
/// to the answer function; `None` when it ends otherwise (or does not parse:
/// node then says why).
pub fn answer_last_expression(js: &str) -> Option<String> {
    let cm: Lrc<SourceMap> = Default::default();
    let file = cm.new_source_file(Lrc::new(FileName::Anon), js.to_owned());
    let mut parser = Parser::new(
        Syntax::Es(Default::default()),
        StringInput::from(&*file),
        None,
    );
    let module = parser.parse_module().ok()?;
    let ModuleItem::Stmt(Stmt::Expr(last)) = module.body.last()? else {
        return None;
    };
    let offset = |pos: BytePos| (pos - file.start_pos).0 as usize;
    let span = last.expr.span();
    let (start, end) = (offset(span.lo), offset(span.hi));
    Some(format!(
        "{}{ANSWER}{});{}",
        &js[..start],
        &js[start..end],
        &js[end..]
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_expression_is_answered_in_place() {
        let js = "const a = 1;\na + 1\n";
        assert_eq!(
            answer_last_expression(js).unwrap(),
            format!("const a = 1;\n{ANSWER}a + 1);\n")
        );
        let spread = "const a = 1;\n[\n  a,\n  2,\n];\n// done\n";
        let answered = answer_last_expression(spread).unwrap();
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
            assert_eq!(answer_last_expression(js), None, "{js}");
        }
    }
}
