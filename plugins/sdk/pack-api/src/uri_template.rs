//! Which URI a resource template names: the one rule the host (to route a
//! `resources/read`) and a pack (to read it) share. RFC 6570 level 1: a
//! `{var}` stands for one non-empty piece without `/`, `?` or `#`;
//! everything else must be equal.

use std::collections::BTreeMap;

/// The variables of `uri` when it fits `template`
/// (`test://template/{id}/data` and `test://template/123/data`: `id = 123`),
/// else `None`.
pub fn matches(template: &str, uri: &str) -> Option<BTreeMap<String, String>> {
    let mut variables = BTreeMap::new();
    let mut rest = uri;
    let mut pieces = template.split('{');
    let literal = pieces.next()?;
    rest = rest.strip_prefix(literal)?;
    for piece in pieces {
        let (name, literal) = piece.split_once('}')?;
        // A variable ends where the next literal starts (or at a separator).
        let end =
            rest.find(['/', '?', '#'])
                .unwrap_or(rest.len())
                .min(match literal.chars().next() {
                    Some(_) => rest.find(literal).unwrap_or(rest.len()),
                    None => rest.len(),
                });
        let value = &rest[..end];
        if value.is_empty() {
            return None;
        }
        variables.insert(name.to_owned(), value.to_owned());
        rest = rest[end..].strip_prefix(literal)?;
    }
    rest.is_empty().then_some(variables)
}

#[cfg(test)]
mod tests {
    use super::matches;

    #[test]
    fn variables_are_one_piece_each() {
        let got = matches("test://template/{id}/data", "test://template/123/data").unwrap();
        assert_eq!(got["id"], "123");
        let two = matches("db://{schema}/{table}", "db://public/users").unwrap();
        assert_eq!(
            (two["schema"].as_str(), two["table"].as_str()),
            ("public", "users")
        );
        assert!(
            matches("test://static", "test://static")
                .unwrap()
                .is_empty()
        );
        for (template, uri) in [
            ("test://template/{id}/data", "test://template//data"),
            ("test://template/{id}/data", "test://template/1/2/data"),
            ("test://template/{id}/data", "test://template/1/datum"),
            ("test://template/{id}", "test://other/1"),
            ("test://static", "test://static/more"),
        ] {
            assert_eq!(matches(template, uri), None, "{template} {uri}");
        }
    }
}
