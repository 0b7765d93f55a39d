//! A stdio server's stderr: forwarded to the log, its last lines kept for
//! the error that says why it would not start or died.

use std::{
    collections::VecDeque,
    sync::{Arc, Mutex},
};

use tokio::io::{AsyncBufReadExt as _, BufReader};

use crate::settings::{Level, Log};

/// The last lines a stdio server wrote to stderr, its secrets already
/// replaced: what an error about a server that would not start or died
/// says of why (the server's own reason: a missing setting, a crash).
#[derive(Default)]
pub(crate) struct StderrTail(Mutex<VecDeque<String>>);

impl StderrTail {
    const LINES: usize = 5;
    const CHARS: usize = 600;

    pub(crate) fn push(&self, line: String) {
        let mut lines = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if lines.len() == Self::LINES {
            lines.pop_front();
        }
        lines.push_back(line);
    }

    /// `"; its stderr ends: …"` (lines joined by ` | `, at most
    /// [`Self::CHARS`] characters, the last ones), or nothing.
    pub(crate) fn said(&self) -> String {
        let lines = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let joined = lines
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>()
            .join(" | ");
        let count = joined.chars().count();
        match count {
            0 => String::new(),
            _ if count <= Self::CHARS => format!("; its stderr ends: {joined}"),
            _ => {
                let last: String = joined.chars().skip(count - Self::CHARS).collect();
                format!("; its stderr ends: …{last}")
            }
        }
    }
}

/// `line` with each of `secrets` (longest first) replaced by `***`.
fn scrub(line: &str, secrets: &[String]) -> String {
    secrets.iter().fold(line.to_owned(), |line, secret| {
        line.replace(secret.as_str(), "***")
    })
}

/// A stdio server's stderr, line by line, into the log and its `tail`,
/// `secrets` replaced (before lines are capped, so no part of one is left;
/// capped so a server cannot make the host hold a huge line). Returns the
/// sandbox's reason when its first line is the helper refusing to start
/// the server.
pub(crate) async fn forward_stderr(
    key: String,
    stderr: tokio::process::ChildStderr,
    log: Log,
    secrets: Vec<String>,
    tail: Arc<StderrTail>,
) -> Option<String> {
    const MAX_LINE: usize = 2000;
    let mut lines = BufReader::new(stderr).lines();
    let mut refusal = None;
    let mut first = true;
    while let Ok(Some(line)) = lines.next_line().await {
        let line: String = scrub(&line, &secrets).chars().take(MAX_LINE).collect();
        if first && let Some(why) = line.strip_prefix(pack_sandbox::SETUP_FAILED_PREFIX) {
            refusal = Some(why.to_owned());
        }
        first = false;
        log(Level::Debug, &format!("`{key}` stderr: {line}"));
        tail.push(line);
    }
    refusal
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::{Confinement, Endpoint};

    #[test]
    fn stderr_keeps_its_last_lines_capped_and_without_secrets() {
        let endpoint = Endpoint::Stdio {
            command: "server".to_owned(),
            args: Vec::new(),
            env: BTreeMap::from([
                ("SHORT".to_owned(), "abc".to_owned()),
                ("LONG".to_owned(), "abcdef".to_owned()),
                ("EMPTY".to_owned(), String::new()),
            ]),
            confinement: Confinement::default(),
        };
        let secrets = endpoint.secrets();
        assert_eq!(scrub("key abcdef, abc", &secrets), "key ***, ***");
        let tail = StderrTail::default();
        assert_eq!(tail.said(), "");
        for n in 0..7 {
            tail.push(format!("line {n}"));
        }
        assert_eq!(
            tail.said(),
            "; its stderr ends: line 2 | line 3 | line 4 | line 5 | line 6"
        );
        tail.push("x".repeat(2 * StderrTail::CHARS));
        let said = tail.said();
        assert!(said.ends_with(&"x".repeat(StderrTail::CHARS)), "{said}");
        assert!(said.len() < 3 * StderrTail::CHARS, "{said}");
    }
}
