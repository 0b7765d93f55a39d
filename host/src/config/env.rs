//! The `PACKHOST_*` layer over the file: `PACKHOST_SERVER__TIMEOUT_MS=5000`
//! sets `server.timeout_ms`. A pack's variables configure it only where the
//! file declares `[packs.<name>]`: set for one config (`./dev run` sets
//! exec_ts's), they must not add the pack to every other, so they are set
//! aside with a warning that says how to make them apply.

use std::{collections::BTreeSet, path::Path};

use figment::{
    Figment,
    providers::{Env, Serialized},
};

use super::RawConfig;
use pack_api::wording::{invalid_type, wrong_type};

use crate::error::{ConfigCode, ConfigError, ConfigProblem};

/// The defaults, then what the file set (`from_file`, already checked by
/// `toml`), then the variables, read into the raw config.
pub(super) fn overlay(
    from_file: Option<RawConfig>,
    file: Option<&Path>,
) -> Result<RawConfig, ConfigError> {
    let mut layers = Figment::from(Serialized::defaults(RawConfig::default()));
    let mut declared = BTreeSet::new();
    if let Some(from_file) = from_file {
        declared = from_file.packs.keys().cloned().collect();
        layers = layers.merge(Serialized::defaults(from_file));
    }
    let sections = || {
        Env::prefixed("PACKHOST_")
            // Sections only: `PACKHOST_SERVER__TIMEOUT_MS`. Single-word
            // variables such as `PACKHOST_LOG` are the CLI's own.
            .filter(|key| key.as_str().contains("__"))
    };
    for (key, _) in sections().lowercase(false).iter() {
        if let Some(pack) = undeclared_pack(key.as_str(), &declared) {
            let file = file.map_or("none was found".to_owned(), |f| {
                format!("`{}`", f.display())
            });
            tracing::warn!(
                "`PACKHOST_{key}` is ignored: it configures pack `{pack}`, which the config \
                 file ({file}) does not load; add `[packs.{pack}]` to it to load the pack, \
                 and the variable applies"
            );
        }
    }
    layers
        .merge(
            sections()
                .filter(move |key| undeclared_pack(key.as_str(), &declared).is_none())
                .split("__"),
        )
        .extract()
        .map_err(|e| {
            // Only the environment can fail here: the file was checked before.
            ConfigError::new(
                e.into_iter()
                    .map(|e| {
                        let key = e.path.join(".");
                        let kind = e.kind.to_string();
                        let what = match invalid_type(&kind) {
                            Some((got, expected)) => wrong_type(&key, got, expected),
                            None => format!("`{key}`: {kind}"),
                        };
                        ConfigProblem::new(
                            ConfigCode::Environment,
                            format!("PACKHOST_* environment: {what}"),
                        )
                    })
                    .collect(),
            )
        })
}

/// The pack a section variable (`PACKS__EXEC_TS__CONFIG__TYPESCRIPT`, its
/// prefix stripped) configures when the file does not declare it.
fn undeclared_pack(key: &str, declared: &BTreeSet<String>) -> Option<String> {
    let mut parts = key.split("__");
    let section = parts.next()?;
    // As figment names it: lowercased.
    let pack = parts.next()?.to_ascii_lowercase();
    (section.eq_ignore_ascii_case("packs") && !declared.contains(&pack)).then_some(pack)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_variable_of_an_undeclared_pack_is_set_aside() {
        let declared = BTreeSet::from(["exec_ts".to_owned()]);
        let undeclared = |key| undeclared_pack(key, &declared);
        assert_eq!(undeclared("PACKS__EXEC_TS__CONFIG__TYPESCRIPT"), None);
        assert_eq!(undeclared("packs__exec_ts__timeout_ms"), None);
        assert_eq!(
            undeclared("PACKS__JUPYTER__CONFIG__PYTHON").as_deref(),
            Some("jupyter")
        );
        assert_eq!(undeclared("PACKS__JUPYTER").as_deref(), Some("jupyter"));
        assert_eq!(undeclared("SERVER__TIMEOUT_MS"), None);
        assert_eq!(undeclared("ALIASES__PL"), None);
    }
}
