//! Text shown to models: one rule for lines too long to show whole.

/// Longest line shown whole (a match of a search, a line of a result).
pub const MAX_LINE_CHARS: usize = 500;

/// `line`, or its first [`MAX_LINE_CHARS`] characters followed by `marker`
/// when it is longer.
pub fn clip_line(line: &str, marker: &str) -> String {
    match line.char_indices().nth(MAX_LINE_CHARS) {
        Some((end, _)) => format!("{}{marker}", &line[..end]),
        None => line.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_lines_are_cut_at_a_character_and_marked() {
        let long = "é".repeat(MAX_LINE_CHARS + 1);
        let clipped = clip_line(&long, "…");
        assert_eq!(clipped.chars().count(), MAX_LINE_CHARS + 1);
        assert!(clipped.ends_with("é…"));
        let exact = "x".repeat(MAX_LINE_CHARS);
        assert_eq!(clip_line(&exact, "…"), exact);
    }
}
