//! A PostgreSQL server of one run's own: a throwaway cluster in a temporary
//! folder on a free port, as `./dev`'s `ensure_postgres` makes one, so that
//! stopping it (a database outage) disturbs no other test or database.

use std::{path::PathBuf, process::Command};

use tempfile::TempDir;

/// The cluster, stopped and removed when dropped.
pub struct Cluster {
    /// The folder of `initdb`, `pg_ctl`.
    bin: PathBuf,
    /// Holds `data/` and the server's `log`.
    dir: TempDir,
    port: u16,
}

impl Cluster {
    /// A new cluster, started. Without PostgreSQL's programs: a loud skip
    /// locally (`None`), a failure in CI (where `./dev test` installs them).
    pub fn start() -> Option<Self> {
        let Some(bin) = server_programs() else {
            assert!(
                std::env::var_os("CI").is_none(),
                "PostgreSQL is not installed in CI: `./dev test` installs it"
            );
            eprintln!("\n!!! SKIPPED: no /usr/lib/postgresql/*/bin/initdb; run `./dev test` !!!\n");
            return None;
        };
        let dir = TempDir::new().expect("temp dir");
        // Run as root, the server runs as `postgres`, which must own it.
        if is_root() {
            let owned = Command::new("chown")
                .arg("postgres:")
                .arg(dir.path())
                .status();
            assert!(owned.is_ok_and(|s| s.success()), "chown postgres");
        }
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let cluster = Self { bin, dir, port };
        let data = cluster.data();
        cluster.run(
            "initdb",
            &["-D", &data, "-U", "postgres", "--auth=trust", "-E", "UTF8"],
        );
        cluster.start_again();
        Some(cluster)
    }

    /// Its `postgres` database, as a URL.
    pub fn url(&self) -> String {
        format!("postgres://postgres@127.0.0.1:{}/postgres", self.port)
    }

    /// Stops the server at once (`-m immediate`: as a crash, no checkpoint,
    /// every connection cut).
    pub fn stop(&self) {
        self.run(
            "pg_ctl",
            &["stop", "-w", "-D", &self.data(), "-m", "immediate"],
        );
    }

    /// Starts the server (again), on the same port; returns once it
    /// accepts connections.
    pub fn start_again(&self) {
        let options = format!(
            "-p {} -c listen_addresses=127.0.0.1 -c unix_socket_directories='{}'",
            self.port,
            self.data()
        );
        let log = self.dir.path().join("log");
        let log = log.to_str().expect("a UTF-8 temp path");
        let data = self.data();
        self.run(
            "pg_ctl",
            &["start", "-w", "-D", &data, "-l", log, "-o", &options],
        );
    }

    fn data(&self) -> String {
        let data = self.dir.path().join("data");
        data.to_str().expect("a UTF-8 temp path").to_owned()
    }

    /// Runs PostgreSQL's `program`; panics with its output when it fails.
    fn run(&self, program: &str, args: &[&str]) {
        let output = self.command(program).args(args).output();
        let output = output.expect("run a PostgreSQL program");
        assert!(
            output.status.success(),
            "{program} {args:?}: {}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
    }

    /// PostgreSQL's `program`, run as `postgres` when root.
    fn command(&self, program: &str) -> Command {
        let program = self.bin.join(program);
        if !is_root() {
            return Command::new(program);
        }
        let mut command = Command::new("runuser");
        command.args(["-u", "postgres", "--"]).arg(program);
        command
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        // Stopped already (a run that ended mid-outage) is fine.
        let data = self.data();
        let stop = ["stop", "-D", &data, "-m", "immediate"];
        let _ = self.command("pg_ctl").args(stop).output();
    }
}

/// The newest installed PostgreSQL's programs.
fn server_programs() -> Option<PathBuf> {
    let mut found: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .filter_map(|entry| Some(entry.ok()?.path().join("bin")))
        .filter(|bin| bin.join("initdb").is_file())
        .collect();
    // Major versions as numbers: 9 < 10.
    found.sort_by_key(|bin| {
        let version = bin.parent().and_then(|v| v.file_name());
        version.and_then(|v| v.to_str()?.parse::<u32>().ok())
    });
    found.pop()
}

fn is_root() -> bool {
    // SAFETY: geteuid(2) cannot fail.
    unsafe { libc::geteuid() == 0 }
}
