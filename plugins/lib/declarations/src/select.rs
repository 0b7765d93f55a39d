//! Which tools and aliases of a catalog to declare.

use pack_api::{
    Catalog, CatalogPrompt, CatalogTool,
    names::{did_you_mean, no_function},
};
use pack_sdk::PackError;

/// The host's own pack (discovery), whose functions the `packhost` object
/// of code mode carries beside its own members.
pub(crate) const HOST_PACK: &str = "packhost";

/// What to declare: everything (both `None`), one pack, one function of a
/// pack, or one alias (its name as `pack`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Selection {
    /// A pack, or an alias.
    pub pack: Option<String>,
    /// A function of `pack`; needs `pack`.
    pub function: Option<String>,
}

impl Selection {
    /// Every tool and alias.
    pub fn all() -> Self {
        Self::default()
    }

    /// One pack's functions (and the aliases to them), or one alias.
    pub fn pack(pack: impl Into<String>) -> Self {
        Self {
            pack: Some(pack.into()),
            function: None,
        }
    }

    /// One function (and the aliases to it).
    pub fn function(pack: impl Into<String>, function: impl Into<String>) -> Self {
        Self {
            pack: Some(pack.into()),
            function: Some(function.into()),
        }
    }
}

/// The selected part of a catalog, in catalog order.
pub(crate) struct Selected<'a> {
    /// Packs in order of their first tool, each with its selected tools.
    pub packs: Vec<(&'a str, Vec<&'a CatalogTool>)>,
    /// `(alias, target)` for aliases to selected tools; aliases to tools
    /// the catalog lacks are left out, as code mode leaves them out.
    pub aliases: Vec<(&'a str, &'a CatalogTool)>,
    /// Whether everything or the host's own pack is selected: `packhost`'s
    /// members besides its functions are declared then.
    pub host: bool,
    /// The prompts of the selected packs (none for a function or an alias).
    prompts: Vec<&'a CatalogPrompt>,
}

impl<'a> Selected<'a> {
    /// The prompts of `pack`, as code reaches them: `pack.prompts.<name>`,
    /// unless a function of the pack is named `prompts` (code mode gives
    /// that name to the function; `packhost.get_prompt` renders them).
    pub fn prompts(&self, pack: &str, tools: &[&CatalogTool]) -> Vec<&'a CatalogPrompt> {
        if tools.iter().any(|t| t.function == "prompts") {
            return Vec::new();
        }
        let prompts = self.prompts.iter().copied();
        prompts.filter(|p| p.pack == pack).collect()
    }
}

pub(crate) fn select<'a>(
    catalog: &'a Catalog,
    selection: &Selection,
) -> Result<Selected<'a>, PackError> {
    let target_of = |target: &str| {
        catalog.tools.iter().find(|t| {
            target
                .strip_prefix(t.pack.as_str())
                .and_then(|f| f.strip_prefix('.'))
                == Some(&t.function)
        })
    };
    let aliases: Vec<(&str, &CatalogTool)> = catalog
        .aliases
        .iter()
        .filter_map(|(alias, target)| Some((alias.as_str(), target_of(target)?)))
        .collect();
    let mut prompts: Vec<&CatalogPrompt> = Vec::new();
    let (tools, aliases): (Vec<&CatalogTool>, Vec<_>) = match (&selection.pack, &selection.function)
    {
        (None, None) => {
            prompts.extend(&catalog.prompts);
            (catalog.tools.iter().collect(), aliases)
        }
        (None, Some(function)) => {
            return Err(PackError::invalid_argument(format!(
                "function `{function}` needs its pack"
            ))
            .with_help("name the pack too, or leave out both for every tool"));
        }
        (Some(pack), function) => {
            let tools: Vec<&CatalogTool> =
                catalog.tools.iter().filter(|t| t.pack == *pack).collect();
            if tools.is_empty() {
                return alias(catalog, pack, function.as_deref(), &aliases);
            }
            let tools = match function {
                None => {
                    prompts.extend(catalog.prompts.iter().filter(|p| p.pack == *pack));
                    tools
                }
                Some(function) => {
                    let tool = tools
                        .iter()
                        .find(|t| t.function == *function)
                        .ok_or_else(|| {
                            let names = tools.iter().map(|t| t.function.as_str());
                            PackError::not_found(no_function(pack, function, names))
                        })?;
                    vec![*tool]
                }
            };
            let aliases = aliases
                .into_iter()
                .filter(|(_, target)| tools.contains(target))
                .collect();
            (tools, aliases)
        }
    };
    Ok(Selected {
        packs: by_pack(tools),
        aliases,
        host: selection.function.is_none()
            && selection
                .pack
                .as_deref()
                .is_none_or(|pack| pack == HOST_PACK),
        prompts,
    })
}

/// The alias `name` alone, or NOT_FOUND naming the packs and aliases.
fn alias<'a>(
    catalog: &'a Catalog,
    name: &str,
    function: Option<&str>,
    aliases: &[(&'a str, &'a CatalogTool)],
) -> Result<Selected<'a>, PackError> {
    let Some(&(alias, target)) = aliases.iter().find(|(alias, _)| *alias == name) else {
        return Err(unknown_pack(catalog, name, aliases));
    };
    if function.is_some() {
        return Err(PackError::invalid_argument(format!(
            "`{alias}` is an alias of `{}.{}`, not a pack, so it has no functions",
            target.pack, target.function
        ))
        .with_help(format!("select `{alias}` without a function")));
    }
    Ok(Selected {
        packs: by_pack(vec![target]),
        aliases: vec![(alias, target)],
        host: false,
        prompts: Vec::new(),
    })
}

fn unknown_pack(catalog: &Catalog, name: &str, aliases: &[(&str, &CatalogTool)]) -> PackError {
    if catalog.tools.is_empty() {
        return PackError::not_found(format!(
            "no pack or alias `{name}`; the catalog has no tools"
        ));
    }
    let packs: Vec<&str> = by_pack(catalog.tools.iter().collect())
        .into_iter()
        .map(|(pack, _)| pack)
        .collect();
    let aliases: Vec<&str> = aliases.iter().map(|(alias, _)| *alias).collect();
    let candidates: Vec<&str> = packs.iter().chain(&aliases).copied().collect();
    let mut message = format!(
        "no pack or alias `{name}`; {}packs: {}",
        did_you_mean(name, candidates.iter().copied()),
        packs.join(", ")
    );
    if !aliases.is_empty() {
        message += &format!("; aliases: {}", aliases.join(", "));
    }
    PackError::not_found(message).with_help("select one of these, or nothing for every tool")
}

/// Tools grouped by pack, packs in order of their first tool.
pub(crate) fn by_pack(tools: Vec<&CatalogTool>) -> Vec<(&str, Vec<&CatalogTool>)> {
    let mut packs: Vec<(&str, Vec<&CatalogTool>)> = Vec::new();
    for tool in tools {
        match packs.iter_mut().find(|(pack, _)| *pack == tool.pack) {
            Some((_, tools)) => tools.push(tool),
            None => packs.push((&tool.pack, vec![tool])),
        }
    }
    packs
}
