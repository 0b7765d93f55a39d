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
