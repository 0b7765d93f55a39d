//! The declarations of small hand-written catalogs, compared whole: what a
//! model reads is reviewed like code. (That the real packs' declarations
//! compile with `tsc --strict` is checked end to end in `tests/`.)

use std::collections::BTreeMap;

use pack_api::{Catalog, CatalogTool, codes};
use serde_json::{Value, json};

use super::*;

fn tool(pack: &str, function: &str, input: Value, output: Value) -> CatalogTool {
    CatalogTool {
        pack: pack.to_owned(),
        function: function.to_owned(),
        signature: format!("{pack}.{function}()"),
        description: String::new(),
        input_schema: input,
        output_schema: output,
        ..CatalogTool::default()
    }
}

fn catalog(tools: Vec<CatalogTool>, aliases: &[(&str, &str)]) -> Catalog {
    Catalog {
        tools,
        aliases: aliases
            .iter()
            .map(|(a, t)| ((*a).to_owned(), (*t).to_owned()))
            .collect(),
        ..Catalog::default()
    }
}

/// `proj.read` as the real pack lists it.
fn read() -> CatalogTool {
    CatalogTool {
        description: "Read a UTF-8 text file in a project.".to_owned(),
        ..tool(
            "proj",
            "read",
            json!({
                "type": "object",
                "additionalProperties": false,
                "properties": {
                    "name": {"type": "string", "description": "Project name (see `proj.list`)."},
                    "path": {"type": "string", "description": "File path relative to the project root."},
                    "offset": {"type": "integer", "default": 0, "minimum": 0, "description": "First line to return, 0-based."},
                    "limit": {"type": "integer", "default": 2000, "minimum": 1, "description": "How many lines to return (at least 1)."}
                },
                "required": ["name", "path"],
                "description": "`proj.read` arguments."
            }),
            json!({
                "type": "object",
                "properties": {
                    "content": {"type": "string", "description": "The lines read."},
                    "total_lines": {"type": "integer", "minimum": 0},
                    "truncated": {"type": "boolean", "description": "Whether lines were left out;\ncontinue with `offset + lines`."}
                },
                "required": ["content", "total_lines", "truncated"],
                "description": "`proj.read` result."
            }),
        )
    }
}

fn list() -> CatalogTool {
    tool(
        "proj",
        "list",
        json!({"type": "object", "additionalProperties": false}),
        json!({
            "type": "object",
            "properties": {"projects": {"type": "array", "items": {
                "type": "object",
                "properties": {"name": {"type": "string"}, "exists": {"type": "boolean"}},
                "required": ["name", "exists"]
            }}},
            "required": ["projects"]
        }),
    )
}

fn proj() -> Catalog {
    catalog(vec![list(), read()], &[("r", "proj.read")])
}

/// The TypeScript of one schema, as the result type of a function.
fn ts_type(schema: Value) -> String {
    let catalog = catalog(vec![tool("t", "f", json!({"type": "object"}), schema)], &[]);
    let text = typescript(&catalog, &Selection::all()).unwrap();
    let start = text.find("): Promise<").unwrap() + "): Promise<".len();
    let end = text[start..].find(">;\n};").unwrap();
    text[start..start + end].to_owned()
}

/// The Python of one schema, as the type of a required parameter.
fn py_type(schema: Value) -> String {
    let input = json!({"type": "object", "properties": {"x": schema}, "required": ["x"]});
    let catalog = catalog(vec![tool("t", "f", input, json!({"type": "object"}))], &[]);
    let text = python(&catalog, &Selection::all()).unwrap();
    let start = text.find("def f(x: ").unwrap() + "def f(x: ".len();
    let end = text[start..].find(") -> ").unwrap();
    text[start..start + end].to_owned()
}

#[test]
fn typescript_declares_packs_aliases_packerror_and_packhost() {
    let mut catalog = proj();
    catalog.projects = BTreeMap::from([("books".to_owned(), "/srv/books".to_owned())]);
    let text = typescript(&catalog, &Selection::all()).unwrap();
    let expected = r#"// The packhost tools this code can call. Every function takes one object of
// named arguments and returns a Promise of its result.

/** A pack function failed: `code` is its stable error code (e.g. INVALID_ARGUMENT, NOT_FOUND), `help` what would be right. */
declare class PackError extends Error {
  readonly code: string;
  readonly help?: string;
  readonly data?: unknown;
}

/** `proj` pack */
declare const proj: {
  list(args?: {}): Promise<{
    projects: {
      name: string;
      exists: boolean;
    }[];
  }>;
  /** Read a UTF-8 text file in a project. */
  read(args: {
    /** Project name (see `proj.list`). */
    name: string;
    /** File path relative to the project root. */
    path: string;
    /**
     * First line to return, 0-based.
     * minimum: 0
     * @default 0
     */
    offset?: number;
    /**
     * How many lines to return (at least 1).
     * minimum: 1
     * @default 2000
     */
    limit?: number;
  }): Promise<{
    /** The lines read. */
    content: string;
    total_lines: number;
    /**
     * Whether lines were left out;
     * continue with `offset + lines`.
     */
    truncated: boolean;
  }>;
};

/** Alias of `proj.read`. */
declare const r: typeof proj.read;

/** A rendered prompt: MCP's GetPromptResult. A text message's content is `{ type: "text", text }`. */
type PromptResult = {
  description?: string;
  messages: { role: "user" | "assistant"; content: { type: string; text?: string; [key: string]: unknown } }[];
};

/** A read resource: MCP's ReadResourceResult, text as `text`, bytes as base64 `blob`. */
type ResourceResult = { contents: { uri: string; mimeType?: string; text?: string; blob?: string }[] };

/** packhost itself: any tool by its full name, every pack, the projects, prompts and resources. */
declare const packhost: {
  /** Call a tool by its full name: `packhost.call("proj.list", {})`. */
  call(tool: string, args?: { [key: string]: unknown }): Promise<unknown>;
  /** Every pack, also one whose name cannot be a global. */
  readonly packs: {
    readonly proj: typeof proj;
  };
  /** The projects you may see: name -> absolute path (books). */
  readonly projects: { readonly [name: string]: string };
  /** Every prompt you may render (`pack.prompts.<name>(...)` renders one). */
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
};
"#;
    assert_eq!(text, expected, "got:\n{text}");
}

#[test]
fn python_declares_typed_dicts_pack_classes_and_aliases() {
    let text = python(&proj(), &Selection::all()).unwrap();
    let expected = r#"# The packhost tools this code can call: a class per pack, a static method per
# function. Arguments go by position, in the order shown, or by name.
from typing import Any, Literal, NotRequired, TypedDict


class PackError(Exception):
    """A pack function failed: `code` is its stable error code (e.g. NOT_FOUND), `message` what happened. Bad arguments raise TypeError instead."""

    code: str
    message: str


class ProjListResultProjectsItem(TypedDict):
    name: str
    exists: bool


class ProjListResult(TypedDict):
    projects: list[ProjListResultProjectsItem]


class ProjReadResult(TypedDict):
    """`proj.read` result."""

    content: str
    """The lines read."""
    total_lines: int
    truncated: bool
    """Whether lines were left out;
    continue with `offset + lines`.
    """


class proj:
    """`proj` pack."""

    @staticmethod
    def list() -> ProjListResult: ...

    @staticmethod
    def read(name: str, path: str, offset: int = 0, limit: int = 2000) -> ProjReadResult:
        """Read a UTF-8 text file in a project.

        Args:
            name: Project name (see `proj.list`).
            path: File path relative to the project root.
            offset: First line to return, 0-based. (minimum: 0)
            limit: How many lines to return (at least 1). (minimum: 1)
        """
        ...


r = proj.read
"#;
    assert_eq!(text, expected, "got:\n{text}");
}

#[test]
fn schema_types_become_typescript_types() {
    let cases = [
        (json!({"type": "string", "format": "uri"}), "string"),
        (json!({"type": "integer", "minimum": 0}), "number"),
        (json!({"type": "number"}), "number"),
        (json!({"type": "boolean"}), "boolean"),
        (json!({"type": "null"}), "null"),
        (json!({"type": ["string", "null"]}), "string | null"),
        (json!({"type": ["integer", "number"]}), "number"),
        (
            json!({"enum": ["a", 1, true, null]}),
            r#""a" | 1 | true | null"#,
        ),
        (json!({"const": "it's \"x\""}), r#""it's \"x\"""#),
        (json!({"const": {"a": [1, "x"]}}), r#"{"a":[1,"x"]}"#),
        (
            json!({"type": "array", "items": {"type": "string"}}),
            "string[]",
        ),
        (
            json!({"type": "array", "items": {"type": ["string", "integer"]}}),
            "(string | number)[]",
        ),
        (json!({"type": "array"}), "unknown[]"),
        (
            json!({"type": "array", "prefixItems": [{"type": "string"}, {"type": "number"}], "maxItems": 2}),
            "[string, number]",
        ),
        (
            json!({"type": "array", "prefixItems": [{"type": "string"}], "items": {"type": "boolean"}}),
            "[string, ...boolean[]]",
        ),
        (
            json!({"type": "object", "additionalProperties": {"type": "integer"}}),
            "{ [key: string]: number }",
        ),
        (json!({"type": "object"}), "{ [key: string]: unknown }"),
        (
            json!({"type": "object", "additionalProperties": true}),
            "{ [key: string]: unknown }",
        ),
        (
            json!({"type": "object", "additionalProperties": false}),
            "{}",
        ),
        (
            json!({"anyOf": [{"type": "string"}, {"type": "integer"}]}),
            "string | number",
        ),
        (
            json!({"oneOf": [{"const": "a"}, {"const": "b"}]}),
            r#""a" | "b""#,
        ),
        (
            json!({"allOf": [{"type": "string"}, {"minLength": 1}]}),
            "string",
        ),
        (
            json!({"type": "string", "anyOf": [{"format": "email"}, {"format": "uri"}]}),
            "string",
        ),
        (json!({"type": "string", "nullable": true}), "string | null"),
        (json!(true), "unknown"),
        (json!({}), "unknown"),
        (json!({"description": "anything"}), "unknown"),
        (json!({"type": "whatever"}), "unknown"),
        (json!({"anyOf": [{"type": "string"}, {}]}), "unknown"),
        (json!({"not": {}}), "never"),
        (
            json!({"$ref": "https://example.com/schema.json"}),
            "unknown",
        ),
    ];
    for (schema, expected) in cases {
        assert_eq!(ts_type(schema.clone()), expected, "{schema}");
    }
}

#[test]
fn objects_mark_optional_properties_quote_odd_names_and_keep_index_signatures() {
    let schema = json!({
        "type": "object",
        "properties": {
            "id": {"type": "string", "description": "Says */ early"},
            "content-type": {"type": "string"},
            "2fa": {"type": "boolean"},
            "$ok": {"type": "integer"}
        },
        "required": ["id"],
        "additionalProperties": {"type": "string"}
    });
    assert_eq!(
        ts_type(schema),
        r#"{
    /** Says *\/ early */
    id: string;
    "content-type"?: string;
    "2fa"?: boolean;
    $ok?: number;
  } & { [key: string]: string }"#
    );
}

#[test]
fn unions_and_intersections_of_objects() {
    let schema = json!({
        "type": "object",
        "oneOf": [
            {"type": "object", "properties": {"kind": {"const": "a"}}, "required": ["kind"]},
            {"type": "object", "properties": {"kind": {"const": "b"}, "n": {"type": "integer"}}, "required": ["kind"]}
        ]
    });
    assert_eq!(
        ts_type(schema),
        r#"{
    kind: "a";
  } | {
    kind: "b";
    n?: number;
  }"#
    );
    let schema = json!({"allOf": [
        {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]},
        {"anyOf": [{"type": "object", "properties": {"b": {"type": "integer"}}}, {"type": "null"}]}
    ]});
    assert_eq!(
        ts_type(schema),
        r#"{
    a: string;
  } & ({
    b?: number;
  } | null)"#
    );
}

#[test]
fn refs_resolve_from_defs_and_definitions_and_recursion_is_unknown() {
    let schema = json!({
        "type": "object",
        "properties": {
            "tree": {"$ref": "#/$defs/Tree"},
            "color": {"$ref": "#/definitions/Color"}
        },
        "required": ["tree", "color"],
        "$defs": {"Tree": {
            "type": "object",
            "properties": {
                "label": {"type": "string"},
                "children": {"type": "array", "items": {"$ref": "#/$defs/Tree"}}
            },
            "required": ["label", "children"]
        }},
        "definitions": {"Color": {"enum": ["red", "green"], "description": "A colour."}}
    });
    assert_eq!(
        ts_type(schema),
        r#"{
    tree: {
      label: string;
      children: unknown[];
    };
    /** A colour. */
    color: "red" | "green";
  }"#
    );
    // The root itself, and a `$ref` into nowhere.
    let schema = json!({
        "type": "object",
        "properties": {"next": {"$ref": "#"}, "gone": {"$ref": "#/$defs/Gone"}},
        "required": ["next", "gone"]
    });
    assert_eq!(
        ts_type(schema),
        r#"{
    next: {
      next: unknown;
      gone: unknown;
    };
    gone: unknown;
  }"#
    );
}

/// What schemars 1.x writes for Rust types: `$defs`, `Option<T>` as a type
/// array or `anyOf` with null, enums as `oneOf` of `const`s.
#[test]
fn schemars_schemas_with_defs_and_options() {
    #[allow(dead_code)] // only its schema is read
    #[derive(schemars::JsonSchema)]
    struct Args {
        /// Where to look.
        path: String,
        /// How deep; all when absent.
        depth: Option<u32>,
        filter: Option<Filter>,
        mode: Mode,
    }
    #[allow(dead_code)]
    #[derive(schemars::JsonSchema)]
    struct Filter {
        glob: String,
        hidden: bool,
    }
    #[allow(dead_code)]
    #[derive(schemars::JsonSchema)]
    #[serde(rename_all = "lowercase")]
    enum Mode {
        /// Files only.
        Files,
        /// Directories too.
        All,
    }
    let schema = schemars::schema_for!(Args).to_value();
    assert!(schema["$defs"].is_object(), "{schema}");
    let catalog = catalog(
        vec![tool("fs", "walk", schema, json!({"type": "object"}))],
        &[],
    );
    let text = typescript(&catalog, &Selection::all()).unwrap();
    let start = text.find("  walk(").unwrap();
    let end = text[start..].find("};\n").unwrap();
    assert_eq!(
        &text[start..start + end],
        r#"  walk(args: {
    /** Where to look. */
    path: string;
    /**
     * How deep; all when absent.
     * format: uint32, minimum: 0
     */
    depth?: number | null;
    filter?: {
      glob: string;
      hidden: boolean;
    } | null;
    mode: "files" | "all";
  }): Promise<{ [key: string]: unknown }>;
"#
    );
    let text = python(&catalog, &Selection::all()).unwrap();
    assert!(
        text.contains(
            "class FsWalkFilter(TypedDict):\n    glob: str\n    hidden: bool\n\n\nclass fs:"
        ),
        "{text}"
    );
    assert!(
        text.contains(
            "def walk(path: str, depth: int | None = None, filter: FsWalkFilter | None = None, \
             *, mode: Literal[\"files\", \"all\"]) -> dict[str, Any]:"
        ),
        "{text}"
    );
}

#[test]
fn schema_types_become_python_types() {
    let cases = [
        (json!({"type": "string"}), "str"),
        (json!({"type": "integer"}), "int"),
        (json!({"type": "number"}), "float"),
        (json!({"type": "boolean"}), "bool"),
        (json!({"type": "null"}), "None"),
        (json!({"type": ["string", "null"]}), "str | None"),
        (
            json!({"enum": ["a", "b", null]}),
            r#"Literal["a", "b"] | None"#,
        ),
        (json!({"enum": [1, true, 2.5]}), "Literal[1, True] | float"),
        (json!({"const": "x"}), r#"Literal["x"]"#),
        (
            json!({"enum": [[1], {"a": 1}]}),
            "list[Any] | dict[str, Any]",
        ),
        (
            json!({"type": "array", "items": {"type": ["string", "integer"]}}),
            "list[str | int]",
        ),
        (
            json!({"type": "array", "prefixItems": [{"type": "string"}, {"type": "number"}]}),
            "tuple[str, float]",
        ),
        (
            json!({"type": "object", "additionalProperties": {"type": "integer"}}),
            "dict[str, int]",
        ),
        (json!({"type": "object"}), "dict[str, Any]"),
        (json!({"anyOf": [{"type": "string"}, {}]}), "Any"),
        (
            json!({"allOf": [{"type": "string"}, {"type": "object"}]}),
            "Any",
        ),
        (json!(true), "Any"),
    ];
    for (schema, expected) in cases {
        assert_eq!(py_type(schema.clone()), expected, "{schema}");
    }
}

#[test]
fn python_names_nested_typed_dicts_by_path_and_shares_equal_shapes() {
    let entry =
        json!({"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]});
    let result = json!({
        "type": "object",
        "properties": {
            "entries": {"type": "array", "items": entry},
            "either": {"anyOf": [
                {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]},
                {"type": "object", "properties": {"b": {"type": "integer"}}, "required": ["b"]},
                {"type": "null"}
            ]},
            "both": {"allOf": [
                {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]},
                {"type": "object", "properties": {"b": {"type": "string"}}}
            ]}
        },
        "required": ["entries", "either", "both"]
    });
    let catalog = catalog(
        vec![
            tool(
                "exec_ts",
                "cell_list",
                json!({"type": "object"}),
                result.clone(),
            ),
            tool("exec_ts", "cell_find", json!({"type": "object"}), result),
        ],
        &[],
    );
    let text = python(&catalog, &Selection::all()).unwrap();
    let body = &text[text.find("class ExecTs").unwrap()..];
    assert_eq!(
        body,
        r#"class ExecTsCellListResultEntriesItem(TypedDict):
    name: str


class ExecTsCellListResultEither1(TypedDict):
    a: int


class ExecTsCellListResultEither2(TypedDict):
    b: int


class ExecTsCellListResultBoth(TypedDict):
    a: int
    b: NotRequired[str]


class ExecTsCellListResult(TypedDict):
    entries: list[ExecTsCellListResultEntriesItem]
    either: ExecTsCellListResultEither1 | ExecTsCellListResultEither2 | None
    both: ExecTsCellListResultBoth


class exec_ts:
    """`exec_ts` pack."""

    @staticmethod
    def cell_list(**kwargs: Any) -> ExecTsCellListResult: ...

    @staticmethod
    def cell_find(**kwargs: Any) -> ExecTsCellListResult: ...
"#
    );
}

/// Positional arguments bind in schema order, so the signature keeps it;
/// keywords get `_` and are positional-only; odd names go in `**kwargs`.
#[test]
fn python_parameters_keep_schema_order_and_handle_keywords() {
    let input = json!({
        "type": "object",
        "properties": {
            "from": {"type": "integer", "description": "Start."},
            "lambda": {"type": "string", "default": "x"},
            "to": {"type": "integer"},
            "step": {"type": "number", "default": 1.5},
            "tags": {"type": "array", "items": {"type": "string"}, "default": ["a"]},
            "opts": {"type": "object", "properties": {"deep": {"type": "boolean"}}, "default": {"deep": false}},
            "x-mode": {"type": "string", "description": "A mode."},
            "kwargs": {"type": "string"},
            "class": {"type": "string"}
        },
        "required": ["from", "to"]
    });
    let catalog = catalog(
        vec![tool("seq", "range", input, json!({"type": "object"}))],
        &[],
    );
    let text = python(&catalog, &Selection::all()).unwrap();
    let body = &text[text.find("class SeqRangeOpts").unwrap()..];
    assert_eq!(
        body,
        r#"class SeqRangeOpts(TypedDict):
    deep: NotRequired[bool]


class seq:
    """`seq` pack."""

    # `from_` is the argument `from` (a Python keyword): pass it by position
    # `lambda_` is the argument `lambda` (a Python keyword): pass it by position
    # arguments "x-mode", "class" are no Python names: pass them as **{"x-mode": ...}
    @staticmethod
    def range(from_: int, lambda_: str = "x", /, *, to: int, step: float = 1.5, tags: list[str] = ["a"], opts: SeqRangeOpts = {"deep": False}, kwargs: str | None = None, **kwargs_: Any) -> dict[str, Any]:
        """Args:
            from_: Start.
            "x-mode": A mode.
        """
        ...
"#
    );
}

#[test]
fn python_parameters_of_an_intersection_are_its_objects_merged() {
    let input = json!({"type": "object", "allOf": [
        {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]},
        {"type": "object", "properties": {"b": {"type": "string"}}}
    ]});
    let catalog = catalog(vec![tool("p", "f", input, json!({"type": "object"}))], &[]);
    let text = python(&catalog, &Selection::all()).unwrap();
    assert!(
        text.contains("def f(a: int, b: str | None = None) -> dict[str, Any]: ..."),
        "{text}"
    );
}

#[test]
fn python_writes_odd_keys_in_the_functional_form_and_hides_no_builtin() {
    let result = json!({
        "type": "object",
        "properties": {
            "content-type": {"type": "string", "description": "The type."},
            "class": {"type": "integer"}
        },
        "required": ["content-type"]
    });
    let input = json!({"type": "object", "properties": {"names": {"type": "array", "items": {"type": "string"}}}});
    let catalog = catalog(
        vec![
            tool("http", "head", json!({"type": "object"}), result),
            tool("http", "list", input, json!({"type": "object"})),
        ],
        &[],
    );
    let text = python(&catalog, &Selection::all()).unwrap();
    assert!(text.starts_with(
        "# The packhost tools this code can call: a class per pack, a static method per\n\
         # function. Arguments go by position, in the order shown, or by name.\n\
         import builtins\n"
    ));
    let body = &text[text.find("# \"content-type\"").unwrap()..];
    assert_eq!(
        body,
        r#"# "content-type": The type.
HttpHeadResult = TypedDict("HttpHeadResult", {"content-type": str, "class": NotRequired[int]})


class http:
    """`http` pack."""

    @staticmethod
    def head(**kwargs: Any) -> HttpHeadResult: ...

    @staticmethod
    def list(names: builtins.list[str] | None = None) -> dict[str, Any]: ...
"#
    );
}

#[test]
fn docstrings_and_comments_stay_python() {
    let mut odd = tool(
        "p",
        "f",
        json!({"type": "object"}),
        json!({"type": "object"}),
    );
    odd.description = "Say \"\"\"hi\"\"\" \\ then \"bye\"".to_owned();
    let mut ends = tool(
        "p",
        "g",
        json!({"type": "object"}),
        json!({"type": "object"}),
    );
    ends.description = "Ends in a \"quote\"".to_owned();
    let text = python(&catalog(vec![odd, ends], &[]), &Selection::all()).unwrap();
    assert!(
        text.contains(r#""""Say \"\"\"hi\"\"\" \\ then \"bye\"""""#),
        "{text}"
    );
    assert!(text.contains(r#""""Ends in a \"quote\"""""#), "{text}");
}

#[test]
fn names_that_cannot_be_globals_are_left_out_with_a_way_to_reach_them() {
    let any = || json!({"type": "object", "additionalProperties": false});
    let catalog = catalog(
        vec![
            tool("my-pack", "do it", any(), any()),
            tool("console", "log", any(), any()),
            tool("class", "delete", any(), any()),
            tool("ok", "delete", any(), any()),
            tool("ok", "my fn", any(), any()),
        ],
        &[
            ("await", "ok.delete"),
            ("ok", "ok.delete"),
            ("del", "ok.delete"),
            ("odd", "ok.my fn"),
            ("via", "my-pack.do it"),
            ("ghost", "nope.nothing"),
        ],
    );
    let text = typescript(&catalog, &Selection::all()).unwrap();
    for line in [
        r#"// pack "my-pack" is not a JavaScript identifier, so not a global: reach it as packhost.packs["my-pack"] or packhost.call("my-pack.do it", {...})"#,
        r#"// pack "console" is a reserved word or a global of node, so not a global: reach it as packhost.packs["console"] or packhost.call("console.log", {...})"#,
        r#"// pack "class" is a reserved word or a global of node, so not a global: reach it as packhost.packs["class"] or packhost.call("class.delete", {...})"#,
        "declare const ok: {\n  delete(args?: {}): Promise<{}>;\n  \"my fn\"(args?: {}): Promise<{}>;\n};",
        r#"// alias "await" of "ok.delete" is a reserved word or a global of node, so not a global: reach it as packhost.call("ok.delete", {...})"#,
        r#"// alias "ok" of "ok.delete" is already declared (a pack or alias of that name comes first), so not a global: reach it as packhost.call("ok.delete", {...})"#,
        "declare const del: typeof ok.delete;",
        "declare const odd: typeof ok[\"my fn\"];",
        "declare const via: (args?: {}) => Promise<{}>;",
        "    readonly \"my-pack\": {\n      \"do it\"(args?: {}): Promise<{}>;\n    };",
        "    readonly class: {\n      delete(args?: {}): Promise<{}>;\n    };",
    ] {
        assert!(text.contains(line), "missing {line}\nin:\n{text}");
    }
    assert!(!text.contains("ghost"), "{text}");

    let text = python(&catalog, &Selection::all()).unwrap();
    for line in [
        r#"# pack "my-pack" is not a Python identifier: reach it as globals()["my-pack"]"#,
        "class console:\n",
        r#"# pack "class" is a Python keyword: reach it as globals()["class"]"#,
        "    @staticmethod\n    def delete() -> dict[str, Any]: ...",
        r#"    # function "my fn" is not a Python identifier: call it as getattr(ok, "my fn")(...)"#,
        r#"# alias "await" of "ok.delete" is a Python keyword: reach it as globals()["await"]"#,
        r#"# alias "ok" of "ok.delete" is a name the stubs use already: reach it as globals()["ok"]"#,
        r#"# alias "del" of "ok.delete" is a Python keyword: reach it as globals()["del"]"#,
        r#"# alias "odd" of "ok.my fn" is an alias of a function that is no method here: reach it as globals()["odd"]"#,
        r#"# alias "via" of "my-pack.do it" is an alias into a pack that is no class here: reach it as globals()["via"]"#,
    ] {
        assert!(text.contains(line), "missing {line}\nin:\n{text}");
    }
    assert!(!text.contains("ghost"), "{text}");
}

#[test]
fn a_selection_picks_a_pack_a_function_or_an_alias() {
    let mut catalog = proj();
    catalog.tools.push(tool(
        "exec_py",
        "run",
        json!({"type": "object"}),
        json!({"type": "object"}),
    ));
    let declared = |selection: Selection| {
        let text = typescript(&catalog, &selection).unwrap();
        text.lines()
            .filter(|l| {
                l.starts_with("declare const") || l.starts_with("  ") && l.contains("(args")
            })
            .map(|l| l.split('(').next().unwrap().trim().to_owned())
            .collect::<Vec<_>>()
    };
    assert_eq!(
        declared(Selection::all()),
        [
            "declare const proj: {",
            "list",
            "read",
            "declare const exec_py: {",
            "run",
            "declare const r: typeof proj.read;",
            "declare const packhost: {"
        ]
    );
    assert_eq!(
        declared(Selection::pack("proj")),
        [
            "declare const proj: {",
            "list",
            "read",
            "declare const r: typeof proj.read;",
            "declare const packhost: {"
        ]
    );
    assert_eq!(
        declared(Selection::function("proj", "list")),
        ["declare const proj: {", "list", "declare const packhost: {"]
    );
    assert_eq!(
        declared(Selection::pack("r")),
        [
            "declare const proj: {",
            "read",
            "declare const r: typeof proj.read;",
            "declare const packhost: {"
        ]
    );
    let text = python(&catalog, &Selection::pack("r")).unwrap();
    assert!(
        text.contains("def read(")
            && !text.contains("def list(")
            && text.ends_with("r = proj.read\n"),
        "{text}"
    );
}

#[test]
fn a_selection_of_nothing_names_what_exists() {
    let catalog = proj();
    let err = typescript(&catalog, &Selection::pack("prj")).unwrap_err();
    assert_eq!(err.code(), codes::NOT_FOUND);
    assert_eq!(
        err.message(),
        "no pack or alias `prj`; did you mean `proj`? packs: proj; aliases: r"
    );
    assert_eq!(
        err.help(),
        Some("select one of these, or nothing for every tool")
    );

    let err = python(&catalog, &Selection::function("proj", "raed")).unwrap_err();
    assert_eq!(err.code(), codes::NOT_FOUND);
    assert_eq!(
        err.message(),
        "pack `proj` has no function `raed`; did you mean `read`? (has: list, read)"
    );

    let err = typescript(&catalog, &Selection::pack("zzzzzz")).unwrap_err();
    assert_eq!(
        err.message(),
        "no pack or alias `zzzzzz`; packs: proj; aliases: r"
    );

    let err = typescript(
        &catalog,
        &Selection {
            pack: None,
            function: Some("read".to_owned()),
        },
    )
    .unwrap_err();
    assert_eq!(err.code(), codes::INVALID_ARGUMENT);
    assert_eq!(err.message(), "function `read` needs its pack");

    let err = typescript(&catalog, &Selection::function("r", "read")).unwrap_err();
    assert_eq!(err.code(), codes::INVALID_ARGUMENT);
    assert_eq!(
        err.message(),
        "`r` is an alias of `proj.read`, not a pack, so it has no functions"
    );

    let err = typescript(&Catalog::default(), &Selection::pack("proj")).unwrap_err();
    assert_eq!(
        err.message(),
        "no pack or alias `proj`; the catalog has no tools"
    );
    // Everything of an empty catalog is no mistake of the caller.
    assert!(typescript(&Catalog::default(), &Selection::all()).is_ok());
}

#[test]
fn output_follows_catalog_order_and_is_deterministic() {
    let catalog = catalog(
        vec![
            tool(
                "b",
                "one",
                json!({"type": "object"}),
                json!({"type": "object"}),
            ),
            tool(
                "a",
                "two",
                json!({"type": "object"}),
                json!({"type": "object"}),
            ),
            tool(
                "b",
                "three",
                json!({"type": "object"}),
                json!({"type": "object"}),
            ),
        ],
        &[("z", "a.two"), ("y", "b.one")],
    );
    assert_eq!(
        summary(&catalog),
        "b: one, three\na: two\naliases: y (b.one), z (a.two)"
    );
    let text = typescript(&catalog, &Selection::all()).unwrap();
    assert!(text.find("declare const b").unwrap() < text.find("declare const a").unwrap());
    assert_eq!(text, typescript(&catalog, &Selection::all()).unwrap());
}

#[test]
fn summary_without_aliases_is_one_line_per_pack() {
    let catalog = catalog(vec![list(), read()], &[]);
    assert_eq!(summary(&catalog), "proj: list, read");
    assert_eq!(summary(&Catalog::default()), "");
}

fn with_prompts() -> Catalog {
    use pack_api::{CatalogPrompt, PromptArgumentSpec, PromptSpec};
    let argument = |name: &str, description: Option<&str>, required| PromptArgumentSpec {
        name: name.to_owned(),
        description: description.map(str::to_owned),
        required,
    };
    let prompt = |name: &str, description: &str, arguments| CatalogPrompt {
        pack: "fix".to_owned(),
        spec: PromptSpec {
            name: name.to_owned(),
            description: Some(description.to_owned()),
            arguments,
            ..PromptSpec::default()
        },
        bare: false,
    };
    let mut catalog = catalog(
        vec![
            tool(
                "fix",
                "ping",
                json!({"type": "object"}),
                json!({"type": "string"}),
            ),
            tool(
                "packhost",
                "packs",
                json!({"type": "object"}),
                json!({"type": "object"}),
            ),
        ],
        &[],
    );
    catalog.prompts = vec![
        prompt(
            "review",
            "Review a change",
            vec![
                argument("diff", Some("The change"), true),
                argument("tone", None, false),
                argument("max-words", Some("At most"), false),
            ],
        ),
        prompt("hello-there", "Odd name", vec![]),
    ];
    catalog
}

/// The part of `text` from `from` to the first `to` after it, `to` included.
fn part<'a>(text: &'a str, from: &str, to: &str) -> &'a str {
    let start = text
        .find(from)
        .unwrap_or_else(|| panic!("no {from:?} in:\n{text}"));
    let end = text[start..].find(to).unwrap() + to.len();
    &text[start..start + end]
}

#[test]
fn a_packs_prompts_are_declared_in_its_namespace_and_packhost_reads_resources() {
    let text = typescript(&with_prompts(), &Selection::all()).unwrap();
    let expected = r#"declare const fix: {
  ping(args?: { [key: string]: unknown }): Promise<string>;
  /** Its MCP prompts: each renders with its arguments (strings) to a PromptResult. */
  readonly prompts: {
    /** Review a change */
    review(args: {
      /** The change */
      diff: string;
      tone?: string;
      /** At most */
      "max-words"?: string;
    }): Promise<PromptResult>;
    /** Odd name */
    "hello-there"(args?: {}): Promise<PromptResult>;
  };
};
"#;
    assert_eq!(
        part(&text, "declare const fix", "\n};\n"),
        expected,
        "got:\n{text}"
    );
    for member in [
        "type PromptResult = {",
        "type ResourceResult = {",
        "  get_prompt(name: string, args?: { [argument: string]: string }): Promise<PromptResult>;\n",
        "  read_resource(uri: string): Promise<ResourceResult>;\n",
        "  resources(): Promise<{\n",
        "} & {\n  packs(",
    ] {
        assert!(text.contains(member), "{member:?} in:\n{text}");
    }
    // A selected function brings no prompts.
    let one = typescript(&with_prompts(), &Selection::function("fix", "ping")).unwrap();
    assert!(!one.contains("readonly prompts"), "{one}");

    let text = python(&with_prompts(), &Selection::all()).unwrap();
    let expected = r#"class fix:
    """`fix` pack."""

    @staticmethod
    def ping(**kwargs: Any) -> str: ...

    class prompts:
        """Its MCP prompts: each renders with its arguments (strings) to a PromptResult."""

        @staticmethod
        def review(*, diff: str, tone: str | None = None, **arguments: str) -> PromptResult:
            """Review a change

            Args:
                diff: The change
                tone: (optional)
                "max-words": At most (optional)
            """
            ...

        # prompt "hello-there" is not a Python identifier: render it as getattr(fix.prompts, "hello-there")(...)
"#;
    assert_eq!(
        part(&text, "class fix:", "(...)\n"),
        expected,
        "got:\n{text}"
    );
    for member in [
        "class PromptResult(TypedDict):",
        "class ResourceResult(TypedDict):",
        "    def read_resource(uri: str) -> ResourceResult:\n",
        "    def get_prompt(name: str, **arguments: str) -> PromptResult:\n",
    ] {
        assert!(text.contains(member), "{member:?} in:\n{text}");
    }
    // Without prompts nor `packhost`, the stubs name neither type.
    let plain = python(&proj(), &Selection::all()).unwrap();
    assert!(!plain.contains("PromptResult"), "{plain}");
}
