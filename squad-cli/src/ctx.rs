//! What every command shares: the working directory, output mode and error reporting.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// The outcome of a command: its exit code on success, or an error to report.
pub(crate) type CmdResult = Result<u8, CliError>;

/// An error reported as `error: <message>` (plus an optional `hint: <hint>`) with an exit code.
#[derive(Debug)]
pub(crate) struct CliError {
    code: u8,
    message: String,
    hint: Option<String>,
}

impl CliError {
    /// Bad usage or invalid input: exit 2, nothing was changed.
    pub(crate) fn usage(message: impl Into<String>) -> Self {
        Self {
            code: 2,
            message: message.into(),
            hint: None,
        }
    }

    /// Any other failure: exit 1.
    pub(crate) fn failure(message: impl Into<String>) -> Self {
        Self {
            code: 1,
            message: message.into(),
            hint: None,
        }
    }

    /// Adds a hint line.
    #[allow(dead_code, reason = "used by the command modules as they land")]
    pub(crate) fn with_hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }

    /// Prints the error to stderr and returns its exit code.
    pub(crate) fn report(&self) -> ExitCode {
        eprintln!("error: {}", self.message);
        if let Some(hint) = &self.hint {
            eprintln!("hint: {hint}");
        }
        ExitCode::from(self.code)
    }
}

/// Global options, resolved once.
#[derive(Debug)]
pub(crate) struct Ctx {
    /// The directory the command runs in (`-C` or the current directory).
    pub(crate) dir: PathBuf,
    /// `--state-dir`, if given.
    state_dir: Option<PathBuf>,
    /// `--json`.
    pub(crate) json: bool,
}

impl Ctx {
    pub(crate) fn new(
        dir: Option<PathBuf>,
        state_dir: Option<PathBuf>,
        json: bool,
    ) -> Result<Self, CliError> {
        let cwd = std::env::current_dir()
            .map_err(|e| CliError::failure(format!("cannot read the current directory: {e}")))?;
        let dir = match dir {
            Some(d) => {
                let d = cwd.join(d);
                if !d.is_dir() {
                    return Err(CliError::usage(format!(
                        "cannot change to '{}': no such directory",
                        d.display()
                    )));
                }
                d
            }
            None => cwd,
        };
        let state_dir = state_dir.map(|s| dir.join(s));
        Ok(Self {
            dir,
            state_dir,
            json,
        })
    }

    /// The root of the enclosing git work tree (the nearest ancestor holding `.git`),
    /// or the working directory when there is none.
    #[allow(dead_code, reason = "used by the command modules as they land")]
    pub(crate) fn repo_root(&self) -> PathBuf {
        self.dir
            .ancestors()
            .find(|p| p.join(".git").exists())
            .unwrap_or(&self.dir)
            .to_path_buf()
    }

    /// Where squad state lives: `--state-dir`, else `<repo root>/.squad`.
    #[allow(dead_code, reason = "used by the command modules as they land")]
    pub(crate) fn state_dir(&self) -> PathBuf {
        self.state_dir
            .clone()
            .unwrap_or_else(|| self.repo_root().join(".squad"))
    }

    /// Prints one JSON document on stdout.
    pub(crate) fn print_json(&self, value: &serde_json::Value) {
        match serde_json::to_string_pretty(value) {
            Ok(s) => println!("{s}"),
            Err(e) => eprintln!("error: cannot print JSON: {e}"),
        }
    }

    /// Makes `path` relative to the working directory (for `-C`).
    #[allow(dead_code, reason = "used by the command modules as they land")]
    pub(crate) fn resolve(&self, path: &Path) -> PathBuf {
        self.dir.join(path)
    }
}
