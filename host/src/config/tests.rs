//! `load` on real files. No test sets `PACKHOST_*` variables: they are
//! process-wide and would leak into the other tests running in parallel.

use mcp_downstream::{Confinement, Endpoint, Mode};

use super::{server::default_pack_dirs, *};

/// The library of pack `name`, which must be one.
#[track_caller]
fn library<'a>(config: &'a Config, name: &str) -> &'a Library {
    config.packs[name].library().expect("a library pack")
}

/// The stdio server of pack `name`, which must be one: program and
/// arguments in one list, as the section writes them, and its confinement.
#[track_caller]
fn stdio<'a>(config: &'a Config, name: &str) -> (Vec<String>, &'a Confinement) {
    let endpoint = config.packs[name].server().expect("a server pack");
    let Endpoint::Stdio {
        command,
        args,
        confinement,
        ..
    } = endpoint
    else {
        panic!("not a stdio server: {endpoint:?}");
    };
    let words = std::iter::once(command.clone()).chain(args.clone());
    (words.collect(), confinement)
}

/// `text` written as `packs.toml` in a fresh directory.
fn file(text: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("packs.toml");
    std::fs::write(&path, text).unwrap();
    (dir, path)
}

fn load_text(text: &str) -> Result<Loaded, ConfigError> {
    let (_dir, path) = file(text);
    load(Some(&path))
}

/// The error for `text`, which must name the file first; returned without
/// that prefix.
#[track_caller]
fn refused(text: &str, parts: &[&str]) -> String {
    let (_dir, path) = file(text);
    let message = load(Some(&path))
        .expect_err("the config should be refused")
        .to_string();
    let prefix = format!("{}: ", path.display());
    let Some(message) = message.strip_prefix(&prefix).map(str::to_owned) else {
        panic!("error does not start with {prefix:?}:\n{message}");
    };
    for part in parts {
        assert!(message.contains(part), "error lacks {part:?}:\n{message}");
    }
    message
}

#[test]
fn a_value_of_the_wrong_type_names_file_line_column_and_key() {
    let (_dir, path) = file("[server]\ntimeout_ms = \"soon\"\n");
    let message = load(Some(&path)).unwrap_err().to_string();
    let shown = path.display().to_string();
    assert!(
        message.starts_with(&format!(
            "{shown}: line 2: `server.timeout_ms` must be a whole number without quotes or \
             units, e.g. `timeout_ms = 60000`, not the string \"soon\"\n"
        )),
        "{message}"
    );
    assert!(message.contains("2 | timeout_ms = \"soon\""), "{message}");
    assert!(!message.contains("invalid type"), "{message}");
}

#[test]
fn unknown_keys_and_sections_are_named_with_their_line() {
    refused(
        "[server]\ntimeout = 5\n",
        &[
            "line 2, column 1: unknown field",
            "unknown field `timeout`",
            "`timeout_ms`",
        ],
    );
    refused(
        "[identity]\nuser = \"a\"\n\n[bogus]\n",
        &["line 4, column 2: unknown field `bogus`", "`projects`"],
    );
    refused(
        "[packs.proj]\npth = \"x.so\"\n",
        &["line 2", "unknown field `pth`", "`path`"],
    );
}

#[test]
fn a_toml_syntax_error_names_the_line() {
    refused("[server\n", &["line 1"]);
    refused(
        "[aliases]\nx = \"a.b\"\nx = \"c.d\"\n",
        &["line 3", "duplicate key"],
    );
}

#[test]
fn an_alias_must_be_an_identifier_pointing_at_pack_dot_function() {
    let message = refused("[aliases]\nws = \"nodot\"\n", &[]);
    assert_eq!(
        message,
        "`aliases.ws` = \"nodot\": the target must be `pack.function`"
    );
    refused("[aliases]\nws = \"a.b.c\"\n", &["`aliases.ws` = \"a.b.c\""]);
    refused("[aliases]\nws = \".list\"\n", &["`aliases.ws` = \".list\""]);
    refused(
        "[aliases]\n\"my-alias\" = \"proj.list\"\n",
        &["`aliases.my-alias`: an alias must be an identifier"],
    );
    let loaded = load_text("[aliases]\nws = \"proj.list\"\n").unwrap();
    assert_eq!(loaded.config.aliases["ws"], "proj.list");
}

#[test]
fn an_alias_is_placed_at_its_line_in_either_table_form() {
    for text in [
        "[aliases]\n\nws = \"proj.list\"\n",
        "# aliases\n\naliases = { ws = \"proj.list\" }\n",
    ] {
        let (_dir, path) = file(text);
        let loaded = load(Some(&path)).unwrap();
        assert_eq!(loaded.alias_place("ws"), format!("{}:3", path.display()));
        assert_eq!(loaded.alias_place("other"), "PACKHOST_* environment");
    }
}

#[test]
fn a_pack_name_must_be_an_identifier_and_the_fix_is_suggested() {
    let message = refused("[packs.exec-py]\n", &[]);
    assert_eq!(
        message,
        "`packs.exec-py`: a pack name must be an identifier (letters, digits, `_`), \
         it is how calls name it: `exec_py.function()`"
    );
    refused("[packs.\"1st\"]\n", &["`packs.1st`"]);
}

#[test]
fn a_snippet_name_must_be_an_identifier() {
    refused(
        "[snippets.\"find-it\"]\nbody = \"proj.list()\"\n",
        &["`snippets.find-it`: a snippet name must be an identifier"],
    );
}

#[test]
fn a_zero_server_timeout_is_refused() {
    let message = refused("[server]\ntimeout_ms = 0\n", &[]);
    assert_eq!(
        message,
        "`server.timeout_ms` must be at least 1 (milliseconds)"
    );
    refused(
        "[packs.p]\ntimeout_ms = 0\n",
        &["`packs.p.timeout_ms` must be at least 1"],
    );
}

#[test]
fn the_code_pack_must_be_an_identifier() {
    refused(
        "[server]\ncode_pack = \"exec-py\"\n",
        &["`server.code_pack` = \"exec-py\"", "`exec_py`"],
    );
}

#[test]
fn toml_1_1_syntax_is_accepted() {
    // figment's own TOML parser refuses these; the file must not reach it.
    let loaded = load_text(
        "[packs.p]\nconfig = {\n  greeting = \"yo\",\n}\n[identity]\nuser = \"\\e[1m\"\n",
    )
    .unwrap();
    assert_eq!(library(&loaded.config, "p").config["greeting"], "yo");
    assert_eq!(loaded.config.identity.user, "\u{1b}[1m");
}

#[test]
fn all_rule_problems_are_reported_together() {
    let message = refused(
        "[server]\ntimeout_ms = 0\n[packs.a-b]\n[aliases]\nx = \"y\"\n",
        &[],
    );
    let lines: Vec<&str> = message.lines().collect();
    assert_eq!(lines.len(), 3, "{message}");
    assert!(lines[0].starts_with("`packs.a-b`"), "{message}");
    assert!(lines[1].starts_with("`aliases.x`"), "{message}");
    assert_eq!(
        lines[2],
        "`server.timeout_ms` must be at least 1 (milliseconds)"
    );
}

#[test]
fn a_missing_file_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("nope.toml");
    let message = load(Some(&path)).unwrap_err().to_string();
    assert_eq!(
        message,
        format!(
            "config file `{}` does not exist; pass a TOML file to --config",
            path.display()
        )
    );
}

#[test]
fn a_file_without_sections_gives_the_defaults() {
    for text in ["", "# only a comment\n"] {
        let (_dir, path) = file(text);
        let loaded = load(Some(&path)).unwrap();
        assert_eq!(loaded.file, Some(path.clone()));
        let config = loaded.config;
        assert_eq!(config.server.timeout_ms, 60_000);
        assert_eq!(config.server.code_pack, "exec_py");
        assert_eq!(config.server.pack_dirs, default_pack_dirs());
        assert_eq!(config.identity, Identity::default());
        assert!(config.packs.is_empty());
        assert!(config.aliases.is_empty());
        assert!(config.snippets.is_empty());
        assert!(config.projects.is_empty());
    }
}

#[test]
fn an_empty_pack_section_is_enabled_with_an_empty_config() {
    let loaded =
        load_text("[packs.proj]\n\n[packs.off]\nenabled = false\ntimeout_ms = 5\n").unwrap();
    let proj = &loaded.config.packs["proj"];
    assert_eq!(library(&loaded.config, "proj").path, None);
    assert!(proj.enabled);
    assert_eq!(proj.timeout_ms, None);
    assert_eq!(
        library(&loaded.config, "proj").config,
        serde_json::json!({})
    );
    let off = &loaded.config.packs["off"];
    assert!(!off.enabled);
    assert_eq!(off.timeout_ms, Some(5));
}

#[test]
fn the_file_overrides_defaults_key_by_key() {
    let loaded = load_text("[server]\ntimeout_ms = 1234\n[identity]\nuser = \"ada\"\n").unwrap();
    assert_eq!(loaded.config.server.timeout_ms, 1234);
    // Keys the file does not set keep their defaults.
    assert_eq!(loaded.config.server.code_pack, "exec_py");
    assert_eq!(loaded.config.server.pack_dirs, default_pack_dirs());
    assert_eq!(loaded.config.identity.user, "ada");
    assert_eq!(loaded.config.identity.org, "local");
}

#[test]
fn relative_paths_are_resolved_against_the_files_directory() {
    let (dir, path) = file(
        "[server]\npack_dirs = [\"libs\", \"/opt/packs\"]\n\
         [packs.mine]\npath = \"build/libmine.so\"\n\
         [projects]\nrel = \"proj-root\"\nnested = \"a/b\"\nabs = \"/srv/abs\"\n\
         dot = \".\"\nup = \"../sibling/./p\"\n",
    );
    let loaded = load(Some(&path)).unwrap();
    let base = dir.path().canonicalize().unwrap();
    let projects = &loaded.config.projects;
    assert_eq!(projects["rel"].path, base.join("proj-root"));
    assert_eq!(projects["nested"].path, base.join("a/b"));
    assert_eq!(projects["abs"].path, PathBuf::from("/srv/abs"));
    // Shown to users and used as confinement roots: no `.` or `..` left.
    assert_eq!(projects["dot"].path, base);
    assert_eq!(
        projects["up"].path,
        base.parent().unwrap().join("sibling/p")
    );
    assert_eq!(
        library(&loaded.config, "mine").path,
        Some(base.join("build/libmine.so"))
    );
    assert_eq!(
        loaded.config.server.pack_dirs,
        [base.join("libs"), PathBuf::from("/opt/packs")]
    );
}

#[test]
fn a_project_may_name_the_organisations_that_see_it() {
    let (dir, path) = file(
        "[projects]\nopen = \"a\"\n\
         closed = { path = \"b\", orgs = [\"acme\"] }\n",
    );
    let loaded = load(Some(&path)).unwrap();
    let base = dir.path().canonicalize().unwrap();
    let projects = &loaded.config.projects;
    assert_eq!(projects["open"], Project::everyone(base.join("a")));
    assert_eq!(projects["closed"].path, base.join("b"));
    assert_eq!(projects["closed"].orgs, Some(vec!["acme".to_owned()]));
    refused(
        "[projects]\nx = { path = \"b\", org = [\"acme\"] }\n",
        &["line 2", "unknown field `org`", "`orgs`"],
    );
}

#[test]
fn a_leading_tilde_is_the_home_directory_in_every_host_path() {
    let home = PathBuf::from(std::env::var_os("HOME").expect("HOME is set for the tests"));
    let loaded = load_text(
        "[server]\npack_dirs = [\"~/packs\", \"~\", \"a/~/b\"]\n\
         [packs.mine]\npath = \"~/build/libmine.so\"\n\
         [packs.srv]\nkind = \"mcp\"\ncommand = [\"~/bin/server\", \"~/arg\"]\n\
         [projects]\nonetool = \"~/projects/onetool\"\nup = \"~/a/../b\"\n",
    )
    .unwrap();
    let config = loaded.config;
    assert_eq!(
        config.projects["onetool"].path,
        home.join("projects/onetool")
    );
    assert_eq!(config.projects["up"].path, resolve(&home, Path::new("b")));
    assert_eq!(
        library(&config, "mine").path,
        Some(home.join("build/libmine.so"))
    );
    let base = loaded.file.unwrap().parent().unwrap().to_path_buf();
    assert_eq!(
        config.server.pack_dirs,
        [
            home.join("packs"),
            resolve(&home, Path::new(".")),
            base.join("a/~/b")
        ]
    );
    // The program only: arguments are the server's business.
    let (command, _) = stdio(&config, "srv");
    assert_eq!(
        command,
        [
            home.join("bin/server").display().to_string(),
            "~/arg".to_owned()
        ]
    );
}

#[test]
fn a_stdio_server_packs_sandbox_settings_are_read_and_checked() {
    let home = PathBuf::from(std::env::var_os("HOME").expect("HOME is set for the tests"));
    let (dir, path) = file(
        "[packs.srv]\nkind = \"mcp\"\ncommand = [\"server\"]\nsandbox = \"off\"\n\
         read = [\"~/.config/srv\", \"data\"]\nwrite = [\"~/.npm\"]\n\
         limits = { memory_mb = 256 }\n",
    );
    let config = load(Some(&path)).unwrap().config;
    let (_, confinement) = stdio(&config, "srv");
    assert_eq!(confinement.mode, Mode::Off);
    let base = dir.path().canonicalize().unwrap();
    assert_eq!(
        confinement.read,
        [home.join(".config/srv"), base.join("data")]
    );
    assert_eq!(confinement.write, [home.join(".npm")]);
    assert_eq!(confinement.limits.memory_mb, 256);
    refused(
        "[packs.exec_py]\nsandbox = \"off\"\n",
        &[
            "`packs.exec_py.sandbox` is for stdio MCP server packs",
            "in its `config`",
        ],
    );
    refused(
        "[packs.h]\nkind = \"mcp\"\nurl = \"http://h/mcp\"\nread = [\"/x\"]\n",
        &["`packs.h.read` confines a stdio server", "remove `read`"],
    );
    refused(
        "[packs.s]\nkind = \"mcp\"\ncommand = [\"s\"]\nlimits = { processes = 0 }\n",
        &["`packs.s`: `limits.processes` is 0"],
    );
    refused(
        "[packs.s]\nkind = \"mcp\"\ncommand = [\"s\"]\nsandbox = \"maybe\"\n",
        &["line 4", "unknown variant `maybe`"],
    );
}

#[test]
fn another_users_home_is_refused_with_the_key() {
    let message = refused(
        "[server]\npack_dirs = [\"/ok\", \"~bob\"]\n\
         [packs.p]\npath = \"~bob/libp.so\"\n\
         [packs.s]\nkind = \"mcp\"\ncommand = [\"~bob/server\"]\n\
         [projects]\nx = \"~bob/x\"\n",
        &[],
    );
    let refusal = |key: &str, path: &str| {
        format!(
            "`{key}`: `{path}`: `~user` is not expanded, only `~` and `~/` (to $HOME); \
             write the full path, or `./{path}` for a name that starts with `~`"
        )
    };
    let lines: Vec<&str> = message.lines().collect();
    assert_eq!(
        lines,
        [
            refusal("projects.x", "~bob/x"),
            refusal("packs.p.path", "~bob/libp.so"),
            refusal("server.pack_dirs[1]", "~bob"),
            refusal("packs.s.command", "~bob/server"),
        ],
        "{message}"
    );
}

#[test]
fn a_relative_file_argument_is_made_absolute() {
    // Relative to the working directory, which the tests do not change:
    // the crate directory, where `src/config/mod.rs` is.
    let loaded = load(Some(Path::new("src/../src/config/mod.rs")));
    // Not a valid config, but the error names the absolute, clean path.
    let message = loaded.unwrap_err().to_string();
    let absolute = Path::new("src/config/mod.rs").canonicalize().unwrap();
    assert!(
        message.starts_with(&format!("{}: ", absolute.display())),
        "{message}"
    );
}

#[test]
fn a_pack_section_is_parsed_into_what_serves_it() {
    let loaded = load_text(
        "[packs.lib]\nconfig = { a = 1 }\n\
         [packs.stdio]\nkind = \"mcp\"\ncommand = [\"srv\", \"--flag\"]\nenv = { K = \"v\" }\n\
         [packs.web]\nkind = \"mcp\"\nurl = \"https://h.example/mcp\"\n\
         headers = { Authorization = \"Bearer t\" }\n",
    )
    .unwrap();
    let config = loaded.config;
    assert_eq!(library(&config, "lib").config, serde_json::json!({"a": 1}));
    assert_eq!(config.packs["lib"].server(), None);
    let (command, confinement) = stdio(&config, "stdio");
    assert_eq!(command, ["srv", "--flag"]);
    // A server pack's program and PATH are the host admin's.
    assert!(confinement.trusted);
    assert_eq!(confinement.mode, Mode::default());
    assert_eq!(
        config.packs["web"].server(),
        Some(&Endpoint::Http {
            url: "https://h.example/mcp".to_owned(),
            headers: [("Authorization".to_owned(), "Bearer t".to_owned())].into(),
        })
    );
    assert!(config.packs["web"].library().is_none());
}

#[test]
fn a_pack_keeps_its_prefix_unless_its_section_says_prefix_false() {
    let loaded = load_text("[packs.a]\n[packs.b]\nprefix = false\n").unwrap();
    assert!(loaded.config.packs["a"].prefix);
    assert!(!loaded.config.packs["b"].prefix);
}

#[test]
fn a_server_pack_with_a_library_config_is_refused() {
    let message = refused(
        "[packs.s]\nkind = \"mcp\"\nurl = \"http://h/mcp\"\nconfig = { a = 1 }\n",
        &[],
    );
    assert_eq!(
        message,
        "`packs.s.config` is handed to a library pack's constructor, and `packs.s` is \
         `kind = \"mcp\"`; remove `config`: a server pack is set up by its `command` or `url`"
    );
}

#[test]
fn every_problem_has_a_code_and_the_fix_apart() {
    let (_dir, path) = file(
        "[server]\ntimeout_ms = 0\n[packs.a-b]\n[packs.p]\nurl = \"http://h/mcp\"\n\
         [aliases]\nx = \"y\"\n",
    );
    let error = load(Some(&path)).unwrap_err();
    let found: Vec<(ConfigCode, Option<&str>)> = error
        .problems()
        .iter()
        .map(|p| (p.code(), p.fix()))
        .collect();
    assert_eq!(
        found,
        [
            (ConfigCode::Name, None),
            (ConfigCode::Alias, None),
            (ConfigCode::Value, None),
            (
                ConfigCode::PackSource,
                Some("add `kind = \"mcp\"` to the section, or remove `url`")
            ),
        ]
    );
    // Shown as before: the file once, then one problem a line.
    let shown = error.to_string();
    assert!(shown.starts_with(&format!("{}: `packs.a-b`", path.display())));
    assert!(shown.ends_with(
        "`packs.p.url` is for MCP server packs; add `kind = \"mcp\"` to the section, or \
         remove `url`"
    ));
    let missing = load(Some(&path.with_file_name("nope.toml"))).unwrap_err();
    assert_eq!(missing.problems()[0].code(), ConfigCode::File);
    assert_eq!(
        missing.problems()[0].fix(),
        Some("pass a TOML file to --config")
    );
    let syntax = load_text("[server\n").unwrap_err();
    assert_eq!(syntax.problems()[0].code().as_str(), "CONFIG_SYNTAX");
}

#[test]
fn approval_rules_load_in_name_order_and_bad_ones_are_refused_with_the_fix() {
    let loaded = load_text(
        "[approval.remote]\ncalls = [\"remote_mcp.execute_tool\", \"*.session_delete\"]\n\
         remember = \"30m\"\n\n[approval.destructive]\ndestructive = true\nexcept = [\"exec_py.run\"]\n",
    )
    .unwrap();
    let rules = &loaded.config.approval.rules;
    let names: Vec<&str> = rules.iter().map(|rule| rule.name.as_str()).collect();
    assert_eq!(names, ["destructive", "remote"]);
    assert_eq!(
        rules[1].remember,
        Remember::For(std::time::Duration::from_secs(1800))
    );
    assert!(
        loaded
            .config
            .approval
            .rule_for("exec_ts.cell_delete", true)
            .is_some()
    );
    assert!(
        loaded
            .config
            .approval
            .rule_for("exec_py.run", true)
            .is_none()
    );
    refused(
        "[approval.x]\ncalls = [\"delete\"]\nremember = \"always\"\n",
        &[
            "`approval.x.calls`: \"delete\" is not a `pack.function` pattern",
            "`approval.x.remember` = \"always\"",
            "\"session\"",
        ],
    );
    refused(
        "[approval.x]\nremember = \"session\"\n",
        &["`[approval.x]` matches no call; give it `calls"],
    );
    refused(
        "[approval.x]\ncall = \"a.b\"\n",
        &["line 2", "unknown field `call`", "`calls`"],
    );
}

#[test]
fn the_audit_trail_is_kept_beside_the_integrations_unless_audit_names_a_database() {
    let integrations = "[packs.remote_mcp]\npath = \"/x/libremote_mcp.so\"\n\
                        config = { database = \"postgres://db/team\" }\n";
    let shared = load_text(&format!("{integrations}[audit]\n"))
        .unwrap()
        .config;
    assert_eq!(crate::audit::database(&shared), "postgres://db/team");
    let own = load_text(&format!(
        "{integrations}[audit]\ndatabase = \"/var/audit.db\"\n"
    ))
    .unwrap()
    .config;
    assert_eq!(crate::audit::database(&own), "/var/audit.db");
    let (dir, path) = file("[audit]\ndatabase = \"trail/audit.db\"\n");
    let relative = load(Some(&path)).unwrap().config;
    let beside = dir.path().join("trail/audit.db");
    assert_eq!(
        crate::audit::database(&relative),
        beside.display().to_string()
    );
    let sqlite = "[packs.remote_mcp]\npath = \"/x/libremote_mcp.so\"\n\
                  config = { database = \"/srv/packhost/integrations.db\" }\n";
    let beside = load_text(&format!("{sqlite}[audit]\n")).unwrap().config;
    assert_eq!(crate::audit::database(&beside), "/srv/packhost/audit.db");
    refused(
        &format!("{sqlite}[audit]\ndatabase = \"/srv/packhost/integrations.db\"\n"),
        &["`audit.database` is the integrations' SQLite file"],
    );
    let off = load_text("[audit]\nenabled = false\n").unwrap().config;
    assert!(
        !crate::audit::Audit::start(&off).is_on(),
        "off needs no runtime"
    );
    refused(
        "[audit]\nkeep_days = 0\n",
        &["`audit.keep_days` must be at least 1 (days)"],
    );
}

#[test]
fn a_pack_that_would_sign_in_as_each_user_is_sent_to_per_user_integrations() {
    let message = refused(
        "[packs.s]\nkind = \"mcp\"\nurl = \"http://h/mcp\"\nauth = \"per_user\"\n",
        &[],
    );
    assert_eq!(
        message,
        "`packs.s.auth`: a pack does not sign in as each user; a server pack reaches its server \
         with one credential for every caller (`headers`); to reach the server as each user, add \
         it as a per-user integration: `packhost integrations add --org <org> --name <name> \
         --url <url> --per-user`"
    );
}

#[test]
fn an_instance_must_be_one_of_its_peers_each_with_a_url() {
    let message = refused(
        "[http]\ninstance = \"four\"\n[http.peers]\none = \"http://10.0.0.11:8080\"\ntwo = \"ftp://x\"\n",
        &[],
    );
    assert!(
        message.contains("`http.instance` is `four`, which `http.peers` does not name"),
        "{message}"
    );
    assert!(
        message.contains("`http.peers.two` is `ftp://x`"),
        "{message}"
    );
    let loaded = load_text("[http]\ninstance = \"one\"\n[http.peers]\none = \"http://a:1\"\n");
    assert_eq!(loaded.unwrap().config.http.instance.as_deref(), Some("one"));
}
