//! The store's one error type.

use std::fmt;

/// What went wrong in the store. Each variant holds one lowercase sentence
/// (names in backticks) that never contains a secret: not an auth token, a
/// header or env value, nor a database password.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoreError {
    /// The request was wrong: what was wrong and what would be right.
    Invalid(String),
    /// No such integration (in that organisation).
    NotFound(String),
    /// The organisation already has an integration of that name.
    Conflict(String),
    /// The database failed or could not be reached or migrated.
    Database(String),
}

impl StoreError {
    /// The sentence, whatever the variant.
    pub fn message(&self) -> &str {
        match self {
            StoreError::Invalid(message)
            | StoreError::NotFound(message)
            | StoreError::Conflict(message)
            | StoreError::Database(message) => message,
        }
    }
}

impl fmt::Display for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.message())
    }
}

impl std::error::Error for StoreError {}
