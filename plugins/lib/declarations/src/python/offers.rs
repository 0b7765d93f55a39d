//! The Python stubs of what code reaches besides functions: a pack's
//! prompts (a `prompts` class inside its class, as `exec_py` makes
//! `pack.prompts.<name>`) and `packhost`'s prompts and resources, with the
//! two result types they name.

use pack_api::CatalogPrompt;

use super::{docstring, not_a_name, quote};

/// The result types, written after the header when anything names them.
pub(super) const TYPES: &str = "

class PromptResult(TypedDict):
    \"\"\"A rendered prompt: MCP's GetPromptResult. A text message's content is {\"type\": \"text\", \"text\": ...}.\"\"\"

    description: NotRequired[str]
    messages: list[dict[str, Any]]


class ResourceResult(TypedDict):
    \"\"\"A read resource: MCP's ReadResourceResult, text as `text`, bytes as base64 `blob`, in each of `contents`.\"\"\"

    contents: list[dict[str, Any]]
";

/// The names [`TYPES`] takes.
pub(super) const NAMES: [&str; 2] = ["PromptResult", "ResourceResult"];

/// `packhost`'s members besides its functions, as its class has them.
pub(super) const HOST_MEMBERS: &str = r#"
    @staticmethod
    def prompts() -> list[dict[str, Any]]:
        """Every prompt you may render: [{"name", "description", "arguments": [{"name", "description"?, "required"}]}]; `pack.prompts.<name>(...)` renders one."""
        ...

    @staticmethod
    def get_prompt(name: str, **arguments: str) -> PromptResult:
        """Render prompt `name` as `packhost.prompts()` lists it."""
        ...

    @staticmethod
    def read_resource(uri: str) -> ResourceResult:
        """Read resource `uri`: a pack's (see `packhost.resources()`), or a kept result `packhost://results/<handle>`."""
        ...

    @staticmethod
    def resources() -> dict[str, Any]:
        """The resources you may read and templates of more: {"resources": [{"uri", "name", ...}], "resourceTemplates": [{"uriTemplate", "name", ...}]}."""
        ...
"#;

/// The class `prompts` inside a pack's class: a static method per prompt,
/// its arguments (strings) by name.
pub(super) fn prompts_class(pack: &str, prompts: &[&CatalogPrompt]) -> String {
    let mut out = format!(
        "\n    class prompts:\n        {}\n",
        docstring(
            "Its MCP prompts: each renders with its arguments (strings) to a PromptResult.",
            8
        )
    );
    for prompt in prompts {
        let spec = &prompt.spec;
        out.push('\n');
        if let Some(reason) = not_a_name(&spec.name, &[]) {
            out += &format!(
                "        # prompt {} is {reason}: render it as getattr({pack}.prompts, {0})(...)\n",
                quote(&spec.name)
            );
            continue;
        }
        let (named, other): (Vec<_>, Vec<_>) = spec
            .arguments
            .iter()
            .partition(|a| not_a_name(&a.name, &[]).is_none());
        let mut parameters: Vec<String> = named
            .iter()
            .map(|a| match a.required {
                true => format!("{}: str", a.name),
                false => format!("{}: str | None = None", a.name),
            })
            .collect();
        if !parameters.is_empty() {
            parameters.insert(0, "*".to_owned());
        }
        if !other.is_empty() {
            parameters.push("**arguments: str".to_owned());
        }
        let mut doc = spec.description.clone().unwrap_or_default();
        let documented: Vec<String> = spec
            .arguments
            .iter()
            .map(|a| {
                let name = if other.contains(&a) {
                    quote(&a.name)
                } else {
                    a.name.clone()
                };
                let description = a.description.iter().map(String::as_str);
                let optional = (!a.required).then_some("(optional)");
                let said: Vec<&str> = description.chain(optional).collect();
                format!("{name}: {}", said.join(" "))
            })
            .collect();
        if !documented.is_empty() {
            doc += &format!("\n\nArgs:\n    {}", documented.join("\n    "));
        }
        out += &format!(
            "        @staticmethod\n        def {}({}) -> PromptResult:",
            spec.name,
            parameters.join(", ")
        );
        if doc.trim().is_empty() {
            out += " ...\n";
        } else {
            out += &format!(
                "\n            {}\n            ...\n",
                docstring(doc.trim(), 12)
            );
        }
    }
    out
}
