//! Srcbook's `.src.md` format: a session as one Markdown document.
//!
//! ````text
//! <!-- srcbook:{"language":"typescript"} -->
//!
//! # Title
//!
//! ###### package.json
//!
//! ```json
//! {"type": "module"}
//! ```
//!
//! Some markdown (a markdown cell).
//!
//! ###### hello.ts
//!
//! ```typescript
//! console.log("hi");
//! ```
//! ````

use serde_json::Value;

use crate::notebook::Language;

/// A parsed or to-be-written document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Document {
    /// The `# Title`.
    pub title: String,
    /// From the header.
    pub language: Language,
    /// The `package.json` block, if any.
    pub package_json: Option<String>,
    /// Cells in order.
    pub cells: Vec<Cell>,
}

/// One cell of a document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Cell {
    /// Markdown text.
    Markdown(String),
    /// A code block under `###### filename`.
    Code {
        /// The heading's file name.
        filename: String,
        /// The block's content.
        source: String,
    },
}

/// The document as `.src.md` text.
pub fn render(doc: &Document) -> String {
    let header = serde_json::json!({ "language": doc.language.fence_name() });
    let mut out = format!("<!-- srcbook:{header} -->\n\n# {}\n", doc.title);
    if let Some(package) = &doc.package_json {
        out.push_str(&format!(
            "\n###### package.json\n\n{}",
            fenced("json", package)
        ));
    }
    for cell in &doc.cells {
        match cell {
            Cell::Markdown(text) => out.push_str(&format!("\n{}\n", text.trim_end())),
            Cell::Code { filename, source } => {
                let info = Language::from_filename(filename)
                    .unwrap_or_default()
                    .fence_name();
                out.push_str(&format!("\n###### {filename}\n\n{}", fenced(info, source)));
            }
        }
    }
    out
}

/// A fence longer than any backtick run in `body`.
fn fenced(info: &str, body: &str) -> String {
    let longest = body.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat(longest.max(2) + 1);
    let body = body.strip_suffix('\n').unwrap_or(body);
    format!("{fence}{info}\n{body}\n{fence}\n")
}

/// Parse `.src.md` text. Errors say which line is wrong and what was expected.
pub fn parse(text: &str) -> Result<Document, String> {
    let text = text.replace("\r\n", "\n");
    let lines: Vec<&str> = text.lines().collect();
    let mut doc = Document {
        title: String::new(),
        language: Language::Typescript,
        package_json: None,
        cells: Vec::new(),
    };
    let mut i = 0;
    let mut saw_header = false;
    let mut markdown: Vec<&str> = Vec::new();
    let flush = |markdown: &mut Vec<&str>, cells: &mut Vec<Cell>| {
        let joined = markdown.join("\n");
        let trimmed = joined.trim();
        if !trimmed.is_empty() {
            cells.push(Cell::Markdown(trimmed.to_owned()));
        }
        markdown.clear();
    };
    while i < lines.len() {
        let line = lines[i];
        let trimmed = line.trim();
        if !saw_header && let Some(rest) = trimmed.strip_prefix("<!-- srcbook:") {
            let json = rest.strip_suffix("-->").ok_or_else(|| {
                format!(
                    "line {}: the srcbook header must end with `-->` on the same line",
                    i + 1
                )
            })?;
            let header: Value = serde_json::from_str(json.trim())
                .map_err(|e| format!("line {}: the srcbook header is not JSON: {e}", i + 1))?;
            doc.language = match header.get("language").and_then(Value::as_str) {
                None | Some("typescript") => Language::Typescript,
                Some("javascript") => Language::Javascript,
                Some(other) => {
                    return Err(format!(
                        "line {}: srcbook language `{other}` is not supported; use \"typescript\" or \"javascript\"",
                        i + 1
                    ));
                }
            };
            saw_header = true;
            i += 1;
            continue;
        }
        if doc.title.is_empty()
            && let Some(title) = trimmed.strip_prefix("# ")
        {
            doc.title = title.trim().to_owned();
            i += 1;
            continue;
        }
        if let Some(name) = trimmed.strip_prefix("###### ") {
            let name = name.trim().to_owned();
            let (source, next) = code_block(&lines, i + 1).ok_or_else(|| {
                format!(
                    "line {}: `###### {name}` must be followed by a fenced code block (```…```)",
                    i + 1
                )
            })?;
            flush(&mut markdown, &mut doc.cells);
            if name == "package.json" {
                doc.package_json = Some(source);
            } else {
                doc.cells.push(Cell::Code {
                    filename: name,
                    source,
                });
            }
            i = next;
            continue;
        }
        markdown.push(line);
        i += 1;
    }
    flush(&mut markdown, &mut doc.cells);
    if !saw_header && doc.title.is_empty() {
        return Err(
            "not a .src.md document: expected a `<!-- srcbook:{...} -->` header or a `# Title` line"
                .to_owned(),
        );
    }
    if doc.title.is_empty() {
        doc.title = "Untitled".to_owned();
    }
    Ok(doc)
}

/// The fenced block starting at or after `start` (blank lines skipped): its
/// content and the index after the closing fence.
fn code_block(lines: &[&str], start: usize) -> Option<(String, usize)> {
    let mut i = start;
    while i < lines.len() && lines[i].trim().is_empty() {
        i += 1;
    }
    let open = lines.get(i)?.trim_start();
    let ticks = open.bytes().take_while(|&b| b == b'`').count();
    if ticks < 3 {
        return None;
    }
    let fence = &open[..ticks];
    let mut body = Vec::new();
    for (j, line) in lines.iter().enumerate().skip(i + 1) {
        let t = line.trim();
        if t.starts_with(fence) && t.bytes().all(|b| b == b'`') {
            let mut source = body.join("\n");
            source.push('\n');
            return Some((source, j + 1));
        }
        body.push(*line);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Document {
        Document {
            title: "Demo".into(),
            language: Language::Typescript,
            package_json: Some("{\n  \"type\": \"module\"\n}\n".into()),
            cells: vec![
                Cell::Markdown("Some *text*.".into()),
                Cell::Code {
                    filename: "a.ts".into(),
                    source: "export const a: number = 1;\n".into(),
                },
                Cell::Code {
                    filename: "b.js".into(),
                    source: "// ``` inside\nconsole.log('```');\n".into(),
                },
            ],
        }
    }

    #[test]
    fn render_then_parse_is_the_same_document() {
        let text = render(&sample());
        assert!(
            text.starts_with("<!-- srcbook:{\"language\":\"typescript\"} -->\n\n# Demo\n"),
            "{text}"
        );
        assert!(text.contains("###### a.ts\n\n```typescript\n"), "{text}");
        assert!(text.contains("````javascript\n"), "{text}");
        assert_eq!(parse(&text).unwrap(), sample());
    }

    #[test]
    fn a_heading_without_a_block_is_refused_with_its_line() {
        let err = parse("# T\n\n###### a.ts\n\nnot code\n").unwrap_err();
        assert!(err.starts_with("line 3:"), "{err}");
    }

    #[test]
    fn text_that_is_not_a_srcbook_is_refused() {
        assert!(parse("just words\n").unwrap_err().contains("not a .src.md"));
    }
}
