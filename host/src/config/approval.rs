//! `[approval]`: the calls that ask the user first. Each `[approval.<rule>]`
//! is written as a [`RawRule`] (what figment layers) and parsed into a
//! [`Rule`]: which calls it matches (name patterns, the `destructive`
//! annotation, exceptions) and what the user may choose to have remembered.
//!
//! ```toml
//! [approval.remote]
//! calls = ["remote_mcp.execute_tool", "*.session_delete"]
//! remember = "30m"
//!
//! [approval.destructive]
//! destructive = true
//! except = ["exec_py.run", "exec_ts.*"]
//! ```

use std::{collections::BTreeMap, fmt, time::Duration};

use serde::{Deserialize, Serialize};

use crate::{
    error::{ConfigCode, ConfigProblem},
    tool_name::is_identifier,
};

/// The longest an approval may be remembered for (`remember`).
pub const MAX_REMEMBER: Duration = Duration::from_secs(24 * 60 * 60);

/// `[approval]` as written: rule name -> rule.
pub type RawApproval = BTreeMap<String, RawRule>;

/// `[approval.<rule>]` as written.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct RawRule {
    /// `pack.function` patterns, `*` standing for any part of a name.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub calls: Vec<String>,
    /// Also every function whose pack marks it destructive
    /// (`destructiveHint: true`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub destructive: bool,
    /// Patterns of calls this rule leaves alone though it matches them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub except: Vec<String>,
    /// What the user may choose to have remembered: `"no"` (the default),
    /// `"session"`, or a duration (`"90s"`, `"30m"`, `"2h"`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remember: Option<String>,
}

/// The approval policy: its rules in name order; the first that matches a
/// call decides how the user is asked. No rules: nothing is asked.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Approval {
    /// Every `[approval.<rule>]`, parsed.
    pub rules: Vec<Rule>,
}

impl Approval {
    /// The rule that asks about a call of `tool` (`pack.function`), which its
    /// pack marks `destructive` or not; `None`: the call needs no approval.
    pub fn rule_for(&self, tool: &str, destructive: bool) -> Option<&Rule> {
        self.rules
            .iter()
            .find(|rule| rule.matches(tool, destructive))
    }
}

/// One `[approval.<rule>]`.
#[derive(Debug, Clone, PartialEq)]
pub struct Rule {
    /// The `<rule>` of its section, named when a call is refused.
    pub name: String,
    /// The calls it names.
    pub calls: Vec<CallPattern>,
    /// Whether it matches every destructive function too.
    pub destructive: bool,
    /// The calls it leaves alone.
    pub except: Vec<CallPattern>,
    /// What the user may have remembered.
    pub remember: Remember,
}

impl Rule {
    /// Whether a call of `tool`, destructive or not, needs this rule's
    /// approval.
    pub fn matches(&self, tool: &str, destructive: bool) -> bool {
        let named = self.calls.iter().any(|pattern| pattern.matches(tool));
        (named || (self.destructive && destructive))
            && !self.except.iter().any(|pattern| pattern.matches(tool))
    }
}

/// `pack.function` where `*` stands for any run of name characters:
/// `*.session_delete`, `remote_mcp.*`, `exec_*.*`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallPattern {
    pack: String,
    function: String,
}

impl CallPattern {
    /// `text` as a pattern: two parts of letters, digits, `_` and `*`
    /// joined by one `.`.
    pub fn parse(text: &str) -> Option<Self> {
        let (pack, function) = text.split_once('.')?;
        let part = |s: &str| {
            !s.is_empty()
                && s.chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '*')
        };
        (part(pack) && part(function)).then(|| Self {
            pack: pack.to_owned(),
            function: function.to_owned(),
        })
    }

    /// Whether it names `tool` (`pack.function`).
    pub fn matches(&self, tool: &str) -> bool {
        tool.split_once('.').is_some_and(|(pack, function)| {
            glob(&self.pack, pack) && glob(&self.function, function)
        })
    }
}

impl fmt::Display for CallPattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.pack, self.function)
    }
}

/// Whether `text` fits `pattern`, whose `*` stands for any run of
/// characters (none included).
fn glob(pattern: &str, text: &str) -> bool {
    let Some((head, rest)) = pattern.split_once('*') else {
        return pattern == text;
    };
    let Some(text) = text.strip_prefix(head) else {
        return false;
    };
    (0..=text.len()).any(|skip| text.is_char_boundary(skip) && glob(rest, &text[skip..]))
}

/// What the user, when they approve a call, may choose to have remembered,
/// so that the same caller is not asked again about the same function.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Remember {
    /// Nothing: every call asks (`"no"`).
    #[default]
    No,
    /// For the rest of the client's session (`"session"`).
    Session,
    /// For this long, in any session of the same caller (`"30m"`).
    For(Duration),
}

impl Remember {
    /// `"no"`, `"session"`, or a duration of 1 to 24 hours' worth of `s`,
    /// `m` or `h` (`"90s"`, `"30m"`, `"2h"`).
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "no" => return Some(Self::No),
            "session" => return Some(Self::Session),
            _ => {}
        }
        let unit = match text.chars().last()? {
            's' => 1,
            'm' => 60,
            'h' => 60 * 60,
            _ => return None,
        };
        let count: u64 = text[..text.len() - 1].parse().ok()?;
        let duration = Duration::from_secs(count.checked_mul(unit)?);
        (count > 0 && duration <= MAX_REMEMBER).then_some(Self::For(duration))
    }
}

/// Parse every rule of `raw`, or every problem found.
pub(super) fn parse(raw: RawApproval) -> Result<Approval, Vec<ConfigProblem>> {
    let mut problems = Vec::new();
    let mut rules = Vec::new();
    for (name, rule) in raw {
        let key = format!("approval.{name}");
        let matches_none = rule.calls.is_empty() && !rule.destructive;
        if !is_identifier(&name) {
            problems.push(ConfigProblem::new(
                ConfigCode::Name,
                format!("`[{key}]`: a rule name must be an identifier (letters, digits, `_`)"),
            ));
        }
        let mut patterns = |field: &str, texts: Vec<String>| {
            let mut parsed = Vec::new();
            for text in texts {
                match CallPattern::parse(&text) {
                    Some(pattern) => parsed.push(pattern),
                    None => problems.push(
                        ConfigProblem::new(
                            ConfigCode::Value,
                            format!("`{key}.{field}`: \"{text}\" is not a `pack.function` pattern"),
                        )
                        .with_fix(
                            "write names like \"remote_mcp.execute_tool\", \"*.session_delete\" \
                             or \"exec_ts.*\" (`*` stands for any part of a name)",
                        ),
                    ),
                }
            }
            parsed
        };
        let calls = patterns("calls", rule.calls);
        let except = patterns("except", rule.except);
        let remember = rule.remember.as_deref().map_or(Some(Remember::No), |text| {
            let parsed = Remember::parse(text);
            if parsed.is_none() {
                problems.push(
                    ConfigProblem::new(
                        ConfigCode::Value,
                        format!("`{key}.remember` = \"{text}\" is not something to remember"),
                    )
                    .with_fix(
                        "write \"no\" (ask every time), \"session\", or a duration of at most \
                         24 hours such as \"90s\", \"30m\" or \"2h\"",
                    ),
                );
            }
            parsed
        });
        if matches_none {
            problems.push(
                ConfigProblem::new(ConfigCode::Value, format!("`[{key}]` matches no call"))
                    .with_fix(
                        "give it `calls = [\"pack.function\", ...]` or `destructive = true`, or \
                         remove it",
                    ),
            );
        }
        if let Some(remember) = remember {
            rules.push(Rule {
                name,
                calls,
                destructive: rule.destructive,
                except,
                remember,
            });
        }
    }
    if problems.is_empty() {
        Ok(Approval { rules })
    } else {
        Err(problems)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pattern(text: &str) -> CallPattern {
        CallPattern::parse(text).unwrap_or_else(|| panic!("{text} should parse"))
    }

    #[test]
    fn patterns_match_names_part_by_part() {
        let cases = [
            ("remote_mcp.execute_tool", "remote_mcp.execute_tool", true),
            ("remote_mcp.execute_tool", "remote_mcp.list_tools", false),
            ("*.session_delete", "exec_ts.session_delete", true),
            ("*.session_delete", "jupyter.session_delete", true),
            ("*.session_delete", "exec_ts.session_delete_all", false),
            ("exec_ts.*", "exec_ts.cell_delete", true),
            ("exec_ts.*", "exec_py.run", false),
            ("exec_*.*", "exec_py.run", true),
            ("*_delete.*", "cell_delete.x", true),
            ("*.*", "proj.list", true),
            ("*.cell_*", "exec_ts.cell_update", true),
            ("*.cell_*", "exec_ts.session_create", false),
            // `*` never reaches across the dot.
            ("exec*", "exec_ts.cell_delete", false),
        ];
        for (text, tool, expected) in cases {
            let matched = CallPattern::parse(text).is_some_and(|p| p.matches(tool));
            assert_eq!(matched, expected, "{text} on {tool}");
        }
    }

    #[test]
    fn a_pattern_is_two_parts_of_name_characters() {
        for bad in ["*", "execute_tool", "a.b.c", ".x", "x.", "a b.c", "a.b?"] {
            assert_eq!(CallPattern::parse(bad), None, "{bad}");
        }
        assert_eq!(pattern("exec_*.*").to_string(), "exec_*.*");
    }

    #[test]
    fn remember_is_no_session_or_a_bounded_duration() {
        assert_eq!(Remember::parse("no"), Some(Remember::No));
        assert_eq!(Remember::parse("session"), Some(Remember::Session));
        let secs = |s| Some(Remember::For(Duration::from_secs(s)));
        assert_eq!(Remember::parse("90s"), secs(90));
        assert_eq!(Remember::parse("30m"), secs(1800));
        assert_eq!(Remember::parse("24h"), secs(86_400));
        for bad in ["", "0m", "25h", "1d", "m", "-5m", "5 m", "forever", "1.5h"] {
            assert_eq!(Remember::parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn the_first_matching_rule_in_name_order_decides_and_except_wins() {
        let raw = RawApproval::from([
            (
                "b_destructive".to_owned(),
                RawRule {
                    destructive: true,
                    except: vec!["exec_py.run".into()],
                    ..RawRule::default()
                },
            ),
            (
                "a_remote".to_owned(),
                RawRule {
                    calls: vec!["remote_mcp.execute_tool".into()],
                    remember: Some("session".into()),
                    ..RawRule::default()
                },
            ),
        ]);
        let approval = parse(raw).unwrap();
        let rule = |tool, destructive| {
            approval
                .rule_for(tool, destructive)
                .map(|rule| rule.name.as_str())
        };
        assert_eq!(rule("remote_mcp.execute_tool", true), Some("a_remote"));
        assert_eq!(rule("exec_ts.session_delete", true), Some("b_destructive"));
        assert_eq!(rule("exec_ts.session_delete", false), None);
        assert_eq!(rule("exec_py.run", true), None);
        assert_eq!(rule("proj.list", false), None);
        assert_eq!(approval.rules[0].remember, Remember::Session);
        assert_eq!(approval.rules[1].remember, Remember::No);
    }

    #[test]
    fn every_problem_names_its_key_and_the_fix() {
        let raw = RawApproval::from([
            (
                "bad-name".to_owned(),
                RawRule {
                    calls: vec!["execute_tool".into()],
                    remember: Some("forever".into()),
                    ..RawRule::default()
                },
            ),
            ("empty".to_owned(), RawRule::default()),
        ]);
        let problems = parse(raw).unwrap_err();
        let shown: Vec<String> = problems.iter().map(ToString::to_string).collect();
        assert_eq!(shown.len(), 4, "{shown:#?}");
        assert!(shown[0].contains("`[approval.bad-name]`: a rule name must be an identifier"));
        assert!(shown[1].contains("`approval.bad-name.calls`: \"execute_tool\" is not"));
        assert!(shown[1].contains("\"*.session_delete\""));
        assert!(shown[2].contains("`approval.bad-name.remember` = \"forever\""));
        assert!(shown[2].contains("\"30m\""));
        assert!(shown[3].contains("`[approval.empty]` matches no call; give it `calls"));
        assert!(
            problems
                .iter()
                .all(|p| p.fix().is_some() || p.code() == ConfigCode::Name)
        );
    }
}
