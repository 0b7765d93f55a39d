//! Which events to read: one organisation's (what an admin over MCP may
//! ask), the host-level ones, or all (the host's CLI); then by user, tool,
//! kind and time, the most recent `limit`. Built from text by
//! [`Filter::from_text`], the one place that checks what the CLI and the
//! MCP tool were given.

use std::time::SystemTime;

use crate::{event::Kind, time};

/// Events read when no limit is given.
pub const DEFAULT_LIMIT: u32 = 100;
/// The most events one read returns.
pub const MAX_LIMIT: u32 = 10_000;

/// Whose events.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scope {
    /// One organisation's.
    Org(String),
    /// The host-level ones (sign-ins refused before an organisation was
    /// known).
    Host,
    /// Every organisation's and the host-level ones.
    All,
}

/// A checked filter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Filter {
    /// Whose events.
    pub scope: Scope,
    /// Only this user's.
    pub user: Option<String>,
    /// Only this tool's (`pack.function`), or a pack's (`pack.*`).
    pub tool: Option<String>,
    /// Only this kind.
    pub kind: Option<Kind>,
    /// At or after this time (as events keep it).
    pub since: Option<String>,
    /// Before this time (as events keep it).
    pub until: Option<String>,
    /// The most recent this many.
    pub limit: u32,
}

/// A filter as given, before it is checked.
#[derive(Debug, Clone, Default)]
pub struct FilterText<'a> {
    /// A user id.
    pub user: Option<&'a str>,
    /// `pack.function` or `pack.*`.
    pub tool: Option<&'a str>,
    /// An event kind's name.
    pub kind: Option<&'a str>,
    /// RFC 3339 or a span back from now.
    pub since: Option<&'a str>,
    /// RFC 3339 or a span back from now.
    pub until: Option<&'a str>,
    /// How many.
    pub limit: Option<u64>,
}

/// How the filter's fields are named in errors: `--since` on the command
/// line, `since` as a tool's argument.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Naming {
    /// Command-line flags.
    Flags,
    /// A tool's arguments.
    Arguments,
}

impl Naming {
    fn name(self, field: &str) -> String {
        match self {
            Naming::Flags => format!("`--{field}`"),
            Naming::Arguments => format!("`{field}`"),
        }
    }
}

impl Filter {
    /// Every event of `scope`, the most recent [`DEFAULT_LIMIT`].
    pub fn new(scope: Scope) -> Self {
        Self {
            scope,
            user: None,
            tool: None,
            kind: None,
            since: None,
            until: None,
            limit: DEFAULT_LIMIT,
        }
    }

    /// The filter `text` describes within `scope`, times relative to
    /// `now`; or what is wrong with it, naming the field as `naming` says.
    pub fn from_text(
        scope: Scope,
        text: &FilterText<'_>,
        now: SystemTime,
        naming: Naming,
    ) -> Result<Self, String> {
        let field = |name: &str, why: String| format!("{}: {why}", naming.name(name));
        let non_empty = |name: &str, value: Option<&str>| match value.map(str::trim) {
            Some("") => Err(field(name, "is empty; leave it out to match any".into())),
            other => Ok(other.map(str::to_owned)),
        };
        let user = non_empty("user", text.user)?;
        let tool = non_empty("tool", text.tool)?;
        // `*` only as a whole function name: `pack.*`.
        let wild = |tool: &str| match tool.strip_suffix(".*") {
            Some(pack) => pack.contains('*'),
            None => tool.contains('*'),
        };
        if let Some(tool) = &tool
            && wild(tool)
        {
            return Err(field(
                "tool",
                format!("`{tool}`: `*` only ends a pack's name (`proj.*`)"),
            ));
        }
        let kind = text
            .kind
            .map(|kind| Kind::parse(kind.trim()).map_err(|why| field("kind", why)))
            .transpose()?;
        let instant = |name: &str, value: Option<&str>| {
            value
                .map(|value| time::instant(value, now).map_err(|why| field(name, why)))
                .transpose()
        };
        let since = instant("since", text.since)?;
        let until = instant("until", text.until)?;
        if let (Some(since), Some(until)) = (&since, &until)
            && since >= until
        {
            return Err(format!(
                "{} ({since}) is not before {} ({until}): nothing could match",
                naming.name("since"),
                naming.name("until"),
            ));
        }
        let limit = match text.limit {
            None => DEFAULT_LIMIT,
            Some(limit) if (1..=u64::from(MAX_LIMIT)).contains(&limit) => limit as u32,
            Some(limit) => {
                return Err(field(
                    "limit",
                    format!("{limit} is out of range; give 1 to {MAX_LIMIT}"),
                ));
            }
        };
        Ok(Self {
            scope,
            user,
            tool,
            kind,
            since,
            until,
            limit,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn now() -> SystemTime {
        chrono::DateTime::parse_from_rfc3339("2026-11-29T14:00:00Z")
            .unwrap()
            .into()
    }

    fn build(text: FilterText<'_>, naming: Naming) -> Result<Filter, String> {
        Filter::from_text(Scope::Org("acme".into()), &text, now(), naming)
    }

    #[test]
    fn a_filter_is_read_from_its_text() {
        let filter = build(
            FilterText {
                user: Some("ada"),
                tool: Some("proj.*"),
                kind: Some("call"),
                since: Some("1h"),
                until: Some("2026-11-29T13:30:00Z"),
                limit: Some(5),
            },
            Naming::Flags,
        )
        .unwrap();
        assert_eq!(
            filter,
            Filter {
                scope: Scope::Org("acme".into()),
                user: Some("ada".into()),
                tool: Some("proj.*".into()),
                kind: Some(Kind::Call),
                since: Some("2026-11-29T13:00:00.000000Z".into()),
                until: Some("2026-11-29T13:30:00.000000Z".into()),
                limit: 5,
            }
        );
        let all = build(FilterText::default(), Naming::Flags).unwrap();
        assert_eq!(all, Filter::new(Scope::Org("acme".into())));
    }

    #[test]
    fn a_wrong_filter_names_its_field_and_what_would_be_right() {
        let cases: [(FilterText<'_>, &str, &str); 7] = [
            (
                FilterText {
                    since: Some("yesterday"),
                    ..FilterText::default()
                },
                "`--since`: `yesterday` is not a time",
                "`since`: `yesterday` is not a time",
            ),
            (
                FilterText {
                    until: Some("3y"),
                    ..FilterText::default()
                },
                "`--until`: `3y`: `y` is no unit of time",
                "`until`: `3y`",
            ),
            (
                FilterText {
                    since: Some("1h"),
                    until: Some("2h"),
                    ..FilterText::default()
                },
                "`--since` (2026-11-29T13:00:00.000000Z) is not before `--until` (2026-11-29T12:00:00.000000Z)",
                "`since` (2026-11-29T13:00:00.000000Z) is not before `until`",
            ),
            (
                FilterText {
                    limit: Some(0),
                    ..FilterText::default()
                },
                "`--limit`: 0 is out of range; give 1 to 10000",
                "`limit`: 0 is out of range",
            ),
            (
                FilterText {
                    kind: Some("calls"),
                    ..FilterText::default()
                },
                "`--kind`: `calls` is no event kind; use one of call, approval, sign_in_refused, credential",
                "`kind`: `calls` is no event kind",
            ),
            (
                FilterText {
                    tool: Some("*.run"),
                    ..FilterText::default()
                },
                "`--tool`: `*.run`: `*` only ends a pack's name (`proj.*`)",
                "`tool`: `*.run`",
            ),
            (
                FilterText {
                    user: Some(" "),
                    ..FilterText::default()
                },
                "`--user`: is empty; leave it out to match any",
                "`user`: is empty",
            ),
        ];
        for (text, as_flags, as_arguments) in cases {
            let flags = build(text.clone(), Naming::Flags).unwrap_err();
            assert!(flags.starts_with(as_flags), "{flags}");
            let arguments = build(text, Naming::Arguments).unwrap_err();
            assert!(arguments.starts_with(as_arguments), "{arguments}");
        }
    }
}
