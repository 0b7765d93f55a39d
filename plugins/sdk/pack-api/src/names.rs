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

/// Levenshtein distance over chars.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut previous = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let current = row[j + 1];
            row[j + 1] = (previous + usize::from(ca != *cb))
                .min(row[j] + 1)
                .min(current + 1);
            previous = current;
        }
    }
    row[b.len()]
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
}
