//! JSON Schema → [`Ty`], the one reading of a schema both renderers share.
//!
//! The schemas are what schemars 1.x writes for the packs' Rust types (draft
//! 2020-12, subschemas inlined, `$defs` only for recursive types) or what a
//! downstream MCP server sends (any draft, `$defs` or `definitions`). What
//! has no type-level meaning (`format`, bounds, `pattern`) is kept as
//! [`Property::constraints`] for the docs.

use serde_json::{Map, Value};

/// A type, as far as TypeScript and Python stubs can say it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Ty {
    /// Any value (`true`, `{}`, a recursive `$ref`, what we do not read).
    Unknown,
    /// No value (`false`, `{"not": {}}`, an empty `enum`).
    Never,
    String,
    Integer,
    Number,
    Boolean,
    Null,
    /// A `const` or one `enum` member.
    Literal(Value),
    Array(Box<Ty>),
    /// `prefixItems` (or draft 4-7 `items: [...]`); `rest` for more items.
    Tuple {
        items: Vec<Ty>,
        rest: Option<Box<Ty>>,
    },
    Object(Object),
    Union(Vec<Ty>),
    Intersection(Vec<Ty>),
}

/// An object type.
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct Object {
    /// The schema's own description (a Python `TypedDict`'s docstring).
    pub description: Option<String>,
    /// Declared properties, in schema order.
    pub properties: Vec<Property>,
    /// The type of other keys, when they are allowed and say something:
    /// `None` for `additionalProperties: false`, and for an absent or `true`
    /// one beside declared properties.
    pub additional: Option<Box<Ty>>,
}

/// One declared property of an [`Object`].
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Property {
    pub name: String,
    pub ty: Ty,
    pub required: bool,
    pub description: Option<String>,
    pub default: Option<Value>,
    /// `format: uri`, `minimum: 1`, ...: true, but not types.
    pub constraints: Vec<String>,
}

/// Keywords that constrain a value without changing its type.
const CONSTRAINTS: &[&str] = &[
    "format",
    "pattern",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
    "minLength",
    "maxLength",
    "minItems",
    "maxItems",
    "uniqueItems",
];

/// The type of `schema`, whose `$ref`s point into `root`.
pub(crate) fn ty(root: &Value, schema: &Value) -> Ty {
    Reader {
        root,
        resolving: Vec::new(),
    }
    .ty(schema)
}

struct Reader<'a> {
    root: &'a Value,
    /// The `$ref`s being read: meeting one again is a recursive type.
    resolving: Vec<&'a str>,
}

impl<'a> Reader<'a> {
    fn ty(&mut self, schema: &'a Value) -> Ty {
        let schema = match schema {
            Value::Bool(true) => return Ty::Unknown,
            Value::Bool(false) => return Ty::Never,
            Value::Object(schema) => schema,
            _ => return Ty::Unknown,
        };
        if let Some(Value::String(reference)) = schema.get("$ref") {
            return self.reference(reference);
        }
        let base = self.base(schema);
        let mut parts = Vec::new();
        for key in ["anyOf", "oneOf"] {
            if let Some(Value::Array(members)) = schema.get(key) {
                parts.push(union(members.iter().map(|m| self.ty(m)).collect()));
            }
        }
        if let Some(Value::Array(members)) = schema.get("allOf") {
            parts.extend(members.iter().map(|m| self.ty(m)));
        }
        if schema.get("not").is_some_and(is_empty_schema) {
            parts.push(Ty::Never);
        }
        let combined = (!parts.is_empty()).then(|| intersection(parts));
        let ty = match (base, combined) {
            (None, None) => Ty::Unknown,
            (Some(base), None) => base.ty,
            (None, Some(combined)) => combined,
            // A bare `type` beside `oneOf` is mostly the root object marker
            // or a repeat of the branches' own types; the branches say more.
            // Branches that say nothing (`anyOf` of formats) leave the type.
            (Some(base), Some(Ty::Unknown)) => base.ty,
            (Some(base), Some(combined)) if base.bare => combined,
            (Some(base), Some(combined)) => intersection(vec![base.ty, combined]),
        };
        if schema.get("nullable") == Some(&Value::Bool(true)) {
            union(vec![ty, Ty::Null])
        } else {
            ty
        }
    }

    /// A local `$ref` (`#/$defs/X`, `#/definitions/X`, any JSON pointer),
    /// read in place; one met while reading itself is `unknown`.
    fn reference(&mut self, reference: &'a str) -> Ty {
        let Some(pointer) = reference.strip_prefix('#') else {
            return Ty::Unknown; // another document: not ours to fetch
        };
        if self.resolving.contains(&reference) {
            return Ty::Unknown;
        }
        let Some(target) = self.root.pointer(pointer) else {
            return Ty::Unknown;
        };
        self.resolving.push(reference);
        let ty = self.ty(target);
        self.resolving.pop();
        ty
    }

    /// The type the schema's own keywords give (`const`, `enum`, `type`, or
    /// the keywords of one type), without its combinators.
    fn base(&mut self, schema: &'a Map<String, Value>) -> Option<Base> {
        if let Some(value) = schema.get("const") {
            return Some(Base::specific(Ty::Literal(value.clone())));
        }
        if let Some(Value::Array(values)) = schema.get("enum") {
            let members = values.iter().cloned().map(Ty::Literal).collect();
            return Some(Base::specific(union(members)));
        }
        let structural = ["properties", "additionalProperties", "items", "prefixItems"]
            .iter()
            .any(|key| schema.contains_key(*key));
        let ty = match schema.get("type") {
            Some(Value::String(name)) => self.of_type(name, schema),
            Some(Value::Array(names)) => union(
                names
                    .iter()
                    .filter_map(Value::as_str)
                    .map(|name| self.of_type(name, schema))
                    .collect(),
            ),
            Some(_) => Ty::Unknown,
            None if schema.contains_key("properties")
                || schema.contains_key("additionalProperties") =>
            {
                self.of_type("object", schema)
            }
            None if schema.contains_key("items") || schema.contains_key("prefixItems") => {
                self.of_type("array", schema)
            }
            None => return None,
        };
        Some(Base {
            ty,
            bare: !structural,
        })
    }

    fn of_type(&mut self, name: &str, schema: &'a Map<String, Value>) -> Ty {
        match name {
            "string" => Ty::String,
            "integer" => Ty::Integer,
            "number" => Ty::Number,
            "boolean" => Ty::Boolean,
            "null" => Ty::Null,
            "array" => self.array(schema),
            "object" => Ty::Object(self.object(schema)),
            _ => Ty::Unknown,
        }
    }

    fn array(&mut self, schema: &'a Map<String, Value>) -> Ty {
        let tuple = match (schema.get("prefixItems"), schema.get("items")) {
            (Some(Value::Array(prefix)), rest) => Some((prefix, rest)),
            (None, Some(Value::Array(prefix))) => Some((prefix, schema.get("additionalItems"))),
            _ => None,
        };
        if let Some((prefix, rest)) = tuple {
            let items = prefix.iter().map(|item| self.ty(item)).collect();
            // Without a schema for the rest, `maxItems` (schemars writes it)
            // or nothing at all: read as closed, what a tuple type means.
            let rest = match rest {
                Some(rest @ Value::Object(_)) | Some(rest @ Value::Bool(true)) => {
                    Some(Box::new(self.ty(rest)))
                }
                _ => None,
            };
            return Ty::Tuple { items, rest };
        }
        match schema.get("items") {
            Some(items) => Ty::Array(Box::new(self.ty(items))),
            None => Ty::Array(Box::new(Ty::Unknown)),
        }
    }

    fn object(&mut self, schema: &'a Map<String, Value>) -> Object {
        let required: Vec<&str> = match schema.get("required") {
            Some(Value::Array(names)) => names.iter().filter_map(Value::as_str).collect(),
            _ => Vec::new(),
        };
        let properties: Vec<Property> = match schema.get("properties") {
            Some(Value::Object(properties)) => properties
                .iter()
                .map(|(name, property)| {
                    self.property(name, property, required.contains(&name.as_str()))
                })
                .collect(),
            _ => Vec::new(),
        };
        let additional = match schema.get("additionalProperties") {
            Some(Value::Bool(false)) => None,
            None | Some(Value::Bool(true)) if !properties.is_empty() => None,
            None | Some(Value::Bool(true)) => Some(Box::new(Ty::Unknown)),
            Some(other) => Some(Box::new(self.ty(other))),
        };
        Object {
            description: text(schema, "description"),
            properties,
            additional,
        }
    }

    fn property(&mut self, name: &str, schema: &'a Value, required: bool) -> Property {
        // Docs from the property itself, else from what its `$ref` names.
        let own = schema.as_object();
        let target = self.target(schema);
        let keyword = |key: &str| {
            own.and_then(|s| s.get(key))
                .or_else(|| target.and_then(|t| t.get(key)))
        };
        Property {
            name: name.to_owned(),
            ty: self.ty(schema),
            required,
            description: keyword("description")
                .and_then(Value::as_str)
                .map(str::to_owned),
            default: keyword("default").cloned(),
            constraints: CONSTRAINTS
                .iter()
                .filter_map(|key| keyword(key).map(|value| constraint(key, value)))
                .collect(),
        }
    }

    /// The schema a `$ref` points to, when it is local.
    fn target(&self, schema: &Value) -> Option<&'a Map<String, Value>> {
        let reference = schema.get("$ref")?.as_str()?;
        self.root.pointer(reference.strip_prefix('#')?)?.as_object()
    }
}

/// What a schema's own keywords say, and whether that is only a `type`.
struct Base {
    ty: Ty,
    bare: bool,
}

impl Base {
    fn specific(ty: Ty) -> Self {
        Self { ty, bare: false }
    }
}

fn is_empty_schema(schema: &Value) -> bool {
    match schema {
        Value::Bool(b) => *b,
        Value::Object(o) => o.is_empty(),
        _ => false,
    }
}

fn text(schema: &Map<String, Value>, key: &str) -> Option<String> {
    schema.get(key).and_then(Value::as_str).map(str::to_owned)
}

fn constraint(key: &str, value: &Value) -> String {
    match value {
        Value::String(s) => format!("{key}: {s}"),
        other => format!("{key}: {other}"),
    }
}

/// `members` as one type: nested unions flattened, `never` dropped, any
/// `unknown` member makes it all `unknown`.
pub(crate) fn union(members: Vec<Ty>) -> Ty {
    let mut flat = Vec::new();
    for member in members {
        match member {
            Ty::Union(inner) => inner.into_iter().for_each(|m| push_new(&mut flat, m)),
            Ty::Never => {}
            Ty::Unknown => return Ty::Unknown,
            other => push_new(&mut flat, other),
        }
    }
    match flat.len() {
        0 => Ty::Never,
        1 => flat.pop().unwrap_or(Ty::Never),
        _ => Ty::Union(flat),
    }
}

/// `members` as one type: nested intersections flattened, `unknown` dropped,
/// any `never` member makes it all `never`.
pub(crate) fn intersection(members: Vec<Ty>) -> Ty {
    let mut flat = Vec::new();
    for member in members {
        match member {
            Ty::Intersection(inner) => inner.into_iter().for_each(|m| push_new(&mut flat, m)),
            Ty::Unknown => {}
            Ty::Never => return Ty::Never,
            other => push_new(&mut flat, other),
        }
    }
    match flat.len() {
        0 => Ty::Unknown,
        1 => flat.pop().unwrap_or(Ty::Unknown),
        _ => Ty::Intersection(flat),
    }
}

fn push_new(members: &mut Vec<Ty>, member: Ty) {
    if !members.contains(&member) {
        members.push(member);
    }
}
