//! `squad completions <shell>` and `squad man`: shell integration generated from the clap tree,
//! so it never drifts from the real flags.

use crate::ctx::{CliError, CmdResult, Ctx};

/// Prints the completion script for `shell`.
pub(crate) fn completions(
    shell: clap_complete::Shell,
    cmd: &mut clap::Command,
    ctx: &Ctx,
) -> CmdResult {
    let mut script = Vec::new();
    clap_complete::generate(shell, cmd, "squad", &mut script);
    ctx.out_bytes(&script)?;
    Ok(0)
}

/// Prints the man page of `squad` (roff).
pub(crate) fn man(cmd: &clap::Command, ctx: &Ctx) -> CmdResult {
    let mut page = Vec::new();
    clap_mangen::Man::new(cmd.clone())
        .render(&mut page)
        .map_err(|e| CliError::failure(format!("cannot render the man page: {e}")))?;
    ctx.out_bytes(&page)?;
    Ok(0)
}
