//! Names of functions: `pack.function` as every side joins it, and "did you
//! mean", the one wording of a suggestion for a mistyped name, in the host's
//! errors and in packs' (the declarations of code mode).

/// `pack.function`: a function's name wherever it is called or shown (the
/// host's `ToolName` is the same name, split).
pub fn qualified(pack: &str, function: &str) -> String {
    format!("{pack}.{function}")
}

/// Another server's tool or prompt name as a function or prompt name:
/// every character that is not a letter or digit becomes `_` (`get-sum` →
/// `get_sum`).
pub fn identifier(raw: &str) -> String {
    raw.chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect()
}

/// The closest of `candidates` to `name` when it is a likely typo (at most
/// two edits away).
pub fn suggestion<'a>(
    name: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Option<&'a str> {
    candidates
        .into_iter()
        .map(|c| (edit_distance(name, c), c))
        .filter(|(d, _)| *d < 3)
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c)
}

/// "did you mean `x`? " for the closest of `candidates`, or nothing.
pub fn did_you_mean<'a>(name: &str, candidates: impl IntoIterator<Item = &'a str>) -> String {
    suggestion(name, candidates)
        .map(|s| format!("did you mean `{s}`? "))
        .unwrap_or_default()
}

/// "pack `p` has no function `f`; did you mean `g`? (has: g, h)", the one
/// wording wherever a function is not found.
pub fn no_function<'a, I>(pack: &str, function: &str, names: I) -> String
where
    I: IntoIterator<Item = &'a str>,
    I::IntoIter: Clone,
{
    let names = names.into_iter();
    let has: Vec<&str> = names.clone().collect();
    let has = if has.is_empty() {
        "none".to_owned()
    } else {
        has.join(", ")
    };
    match suggestion(function, names) {
        Some(close) => {
            format!(
                "pack `{pack}` has no function `{function}`; did you mean `{close}`? (has: {has})"
            )
        }
        None => format!("pack `{pack}` has no function `{function}` (has: {has})"),
    }
}

/// Edits from `a` to `b` over chars: insert, delete, replace, or swap two
/// neighbours, each one edit (optimal string alignment), since a swap is
/// the commonest typo ("shwo").
pub fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let width = b.len() + 1;
    let mut rows = vec![0; (a.len() + 1) * width];
    for i in 0..=a.len() {
        rows[i * width] = i;
    }
    for (j, cell) in rows[..width].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let replace = usize::from(a[i - 1] != b[j - 1]);
            let mut best = (rows[(i - 1) * width + j] + 1)
                .min(rows[i * width + j - 1] + 1)
                .min(rows[(i - 1) * width + j - 1] + replace);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                best = best.min(rows[(i - 2) * width + j - 2] + 1);
            }
            rows[i * width + j] = best;
        }
    }
    rows[a.len() * width + b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggests_close_names_only() {
        assert_eq!(suggestion("runn", ["run", "eval"]), Some("run"));
        assert_eq!(suggestion("zzzz", ["run", "eval"]), None);
        assert_eq!(did_you_mean("proj", ["prj"]), "did you mean `prj`? ");
        assert_eq!(qualified("proj", "read"), "proj.read");
    }

    #[test]
    fn a_swap_is_one_edit() {
        assert_eq!(edit_distance("shwo", "show"), 1);
        assert_eq!(edit_distance("incidnet", "incident"), 1);
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        assert_eq!(edit_distance("", "abc"), 3);
        assert_eq!(edit_distance("abc", ""), 3);
    }
}
