//! `packhost new pack NAME`: a pack crate to start from, written outside any
//! workspace. It builds against this source tree's `pack-sdk` (not on
//! crates.io, so a path dependency), holds one function whose example runs
//! as its test, and a README that says how to build, load and test it.

use std::{
    fs,
    io::ErrorKind,
    path::{Path, PathBuf},
    process::ExitCode,
};

use clap::{Args, Subcommand};

use crate::{builtin, exit::Error, tool_name::is_identifier};

/// `packhost new ...`.
#[derive(Debug, Subcommand)]
pub enum NewCommand {
    /// Write a pack crate to start from: Cargo.toml, src/lib.rs with one
    /// function and its test, README.md.
    Pack(NewPack),
}

/// `packhost new pack NAME [--dir D] [--sdk PATH]`.
#[derive(Debug, Args)]
pub struct NewPack {
    /// The pack's name, as `packs.toml` and calls name it (`NAME.greet`): an
    /// identifier (letters, digits, `_`).
    name: String,
    /// The folder to create (it must not exist); default: ./NAME.
    #[arg(long, value_name = "D")]
    dir: Option<PathBuf>,
    /// The `pack-sdk` folder the crate depends on; default: the one in the
    /// source tree this packhost was built from.
    #[arg(long, value_name = "PATH")]
    sdk: Option<PathBuf>,
}

/// Where this binary's source tree keeps the SDK: `host/../plugins/sdk/pack-sdk`.
fn built_in_sdk() -> PathBuf {
    let host = Path::new(env!("CARGO_MANIFEST_DIR"));
    host.parent().unwrap_or(host).join("plugins/sdk/pack-sdk")
}

/// The files of a new pack: where each goes, and its template.
const FILES: [(&str, &str); 4] = [
    (
        "Cargo.toml",
        include_str!("../templates/pack/Cargo.toml.tmpl"),
    ),
    ("src/lib.rs", include_str!("../templates/pack/lib.rs.tmpl")),
    (
        "README.md",
        include_str!("../templates/pack/README.md.tmpl"),
    ),
    (
        ".gitignore",
        include_str!("../templates/pack/gitignore.tmpl"),
    ),
];

impl NewCommand {
    /// Write the crate and say what to do next.
    pub fn run(self) -> Result<ExitCode, Error> {
        let Self::Pack(pack) = self;
        check_name(&pack.name)?;
        let (sdk, whence) = sdk_folder(pack.sdk.as_deref())?;
        let dir = pack.dir.unwrap_or_else(|| PathBuf::from(&pack.name));
        let dir = create_folder(&dir)?;
        let library = dir.join(format!("target/debug/lib{}.so", pack.name));
        let written = write_files(&dir, &pack.name, &sdk, &library);
        if let Err(e) = written {
            // Ours alone (it did not exist): a half-written crate would only
            // block the next try.
            let _ = fs::remove_dir_all(&dir);
            return Err(e);
        }
        let names: Vec<&str> = FILES.iter().map(|(path, _)| *path).collect();
        println!(
            "created pack `{}` in {} ({})",
            pack.name,
            dir.display(),
            names.join(", ")
        );
        println!(
            "it depends on the pack-sdk at {} ({whence}; --sdk PATH names another)",
            sdk.display()
        );
        println!("build it:  cd {} && cargo build", dir.display());
        println!("test it:   cargo test (runs its function's example)");
        println!("load it:   add to packs.toml\n");
        println!("{}\n", packs_section(&pack.name, &library));
        println!("check it:  packhost check --config packs.toml");
        println!(
            "call it:   packhost call '{}.greet(name=\"Ada\")' --config packs.toml",
            pack.name
        );
        Ok(ExitCode::SUCCESS)
    }
}

/// What `packs.toml` needs to load the pack.
fn packs_section(name: &str, library: &Path) -> String {
    format!(
        "[packs.{name}]\npath = {}",
        toml_string(&library.display().to_string())
    )
}

/// A pack is named as calls name it, and its library as Rust names crates:
/// an identifier that is no Rust keyword, and not the host's own pack.
fn check_name(name: &str) -> Result<(), Error> {
    let fix = "e.g. `demo` or `my_tools`";
    if !is_identifier(name) {
        let fixed = name.replace(|c: char| !c.is_ascii_alphanumeric(), "_");
        let fix = match is_identifier(&fixed) {
            true => format!("`{fixed}`"),
            false => fix.to_owned(),
        };
        return Err(format!(
            "`{name}` cannot name a pack: a pack name is an identifier (letters, digits and \
             `_`, not starting with a digit), as calls name it (`NAME.greet()`); try {fix}"
        )
        .into());
    }
    if name == builtin::PACK {
        return Err(format!("`{name}` is the host's own pack; choose another name, {fix}").into());
    }
    if RUST_KEYWORDS.contains(&name) {
        return Err(format!(
            "`{name}` is a Rust keyword, which cannot name the pack's library; \
             choose another name, {fix}"
        )
        .into());
    }
    Ok(())
}

/// Rust's keywords, strict and reserved: none can name a crate.
const RUST_KEYWORDS: &[&str] = &[
    "abstract", "as", "async", "await", "become", "box", "break", "const", "continue", "crate",
    "do", "dyn", "else", "enum", "extern", "false", "final", "fn", "for", "gen", "if", "impl",
    "in", "let", "loop", "macro", "match", "mod", "move", "mut", "override", "priv", "pub", "ref",
    "return", "self", "Self", "static", "struct", "super", "trait", "true", "try", "type",
    "typeof", "unsafe", "unsized", "use", "virtual", "where", "while", "yield",
];

/// The SDK's folder, absolute (the crate may be built from anywhere), and
/// where it comes from.
fn sdk_folder(given: Option<&Path>) -> Result<(PathBuf, &'static str), Error> {
    let (sdk, whence) = match given {
        Some(sdk) => (sdk.to_path_buf(), "--sdk"),
        None => (
            built_in_sdk(),
            concat!(
                "the SDK of the source tree this packhost ",
                env!("CARGO_PKG_VERSION"),
                " was built from"
            ),
        ),
    };
    if !sdk.join("Cargo.toml").is_file() {
        return Err(format!(
            "{whence}: {} holds no crate (no Cargo.toml); pass --sdk PATH with the folder \
             `plugins/sdk/pack-sdk` of a packhost source tree",
            sdk.display()
        )
        .into());
    }
    Ok((fs::canonicalize(&sdk)?, whence))
}

/// Create `dir` and its parents, never reusing an existing folder (nothing
/// is overwritten); return it absolute.
fn create_folder(dir: &Path) -> Result<PathBuf, Error> {
    if let Some(parent) = dir.parent().filter(|p| !p.as_os_str().is_empty()) {
        fs::create_dir_all(parent)
            .map_err(|e| format!("cannot create {}: {e}", parent.display()))?;
    }
    match fs::create_dir(dir) {
        Ok(()) => Ok(fs::canonicalize(dir)?),
        Err(e) if e.kind() == ErrorKind::AlreadyExists => Err(format!(
            "{} already exists; nothing was written: remove it, or pass --dir with a new folder",
            dir.display()
        )
        .into()),
        Err(e) => Err(format!("cannot create {}: {e}", dir.display()).into()),
    }
}

fn write_files(dir: &Path, name: &str, sdk: &Path, library: &Path) -> Result<(), Error> {
    let sdk = toml_string(&sdk.display().to_string());
    let library = toml_string(&library.display().to_string());
    for (path, template) in FILES {
        let text = render(
            template,
            &[("name", name), ("sdk", &sdk), ("library", &library)],
        );
        let path = dir.join(path);
        if let Some(parent) = path.parent() {
            fs::create_dir_all(parent)?;
        }
        fs::write(&path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    }
    Ok(())
}

/// `template` with each `{{key}}` replaced by its value.
fn render(template: &str, values: &[(&str, &str)]) -> String {
    values
        .iter()
        .fold(template.to_owned(), |text, (key, value)| {
            text.replace(&format!("{{{{{key}}}}}"), value)
        })
}

fn toml_string(text: &str) -> String {
    toml::Value::String(text.to_owned()).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_placeholder_is_filled() {
        let values = [
            ("name", "demo"),
            ("sdk", "\"/sdk\""),
            ("library", "\"/l.so\""),
        ];
        for (path, template) in FILES {
            let text = render(template, &values);
            assert!(!text.contains("{{"), "{path} keeps a placeholder:\n{text}");
        }
        let cargo = render(FILES[0].1, &values);
        let cargo: toml::Table = cargo.parse().expect("Cargo.toml is TOML");
        assert_eq!(cargo["lib"]["name"].as_str(), Some("demo"));
    }

    #[test]
    fn names_are_identifiers_that_rust_and_the_host_allow() {
        check_name("demo").unwrap();
        check_name("my_tools2").unwrap();
        for (bad, says) in [
            ("my-pack", "try `my_pack`"),
            ("2fast", "not starting with a digit"),
            ("", "cannot name a pack"),
            ("fn", "Rust keyword"),
            ("packhost", "the host's own pack"),
        ] {
            let error = check_name(bad).unwrap_err().to_string();
            assert!(error.contains(says), "{bad:?}: {error}");
        }
    }

    #[test]
    fn the_built_in_sdk_is_this_tree_s() {
        assert!(built_in_sdk().join("src/lib.rs").is_file());
    }
}
