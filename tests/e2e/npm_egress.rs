//! `exec_ts.npm_install`'s egress through the real host: packages' lifecycle
//! scripts run only when `npm_scripts_allow` names the package, and even
//! then reach nothing but the egress proxy, which reaches only the
//! registry; a real package still installs through it.

use std::{
    io::ErrorKind,
    net::TcpListener,
    path::{Path, PathBuf},
};

use packhost_tests::{TestHost, ok};
use serde_json::{Value, json};
use tempfile::TempDir;

use crate::exec_ts::{Notebooks, create_cell, create_session, run_cell, toml_path};

/// The name of the local package whose `postinstall` probes the network.
const SCRIPTED: &str = "local-scripted";

/// A local package (a folder of `root`) whose `postinstall` writes
/// `ran.json` in its installed folder: the outcome of a TCP connection to
/// each of `targets` (`[name, host, port]`), and with `through_proxy` of a
/// CONNECT to each through the proxy npm was given.
fn scripted_package(root: &Path, targets: &[(&str, &str, u16)], through_proxy: bool) -> PathBuf {
    let dir = root.join(SCRIPTED);
    std::fs::create_dir(&dir).unwrap();
    std::fs::write(
        dir.join("package.json"),
        json!({
            "name": SCRIPTED, "version": "1.0.0", "main": "index.js",
            "scripts": {"postinstall": "node probe.js"},
        })
        .to_string(),
    )
    .unwrap();
    std::fs::write(dir.join("index.js"), "module.exports = 'installed';\n").unwrap();
    let targets: Vec<Value> = targets
        .iter()
        .map(|(name, host, port)| json!([name, host, port]))
        .collect();
    let probe = format!(
        "const net = require('node:net');\n\
         const fs = require('node:fs');\n\
         const targets = {targets};\n\
         const throughProxy = {through_proxy};\n\
         // The outcome of a connection: its error code or `connected`, and how long it took.\n\
         const attempt = (host, port, send) => new Promise((done) => {{\n\
           const started = Date.now();\n\
           const end = (outcome) => {{ s.destroy(); done({{ outcome, ms: Date.now() - started }}); }};\n\
           const s = net.connect({{ host, port, timeout: 5000 }});\n\
           s.on('connect', () => (send ? s.write(send) : end('connected')));\n\
           s.on('data', (d) => end(d.toString().split('\\r\\n')[0]));\n\
           s.on('timeout', () => end('timeout'));\n\
           s.on('error', (e) => end(e.code));\n\
         }});\n\
         (async () => {{\n\
           const out = {{}};\n\
           for (const [name, host, port] of targets) out[name] = await attempt(host, port);\n\
           const proxy = process.env.npm_config_https_proxy;\n\
           if (throughProxy && proxy) {{\n\
             const {{ hostname, port }} = new URL(proxy);\n\
             for (const [name, host, p] of targets)\n\
               out['proxy ' + name] = await attempt(hostname, port, `CONNECT ${{host}}:${{p}} HTTP/1.1\\r\\n\\r\\n`);\n\
           }}\n\
           fs.writeFileSync('ran.json', JSON.stringify(out));\n\
         }})();\n",
        targets = Value::from(targets),
    );
    std::fs::write(dir.join("probe.js"), probe).unwrap();
    dir
}

/// A loopback listener nobody should reach; `reached` says whether anyone did.
struct Listener(TcpListener);

impl Listener {
    fn new() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        Self(listener)
    }

    fn port(&self) -> u16 {
        self.0.local_addr().unwrap().port()
    }

    fn reached(&self) -> bool {
        match self.0.accept() {
            Ok(_) => true,
            Err(e) if e.kind() == ErrorKind::WouldBlock => false,
            Err(e) => panic!("accept: {e}"),
        }
    }
}

async fn install(host: &TestHost, session: &str, packages: &[&str]) -> Value {
    ok(&host
        .call(
            "exec_ts.npm_install",
            json!({"sessionId": session, "packages": packages}),
        )
        .await)
}

#[tokio::test]
async fn npm_runs_no_lifecycle_script_by_default() {
    let listener = Listener::new();
    let packages = TempDir::new().unwrap();
    let package = scripted_package(
        packages.path(),
        &[("loopback", "127.0.0.1", listener.port())],
        false,
    );
    let nb = Notebooks::new();
    let host = nb
        .host_with(&format!(", cwd_roots = [{}]", toml_path(packages.path())))
        .await;
    let session = create_session(&host).await;
    install(&host, &session, &[&package.display().to_string()]).await;
    let installed = nb
        .root
        .path()
        .join(&session)
        .join("node_modules")
        .join(SCRIPTED);
    assert!(installed.join("index.js").is_file(), "not installed");
    assert!(
        !installed.join("ran.json").exists(),
        "the postinstall script ran: {:?}",
        std::fs::read_to_string(installed.join("ran.json"))
    );
    assert!(
        !listener.reached(),
        "a script reached the loopback listener"
    );
}

#[tokio::test]
async fn an_allowed_script_runs_and_reaches_only_the_proxy_which_refuses_all_but_the_registry() {
    let listener = Listener::new();
    let packages = TempDir::new().unwrap();
    // Refused by the sandbox at connect: no packet leaves for the two others.
    let targets = [
        ("loopback", "127.0.0.1", listener.port()),
        ("private", "10.255.255.1", 80),
        ("metadata", "169.254.169.254", 80),
    ];
    let package = scripted_package(packages.path(), &targets, true);
    let nb = Notebooks::new();
    let host = nb
        .host_with(&format!(
            ", cwd_roots = [{}], npm_scripts_allow = [\"{SCRIPTED}\"]",
            toml_path(packages.path())
        ))
        .await;
    let session = create_session(&host).await;
    let installed = install(&host, &session, &[&package.display().to_string()]).await;
    let ran = nb
        .root
        .path()
        .join(&session)
        .join("node_modules")
        .join(SCRIPTED)
        .join("ran.json");
    let ran: Value = serde_json::from_str(
        &std::fs::read_to_string(&ran).unwrap_or_else(|e| panic!("the script did not run: {e}")),
    )
    .unwrap();
    for (name, _, _) in targets {
        assert_eq!(ran[name]["outcome"], "EACCES", "{name}: {ran}");
        assert!(ran[name]["ms"].as_u64().unwrap() < 1000, "{name}: {ran}");
        // The proxy refuses what is not the registry, without connecting.
        let proxied = &ran[format!("proxy {name}")];
        assert!(
            proxied["outcome"]
                .as_str()
                .is_some_and(|line| line.starts_with("HTTP/1.1 403")),
            "proxy {name}: {ran}"
        );
    }
    // The call says what the proxy refused.
    let stderr = installed["stderr"].as_str().unwrap();
    assert!(
        stderr.contains("[packhost egress: 169.254.169.254:80 is not allowed (allowed: registry.npmjs.org on ports 80, 443)]"),
        "{stderr}"
    );
    assert!(
        !listener.reached(),
        "a script reached the loopback listener"
    );
}

#[tokio::test]
async fn a_registry_package_installs_through_the_egress_proxy() {
    let nb = Notebooks::new();
    let host = nb.host().await;
    let session = create_session(&host).await;
    install(&host, &session, &["is-number@7.0.0"]).await;
    let cell = create_cell(
        &host,
        &session,
        "check.ts",
        "import isNumber from 'is-number';\nconsole.log(isNumber(7), isNumber('seven'));\n",
    )
    .await;
    assert_eq!(
        ok(&run_cell(&host, &session, &cell).await)["stdout"],
        "true false\n"
    );
}
