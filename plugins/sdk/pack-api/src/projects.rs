//! Who may see a `[projects]` entry: one rule for the host (the code-mode
//! catalog) and every pack (`proj`).
//!
//! Projects are global by design: they are the host's directories, named in
//! its config, not state a caller creates. An entry is either a path, which
//! every organisation sees, or a table that names the organisations that may
//! see it:
//!
//! ```toml
//! [projects]
//! packhost = "."                                        # everyone
//! billing = { path = "~/src/billing", orgs = ["acme"] } # only organisation `acme`
//! ```
//!
//! A caller outside `orgs` gets what an unknown project gets. `orgs = []`
//! hides the project from everyone. The host applies the rule: a pack's
//! [`Host::projects`](crate::Host::projects) holds the projects every
//! organisation sees, and a call's [`Catalog`](crate::Catalog) those its
//! caller sees.

use std::{fmt, path::PathBuf};

use serde::{
    Deserialize, Deserializer, Serialize, Serializer,
    de::{self, MapAccess, Visitor, value::MapAccessDeserializer},
};

/// One `[projects]` entry: where it is, and who may see it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Project {
    /// Its root directory (absolute once the host has resolved the config).
    pub path: PathBuf,
    /// The organisations that may see it; `None`: every organisation.
    pub orgs: Option<Vec<String>>,
}

impl Project {
    /// A project every organisation sees.
    pub fn everyone(path: impl Into<PathBuf>) -> Self {
        Self {
            path: path.into(),
            orgs: None,
        }
    }

    /// Whether a caller of organisation `org` may see (and use) it.
    pub fn visible_to(&self, org: &str) -> bool {
        self.orgs
            .as_ref()
            .is_none_or(|orgs| orgs.iter().any(|o| o == org))
    }
}

/// The table form, `{ path = "...", orgs = [...] }`.
#[derive(Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
struct Table {
    path: PathBuf,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    orgs: Option<Vec<String>>,
}

/// A path alone is written as a string, so configs read back as written.
impl Serialize for Project {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match &self.orgs {
            None => self.path.serialize(serializer),
            Some(orgs) => Table {
                path: self.path.clone(),
                orgs: Some(orgs.clone()),
            }
            .serialize(serializer),
        }
    }
}

/// `"path"` or `{ path = "...", orgs = ["..."] }`; an unknown key in the
/// table is refused by name.
impl<'de> Deserialize<'de> for Project {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct ProjectVisitor;

        impl<'de> Visitor<'de> for ProjectVisitor {
            type Value = Project;

            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str(
                    "a path, or a table `{ path = \"...\", orgs = [\"...\"] }` naming the \
                     organisations that may see the project",
                )
            }

            fn visit_str<E: de::Error>(self, path: &str) -> Result<Project, E> {
                Ok(Project::everyone(path))
            }

            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Project, A::Error> {
                let table = Table::deserialize(MapAccessDeserializer::new(map))?;
                Ok(Project {
                    path: table.path,
                    orgs: table.orgs,
                })
            }
        }

        deserializer.deserialize_any(ProjectVisitor)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_path_is_seen_by_everyone_and_a_table_by_its_orgs() {
        let open: Project = serde_json::from_value(json!("/srv/a")).unwrap();
        assert_eq!(open, Project::everyone("/srv/a"));
        assert!(open.visible_to("acme") && open.visible_to("evil"));
        let closed: Project =
            serde_json::from_value(json!({"path": "/srv/b", "orgs": ["acme"]})).unwrap();
        assert!(closed.visible_to("acme"));
        assert!(!closed.visible_to("evil") && !closed.visible_to(""));
        let nobody: Project =
            serde_json::from_value(json!({"path": "/srv/c", "orgs": []})).unwrap();
        assert!(!nobody.visible_to("acme"));
        // A table without `orgs` is a path.
        let table: Project = serde_json::from_value(json!({"path": "/srv/d"})).unwrap();
        assert_eq!(table, Project::everyone("/srv/d"));
    }

    #[test]
    fn it_reads_back_as_written() {
        for value in [json!("/srv/a"), json!({"path": "/srv/b", "orgs": ["acme"]})] {
            let project: Project = serde_json::from_value(value.clone()).unwrap();
            assert_eq!(serde_json::to_value(&project).unwrap(), value);
        }
    }

    #[test]
    fn unknown_keys_and_other_types_are_refused_with_what_would_be_right() {
        let err = serde_json::from_value::<Project>(json!({"path": "/a", "org": ["x"]}))
            .unwrap_err()
            .to_string();
        assert!(err.contains("unknown field `org`"), "{err}");
        let err = serde_json::from_value::<Project>(json!(3))
            .unwrap_err()
            .to_string();
        assert!(err.contains("orgs"), "{err}");
    }
}
