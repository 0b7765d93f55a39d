//! A Python interpreter as a policy needs it: its real executable and the
//! folders it reads its standard library and packages from.

use std::{
    path::{Path, PathBuf},
    process::Stdio,
};

/// A resolved interpreter.
#[derive(Clone, Debug)]
pub struct Python {
    /// The real executable (`sys.executable`).
    pub executable: PathBuf,
    /// Its prefixes (a virtual environment's and its installation's) and
    /// the folders of its executable: what a policy makes readable.
    pub runtime: Vec<PathBuf>,
}

impl Python {
    /// Ask `configured` (default `python3` on PATH) who it is. Done once per
    /// pack: a pyenv shim costs ~300 ms a spawn. Blocks while it runs.
    pub fn resolve(configured: Option<&Path>) -> Result<Self, String> {
        let program = configured.unwrap_or(Path::new("python3"));
        let output = std::process::Command::new(program)
            .args([
                "-c",
                "import sys; print(sys.executable); print(sys.prefix); print(sys.base_prefix); print(sys.exec_prefix); print(sys.base_exec_prefix)",
            ])
            .stdin(Stdio::null())
            .output()
            .map_err(|e| format!("cannot run `{}`: {e}", program.display()))?;
        let stdout = String::from_utf8_lossy(&output.stdout);
        let mut lines = stdout.lines().map(PathBuf::from);
        let Some(executable) = lines
            .next()
            .filter(|p| output.status.success() && p.is_absolute())
        else {
            return Err(format!(
                "`{}` did not report its interpreter: {}",
                program.display(),
                String::from_utf8_lossy(&output.stderr).trim()
            ));
        };
        let mut runtime: Vec<PathBuf> = lines.collect();
        // A venv's `python` links to the installation's binary.
        if let Some(real) = executable
            .canonicalize()
            .ok()
            .and_then(|p| p.parent().map(Path::to_path_buf))
        {
            runtime.push(real);
        }
        if let Some(dir) = executable.parent() {
            runtime.push(dir.to_path_buf());
        }
        Ok(Self {
            executable,
            runtime,
        })
    }
}
