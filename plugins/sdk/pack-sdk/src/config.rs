//! Config blocks that packs share: each pack's config embeds them with
//! `#[serde(flatten)]`, so every pack reads the same keys the same way.
//!
//! - [`Sessions`]: who may use a session and how many there may be (`share`,
//!   `max_sessions`, `max_sessions_per_owner`), for packs that keep sessions
//!   for their callers.
//! - [`Children`] (feature `children`): the environment, confinement and
//!   bounds of the processes a pack starts (`env_allow`, `sandbox`,
//!   `limits`).
//! - [`Keyed`]: a config that embeds them and still names its keys when one
//!   is unknown (serde's own message leaves them out with `flatten`).
//!
//! ```
//! use pack_sdk::config::Sessions;
//! use serde::Deserialize;
//!
//! #[derive(Deserialize)]
//! #[serde(deny_unknown_fields)]
//! struct Config {
//!     greeting: String,
//!     /// At most 8 sessions, 2 per owner, unless configured.
//!     #[serde(flatten)]
//!     sessions: Sessions<8, 2>,
//! }
//!
//! let config: Config =
//!     serde_json::from_value(serde_json::json!({"greeting": "hi", "max_sessions": 4})).unwrap();
//! assert_eq!((config.sessions.limits().max, config.sessions.limits().per_owner), (4, 2));
//! ```

use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, de::DeserializeOwned};

use crate::owned::{self, Share};

/// A config `C` read as serde reads it, except that an unknown key is
/// refused naming the keys there are: with `#[serde(flatten)]` blocks
/// serde's message says only ``unknown field `x` ``. Take it in
/// [`PackDef::new`](crate::PackDef::new)'s init: `|config: Keyed<Config>,
/// host| … config.0 …`.
///
/// ```
/// use pack_sdk::config::{Keyed, Sessions};
/// use schemars::JsonSchema;
/// use serde::Deserialize;
///
/// #[derive(Deserialize, JsonSchema)]
/// #[serde(deny_unknown_fields)]
/// struct Config {
///     greeting: Option<String>,
///     #[serde(flatten)]
///     sessions: Sessions<8, 2>,
/// }
///
/// let wrong = serde_json::json!({"greting": "hi"});
/// let error = serde_json::from_value::<Keyed<Config>>(wrong).err().unwrap().to_string();
/// assert!(error.starts_with("unknown field `greting`, expected one of `greeting`, "));
/// assert!(error.contains("`max_sessions`"));
/// ```
pub struct Keyed<C>(pub C);

impl<'de, C: DeserializeOwned + JsonSchema> Deserialize<'de> for Keyed<C> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = serde_json::Value::deserialize(deserializer)?;
        serde_json::from_value(value).map(Keyed).map_err(|e| {
            let message = e.to_string();
            let keys_left_out = message.starts_with("unknown field `") && !message.contains(',');
            if !keys_left_out {
                return serde::de::Error::custom(message);
            }
            let schema = schemars::schema_for!(C).to_value();
            let keys: Vec<String> = schema["properties"]
                .as_object()
                .map(|properties| properties.keys().map(|key| format!("`{key}`")).collect())
                .unwrap_or_default();
            serde::de::Error::custom(format!("{message}, expected one of {}", keys.join(", ")))
        })
    }
}

/// `share`, `max_sessions` and `max_sessions_per_owner` of a pack that keeps
/// sessions, with the pack's defaults: `MAX` sessions on the host and
/// `PER_OWNER` for one owner (0: as many as `max_sessions`, since a limit of
/// 0 is refused anyway).
#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
pub struct Sessions<const MAX: usize, const PER_OWNER: usize> {
    /// Who may use a session besides the user who created it: `user` (no
    /// one, the default) or `org` (every user of the organisation).
    #[serde(default)]
    pub share: Share,
    /// Sessions on this host at most.
    #[serde(default = "max_sessions::<MAX>")]
    max_sessions: usize,
    /// Sessions one owner (a user, or with `share = "org"` an organisation)
    /// may have at most.
    #[serde(default)]
    max_sessions_per_owner: Option<usize>,
}

fn max_sessions<const MAX: usize>() -> usize {
    MAX
}

impl<const MAX: usize, const PER_OWNER: usize> Sessions<MAX, PER_OWNER> {
    /// The limits, defaults filled in (a table refuses a 0 when made).
    pub fn limits(&self) -> owned::Limits {
        let default_per_owner = match PER_OWNER {
            0 => self.max_sessions,
            n => n,
        };
        owned::Limits {
            max: self.max_sessions,
            per_owner: self.max_sessions_per_owner.unwrap_or(default_per_owner),
        }
    }
}

#[cfg(feature = "children")]
pub use children::Children;

#[cfg(feature = "children")]
mod children {
    use pack_process::{EnvAllowList, Limits, Mode, Sandbox};
    use schemars::JsonSchema;
    use serde::Deserialize;

    use crate::{Host, LogLevel, PackError};

    /// `env_allow`, `sandbox` and `limits`: what every process a pack starts
    /// gets.
    #[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
    pub struct Children {
        /// Host environment variables a child process may see (nothing else
        /// of the host's environment reaches it). Default `PATH`, `HOME`,
        /// `LANG`.
        #[serde(default)]
        env_allow: Option<Vec<String>>,
        /// `"on"` (the default): every child is confined (the pack says to
        /// what), or refused where the machine cannot confine it. `"off"`:
        /// children run with every right of the host's user (logged as a
        /// warning at start).
        #[serde(default)]
        pub sandbox: Mode,
        /// The bounds of each child: `memory_mb` (1024), `processes` (128),
        /// `cpu_seconds` (3600), `file_size_mb` (1024), `open_files` (1024).
        /// A child that passes one ends with `LIMIT_EXCEEDED`.
        #[serde(default)]
        pub limits: Limits,
    }

    impl Children {
        /// The host variables children see.
        pub fn env(&self) -> EnvAllowList {
            self.env_allow
                .clone()
                .map_or_else(EnvAllowList::default, EnvAllowList::new)
        }

        /// The sandbox of the pack's children, once `limits` are checked;
        /// `sandbox = "off"` is logged as a warning saying that `what` (e.g.
        /// "Python code runs") unconfined.
        pub fn sandbox(&self, what: &str, host: &Host) -> Result<Sandbox, PackError> {
            let (sandbox, warning) = Sandbox::configure(self.sandbox, &self.limits, what)
                .map_err(PackError::invalid_argument)?;
            if let Some(warning) = warning {
                host.log(LogLevel::Warn, &warning);
            }
            Ok(sandbox)
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_per_owner_default_of_0_follows_max_sessions() {
        let limits = |config| {
            let sessions: Sessions<8, 0> = serde_json::from_value(config).unwrap();
            let limits = sessions.limits();
            (limits.max, limits.per_owner)
        };
        assert_eq!(limits(json!({})), (8, 8));
        assert_eq!(limits(json!({"max_sessions": 3})), (3, 3));
        assert_eq!(
            limits(json!({"max_sessions": 3, "max_sessions_per_owner": 1})),
            (3, 1)
        );
        let sessions: Sessions<1000, 100> =
            serde_json::from_value(json!({"max_sessions": 50})).unwrap();
        assert_eq!(sessions.limits().per_owner, 100);
    }

    #[cfg(feature = "children")]
    #[test]
    fn children_see_path_home_and_lang_unless_configured() {
        use pack_process::EnvAllowList;
        let children: Children = serde_json::from_value(json!({})).unwrap();
        assert_eq!(children.env(), EnvAllowList::default());
        let children: Children = serde_json::from_value(json!({"env_allow": ["TZ"]})).unwrap();
        assert_eq!(children.env(), EnvAllowList::new(["TZ"]));
    }
}
