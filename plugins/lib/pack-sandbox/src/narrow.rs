//! A fork server's child narrowed to its own call. The fork server runs
//! confined by the helper and forks a child per call; each child must reach
//! only its own call's files and none of its siblings. The pack asks here
//! for the child's [`Narrowing`] and sends it along with the call; the
//! child, before it runs any code, applies it to itself with
//! [`Narrowing::apply`] (a nested Landlock domain), and no rule of its own.

use serde::{Deserialize, Serialize};

use crate::{Mode, Policy, Sandbox, rules};

/// What a forked child narrows itself to: the files of its call's policy.
/// Their names are resolved by the child itself, so `/proc/self` is its own.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Narrowing {
    read: Vec<std::path::PathBuf>,
    write: Vec<std::path::PathBuf>,
}

impl Sandbox {
    /// The narrowing of a child forked by a fork server this sandbox
    /// confines, to `policy`'s files (its network and bounds stay the fork
    /// server's); `None` unconfined, where a child has nothing to narrow.
    /// A policy with opened folders is refused: they cannot be sent by name.
    pub fn narrowing(&self, policy: &Policy) -> Result<Option<Narrowing>, String> {
        if self.mode == Mode::Off {
            return Ok(None);
        }
        if !policy.opened.is_empty() {
            return Err("a forked child cannot be narrowed to opened folders".to_owned());
        }
        Ok(Some(Narrowing {
            read: policy.read.clone(),
            write: policy.write.clone(),
        }))
    }
}

impl Narrowing {
    /// In the forked child (single-threaded), before any of its call's
    /// code: from here on it reaches only the narrowing's files, and
    /// signals and abstract sockets of no process outside its own domain.
    pub fn apply(&self) -> Result<(), String> {
        let created = rules::ruleset(false)?;
        let created = rules::grant_paths(created, &self.read, &self.write)?;
        rules::restrict_self(created)
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    #[test]
    fn a_narrowing_is_the_policys_files_and_only_when_confined() {
        let policy = Policy::new([], Path::new("/tmp/call"));
        assert_eq!(Sandbox::new(Mode::Off).narrowing(&policy), Ok(None));
        let narrowing = Sandbox::new(Mode::On).narrowing(&policy).unwrap().unwrap();
        assert_eq!(narrowing.read, policy.read);
        assert_eq!(narrowing.write, policy.write);
        let dir = std::fs::File::open("/tmp").unwrap();
        let opened = policy.read_opened(dir);
        let refused = Sandbox::new(Mode::On).narrowing(&opened).unwrap_err();
        assert!(refused.contains("opened folders"), "{refused}");
    }
}
