//! What every command shares: the working directory, output mode and error reporting.

use std::fmt;
use std::io::{self, Write};
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

/// Prints a formatted line on stdout through [`Ctx::out`]; evaluates to `Result<(), CliError>`.
macro_rules! outln {
    ($ctx:expr) => {
        $ctx.out(format_args!("\n"))
    };
    ($ctx:expr, $($arg:tt)*) => {
        $ctx.out(format_args!("{}\n", format_args!($($arg)*)))
    };
}
pub(crate) use outln;

/// Prints a formatted line on stderr (warnings, notes, progress). A failure to write to stderr
/// is ignored: there is nowhere left to report it, and it must not become a panic.
macro_rules! errln {
    ($($arg:tt)*) => {
        $crate::ctx::write_stderr(format_args!("{}\n", format_args!($($arg)*)))
    };
}
pub(crate) use errln;

/// Writes to stderr, ignoring failures (see [`errln!`]). Every line goes through the
/// redactor ([`redact`]): warnings and errors relay git's, HTTP's and the OS's words.
pub(crate) fn write_stderr(args: fmt::Arguments<'_>) {
    let text = args.to_string();
    let _ = io::stderr().lock().write_all(redact(&text).as_bytes());
}

/// The process's one redactor: [`squad_model::redact`]'s rules plus the secret environment
/// variables as they were when it was first needed.
pub(crate) fn redactor() -> &'static squad_model::redact::Redactor {
    static REDACTOR: std::sync::OnceLock<squad_model::redact::Redactor> =
        std::sync::OnceLock::new();
    REDACTOR.get_or_init(squad_model::redact::Redactor::from_env)
}

/// `text` with every credential replaced (see [`redactor`]).
pub(crate) fn redact(text: &str) -> std::borrow::Cow<'_, str> {
    redactor().redact(text)
}

/// Maps a failure to write to stdout: a reader that went away (closed pipe) ends the command
/// quietly with status 0, as `git log | head` does; anything else (a full disk) is exit 1.
fn stdout_error(e: &io::Error) -> CliError {
    if e.kind() == io::ErrorKind::BrokenPipe {
        CliError::closed_stdout()
    } else {
        CliError::failure(format!("cannot write to stdout: {e}"))
    }
}

/// The error's message followed by its chain of sources (`message: cause: cause`), for failures
/// whose cause (an I/O or git error) the message does not already name.
pub(crate) fn with_sources(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}

/// Flushes stdout; called once when a command ends, so that a buffered tail that cannot be
/// written is reported instead of lost silently at exit.
pub(crate) fn flush_stdout() -> Result<(), CliError> {
    io::stdout().lock().flush().map_err(|e| stdout_error(&e))
}

impl CliError {
    /// Bad usage or invalid input: exit 2, nothing was changed.
    pub(crate) fn usage(message: impl Into<String>) -> Self {
        Self {
            code: 2,
            message: redact(&message.into()).into_owned(),
            hint: None,
        }
    }

    /// Any other failure: exit 1.
    pub(crate) fn failure(message: impl Into<String>) -> Self {
        Self {
            code: 1,
            message: redact(&message.into()).into_owned(),
            hint: None,
        }
    }

    /// Stdout was closed by its reader: a quiet exit with status 0 and no message.
    pub(crate) fn closed_stdout() -> Self {
        Self {
            code: 0,
            message: String::new(),
            hint: None,
        }
    }

    /// Adds a hint line.
    pub(crate) fn with_hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(redact(&hint.into()).into_owned());
        self
    }

    /// The exit code (2 bad input, 1 failure).
    pub(crate) fn code(&self) -> u8 {
        self.code
    }

    /// The message of the `error:` line.
    pub(crate) fn message(&self) -> &str {
        &self.message
    }

    /// The hint line, if any.
    pub(crate) fn hint(&self) -> Option<&str> {
        self.hint.as_deref()
    }

    /// Prints the error to stderr and returns its exit code.
    pub(crate) fn report(&self) -> ExitCode {
        if !self.message.is_empty() {
            errln!("error: {}", self.message);
            if let Some(hint) = &self.hint {
                errln!("hint: {hint}");
            }
        }
        ExitCode::from(self.code)
    }
}

/// `true` when `dir` is a bare git repository (`HEAD`, `objects/` and `core.bare = true` in its
/// `config`): git's own test, without running git. A `.git` directory is not one.
fn is_bare_repo(dir: &Path) -> bool {
    dir.join("HEAD").is_file()
        && dir.join("objects").is_dir()
        && std::fs::read_to_string(dir.join("config")).is_ok_and(|c| {
            c.lines().any(|l| {
                let l = l.trim().to_ascii_lowercase();
                l.replace(' ', "") == "bare=true"
            })
        })
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

    /// The root of the enclosing git work tree (the nearest ancestor holding `.git`).
    ///
    /// Outside a git repository this is a usage error (exit 2) naming the directory, with a hint
    /// to pass `-C`, as git itself answers.
    pub(crate) fn repo_root(&self) -> Result<PathBuf, CliError> {
        self.dir
            .ancestors()
            .find(|p| p.join(".git").exists() || is_bare_repo(p))
            .map(Path::to_path_buf)
            .ok_or_else(|| {
                CliError::usage(format!(
                    "not a git repository (or any of the parent directories): {}",
                    self.dir.display()
                ))
                .with_hint("run inside a git repository, or pass -C <path>")
            })
    }

    /// Where squad state lives: `--state-dir`, else `<repo root>/.squad` (which needs a git
    /// repository with a work tree: a bare repository has no place for it). For commands that
    /// write state; the directory need not exist yet.
    pub(crate) fn state_dir(&self) -> Result<PathBuf, CliError> {
        match &self.state_dir {
            Some(dir) => Ok(dir.clone()),
            None => {
                let root = self.repo_root()?;
                if is_bare_repo(&root) {
                    return Err(CliError::usage(format!(
                        "{} is a bare git repository: it has no work tree to hold .squad/",
                        root.display()
                    ))
                    .with_hint("run in a clone with a work tree, or pass --state-dir <dir>"));
                }
                Ok(root.join(".squad"))
            }
        }
    }

    /// `true` when the repository is bare and no `--state-dir` was given: there is no state
    /// directory to look at.
    pub(crate) fn bare_without_state_dir(&self) -> bool {
        self.state_dir.is_none() && self.repo_root().is_ok_and(|r| is_bare_repo(&r))
    }

    /// The state directory for commands that only read state: an explicit `--state-dir` that
    /// does not exist is an error (exit 2) rather than an empty state.
    pub(crate) fn existing_state_dir(&self) -> Result<PathBuf, CliError> {
        let dir = self.state_dir()?;
        if self.state_dir.is_some() && !dir.is_dir() {
            return Err(CliError::usage(format!(
                "state directory '{}' does not exist",
                dir.display()
            ))
            .with_hint("check --state-dir, or omit it to use <repository>/.squad"));
        }
        Ok(dir)
    }

    /// Prints one JSON document on stdout.
    pub(crate) fn print_json(&self, value: &serde_json::Value) -> Result<(), CliError> {
        let text = serde_json::to_string_pretty(value)
            .map_err(|e| CliError::failure(format!("cannot print JSON: {e}")))?;
        outln!(self, "{text}")
    }

    /// Writes to stdout, the one way commands print: a closed pipe or a full disk becomes a
    /// [`CliError`], never a panic. Use [`outln!`] for lines.
    pub(crate) fn out(&self, args: fmt::Arguments<'_>) -> Result<(), CliError> {
        io::stdout()
            .lock()
            .write_fmt(args)
            .map_err(|e| stdout_error(&e))
    }

    /// Writes raw bytes to stdout (see [`Ctx::out`]).
    pub(crate) fn out_bytes(&self, bytes: &[u8]) -> Result<(), CliError> {
        io::stdout()
            .lock()
            .write_all(bytes)
            .map_err(|e| stdout_error(&e))
    }

    /// Makes `path` relative to the working directory (for `-C`).
    pub(crate) fn resolve(&self, path: &Path) -> PathBuf {
        self.dir.join(path)
    }

    /// The value of a text flag: the text itself, `@FILE` (read relative to the working
    /// directory) or `-` (read from stdin), at most `max` bytes of UTF-8; bad input is exit 2.
    pub(crate) fn text_arg(&self, flag: &str, value: &str, max: u64) -> Result<String, CliError> {
        use std::io::Read;
        let (what, reader): (String, Box<dyn Read>) = match (value, value.strip_prefix('@')) {
            ("-", _) => ("stdin".to_owned(), Box::new(io::stdin())),
            (_, Some(path)) => {
                let path = self.resolve(Path::new(path));
                let file = std::fs::File::open(&path).map_err(|e| {
                    CliError::usage(format!("{flag}: cannot read {}: {e}", path.display()))
                })?;
                (path.display().to_string(), Box::new(file))
            }
            _ => return Ok(value.to_owned()),
        };
        let mut bytes = Vec::new();
        reader
            .take(max.saturating_add(1))
            .read_to_end(&mut bytes)
            .map_err(|e| CliError::usage(format!("{flag}: cannot read {what}: {e}")))?;
        if bytes.len() as u64 > max {
            return Err(CliError::usage(format!(
                "{flag}: {what} is larger than {max} bytes"
            )));
        }
        String::from_utf8(bytes)
            .map_err(|_| CliError::usage(format!("{flag}: {what} is not valid UTF-8")))
    }
}

/// Reports a command-line parsing error the way every other error is reported: one `error:`
/// line and, where clap has a suggestion or the command is known, one `hint:` line; exit 2.
/// `--help` and `--version` print on stdout and exit 0.
pub(crate) fn report_usage_error(e: &clap::Error, root: &clap::Command) -> ExitCode {
    use clap::error::ErrorKind;
    match e.kind() {
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => {
            let mut text = e.render().to_string();
            if !text.ends_with('\n') {
                text.push('\n');
            }
            return match io::stdout().lock().write_all(text.as_bytes()) {
                Ok(()) => ExitCode::SUCCESS,
                Err(err) => stdout_error(&err).report(),
            };
        }
        ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
            let path = command_path(root);
            return CliError::usage(format!("'{path}' needs a subcommand"))
                .with_hint(format!("try '{path} --help'"))
                .report();
        }
        ErrorKind::InvalidUtf8 => {
            return CliError::usage(non_utf8_argument(std::env::args_os().skip(1)))
                .with_hint("arguments must be valid UTF-8 text")
                .report();
        }
        _ => {}
    }
    let text = e.render().to_string();
    // The first paragraph is the error (clap indents what continues it, such as the list of
    // missing arguments); later paragraphs hold tips and the usage line.
    let (head, tail) = text.split_once("\n\n").unwrap_or((&text, ""));
    let message = head
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" ");
    let message = message.strip_prefix("error:").unwrap_or(&message).trim();
    let rest: Vec<&str> = tail.lines().map(str::trim).collect();
    let tips: Vec<&str> = rest
        .iter()
        .filter_map(|l| l.strip_prefix("tip:").map(str::trim))
        .collect();
    let hint = if let Some(similar) = similar_value(e).filter(|_| tips.is_empty()) {
        format!("a similar value exists: '{similar}'")
    } else if tips.is_empty() {
        rest.iter()
            .find_map(|l| l.strip_prefix("Usage:"))
            .map(|usage| {
                let command: Vec<&str> = usage
                    .split_whitespace()
                    .take_while(|w| !w.starts_with(['[', '<', '-']))
                    .collect();
                format!("try '{} --help'", command.join(" "))
            })
            .unwrap_or_else(|| format!("try '{} --help'", command_path(root)))
    } else {
        tips.join("; ")
    };
    CliError::usage(message).with_hint(hint).report()
}

/// For an invalid value of a closed set that clap found no suggestion for (its similarity cut-off
/// misses short values: `ht` for `hot`, `zh` for `zsh`), the valid value one or two edits away
/// (one for values of up to four characters), the closest first.
fn similar_value(e: &clap::Error) -> Option<String> {
    use clap::error::{ContextKind, ContextValue};
    if e.kind() != clap::error::ErrorKind::InvalidValue {
        return None;
    }
    let Some(ContextValue::String(given)) = e.get(ContextKind::InvalidValue) else {
        return None;
    };
    let Some(ContextValue::Strings(valid)) = e.get(ContextKind::ValidValue) else {
        return None;
    };
    valid
        .iter()
        .map(|v| (strsim::damerau_levenshtein(given, v), v))
        .filter(|(d, v)| *d <= if v.chars().count() <= 4 { 1 } else { 2 })
        .min_by_key(|(d, _)| *d)
        .map(|(_, v)| v.clone())
}

/// The subcommand path the command line names (`squad approval request`), for hints.
fn command_path(root: &clap::Command) -> String {
    let mut path = vec![root.get_name().to_owned()];
    let mut current = root;
    for arg in std::env::args_os().skip(1) {
        let Some(word) = arg.to_str() else { break };
        if let Some(sub) = current.find_subcommand(word) {
            path.push(sub.get_name().to_owned());
            current = sub;
        }
    }
    path.join(" ")
}

/// Names the first argument that is not UTF-8: the flag it is the value of, or its position.
fn non_utf8_argument(args: impl Iterator<Item = std::ffi::OsString>) -> String {
    let mut previous: Option<String> = None;
    for (n, arg) in args.enumerate() {
        match arg.to_str() {
            Some(text) => previous = Some(text.to_owned()),
            None => {
                let lossy = arg.to_string_lossy();
                if lossy.starts_with("--") {
                    let flag = lossy.split('=').next().unwrap_or_default();
                    return format!("the value of {flag} is not valid UTF-8");
                }
                return match previous.filter(|p| p.starts_with('-') && p.len() > 1) {
                    Some(flag) => format!("the value of {flag} is not valid UTF-8"),
                    None => format!("argument {} is not valid UTF-8", n + 1),
                };
            }
        }
    }
    "an argument is not valid UTF-8".to_owned()
}

/// A value parser for a whole number in `min..=max`: a negative number or one out of range is
/// refused with the range (exit 2), never read as a flag or wrapped. Pair it with
/// `allow_negative_numbers = true` on the argument so that `-1` reaches it.
pub(crate) fn bounded(min: u64, max: u64) -> impl clap::builder::TypedValueParser<Value = u64> {
    move |text: &str| -> Result<u64, String> {
        let value: i128 = text
            .trim()
            .parse()
            .map_err(|_| format!("{text:?} is not a whole number"))?;
        u64::try_from(value)
            .ok()
            .filter(|v| (min..=max).contains(v))
            .ok_or_else(|| format!("{value} is out of range ({min} to {max})"))
    }
}

/// One year in seconds: the upper bound of every duration flag.
pub(crate) const ONE_YEAR_SECS: u64 = 365 * 24 * 60 * 60;

/// `n` and the noun, in the plural unless `n` is 1: `1 commit`, `2 commits`, `1 entry`,
/// `3 entries`.
pub(crate) fn count<N: std::fmt::Display + PartialEq + From<u8>>(n: N, noun: &str) -> String {
    if n == N::from(1) {
        format!("{n} {noun}")
    } else if let Some(stem) = noun.strip_suffix('y') {
        format!("{n} {stem}ies")
    } else {
        format!("{n} {noun}s")
    }
}

/// A progress spinner on stderr, only when stderr is a terminal.
pub(crate) fn progress_bar() -> Option<indicatif::ProgressBar> {
    if !std::io::IsTerminal::is_terminal(&std::io::stderr()) {
        return None;
    }
    let bar = indicatif::ProgressBar::new_spinner();
    if let Ok(style) = indicatif::ProgressStyle::with_template("{spinner} {msg}: {pos}") {
        bar.set_style(style);
    }
    Some(bar)
}

/// The async runtime of the commands that talk to channels or serve MCP: one thread.
pub(crate) fn runtime() -> Result<tokio::runtime::Runtime, CliError> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| CliError::failure(format!("cannot start the async runtime: {e}")))
}

#[cfg(test)]
mod tests {
    use super::count;

    #[test]
    fn counts_take_the_plural_unless_one() {
        assert_eq!(count(1usize, "commit"), "1 commit");
        assert_eq!(count(0usize, "commit"), "0 commits");
        assert_eq!(count(2u32, "round"), "2 rounds");
        assert_eq!(count(1u64, "entry"), "1 entry");
        assert_eq!(count(3usize, "entry"), "3 entries");
        assert_eq!(count(2usize, "notes ref"), "2 notes refs");
    }
}
