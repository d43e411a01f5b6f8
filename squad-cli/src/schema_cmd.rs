//! `squad schema <name>`: prints a JSON Schema shipped with squad-model.

use squad_model::schema::Schema;

use crate::ctx::{CliError, CmdResult, Ctx};

/// Arguments of `squad schema`.
#[derive(Debug, clap::Args)]
#[command(after_help = "Example:\n  squad schema note-entry > note-entry.schema.json")]
pub(crate) struct Args {
    /// Which schema: note-entry or notify-state.
    #[arg(value_name = "name")]
    name: String,
}

pub(crate) fn run(args: &Args, ctx: &Ctx) -> CmdResult {
    let schema = Schema::ALL
        .into_iter()
        .find(|s| s.name() == args.name)
        .ok_or_else(|| {
            CliError::usage(format!(
                "unknown schema {:?}: expected one of {}",
                args.name,
                Schema::ALL.map(|s| s.name()).join(", ")
            ))
        })?;
    if ctx.json {
        let value: serde_json::Value = serde_json::from_str(schema.text())
            .map_err(|e| CliError::failure(format!("shipped schema is not JSON: {e}")))?;
        ctx.print_json(&value)?;
    } else {
        ctx.out(format_args!("{}", schema.text()))?;
    }
    Ok(0)
}
