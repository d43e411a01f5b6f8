//! The one tracing subscriber of the process: off by default; `-v` / `-vv` or `RUST_LOG` turn
//! it on, writing to stderr (stdout stays the command's output). The libraries only emit spans
//! and events; they never install a subscriber, and no secret ever reaches one.

use std::io::{self, Write};

use tracing_subscriber::EnvFilter;

/// The crates whose events `-v` shows.
const CRATES: [&str; 7] = [
    "squad",
    "squad_fs",
    "squad_notes",
    "squad_notify",
    "squad_memory",
    "squad_routing",
    "squad_model",
];

/// Installs the subscriber when asked for: `RUST_LOG` when set (any directive), else `info`
/// for our crates at `-v` and `debug` at `-vv` (`trace` beyond).
pub(crate) fn init(verbose: u8) {
    let filter = match std::env::var("RUST_LOG") {
        Ok(spec) if !spec.trim().is_empty() => EnvFilter::new(spec),
        _ if verbose == 0 => return,
        _ => {
            let level = match verbose {
                1 => "info",
                2 => "debug",
                _ => "trace",
            };
            EnvFilter::new(
                CRATES
                    .iter()
                    .map(|c| format!("{c}={level}"))
                    .collect::<Vec<_>>()
                    .join(","),
            )
        }
    };
    // A second subscriber cannot be installed; there is none before this one.
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(|| RedactingStderr { line: Vec::new() })
        .with_ansi(false)
        .with_target(true)
        .try_init();
}

/// Stderr, one log line at a time, redacted by the process's redactor ([`crate::ctx::redact`]):
/// dependencies log too (HTTP clients log the addresses they connect to), so redaction happens
/// on the way out, for every line whatever its source.
struct RedactingStderr {
    line: Vec<u8>,
}

impl Write for RedactingStderr {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.line.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        if !self.line.is_empty() {
            let text = String::from_utf8_lossy(&self.line);
            let clean = crate::ctx::redact(&text).into_owned();
            self.line.clear();
            // A log line that cannot be written is dropped, never a panic.
            let _ = io::stderr().lock().write_all(clean.as_bytes());
        }
        Ok(())
    }
}

impl Drop for RedactingStderr {
    fn drop(&mut self) {
        let _ = self.flush();
    }
}
