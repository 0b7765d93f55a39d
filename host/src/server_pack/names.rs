//! Names of a server's tools and prompts as packhost serves them: MCP names
//! may hold `-` or `.`, function and prompt names are identifiers.

use std::collections::HashMap;

use crate::tool_name::identifier;

/// The served name of each tool (or prompt), in the server's order: `_` for each
/// character an identifier cannot hold, so `run` can call it (`get-sum` →
/// `get_sum`). When tools come to one name, every one stays reachable: a
/// tool whose name is that identifier already keeps it (its name works as
/// the server documents it; else the first listed does), the others get
/// `_2`, `_3`, ... in the server's order (the first name free), and a
/// warning names both tools.
pub(super) fn served_names(pack: &str, kind: &str, tools: &[&str]) -> Vec<String> {
    let plain: Vec<String> = tools.iter().map(|tool| identifier(tool)).collect();
    // Function name → the tool that has it.
    let mut holders: HashMap<String, &str> = tools
        .iter()
        .zip(&plain)
        .filter(|(tool, name)| **tool == name.as_str())
        .map(|(tool, name)| (name.clone(), *tool))
        .collect();
    tools
        .iter()
        .zip(plain)
        .map(|(tool, name)| match holders.get(&name).copied() {
            None => {
                holders.insert(name.clone(), tool);
                name
            }
            Some(holder) if holder == *tool => name,
            Some(holder) => {
                let free = (2..)
                    .map(|n| format!("{name}_{n}"))
                    .find(|candidate| !holders.contains_key(candidate))
                    .expect("some suffix is free");
                tracing::warn!(
                    pack,
                    "{kind} `{holder}` and `{tool}` of the server both make `{name}`: `{holder}` \
                     keeps it, `{tool}` is served as `{pack}.{free}`"
                );
                holders.insert(free.clone(), tool);
                free
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::served_names;

    #[test]
    fn tools_that_come_to_one_name_all_stay_reachable() {
        assert_eq!(
            served_names("fx", "tools", &["get-sum", "get_sum", "echo", "get.sum"]),
            ["get_sum_2", "get_sum", "echo", "get_sum_3"]
        );
        // Without an identifier among them, the first listed keeps the name;
        // a suffix never takes the name of another tool.
        assert_eq!(
            served_names("fx", "tools", &["a-b", "a_b_2", "a.b"]),
            ["a_b", "a_b_2", "a_b_3"]
        );
    }
}
