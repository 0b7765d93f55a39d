//! How a path written in `packs.toml` reads: one rule for the host and every
//! pack, so `~/x` means the same in `[projects]` as in a pack's `config`.
//!
//! Not part of the ABI (nothing here crosses it): a convention both sides
//! share, like the error [`codes`](crate::codes).
//!
//! - `~` alone, or a leading `~/`, is the home directory of the user running
//!   the host (`$HOME`).
//! - `~user` forms are refused: expanding another user's home needs a user
//!   database lookup and is rarely what a server's config means. Write the
//!   full path, or `./~name` for a folder really called `~name`.
//! - Anything else is left as written (a `~` further in is an ordinary
//!   character); relative paths are the reader's business.

use std::{
    ffi::OsStr,
    fmt,
    path::{Component, Path, PathBuf},
};

use serde::{Deserialize, Deserializer};

/// Why a path could not be expanded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HomeError {
    /// `~name/...`: another user's home.
    OtherUser(PathBuf),
    /// `~/...` while `HOME` is unset or empty.
    NoHome(PathBuf),
}

impl fmt::Display for HomeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::OtherUser(path) => write!(
                f,
                "`{}`: `~user` is not expanded, only `~` and `~/` (to $HOME); write the full \
                 path, or `./{}` for a name that starts with `~`",
                path.display(),
                path.display()
            ),
            Self::NoHome(path) => write!(
                f,
                "`{}`: `~` is the home directory, but HOME is not set; write the full path",
                path.display()
            ),
        }
    }
}

impl std::error::Error for HomeError {}

/// `path` with a leading `~` replaced by `$HOME` (see the [module](self) docs).
pub fn expand_home(path: &Path) -> Result<PathBuf, HomeError> {
    expand_home_in(path, std::env::var_os("HOME").as_deref())
}

/// [`expand_home`] with the home directory given (`None`: unknown).
pub fn expand_home_in(path: &Path, home: Option<&OsStr>) -> Result<PathBuf, HomeError> {
    let mut components = path.components();
    let Some(Component::Normal(first)) = components.next() else {
        return Ok(path.to_path_buf());
    };
    if first != "~" {
        return match first.as_encoded_bytes().first() {
            Some(b'~') => Err(HomeError::OtherUser(path.to_path_buf())),
            _ => Ok(path.to_path_buf()),
        };
    }
    match home.filter(|home| !home.is_empty()) {
        Some(home) => Ok(Path::new(home).join(components.as_path())),
        None => Err(HomeError::NoHome(path.to_path_buf())),
    }
}

/// Values that hold config paths: [`PathBuf`], and `Option`s and `Vec`s of
/// them.
pub trait HomePaths: Sized {
    /// Every path inside expanded by [`expand_home`].
    fn expand_home(self) -> Result<Self, HomeError>;
}

impl HomePaths for PathBuf {
    fn expand_home(self) -> Result<Self, HomeError> {
        expand_home(&self)
    }
}

impl<T: HomePaths> HomePaths for Option<T> {
    fn expand_home(self) -> Result<Self, HomeError> {
        self.map(T::expand_home).transpose()
    }
}

impl<T: HomePaths> HomePaths for Vec<T> {
    fn expand_home(self) -> Result<Self, HomeError> {
        self.into_iter().map(T::expand_home).collect()
    }
}

/// For `#[serde(deserialize_with = "...")]` on a config field holding paths
/// (`PathBuf`, `Option<PathBuf>`, `Vec<PathBuf>`): deserialize, then
/// [`expand_home`] each path; a refused path is a deserialization error.
///
/// ```
/// use std::path::PathBuf;
///
/// #[derive(serde::Deserialize)]
/// struct Config {
///     #[serde(default, deserialize_with = "pack_api::paths::deserialize_home")]
///     roots: Vec<PathBuf>,
/// }
///
/// let config: Config = serde_json::from_str(r#"{"roots": ["/srv", "~/src"]}"#).unwrap();
/// assert_eq!(config.roots[0], PathBuf::from("/srv"));
/// # if let Some(home) = std::env::var_os("HOME").filter(|h| !h.is_empty()) {
/// assert_eq!(config.roots[1], PathBuf::from(home).join("src"));
/// # }
/// ```
pub fn deserialize_home<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de> + HomePaths,
{
    T::deserialize(deserializer)?
        .expand_home()
        .map_err(serde::de::Error::custom)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn expand(path: &str, home: Option<&str>) -> Result<PathBuf, HomeError> {
        expand_home_in(Path::new(path), home.map(OsStr::new))
    }

    #[test]
    fn a_leading_tilde_is_the_home_directory() {
        let home = Some("/home/ada");
        assert_eq!(expand("~", home), Ok("/home/ada".into()));
        assert_eq!(expand("~/", home), Ok("/home/ada".into()));
        assert_eq!(
            expand("~/projects/onetool", home),
            Ok("/home/ada/projects/onetool".into())
        );
        assert_eq!(expand("~//a/./b", home), Ok("/home/ada/a/b".into()));
        // `..` is kept: the caller decides how to clean paths.
        assert_eq!(expand("~/../x", home), Ok("/home/ada/../x".into()));
        assert_eq!(expand("~/x", Some("/home/ada/")), Ok("/home/ada/x".into()));
    }

    #[test]
    fn other_paths_are_left_as_written() {
        let home = Some("/home/ada");
        for path in [
            "/abs/~/nb",
            "rel/~",
            "./~ada",
            "python3",
            "",
            ".",
            "a~",
            "/~",
        ] {
            assert_eq!(expand(path, home), Ok(path.into()), "{path:?}");
            // Without a home too: nothing needed it.
            assert_eq!(expand(path, None), Ok(path.into()), "{path:?}");
        }
    }

    #[test]
    fn another_users_home_is_refused_with_the_fix() {
        for path in ["~ada", "~ada/projects", "~~", "~.x/y"] {
            let err = expand(path, Some("/home/me")).unwrap_err();
            assert_eq!(err, HomeError::OtherUser(path.into()));
            let message = err.to_string();
            assert!(message.starts_with(&format!("`{path}`: ")), "{message}");
            assert!(message.contains(&format!("`./{path}`")), "{message}");
        }
    }

    #[test]
    fn a_tilde_without_a_home_is_refused() {
        for home in [None, Some("")] {
            let err = expand("~/x", home).unwrap_err();
            assert_eq!(err, HomeError::NoHome("~/x".into()));
            assert_eq!(
                err.to_string(),
                "`~/x`: `~` is the home directory, but HOME is not set; write the full path"
            );
        }
    }

    #[test]
    fn options_and_lists_expand_every_path() {
        // Through `expand_home`, so only paths that need no home.
        let list = vec![PathBuf::from("/a"), PathBuf::from("b")];
        assert_eq!(list.clone().expand_home(), Ok(list));
        assert_eq!(None::<PathBuf>.expand_home(), Ok(None));
        assert_eq!(
            Some(vec![PathBuf::from("/a"), PathBuf::from("~x/y")]).expand_home(),
            Err(HomeError::OtherUser("~x/y".into()))
        );
    }

    #[test]
    fn deserialize_home_reports_a_refused_path_as_a_serde_error() {
        #[derive(Debug, Deserialize)]
        #[allow(dead_code)]
        struct Config {
            #[serde(default, deserialize_with = "deserialize_home")]
            python: Option<PathBuf>,
        }
        let err = serde_json::from_str::<Config>(r#"{"python": "~bob/bin/python"}"#).unwrap_err();
        assert!(
            err.to_string()
                .starts_with("`~bob/bin/python`: `~user` is not expanded"),
            "{err}"
        );
        let config: Config = serde_json::from_str(r#"{"python": null}"#).unwrap();
        assert_eq!(config.python, None);
        let config: Config = serde_json::from_str("{}").unwrap();
        assert_eq!(config.python, None);
    }
}
