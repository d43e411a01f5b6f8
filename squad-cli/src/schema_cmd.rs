//! `squad schema <name>`: prints a JSON Schema shipped with squad (the note entry and the
//! `notify` object of `state.json` from squad-model, the routing trace from squad-routing).

use squad_model::schema::Schema;

use crate::ctx::{CmdResult, Ctx};

/// The shipped schemas, by name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum SchemaName {
    /// A note entry (one line of a note under `refs/notes/squad/<agent>`).
    NoteEntry,
    /// The `notify` object of `.squad/state.json`.
    NotifyState,
    /// The `approval` object of `.squad/state.json` (runs, pending gates, recent decisions).
    ApprovalState,
    /// A line of a routing trace (`squad route replay`).
    Trace,
}

impl SchemaName {
    /// Every shipped schema, in the order `--help` lists them.
    pub(crate) const ALL: [SchemaName; 4] = [
        SchemaName::NoteEntry,
        SchemaName::NotifyState,
        SchemaName::ApprovalState,
        SchemaName::Trace,
    ];

    /// The name on the command line and in `squad://schema/<name>`.
    pub(crate) fn name(self) -> &'static str {
        match self {
            SchemaName::NoteEntry => Schema::NoteEntry.name(),
            SchemaName::NotifyState => Schema::NotifyState.name(),
            SchemaName::ApprovalState => Schema::ApprovalState.name(),
            SchemaName::Trace => "trace",
        }
    }

    /// The schema's text, as shipped.
    pub(crate) fn text(self) -> &'static str {
        match self {
            SchemaName::NoteEntry => Schema::NoteEntry.text(),
            SchemaName::NotifyState => Schema::NotifyState.text(),
            SchemaName::ApprovalState => Schema::ApprovalState.text(),
            SchemaName::Trace => squad_routing::trace::TRACE_SCHEMA,
        }
    }
}

/// Arguments of `squad schema`.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  squad schema note-entry > note-entry.schema.json\n  squad schema trace --json"
)]
pub(crate) struct Args {
    /// Which schema.
    #[arg(value_enum, value_name = "name")]
    name: SchemaName,
}

pub(crate) fn run(args: &Args, ctx: &Ctx) -> CmdResult {
    let text = args.name.text();
    if ctx.json {
        let value: serde_json::Value = serde_json::from_str(text).map_err(|e| {
            crate::ctx::CliError::failure(format!("shipped schema is not JSON: {e}"))
        })?;
        ctx.print_json(&value)?;
    } else {
        ctx.out(format_args!("{text}"))?;
    }
    Ok(0)
}
