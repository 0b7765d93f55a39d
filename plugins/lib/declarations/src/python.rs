//! The Python form: stubs in `.pyi` style, a class per pack with a static
//! method per function, as `exec_py` makes packs objects with methods.

use pack_api::{Catalog, CatalogTool};
use pack_sdk::PackError;
use serde_json::Value;

use crate::{
    schema::{self, Object, Property, Ty},
    select::{HOST_PACK, Selection, select},
};

mod offers;

const HEADER: &str = "\
# The packhost tools this code can call: a class per pack, a static method per
# function. Arguments go by position, in the order shown, or by name.
from typing import Any, Literal, NotRequired, TypedDict


class PackError(Exception):
    \"\"\"A pack function failed: `code` is its stable error code (e.g. NOT_FOUND), `message` what happened. Bad arguments raise TypeError instead.\"\"\"

    code: str
    message: str
";

/// What the stubs themselves name: a pack, alias or `TypedDict` of that
/// name would hide them.
const TAKEN: &[&str] = &[
    "Any",
    "Literal",
    "NotRequired",
    "TypedDict",
    "PackError",
    "str",
    "int",
    "float",
    "bool",
    "list",
    "dict",
    "tuple",
    "staticmethod",
    "Exception",
];

/// Builtin types the stubs write, which a method of that name hides.
const BUILTINS: &[&str] = &["str", "int", "float", "bool", "list", "dict", "tuple"];

const KEYWORDS: &[&str] = &[
    "False", "None", "True", "and", "as", "assert", "async", "await", "break", "class", "continue",
    "def", "del", "elif", "else", "except", "finally", "for", "from", "global", "if", "import",
    "in", "is", "lambda", "nonlocal", "not", "or", "pass", "raise", "return", "try", "while",
    "with", "yield",
];

/// The stubs of the selected packs, their functions and the aliases to
/// them. A pack, function or alias whose name Python cannot write is left
/// out with a comment saying how to reach it.
pub fn python(catalog: &Catalog, selection: &Selection) -> Result<String, PackError> {
    let selected = select(catalog, selection)?;
    let prompts = |pack: &str, tools: &[&CatalogTool]| selected.prompts(pack, tools);
    // `packhost`'s own members come with its class, when the caller sees it.
    let host = selected.host && selected.packs.iter().any(|(pack, _)| *pack == HOST_PACK);
    // `PromptResult` and `ResourceResult`, when anything names them.
    let offered = host
        || selected
            .packs
            .iter()
            .any(|(pack, tools)| !prompts(pack, tools).is_empty());
    let offer_names = offers::NAMES.iter().filter(|_| offered);
    let reserved: Vec<String> = TAKEN
        .iter()
        .chain(offer_names)
        .map(|s| (*s).to_owned())
        .collect();
    let mut names = reserved.clone();
    let mut classes: Vec<&str> = Vec::new();
    for (pack, _) in &selected.packs {
        if not_a_name(pack, &names).is_none() {
            names.push((*pack).to_owned());
            classes.push(pack);
        }
    }
    let mut stubs = Stubs {
        names: &mut names,
        defined: Vec::new(),
        typed_dicts: Vec::new(),
        shadowed: Vec::new(),
        builtins: false,
    };
    let mut body = String::from(if offered { offers::TYPES } else { "" });
    for (pack, tools) in &selected.packs {
        if !classes.contains(pack) {
            let reason = not_a_name(pack, &reserved).unwrap_or("a name the stubs use already");
            body += &format!(
                "\n\n# pack {} is {reason}: reach it as globals()[{0}]\n",
                quote(pack)
            );
            continue;
        }
        // In the class body a method named `list` hides the builtin.
        stubs.shadowed = tools
            .iter()
            .map(|t| t.function.as_str())
            .filter(|f| BUILTINS.contains(f))
            .collect();
        let methods: Vec<String> = tools.iter().map(|tool| stubs.method(tool)).collect();
        for typed_dict in stubs.typed_dicts.drain(..) {
            body += "\n\n";
            body += &typed_dict;
        }
        body += &format!(
            "\n\nclass {pack}:\n    {}\n",
            docstring(&format!("`{pack}` pack."), 4)
        );
        for method in methods {
            body.push('\n');
            body += &method;
        }
        let prompts = prompts(pack, tools);
        if !prompts.is_empty() {
            body += &offers::prompts_class(pack, &prompts);
        }
        if *pack == HOST_PACK && host {
            body += offers::HOST_MEMBERS;
        }
    }
    let builtins = stubs.builtins;
    let mut aliases = String::new();
    for (alias, tool) in &selected.aliases {
        let target = tool.name();
        let reason = not_a_name(alias, &names).or_else(|| {
            if !classes.contains(&tool.pack.as_str()) {
                Some("an alias into a pack that is no class here")
            } else if not_a_name(&tool.function, &[]).is_some() {
                Some("an alias of a function that is no method here")
            } else {
                None
            }
        });
        match reason {
            None => {
                aliases += &format!("{alias} = {target}\n");
                names.push((*alias).to_owned());
            }
            Some(reason) => {
                aliases += &format!(
                    "# alias {} of {} is {reason}: reach it as globals()[{0}]\n",
                    quote(alias),
                    quote(&target)
                );
            }
        }
    }
    if !aliases.is_empty() {
        body += "\n\n";
        body += &aliases;
    }
    let import = if builtins { "import builtins\n" } else { "" };
    Ok(HEADER.replacen("from typing", &format!("{import}from typing"), 1) + &body)
}

/// Why `name` cannot be a class, method, parameter or alias name, or
/// `None`.
fn not_a_name(name: &str, taken: &[String]) -> Option<&'static str> {
    if !is_identifier(name) {
        Some("not a Python identifier")
    } else if KEYWORDS.contains(&name) {
        Some("a Python keyword")
    } else if taken.iter().any(|t| t == name) {
        Some("a name the stubs use already")
    } else {
        None
    }
}

/// Methods, and the `TypedDict`s they need (written before their pack).
struct Stubs<'a> {
    /// Module-level names in use.
    names: &'a mut Vec<String>,
    /// `(shape, name)` of the `TypedDict`s so far: the text after the name.
    defined: Vec<(String, String)>,
    /// The `TypedDict`s the current pack's methods need, not written yet.
    typed_dicts: Vec<String>,
    /// Builtins that methods of this pack hide: written `builtins.list`.
    shadowed: Vec<&'a str>,
    /// Whether a type said `builtins.`.
    builtins: bool,
}

/// A parameter as the signature shows it.
struct Parameter<'a> {
    property: &'a Property,
    /// The Python name: the property's, or with `_` after a keyword.
    name: String,
}

impl Stubs<'_> {
    fn method(&mut self, tool: &CatalogTool) -> String {
        let (pack, function) = (&tool.pack, &tool.function);
        if let Some(reason) = not_a_name(function, &[]) {
            return format!(
                "    # function {} is {reason}: call it as getattr({pack}, {0})(...)\n",
                quote(function)
            );
        }
        let prefix = format!("{}{}", camel(pack), camel(function));
        // The result first: it gets `<Pack><Function>Result`.
        let output = schema::ty(&tool.output_schema, &tool.output_schema);
        let result = self.ty(&output, &format!("{prefix}Result"));
        let input = schema::ty(&tool.input_schema, &tool.input_schema);
        let mut notes = Vec::new();
        let mut docs = Vec::new();
        let object = match &input {
            Ty::Object(object) => Some(object.clone()),
            Ty::Intersection(members) => merged(members),
            _ => None,
        };
        let parameters = match object {
            Some(object) => self.parameters(&object, &prefix, &mut notes, &mut docs),
            None => "**kwargs: Any".to_owned(),
        };
        let mut out = String::new();
        for note in notes {
            out += &format!("    # {note}\n");
        }
        out += &format!("    @staticmethod\n    def {function}({parameters}) -> {result}:");
        let mut doc = tool.description.clone();
        if !docs.is_empty() {
            doc += &format!("\n\nArgs:\n    {}", docs.join("\n    "));
        }
        if doc.trim().is_empty() {
            out += " ...\n";
        } else {
            out += &format!("\n        {}\n        ...\n", docstring(doc.trim(), 8));
        }
        out
    }

    /// The parameter list. Positional arguments bind in schema order, so the
    /// parameters keep it as long as Python allows (required ones before
    /// optional ones); the rest are keyword-only. A keyword as a name is
    /// written with `_` after it and made positional-only (by name it would
    /// arrive as `from_`); names Python cannot write go in `**kwargs`.
    fn parameters(
        &mut self,
        object: &Object,
        prefix: &str,
        notes: &mut Vec<String>,
        docs: &mut Vec<String>,
    ) -> String {
        let mut positional: Vec<Parameter> = Vec::new();
        let mut keyword_only: Vec<Parameter> = Vec::new();
        let mut other: Vec<&Property> = Vec::new();
        let mut last_renamed = None;
        let mut optional_seen = false;
        let mut in_order = true;
        let taken: Vec<String> = object.properties.iter().map(|p| p.name.clone()).collect();
        for property in &object.properties {
            let name = &property.name;
            let renamed = format!("{name}_");
            let keyword = is_identifier(name) && KEYWORDS.contains(&name.as_str());
            let clash = keyword && taken.contains(&renamed);
            let out_of_order = property.required && optional_seen;
            in_order = in_order && is_identifier(name) && !clash && !out_of_order;
            optional_seen |= !property.required;
            if in_order {
                let python = if keyword { renamed } else { name.clone() };
                if keyword {
                    notes.push(format!(
                        "`{python}` is the argument `{name}` (a Python keyword): pass it by position"
                    ));
                    last_renamed = Some(positional.len());
                }
                positional.push(Parameter {
                    property,
                    name: python,
                });
            } else if not_a_name(name, &[]).is_none() {
                keyword_only.push(Parameter {
                    property,
                    name: name.clone(),
                });
            } else {
                other.push(property);
            }
        }
        let mut parts: Vec<String> = Vec::new();
        for (i, parameter) in positional.iter().enumerate() {
            parts.push(self.parameter(parameter, prefix));
            if last_renamed == Some(i) {
                parts.push("/".to_owned());
            }
        }
        let extra = match (&object.additional, other.is_empty()) {
            (None, true) => None,
            (Some(ty), true) => Some(self.ty(ty, &format!("{prefix}Other"))),
            (_, false) => Some("Any".to_owned()),
        };
        if !keyword_only.is_empty() {
            parts.push("*".to_owned());
            for parameter in &keyword_only {
                parts.push(self.parameter(parameter, prefix));
            }
        }
        if let Some(ty) = extra {
            let mut name = "kwargs".to_owned();
            while taken.contains(&name) {
                name.push('_');
            }
            parts.push(format!("**{name}: {ty}"));
            if !other.is_empty() {
                let names: Vec<String> = other.iter().map(|p| quote(&p.name)).collect();
                notes.push(format!(
                    "arguments {} are no Python names: pass them as **{{{}: ...}}",
                    names.join(", "),
                    names[0]
                ));
            }
        }
        for parameter in positional.iter().chain(&keyword_only) {
            if let Some(doc) = parameter_doc(parameter.property) {
                docs.push(format!("{}: {doc}", parameter.name));
            }
        }
        for property in other {
            if let Some(doc) = parameter_doc(property) {
                docs.push(format!("{}: {doc}", quote(&property.name)));
            }
        }
        parts.join(", ")
    }

    fn parameter(&mut self, parameter: &Parameter, prefix: &str) -> String {
        let property = parameter.property;
        let path = format!("{prefix}{}", camel(&property.name));
        let name = &parameter.name;
        if property.required {
            return format!("{name}: {}", self.ty(&property.ty, &path));
        }
        match &property.default {
            Some(default) if !default.is_null() => {
                format!(
                    "{name}: {} = {}",
                    self.ty(&property.ty, &path),
                    literal(default)
                )
            }
            _ => {
                let ty = schema::union(vec![property.ty.clone(), Ty::Null]);
                format!("{name}: {} = None", self.ty(&ty, &path))
            }
        }
    }

    /// The Python type of `ty`; an object with properties becomes a
    /// `TypedDict` named `path`.
    fn ty(&mut self, ty: &Ty, path: &str) -> String {
        match ty {
            Ty::Unknown | Ty::Never => "Any".to_owned(),
            Ty::String => self.builtin("str"),
            Ty::Integer => self.builtin("int"),
            Ty::Number => self.builtin("float"),
            Ty::Boolean => self.builtin("bool"),
            Ty::Null => "None".to_owned(),
            Ty::Literal(value) => match (value, literal_member(value)) {
                (_, Some(member)) => format!("Literal[{member}]"),
                (Value::Null, _) => "None".to_owned(),
                (Value::Number(_), _) => self.builtin("float"),
                (Value::Array(_), _) => format!("{}[Any]", self.builtin("list")),
                _ => format!("{}[{}, Any]", self.builtin("dict"), self.builtin("str")),
            },
            Ty::Array(item) => {
                let item = self.ty(item, &format!("{path}Item"));
                format!("{}[{item}]", self.builtin("list"))
            }
            Ty::Tuple { items, rest: None } if !items.is_empty() => {
                let items: Vec<String> = items
                    .iter()
                    .enumerate()
                    .map(|(i, item)| self.ty(item, &format!("{path}Item{}", i + 1)))
                    .collect();
                format!("{}[{}]", self.builtin("tuple"), items.join(", "))
            }
            Ty::Tuple { .. } => format!("{}[Any]", self.builtin("list")),
            Ty::Object(object) => self.object(object, path),
            Ty::Union(members) => self.union(members, path),
            Ty::Intersection(members) => match merged(members) {
                Some(object) => self.object(&object, path),
                None => "Any".to_owned(), // Python types have no `&`
            },
        }
    }

    /// Members `A | B`, literals in one `Literal[...]`, objects numbered when
    /// there is more than one.
    fn union(&mut self, members: &[Ty], path: &str) -> String {
        let objects = members
            .iter()
            .filter(|m| matches!(m, Ty::Object(o) if !o.properties.is_empty()))
            .count();
        let mut parts: Vec<String> = Vec::new();
        let mut literals: Vec<String> = Vec::new();
        let mut literal_at = None;
        let mut object = 0;
        for member in members {
            if let Ty::Literal(value) = member
                && let Some(text) = literal_member(value)
            {
                literal_at.get_or_insert(parts.len());
                literals.push(text);
                continue;
            }
            let path = if matches!(member, Ty::Object(o) if !o.properties.is_empty()) && objects > 1
            {
                object += 1;
                format!("{path}{object}")
            } else {
                path.to_owned()
            };
            let part = self.ty(member, &path);
            if part == "Any" {
                return part;
            }
            if !parts.contains(&part) {
                parts.push(part);
            }
        }
        if let Some(at) = literal_at {
            parts.insert(at, format!("Literal[{}]", literals.join(", ")));
        }
        parts.join(" | ")
    }

    fn object(&mut self, object: &Object, path: &str) -> String {
        if object.properties.is_empty() {
            let value = match &object.additional {
                Some(ty) => self.ty(ty, &format!("{path}Value")),
                None => "Any".to_owned(),
            };
            return format!("{}[{}, {value}]", self.builtin("dict"), self.builtin("str"));
        }
        let name = self.name(path);
        // A `TypedDict` stands at module level, where no method hides a builtin.
        let shadowed = std::mem::take(&mut self.shadowed);
        let fields: Vec<(String, &Property)> = object
            .properties
            .iter()
            .map(|property| {
                let ty = self.ty(&property.ty, &format!("{name}{}", camel(&property.name)));
                let ty = if property.required {
                    ty
                } else {
                    format!("NotRequired[{ty}]")
                };
                (ty, property)
            })
            .collect();
        self.shadowed = shadowed;
        let class = fields
            .iter()
            .all(|(_, p)| not_a_name(&p.name, &[]).is_none());
        // The text after the name: `(TypedDict):` and the fields, or, for
        // keys Python cannot write as fields, the functional form's dict
        // (its docs as comments before it).
        let mut comments = String::new();
        let mut body = String::new();
        if class {
            body += "(TypedDict):\n";
            if let Some(description) = &object.description {
                body += &format!("    {}\n\n", docstring(description, 4));
            }
            for (ty, property) in fields {
                body += &format!("    {}: {ty}\n", property.name);
                if let Some(description) = &property.description {
                    body += &format!("    {}\n", docstring(description, 4));
                }
            }
        } else {
            if let Some(description) = &object.description {
                comments += &comment(description);
            }
            let mut entries = Vec::new();
            for (ty, property) in fields {
                if let Some(description) = &property.description {
                    comments += &comment(&format!("{}: {description}", quote(&property.name)));
                }
                entries.push(format!("{}: {ty}", quote(&property.name)));
            }
            body = format!("{{{}}})\n", entries.join(", "));
        }
        // Functions that return the same shape share one class.
        let shape = format!("{comments}{body}");
        if let Some((_, same)) = self.defined.iter().find(|(known, _)| *known == shape) {
            let same = same.clone();
            self.names.retain(|n| *n != name);
            return same;
        }
        self.typed_dicts.push(if class {
            format!("class {name}{body}")
        } else {
            format!("{comments}{name} = TypedDict({}, {body}", quote(&name))
        });
        self.defined.push((shape, name.clone()));
        name
    }

    /// `name`, or `builtins.name` where a method hides it.
    fn builtin(&mut self, name: &str) -> String {
        if self.shadowed.contains(&name) {
            self.builtins = true;
            format!("builtins.{name}")
        } else {
            name.to_owned()
        }
    }

    /// `path`, or `path2`, ... when taken.
    fn name(&mut self, path: &str) -> String {
        let mut name = path.to_owned();
        let mut n = 1;
        while self.names.contains(&name) || KEYWORDS.contains(&name.as_str()) {
            n += 1;
            name = format!("{path}{n}");
        }
        self.names.push(name.clone());
        name
    }
}

/// What the docstring says of a parameter: description, bounds, nothing
/// when there is neither.
fn parameter_doc(property: &Property) -> Option<String> {
    let mut doc = property.description.clone().unwrap_or_default();
    if !property.constraints.is_empty() {
        if !doc.is_empty() {
            doc.push(' ');
        }
        doc += &format!("({})", property.constraints.join(", "));
    }
    (!doc.is_empty()).then(|| doc.replace('\n', "\n        "))
}

/// A `Literal[...]` member: strings, integers and booleans (`None` is a
/// type of its own; `Literal` holds no floats, lists or dicts).
fn literal_member(value: &Value) -> Option<String> {
    match value {
        Value::String(_) | Value::Bool(_) => Some(literal(value)),
        Value::Number(n) if n.is_i64() || n.is_u64() => Some(literal(value)),
        _ => None,
    }
}

/// Objects as one object, the later property of a name winning, or
/// `None` when a member is no object.
fn merged(members: &[Ty]) -> Option<Object> {
    let mut merged = Object::default();
    for member in members {
        let Ty::Object(object) = member else {
            return None;
        };
        merged.description = merged.description.or(object.description.clone());
        for property in &object.properties {
            merged.properties.retain(|p| p.name != property.name);
            merged.properties.push(property.clone());
        }
        merged.additional = merged.additional.or(object.additional.clone());
    }
    Some(merged)
}

/// A JSON value as a Python literal.
fn literal(value: &Value) -> String {
    match value {
        Value::Null => "None".to_owned(),
        Value::Bool(true) => "True".to_owned(),
        Value::Bool(false) => "False".to_owned(),
        Value::Number(n) => n.to_string(),
        Value::String(s) => quote(s),
        Value::Array(items) => {
            let items: Vec<String> = items.iter().map(literal).collect();
            format!("[{}]", items.join(", "))
        }
        Value::Object(entries) => {
            let entries: Vec<String> = entries
                .iter()
                .map(|(key, value)| format!("{}: {}", quote(key), literal(value)))
                .collect();
            format!("{{{}}}", entries.join(", "))
        }
    }
}

/// A JSON string is a valid Python string literal.
fn quote(s: &str) -> String {
    Value::from(s).to_string()
}

/// `"""text"""`, its later lines indented by `indent`.
fn docstring(text: &str, indent: usize) -> String {
    let mut escaped: String = text
        .replace('\\', "\\\\")
        .replace("\r\n", "\n")
        .chars()
        .map(|c| match c {
            // NUL and lone carriage returns cannot stand in source as they are.
            c if c.is_control() && c != '\n' && c != '\t' => format!("\\u{:04x}", u32::from(c)),
            c => c.to_string(),
        })
        .collect();
    // `"""` inside, or a quote just before the closing ones, would end the
    // string early: then every quote is escaped.
    if escaped.contains("\"\"\"") || escaped.ends_with('"') {
        escaped = escaped.replace('"', "\\\"");
    }
    let pad = " ".repeat(indent);
    let mut lines = escaped.lines();
    let first = lines.next().unwrap_or_default();
    let rest: Vec<&str> = lines.collect();
    if rest.is_empty() {
        return format!("\"\"\"{first}\"\"\"");
    }
    let mut out = format!("\"\"\"{first}\n");
    for line in rest {
        if line.trim().is_empty() {
            out.push('\n');
        } else {
            out += &format!("{pad}{line}\n");
        }
    }
    out + &pad + "\"\"\""
}

/// `# text`, a line each (a carriage return ends a Python line too).
fn comment(text: &str) -> String {
    text.split(['\n', '\r'])
        .filter(|line| !line.trim().is_empty())
        .map(|line| format!("# {}\n", line.replace(|c: char| c.is_control(), " ")))
        .collect()
}

/// `exec_ts` → `ExecTs`, `sessionId` → `SessionId`: the parts of a class
/// name. What Python cannot write is dropped.
fn camel(name: &str) -> String {
    let mut out = String::new();
    for part in name.split(|c: char| !c.is_ascii_alphanumeric()) {
        let mut chars = part.chars();
        if let Some(first) = chars.next() {
            out.push(first.to_ascii_uppercase());
            out.extend(chars);
        }
    }
    if out.is_empty() || out.starts_with(|c: char| c.is_ascii_digit()) {
        out.insert(0, 'T');
    }
    out
}

/// An ASCII Python identifier (others are rare and left out).
fn is_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}
