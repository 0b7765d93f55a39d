//! What is wrong with the configuration: every problem found at once, each
//! one line naming its key, with a code and, where there is one, the fix.

use std::{
    fmt,
    path::{Path, PathBuf},
};

/// The kind of a config problem, stable for scripts and tests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConfigCode {
    /// The file named cannot be read (missing, a folder, unreadable).
    File,
    /// Not TOML, an unknown key, or a value of the wrong type.
    Syntax,
    /// A `PACKHOST_*` variable that does not fit its key.
    Environment,
    /// A path that cannot be resolved (`~user`).
    Path,
    /// A pack, alias or snippet name that is not an identifier, or taken.
    Name,
    /// A value out of its range or of the wrong form.
    Value,
    /// A pack section that does not say one thing that serves it (a library,
    /// a stdio server or an HTTP server), or mixes their keys.
    PackSource,
    /// An alias whose target is not `pack.function`, or does not exist.
    Alias,
}

impl ConfigCode {
    /// `CONFIG_…`, as shown.
    pub fn as_str(self) -> &'static str {
        match self {
            ConfigCode::File => "CONFIG_FILE",
            ConfigCode::Syntax => "CONFIG_SYNTAX",
            ConfigCode::Environment => "CONFIG_ENVIRONMENT",
            ConfigCode::Path => "CONFIG_PATH",
            ConfigCode::Name => "CONFIG_NAME",
            ConfigCode::Value => "CONFIG_VALUE",
            ConfigCode::PackSource => "CONFIG_PACK_SOURCE",
            ConfigCode::Alias => "CONFIG_ALIAS",
        }
    }
}

impl fmt::Display for ConfigCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One thing wrong: what (naming its key) and what would be right.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigProblem {
    code: ConfigCode,
    what: String,
    fix: Option<String>,
}

impl ConfigProblem {
    /// A problem whose sentence says all there is.
    pub fn new(code: ConfigCode, what: impl Into<String>) -> Self {
        Self {
            code,
            what: what.into(),
            fix: None,
        }
    }

    /// Add what would be right (shown after `; `).
    pub fn with_fix(mut self, fix: impl Into<String>) -> Self {
        self.fix = Some(fix.into());
        self
    }

    /// Its kind.
    pub fn code(&self) -> ConfigCode {
        self.code
    }

    /// What would be right, when the sentence says it apart.
    pub fn fix(&self) -> Option<&str> {
        self.fix.as_deref()
    }
}

impl fmt::Display for ConfigProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.what)?;
        match &self.fix {
            Some(fix) => write!(f, "; {fix}"),
            None => Ok(()),
        }
    }
}

/// The configuration is refused: the file it came from (named first, once)
/// and every problem, one a line. It stops the host before it serves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    file: Option<PathBuf>,
    problems: Vec<ConfigProblem>,
}

impl ConfigError {
    /// Problems not tied to one file (the environment, loaded packs).
    pub fn new(problems: Vec<ConfigProblem>) -> Self {
        Self {
            file: None,
            problems,
        }
    }

    /// One problem.
    pub fn one(problem: ConfigProblem) -> Self {
        Self::new(vec![problem])
    }

    /// Say that the problems are in `file`.
    pub fn in_file(mut self, file: Option<&Path>) -> Self {
        self.file = file.map(Path::to_path_buf);
        self
    }

    /// Every problem found, in the order they are shown.
    pub fn problems(&self) -> &[ConfigProblem] {
        &self.problems
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(file) = &self.file {
            write!(f, "{}: ", file.display())?;
        }
        for (i, problem) in self.problems.iter().enumerate() {
            if i > 0 {
                f.write_str("\n")?;
            }
            write!(f, "{problem}")?;
        }
        Ok(())
    }
}

impl std::error::Error for ConfigError {}

/// `key` got a value of the wrong type, in the user's words rather than
/// serde's: "`timeout_ms` must be a whole number, e.g. `timeout_ms = 60000`,
/// not the string \"60s\"". `got` and `expected` are serde's (`string
/// "60s"`, `u64`, `struct Param`).
pub(crate) fn wrong_type(key: &str, got: &str, expected: &str) -> String {
    let name = key.rsplit('.').next().unwrap_or(key);
    format!(
        "`{key}` must be {}, not {}",
        expected_in_words(name, expected),
        got_in_words(got)
    )
}

/// serde's "invalid type: string \"60s\", expected u64" (figment says "found
/// string"; "invalid value: integer `-5`" too): what was given and what was
/// expected.
pub(crate) fn invalid_type(message: &str) -> Option<(&str, &str)> {
    let rest = message
        .strip_prefix("invalid type: ")
        .or_else(|| message.strip_prefix("invalid value: "))?;
    let rest = rest.strip_prefix("found ").unwrap_or(rest);
    rest.split_once(", expected ")
}

/// What fits, with an example of a valid line.
fn expected_in_words(name: &str, expected: &str) -> String {
    match expected {
        "u8" | "u16" | "u32" | "u64" | "usize" | "i8" | "i16" | "i32" | "i64" | "isize" => {
            format!("a whole number without quotes or units, e.g. `{name} = 60000`")
        }
        "f32" | "f64" => format!("a number, e.g. `{name} = 1.5`"),
        "a boolean" | "bool" => format!("`true` or `false`, e.g. `{name} = true`"),
        "a string" | "string" => format!("a quoted string, e.g. `{name} = \"text\"`"),
        "a sequence" | "sequence" => format!("a list, e.g. `{name} = [\"a\", \"b\"]`"),
        "struct Param" => format!(
            "a table, e.g. `{name} = {{ description = \"what it is\", default = \"value\" }}`"
        ),
        other if other.starts_with("struct ") || other.contains("map") => {
            format!("a table, e.g. `{name} = {{ key = \"value\" }}`")
        }
        other => other.to_owned(),
    }
}

/// What was given: `string "60s"` is the string "60s", `sequence` a list.
fn got_in_words(got: &str) -> String {
    let value = |prefix: &str| {
        got.strip_prefix(prefix)
            .map(|v| v.trim().trim_matches('`').to_owned())
    };
    if let Some(text) = value("string ") {
        format!("the string {text}")
    } else if let Some(n) = value("integer ").or_else(|| value("floating point ")) {
        format!("the number {n}")
    } else if let Some(b) = value("boolean ") {
        b
    } else {
        match got {
            "sequence" => "a list".to_owned(),
            "map" => "a table".to_owned(),
            other => other.to_owned(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wrong_type_is_said_in_words_with_an_example() {
        let (got, expected) = invalid_type("invalid type: string \"60s\", expected u64").unwrap();
        assert_eq!(
            wrong_type("server.timeout_ms", got, expected),
            "`server.timeout_ms` must be a whole number without quotes or units, e.g. \
             `timeout_ms = 60000`, not the string \"60s\""
        );
        let (got, expected) =
            invalid_type("invalid type: found string \"x\", expected struct Param").unwrap();
        assert_eq!(
            wrong_type("pattern", got, expected),
            "`pattern` must be a table, e.g. `pattern = { description = \"what it is\", \
             default = \"value\" }`, not the string \"x\""
        );
        assert_eq!(
            wrong_type("enabled", "integer `1`", "a boolean"),
            "`enabled` must be `true` or `false`, e.g. `enabled = true`, not the number 1"
        );
        assert_eq!(invalid_type("unknown field `x`"), None);
    }
}
