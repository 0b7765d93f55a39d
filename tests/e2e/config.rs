//! `packs.toml` and `PACKHOST_*` variables as the binary reports them: every
//! mistake names the file, line and key; the environment overrides the file.

use std::{path::Path, process::Output};

use packhost_tests::{hello_section, packhost_cli, packhost_command};
use tempfile::TempDir;

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// Assert `check` on `config` exits 2 (nothing printed on stdout) and its
/// error holds every one of `parts`; return the error.
#[track_caller]
fn refused(output: &Output, parts: &[&str]) -> String {
    let err = stderr(output);
    assert_eq!(
        output.status.code(),
        Some(2),
        "stdout:\n{}\nstderr:\n{err}",
        stdout(output)
    );
    assert_eq!(stdout(output), "", "stderr:\n{err}");
    assert!(err.starts_with("error: "), "{err}");
    for part in parts {
        assert!(err.contains(part), "error lacks {part:?}:\n{err}");
    }
    err
}

#[test]
fn a_value_of_the_wrong_type_names_file_line_and_key() {
    let output = packhost_cli("# comment\n[server]\ntimeout_ms = \"soon\"\n", &["check"]);
    refused(
        &output,
        &[
            "/packs.toml: line 3: `server.timeout_ms` must be a whole number without quotes or \
             units, e.g. `timeout_ms = 60000`, not the string \"soon\"",
            "timeout_ms = \"soon\"",
        ],
    );
}

#[test]
fn an_unknown_key_is_named_with_what_is_expected() {
    let output = packhost_cli("[server]\ntimeout = 5\n", &["check"]);
    refused(
        &output,
        &[
            "/packs.toml: line 2, column 1: unknown field `timeout`",
            "unknown field `timeout`, expected one of `timeout_ms`, `code_pack`, `typescript_pack`, `pack_dirs`, `expose`",
        ],
    );
    let output = packhost_cli("[packs.proj]\nenable = false\n", &["check"]);
    refused(&output, &["line 2", "unknown field `enable`", "`enabled`"]);
}

#[test]
fn an_unknown_section_is_named() {
    let output = packhost_cli("[packs.proj]\n\n[bogus]\nx = 1\n", &["check"]);
    refused(
        &output,
        &[
            "/packs.toml: line 3, column 2: unknown field `bogus`",
            "unknown field `bogus`",
            "`server`, `identity`, `packs`, `aliases`, `snippets`, `projects`",
        ],
    );
}

#[test]
fn an_alias_target_must_be_pack_dot_function() {
    let output = packhost_cli("[aliases]\nws = \"nodot\"\n", &["check"]);
    refused(
        &output,
        &["`aliases.ws` = \"nodot\": the target must be `pack.function`"],
    );
    let output = packhost_cli("[packs.proj]\n[aliases]\nws = \"proj.list\"\n", &["check"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
}

#[test]
fn an_alias_to_a_missing_function_is_refused_with_its_line_and_the_closest_name() {
    let config = "[packs.proj]\n\n[aliases]\nprojects = \"proj.list\"\nls = \"proj.lst\"\n";
    for command in ["check", "serve"] {
        let output = packhost_cli(config, &[command]);
        let err = refused(
            &output,
            &[
                "/packs.toml:5: `aliases.ls` = \"proj.lst\": pack `proj` has no function `lst`; \
                 did you mean `proj.list`?",
            ],
        );
        assert_eq!(err.lines().count(), 1, "{command}: {err}");
    }
}

#[test]
fn an_alias_to_a_pack_that_is_not_loaded_is_refused() {
    let config = "[packs.proj]\n[packs.off]\nenabled = false\n\n[aliases]\n\
                  a = \"prj.list\"\nb = \"off.run\"\nc = \"nope.zzz\"\n";
    let err = refused(
        &packhost_cli(config, &["check"]),
        &[
            "/packs.toml:6: `aliases.a` = \"prj.list\": no pack `prj` is configured; \
             did you mean `proj.list`?",
            "/packs.toml:7: `aliases.b` = \"off.run\": pack `off` is not enabled \
             (`[packs.off] enabled = false`)",
            "/packs.toml:8: `aliases.c` = \"nope.zzz\": no pack `nope` is configured; \
             packs: packhost, proj",
        ],
    );
    assert_eq!(err.lines().count(), 3, "{err}");
}

#[test]
fn a_pack_name_must_be_an_identifier_and_the_fix_is_suggested() {
    let output = packhost_cli("[packs.exec-py]\n", &["check"]);
    refused(
        &output,
        &[
            "`packs.exec-py`: a pack name must be an identifier",
            "`exec_py.function()`",
        ],
    );
}

#[test]
fn every_problem_is_reported_at_once() {
    let output = packhost_cli(
        "[server]\ntimeout_ms = 0\n[packs.a-b]\n[aliases]\nx = \"y\"\n",
        &["check"],
    );
    let err = refused(
        &output,
        &[
            "`packs.a-b`",
            "`aliases.x` = \"y\"",
            "`server.timeout_ms` must be at least 1",
        ],
    );
    assert_eq!(err.lines().count(), 3, "{err}");
}

/// `packhost` in a fresh directory holding `config` as packs.toml.
fn command_in(config: &str) -> (TempDir, std::process::Command) {
    let dir = TempDir::new().unwrap();
    std::fs::write(dir.path().join("packs.toml"), config).unwrap();
    let command = packhost_command(dir.path());
    (dir, command)
}

#[test]
fn an_environment_variable_overrides_the_file() {
    // The file allows a minute; the environment 300 ms.
    let config = "[server]\ntimeout_ms = 60000\n\n".to_owned() + &hello_section("");
    let (_dir, mut command) = command_in(&config);
    let output = command
        .env("PACKHOST_SERVER__TIMEOUT_MS", "300")
        .args(["call", "hello.sleep(ms=5000)"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    assert!(
        stdout(&output)
            .starts_with("TIMEOUT: `hello.sleep` did not finish within its time limit of 300 ms"),
        "{}",
        stdout(&output)
    );
}

#[test]
fn an_unknown_environment_key_is_named() {
    let (_dir, mut command) = command_in("[packs.proj]\n");
    let output = command
        .env("PACKHOST_SERVER__NOPE", "1")
        .arg("check")
        .output()
        .unwrap();
    refused(
        &output,
        &[
            "PACKHOST_* environment: ",
            "`server.nope`",
            "unknown field: found `nope`",
        ],
    );
}

#[test]
fn a_bad_environment_value_names_the_key() {
    let (_dir, mut command) = command_in("[packs.proj]\n");
    let output = command
        .env("PACKHOST_SERVER__TIMEOUT_MS", "soon")
        .arg("check")
        .output()
        .unwrap();
    refused(
        &output,
        &[
            "PACKHOST_* environment: ",
            "`server.timeout_ms` must be a whole number without quotes or units, e.g. \
             `timeout_ms = 60000`, not the string \"soon\"",
        ],
    );
}

#[test]
fn single_word_packhost_variables_are_not_config_keys() {
    // `PACKHOST_LOG` belongs to the CLI; it must not be read as a config key.
    let (_dir, mut command) = command_in("[packs.proj]\n");
    let output = command
        .env("PACKHOST_LOG", "warn")
        .arg("check")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(
        stdout(&output).contains("ok    proj"),
        "{}",
        stdout(&output)
    );
}

#[test]
fn relative_project_paths_follow_the_config_file_not_the_working_directory() {
    let dir = TempDir::new().unwrap();
    let conf = dir.path().join("conf");
    std::fs::create_dir_all(conf.join("proj-root")).unwrap();
    std::fs::write(
        conf.join("packs.toml"),
        "[packs.proj]\n\n[projects]\nhere = \"proj-root\"\n",
    )
    .unwrap();
    // Run from `dir`, where `proj-root` does not exist.
    let output = packhost_command(dir.path())
        .args(["--config", "conf/packs.toml", "call", "proj.list()"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let value: serde_json::Value = serde_json::from_str(&stdout(&output)).unwrap();
    let expected = conf.canonicalize().unwrap().join("proj-root");
    assert_eq!(value["projects"][0]["path"], expected.display().to_string());
    assert_eq!(value["projects"][0]["exists"], true);
}

/// `packhost <args>` on `config` in a fresh directory, with `HOME` = `home`.
fn in_home(home: &Path, config: &str, args: &[&str]) -> Output {
    let (_dir, mut command) = command_in(config);
    command.env("HOME", home).args(args).output().unwrap()
}

#[test]
fn a_tilde_project_is_under_the_home_directory() {
    let home = TempDir::new().unwrap();
    std::fs::create_dir_all(home.path().join("projects/onetool")).unwrap();
    let output = in_home(
        home.path(),
        "[packs.proj]\n\n[projects]\nonetool = \"~/projects/onetool\"\n",
        &["call", "proj.list()"],
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let value: serde_json::Value = serde_json::from_str(&stdout(&output)).unwrap();
    let expected = home.path().join("projects/onetool");
    assert_eq!(value["projects"][0]["path"], expected.display().to_string());
    assert_eq!(value["projects"][0]["exists"], true);
}

#[test]
fn a_tilde_user_path_is_refused_with_the_key_and_the_fix() {
    let home = TempDir::new().unwrap();
    let output = in_home(
        home.path(),
        "[projects]\nonetool = \"~ada/projects/onetool\"\n",
        &["check"],
    );
    refused(
        &output,
        &[
            "/packs.toml: `projects.onetool`: `~ada/projects/onetool`: `~user` is not expanded",
            "`./~ada/projects/onetool`",
        ],
    );
}

#[test]
fn a_tilde_in_a_packs_config_is_the_home_directory() {
    // exec_py's `cwd_roots`: a `cwd` under `~/work` is allowed.
    let home = TempDir::new().unwrap();
    let work = home.path().join("work");
    std::fs::create_dir_all(&work).unwrap();
    let command = format!(
        "exec_py.run(code='import os\\nos.getcwd()', cwd={:?})",
        work.display().to_string()
    );
    let output = in_home(
        home.path(),
        "[packs.exec_py]\nconfig = { cwd_roots = [\"~/work\"] }\n",
        &["call", &command],
    );
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}\n{}",
        stdout(&output),
        stderr(&output)
    );
    let value: serde_json::Value = serde_json::from_str(&stdout(&output)).unwrap();
    assert_eq!(value["result"], work.display().to_string());
}

#[test]
fn the_integrations_database_of_the_remote_mcp_config_may_start_with_a_tilde() {
    let home = TempDir::new().unwrap();
    let output = in_home(
        home.path(),
        "[packs.remote_mcp]\nconfig = { database = \"~/data/integrations.db\" }\n",
        &["integrations", "list", "--org", "acme"],
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(stdout(&output), "organisation `acme` has no integrations\n");
    assert!(home.path().join("data/integrations.db").is_file());
}

#[test]
fn an_environment_variable_reaches_into_a_packs_config() {
    // How `./dev run` points the jupyter pack at a Python: a key the file
    // sets is overridden, the file's other keys stay, a missing one is added.
    let greet = |config: &str| {
        let (_dir, mut command) = command_in(&hello_section(config));
        let output = command
            .env("PACKHOST_PACKS__HELLO__CONFIG__GREETING", "hi")
            .args(["call", "hello.greet(name='ada')"])
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
        stdout(&output)
    };
    assert_eq!(greet(""), "{\n  \"text\": \"hi, ada\"\n}\n");
    assert_eq!(
        greet("config = { greeting = \"yo\", refuse = false }"),
        "{\n  \"text\": \"hi, ada\"\n}\n"
    );
    // The file's other keys stay: `refuse = true` still refuses.
    let (_dir, mut command) = command_in(&hello_section("config = { refuse = true }"));
    let output = command
        .env("PACKHOST_PACKS__HELLO__CONFIG__GREETING", "hi")
        .arg("check")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
}

#[test]
fn a_pack_variable_configures_only_a_pack_the_file_declares() {
    // `./dev run` sets this one for the shipped packs.toml; it must not load
    // exec_ts into a config that does not.
    let variable = "PACKHOST_PACKS__EXEC_TS__CONFIG__TYPESCRIPT";
    let missing = "/nonexistent/typescript";
    let undeclared = "[packs.proj]\n\n[projects]\nhere = \".\"\n";
    let run = |config: &str, args: &[&str]| {
        let (_dir, mut command) = command_in(config);
        command.env(variable, missing).args(args).output().unwrap()
    };
    let output = run(undeclared, &["check"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(!stdout(&output).contains("exec_ts"), "{}", stdout(&output));
    let warning = stderr(&output);
    assert!(
        warning.contains(&format!(
            "`{variable}` is ignored: it configures pack `exec_ts`, which"
        )) && warning.contains("add `[packs.exec_ts]`"),
        "{warning}"
    );
    // Other sections still take variables.
    let (_dir, mut command) = command_in(undeclared);
    let output = command
        .env(variable, missing)
        .env("PACKHOST_ALIASES__PL", "proj.list")
        .args(["call", "pl()"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(stdout(&output).contains("\"here\""), "{}", stdout(&output));

    // Declared, the variable applies: exec_ts is given the missing compiler.
    let notebooks = TempDir::new().unwrap();
    let declared = format!(
        "[packs.exec_ts]\nconfig = {{ notebooks_dir = {:?} }}\n",
        notebooks.path().display().to_string()
    );
    let output = run(&declared, &["check"]);
    let shown = stdout(&output) + &stderr(&output);
    assert_eq!(output.status.code(), Some(1), "{shown}");
    assert!(shown.contains(missing), "{shown}");
    assert!(!shown.contains("is ignored"), "{shown}");
}

#[test]
fn a_section_keeps_to_the_keys_of_its_kind_whoever_sets_them() {
    // From the file: a server pack has no constructor `config`.
    let output = packhost_cli(
        "[packs.x]\nkind = \"mcp\"\nurl = \"http://h/mcp\"\nconfig = { a = 1 }\n",
        &["check"],
    );
    refused(
        &output,
        &[
            "/packs.toml: `packs.x.config` is handed to a library pack's constructor",
            "remove `config`",
        ],
    );
    // From the environment: a library pack has no `url`.
    let (_dir, mut command) = command_in(&hello_section(""));
    let output = command
        .env("PACKHOST_PACKS__HELLO__URL", "http://h/mcp")
        .arg("check")
        .output()
        .unwrap();
    refused(
        &output,
        &[
            "`packs.hello.url` is for MCP server packs",
            "add `kind = \"mcp\"` to the section, or remove `url`",
        ],
    );
}
