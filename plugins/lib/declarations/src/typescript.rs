//! The TypeScript form: a `.d.ts` script (no import or export, so its
//! declarations are globals, as `exec_ts` makes packs and aliases).

use pack_api::{Catalog, CatalogPrompt, CatalogTool};
use pack_sdk::PackError;
use serde_json::Value;

use crate::{
    schema::{self, Object, Property, Ty},
    select::{HOST_PACK, Selection, select},
};

const HEADER: &str = "\
// The packhost tools this code can call. Every function takes one object of
// named arguments and returns a Promise of its result.

/** A pack function failed: `code` is its stable error code (e.g. INVALID_ARGUMENT, NOT_FOUND), `help` what would be right. */
declare class PackError extends Error {
  readonly code: string;
  readonly help?: string;
  readonly data?: unknown;
}
";

/// Names `exec_ts` cannot make globals: words JavaScript reserves (strict
/// mode and modules included) and what node and the prelude already define
/// (node 20's `globalThis`, plus newer ones). `exec_ts` checks the real
/// globals when it starts; this mirrors it so that the declarations compile.
#[rustfmt::skip]
const NOT_GLOBAL: &[&str] = &[
    // Reserved words, and names strict mode does not let code bind.
    "arguments", "await", "break", "case", "catch", "class", "const", "continue", "debugger",
    "default", "delete", "do", "else", "enum", "eval", "export", "extends", "false", "finally",
    "for", "function", "if", "implements", "import", "in", "instanceof", "interface", "let", "new",
    "null", "package", "private", "protected", "public", "return", "static", "super", "switch",
    "this", "throw", "true", "try", "typeof", "var", "void", "while", "with", "yield",
    // The prelude's own.
    "PackError", "packhost",
    // node's globals.
    "AbortController", "AbortSignal", "AggregateError", "Array", "ArrayBuffer", "Atomics", "BigInt",
    "BigInt64Array", "BigUint64Array", "Blob", "Boolean", "BroadcastChannel", "Buffer",
    "ByteLengthQueuingStrategy", "CloseEvent", "CompressionStream", "CountQueuingStrategy",
    "Crypto", "CryptoKey", "CustomEvent", "DOMException", "DataView", "Date", "DecompressionStream",
    "Error", "EvalError", "Event", "EventTarget", "File", "FinalizationRegistry", "Float16Array",
    "Float32Array", "Float64Array", "FormData", "Function", "Headers", "Infinity", "Int16Array",
    "Int32Array", "Int8Array", "Intl", "Iterator", "JSON", "Map", "Math", "MessageChannel",
    "MessageEvent", "MessagePort", "NaN", "Navigator", "Number", "Object", "Performance",
    "PerformanceEntry", "PerformanceMark", "PerformanceMeasure", "PerformanceObserver",
    "PerformanceObserverEntryList", "PerformanceResourceTiming", "Promise", "Proxy", "RangeError",
    "ReadableByteStreamController", "ReadableStream", "ReadableStreamBYOBReader",
    "ReadableStreamBYOBRequest", "ReadableStreamDefaultController", "ReadableStreamDefaultReader",
    "ReferenceError", "Reflect", "RegExp", "Request", "Response", "Set", "SharedArrayBuffer",
    "Storage", "String", "SubtleCrypto", "Symbol", "SyntaxError", "TextDecoder",
    "TextDecoderStream", "TextEncoder", "TextEncoderStream", "TransformStream",
    "TransformStreamDefaultController", "TypeError", "URIError", "URL", "URLSearchParams",
    "Uint16Array", "Uint32Array", "Uint8Array", "Uint8ClampedArray", "WeakMap", "WeakRef",
    "WeakSet", "WebAssembly", "WebSocket", "WritableStream", "WritableStreamDefaultController",
    "WritableStreamDefaultWriter", "atob", "btoa", "clearImmediate", "clearInterval",
    "clearTimeout", "console", "crypto", "decodeURI", "decodeURIComponent", "encodeURI",
    "encodeURIComponent", "escape", "eval", "fetch", "global", "globalThis", "isFinite", "isNaN",
    "localStorage", "navigator", "parseFloat", "parseInt", "performance", "process",
    "queueMicrotask", "sessionStorage", "setImmediate", "setInterval", "setTimeout",
    "structuredClone", "undefined", "unescape",
];

/// The `.d.ts` text declaring the selected packs, their functions and the
/// aliases to them, `PackError` and `packhost`. A pack or alias that cannot
/// be a global is left out with a comment (it stays reachable through
/// `packhost`).
pub fn typescript(catalog: &Catalog, selection: &Selection) -> Result<String, PackError> {
    let selected = select(catalog, selection)?;
    let mut out = String::from(HEADER);
    let mut globals: Vec<&str> = Vec::new();
    // `packhost.packs`: every selected pack, by `typeof` when it is a global.
    let mut packs: Vec<(&str, String)> = Vec::new();
    // The host's own pack is part of the `packhost` global.
    let mut own = None;
    for (pack, tools) in &selected.packs {
        let prompts = selected.prompts(pack, tools);
        if *pack == HOST_PACK {
            own = Some(pack_type(tools, &prompts, 0));
            continue;
        }
        out.push('\n');
        match not_global(pack, &globals) {
            None => {
                out += &jsdoc(&[format!("`{pack}` pack")], 0);
                let ty = pack_type(tools, &prompts, 0);
                out += &format!("declare const {pack}: {ty};\n");
                globals.push(pack);
                packs.push((pack, format!("typeof {pack}")));
            }
            Some(reason) => {
                out += &format!(
                    "// pack {} is {reason}, so not a global: reach it as packhost.packs[{0}] \
                     or packhost.call({}, {{...}})\n",
                    quote(pack),
                    quote(&format!("{pack}.{}", tools[0].function)),
                );
                packs.push((pack, pack_type(tools, &prompts, 4)));
            }
        }
    }
    if !selected.aliases.is_empty() {
        out.push('\n');
    }
    for (alias, tool) in &selected.aliases {
        let target = tool.name();
        match not_global(alias, &globals) {
            None => {
                out += &jsdoc(&[format!("Alias of `{target}`.")], 0);
                let ty = if globals.contains(&tool.pack.as_str()) {
                    format!("typeof {}{}", tool.pack, member_access(&tool.function))
                } else {
                    function_type(tool, 0)
                };
                out += &format!("declare const {alias}: {ty};\n");
                globals.push(alias);
            }
            Some(reason) => {
                out += &format!(
                    "// alias {} of {} is {reason}, so not a global: \
                     reach it as packhost.call({1}, {{...}})\n",
                    quote(alias),
                    quote(&target),
                );
            }
        }
    }
    out.push('\n');
    out += &packhost(&packs, catalog, own);
    Ok(out)
}

/// Why `name` cannot be declared as a global, or `None`.
fn not_global(name: &str, declared: &[&str]) -> Option<&'static str> {
    if !is_identifier(name) {
        Some("not a JavaScript identifier")
    } else if NOT_GLOBAL.contains(&name) {
        Some("a reserved word or a global of node")
    } else if declared.contains(&name) {
        Some("already declared (a pack or alias of that name comes first)")
    } else {
        None
    }
}

fn packhost(packs: &[(&str, String)], catalog: &Catalog, own: Option<String>) -> String {
    let mut out = String::from(OFFER_TYPES);
    out.push('\n');
    out += &jsdoc(
        &["packhost itself: any tool by its full name, every pack, the projects, prompts and resources.".to_owned()],
        0,
    );
    out += "declare const packhost: {\n";
    out += &jsdoc(
        &["Call a tool by its full name: `packhost.call(\"proj.list\", {})`.".to_owned()],
        2,
    );
    out += "  call(tool: string, args?: { [key: string]: unknown }): Promise<unknown>;\n";
    out += &jsdoc(
        &["Every pack, also one whose name cannot be a global.".to_owned()],
        2,
    );
    out += "  readonly packs: {";
    if packs.is_empty() {
        out += "};\n";
    } else {
        out.push('\n');
        for (pack, ty) in packs {
            out += &format!("    readonly {}: {ty};\n", member(pack));
        }
        out += "  };\n";
    }
    let names: Vec<&str> = catalog.projects.keys().map(String::as_str).collect();
    let projects = if names.is_empty() {
        "The projects you may see: name -> absolute path (none).".to_owned()
    } else {
        format!(
            "The projects you may see: name -> absolute path ({}).",
            names.join(", ")
        )
    };
    out += &jsdoc(&[projects], 2);
    out += "  readonly projects: { readonly [name: string]: string };\n";
    out += OFFER_MEMBERS;
    match own {
        Some(functions) => out += &format!("}} & {functions};\n"),
        None => out += "};\n",
    }
    out
}

/// `{ fn(args: ...): Promise<...>; ...; prompts: {...} }` at `indent`.
fn pack_type(tools: &[&CatalogTool], prompts: &[&CatalogPrompt], indent: usize) -> String {
    let inner = " ".repeat(indent + 2);
    let mut out = String::from("{\n");
    for tool in tools {
        if !tool.description.is_empty() {
            out += &jsdoc(std::slice::from_ref(&tool.description), indent + 2);
        }
        let (parameter, result) = signature(tool, indent + 2);
        out += &format!("{inner}{}{parameter}: {result};\n", member(&tool.function));
    }
    if !prompts.is_empty() {
        let doc = "Its MCP prompts: each renders with its arguments (strings) to a PromptResult.";
        out += &jsdoc(&[doc.to_owned()], indent + 2);
        out += &format!(
            "{inner}readonly prompts: {};\n",
            prompts_type(prompts, indent + 2)
        );
    }
    out += &" ".repeat(indent);
    out.push('}');
    out
}

/// `{ name(args: { argument: string; ... }): Promise<PromptResult>; ... }`
/// at `indent`.
fn prompts_type(prompts: &[&CatalogPrompt], indent: usize) -> String {
    let inner = " ".repeat(indent + 2);
    let mut out = String::from("{\n");
    for prompt in prompts {
        let spec = &prompt.spec;
        out += &jsdoc(spec.description.as_slice(), indent + 2);
        let optional = spec.arguments.iter().all(|a| !a.required);
        let mut arguments = String::from("{");
        for argument in &spec.arguments {
            arguments += &format!("\n{}", jsdoc(argument.description.as_slice(), indent + 4));
            let mark = if argument.required { "" } else { "?" };
            arguments += &format!("{inner}  {}{mark}: string;", member(&argument.name));
        }
        if !spec.arguments.is_empty() {
            arguments += &format!("\n{inner}");
        }
        arguments.push('}');
        let mark = if optional { "?" } else { "" };
        out += &format!(
            "{inner}{}(args{mark}: {arguments}): Promise<PromptResult>;\n",
            member(&spec.name)
        );
    }
    out += &" ".repeat(indent);
    out.push('}');
    out
}

/// What rendering a prompt and reading a resource give, which `packhost`
/// and the packs' `prompts` name.
const OFFER_TYPES: &str = "\
/** A rendered prompt: MCP's GetPromptResult. A text message's content is `{ type: \"text\", text }`. */
type PromptResult = {
  description?: string;
  messages: { role: \"user\" | \"assistant\"; content: { type: string; text?: string; [key: string]: unknown } }[];
};

/** A read resource: MCP's ReadResourceResult, text as `text`, bytes as base64 `blob`. */
type ResourceResult = { contents: { uri: string; mimeType?: string; text?: string; blob?: string }[] };
";

/// `packhost`'s prompts and resources, at indent 2.
const OFFER_MEMBERS: &str = "  /** Every prompt you may render (`pack.prompts.<name>(...)` renders one). */
  prompts(): { name: string; description: string; arguments: { name: string; description?: string; required: boolean }[] }[];
  /** Render prompt `name` as `packhost.prompts()` lists it. */
  get_prompt(name: string, args?: { [argument: string]: string }): Promise<PromptResult>;
  /** Read resource `uri`: a pack's (see `packhost.resources()`), or a kept result `packhost://results/<handle>`. */
  read_resource(uri: string): Promise<ResourceResult>;
  /** The resources you may read, and templates of more. */
  resources(): Promise<{
    resources: { uri: string; name: string; description?: string; mimeType?: string }[];
    resourceTemplates: { uriTemplate: string; name: string; description?: string; mimeType?: string }[];
  }>;
";

/// `(args: ...) => Promise<...>`: an alias whose pack is no global.
fn function_type(tool: &CatalogTool, indent: usize) -> String {
    let (parameter, result) = signature(tool, indent);
    format!("{parameter} => {result}")
}

/// `(args: {...})` (or `(args?: ...)` when no argument is required) and
/// `Promise<...>`.
fn signature(tool: &CatalogTool, indent: usize) -> (String, String) {
    let input = schema::ty(&tool.input_schema, &tool.input_schema);
    let optional = match &input {
        Ty::Object(object) => object.properties.iter().all(|p| !p.required),
        Ty::Unknown => true,
        _ => false,
    };
    let input = render(&input, indent, Side::Input).0;
    let output = schema::ty(&tool.output_schema, &tool.output_schema);
    let output = render(&output, indent, Side::Output).0;
    let mark = if optional { "?" } else { "" };
    (
        format!("(args{mark}: {input})"),
        format!("Promise<{output}>"),
    )
}

/// Whether a type is read by the caller (defaults and bounds are worth
/// saying) or written by it.
#[derive(Clone, Copy, PartialEq)]
enum Side {
    Input,
    Output,
}

/// How a rendered type binds, for parentheses.
#[derive(Clone, Copy, PartialEq)]
enum Binding {
    Atom,
    Intersection,
    Union,
}

fn render(ty: &Ty, indent: usize, side: Side) -> (String, Binding) {
    let atom = |s: &str| (s.to_owned(), Binding::Atom);
    match ty {
        Ty::Unknown => atom("unknown"),
        Ty::Never => atom("never"),
        Ty::String => atom("string"),
        Ty::Integer | Ty::Number => atom("number"),
        Ty::Boolean => atom("boolean"),
        Ty::Null => atom("null"),
        Ty::Literal(value) => atom(&literal(value)),
        Ty::Array(item) => (
            format!("{}[]", operand(item, indent, side, Binding::Atom)),
            Binding::Atom,
        ),
        Ty::Tuple { items, rest } => {
            let mut parts: Vec<String> = items
                .iter()
                .map(|item| render(item, indent, side).0)
                .collect();
            if let Some(rest) = rest {
                parts.push(format!(
                    "...{}[]",
                    operand(rest, indent, side, Binding::Atom)
                ));
            }
            (format!("[{}]", parts.join(", ")), Binding::Atom)
        }
        Ty::Object(object) => object_type(object, indent, side),
        Ty::Union(members) => joined(
            members.iter().map(|m| render(m, indent, side)),
            " | ",
            Binding::Union,
        ),
        Ty::Intersection(members) => joined(
            members.iter().map(|m| {
                let text = operand(m, indent, side, Binding::Intersection);
                (text, Binding::Atom)
            }),
            " & ",
            Binding::Intersection,
        ),
    }
}

/// `ty` where it binds at least as tight as `within`: parenthesised if not.
fn operand(ty: &Ty, indent: usize, side: Side, within: Binding) -> String {
    let (text, binding) = render(ty, indent, side);
    let loose = match within {
        Binding::Atom => binding != Binding::Atom,
        Binding::Intersection => binding == Binding::Union,
        Binding::Union => false,
    };
    if loose { format!("({text})") } else { text }
}

/// Distinct `parts` joined; one left (`integer | number` is one TypeScript
/// type) binds as it does alone.
fn joined(
    parts: impl Iterator<Item = (String, Binding)>,
    separator: &str,
    binding: Binding,
) -> (String, Binding) {
    let mut distinct: Vec<(String, Binding)> = Vec::new();
    for part in parts {
        if !distinct.iter().any(|(text, _)| *text == part.0) {
            distinct.push(part);
        }
    }
    if distinct.len() == 1 {
        return distinct.remove(0);
    }
    let texts: Vec<String> = distinct.into_iter().map(|(text, _)| text).collect();
    (texts.join(separator), binding)
}

fn object_type(object: &Object, indent: usize, side: Side) -> (String, Binding) {
    let index = object
        .additional
        .as_ref()
        .map(|ty| format!("{{ [key: string]: {} }}", render(ty, indent, side).0));
    if object.properties.is_empty() {
        return (index.unwrap_or_else(|| "{}".to_owned()), Binding::Atom);
    }
    let inner = " ".repeat(indent + 2);
    let mut out = String::from("{\n");
    for property in &object.properties {
        out += &jsdoc(&property_doc(property, side), indent + 2);
        let mark = if property.required { "" } else { "?" };
        let ty = render(&property.ty, indent + 2, side).0;
        out += &format!("{inner}{}{mark}: {ty};\n", member(&property.name));
    }
    out += &" ".repeat(indent);
    out.push('}');
    match index {
        // An index signature must fit every property: as an intersection
        // it need not.
        Some(index) => (format!("{out} & {index}"), Binding::Intersection),
        None => (out, Binding::Atom),
    }
}

fn property_doc(property: &Property, side: Side) -> Vec<String> {
    let mut lines: Vec<String> = property.description.iter().cloned().collect();
    if side == Side::Input {
        if !property.constraints.is_empty() {
            lines.push(property.constraints.join(", "));
        }
        if let Some(default) = &property.default {
            lines.push(format!("@default {default}"));
        }
    }
    lines
}

/// A literal type. JSON happens to be TypeScript: an object `const` reads
/// as an object type of literal properties, an array as a tuple.
fn literal(value: &Value) -> String {
    match value {
        Value::String(s) => quote(s),
        other => other.to_string(),
    }
}

/// `/** ... */` at `indent`, one line when the text is one line; nothing
/// for no text.
fn jsdoc(texts: &[String], indent: usize) -> String {
    let pad = " ".repeat(indent);
    let lines: Vec<String> = texts
        .iter()
        .flat_map(|text| text.lines())
        .map(|line| line.trim_end().replace("*/", "*\\/"))
        .collect();
    match lines.as_slice() {
        [] => String::new(),
        [line] => format!("{pad}/** {line} */\n"),
        lines => {
            let mut out = format!("{pad}/**\n");
            for line in lines {
                if line.is_empty() {
                    out += &format!("{pad} *\n");
                } else {
                    out += &format!("{pad} * {line}\n");
                }
            }
            out + &pad + " */\n"
        }
    }
}

/// A member name: as it is when it is an identifier (reserved words are
/// fine there), else quoted.
fn member(name: &str) -> String {
    if is_identifier(name) {
        name.to_owned()
    } else {
        quote(name)
    }
}

/// `.name`, or `["name"]` for one that is no identifier.
fn member_access(name: &str) -> String {
    if is_identifier(name) {
        format!(".{name}")
    } else {
        format!("[{}]", quote(name))
    }
}

/// A JSON string is a JavaScript string literal; U+2028 and U+2029 are
/// escaped too, since they end a `//` comment.
fn quote(s: &str) -> String {
    Value::from(s)
        .to_string()
        .replace('\u{2028}', "\\u2028")
        .replace('\u{2029}', "\\u2029")
}

/// An ASCII JavaScript identifier (others are quoted or left out: rare,
/// and the rule for the rest of Unicode is long).
fn is_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == '$')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$')
}
