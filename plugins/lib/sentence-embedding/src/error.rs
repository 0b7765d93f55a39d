//! What can go wrong loading the model or embedding with it.

use std::error::Error;
use std::fmt;
use std::path::PathBuf;

/// Why [`Model::load`](crate::Model::load) failed.
#[derive(Debug)]
pub enum LoadError {
    /// One of the three files the model is made of is not in the directory.
    MissingFile {
        /// `config.json`, `model.safetensors` or `tokenizer.json`.
        file: &'static str,
        /// The directory that lacks it.
        dir: PathBuf,
    },
    /// A file is there but cannot be read or is not what the model needs.
    Unreadable {
        /// The file.
        path: PathBuf,
        /// What went wrong, as the reader said it.
        cause: Box<dyn Error + Send + Sync>,
    },
}

impl fmt::Display for LoadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LoadError::MissingFile { file, dir } => write!(
                f,
                "the search model directory `{}` has no `{file}`: `./dev run` or `./dev test` \
                 installs all-MiniLM-L6-v2 (config.json, model.safetensors, tokenizer.json) \
                 and names its directory in PACKHOST_SEARCH_MODEL",
                dir.display()
            ),
            LoadError::Unreadable { path, cause } => write!(
                f,
                "cannot load the search model's `{}`: {cause}; `./dev run` or `./dev test` \
                 installs a fresh copy after the directory is removed",
                path.display()
            ),
        }
    }
}

impl Error for LoadError {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        match self {
            LoadError::MissingFile { .. } => None,
            LoadError::Unreadable { cause, .. } => Some(cause.as_ref()),
        }
    }
}

/// Why [`Model::embed`](crate::Model::embed) failed.
#[derive(Debug)]
pub enum EmbedError {
    /// The tokenizer refused a text.
    Tokenize(Box<dyn Error + Send + Sync>),
    /// The model's forward pass failed.
    Forward(candle_core::Error),
}

impl fmt::Display for EmbedError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EmbedError::Tokenize(cause) => write!(f, "cannot tokenize a text to embed: {cause}"),
            EmbedError::Forward(cause) => {
                write!(f, "the embedding model's forward pass failed: {cause}")
            }
        }
    }
}

impl Error for EmbedError {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        match self {
            EmbedError::Tokenize(cause) => Some(cause.as_ref()),
            EmbedError::Forward(cause) => Some(cause),
        }
    }
}

impl From<candle_core::Error> for EmbedError {
    fn from(cause: candle_core::Error) -> Self {
        EmbedError::Forward(cause)
    }
}
