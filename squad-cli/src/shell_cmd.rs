//! `squad completions <shell>` and `squad man`: shell integration generated from the clap tree,
//! so it never drifts from the real flags.

use std::path::PathBuf;

use crate::ctx::{CliError, CmdResult, Ctx, outln};

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

/// Arguments of `squad man`.
#[derive(Debug, clap::Args)]
pub(crate) struct ManArgs {
    /// The command whose page to print, e.g. `notes write` (page squad-notes-write(1));
    /// without one, the page of `squad` itself.
    #[arg(value_name = "command")]
    command: Vec<String>,
    /// Write every page (squad.1, squad-notes.1, squad-notes-write.1, …) into DIR, created if
    /// missing, and print their file names.
    #[arg(long, value_name = "DIR", conflicts_with = "command")]
    dir: Option<PathBuf>,
}

/// The man page tree: no `help` subcommand (it has no page), built so that every command knows
/// its page name (`squad-notes-write`).
fn page_tree(cmd: &clap::Command) -> clap::Command {
    fn no_help(cmd: clap::Command) -> clap::Command {
        cmd.disable_help_subcommand(true).mut_subcommands(no_help)
    }
    let mut cmd = no_help(cmd.clone());
    cmd.build();
    cmd
}

/// Every command of the tree, parents first.
fn all_commands(cmd: &clap::Command) -> Vec<&clap::Command> {
    let mut out = vec![cmd];
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        out.extend(all_commands(sub));
    }
    out
}

/// The page name of a built command (`squad-notes-write`).
fn page_name(cmd: &clap::Command) -> &str {
    cmd.get_display_name().unwrap_or_else(|| cmd.get_name())
}

/// Roff text with its dashes and backslashes escaped.
fn roff_escape(text: &str) -> String {
    text.replace('\\', "\\e").replace('-', "\\-")
}

/// The SYNOPSIS line, every option with its value (`[-C <path>]`), which clap_mangen leaves out.
fn synopsis(cmd: &clap::Command) -> String {
    let name = cmd.get_bin_name().unwrap_or_else(|| cmd.get_name());
    let mut line = format!("\\fB{}\\fR", roff_escape(name));
    let value = |arg: &clap::Arg| -> String {
        let takes_value = arg.get_num_args().is_some_and(|n| n.takes_values());
        match arg.get_value_names() {
            Some(names) if takes_value => names
                .iter()
                .map(|n| format!(" <\\fI{}\\fR>", roff_escape(n)))
                .collect(),
            _ => String::new(),
        }
    };
    let mut opts: Vec<&clap::Arg> = cmd
        .get_arguments()
        .filter(|a| !a.is_hide_set() && !a.is_positional())
        .collect();
    opts.sort_by_key(|a| a.is_required_set());
    for arg in opts {
        let flag = match (arg.get_short(), arg.get_long()) {
            (Some(s), Some(l)) => format!("\\fB\\-{s}\\fR|\\fB\\-\\-{}\\fR", roff_escape(l)),
            (Some(s), None) => format!("\\fB\\-{s}\\fR"),
            (None, Some(l)) => format!("\\fB\\-\\-{}\\fR", roff_escape(l)),
            (None, None) => continue,
        };
        let repeat = if matches!(
            arg.get_action(),
            clap::ArgAction::Count | clap::ArgAction::Append
        ) {
            "..."
        } else {
            ""
        };
        let text = format!("{flag}{}", value(arg));
        if arg.is_required_set() {
            line.push_str(&format!(" {text}{repeat}"));
        } else {
            line.push_str(&format!(" [{text}]{repeat}"));
        }
    }
    for arg in cmd.get_positionals().filter(|a| !a.is_hide_set()) {
        let names = arg
            .get_value_names()
            .map_or_else(|| arg.get_id().to_string(), |n| n.join(" "));
        let many = arg.get_num_args().is_some_and(|n| n.max_values() > 1);
        let text = format!(
            "<\\fI{}\\fR>{}",
            roff_escape(&names),
            if many { "..." } else { "" }
        );
        if arg.is_required_set() {
            line.push_str(&format!(" {text}"));
        } else {
            line.push_str(&format!(" [{text}]"));
        }
    }
    if cmd.has_subcommands() {
        let name = cmd.get_subcommand_value_name().unwrap_or("command");
        line.push_str(&format!(" <\\fI{}\\fR>", roff_escape(name)));
    }
    line
}

/// The roff page of one built command.
fn render(cmd: &clap::Command) -> Result<Vec<u8>, CliError> {
    let err = |e: std::io::Error| CliError::failure(format!("cannot render the man page: {e}"));
    let man =
        clap_mangen::Man::new(cmd.clone()).source(format!("squad {}", env!("CARGO_PKG_VERSION")));
    let mut page = Vec::new();
    man.render_title(&mut page).map_err(err)?;
    man.render_name_section(&mut page).map_err(err)?;
    page.extend_from_slice(format!(".SH SYNOPSIS\n{}\n", synopsis(cmd)).as_bytes());
    man.render_description_section(&mut page).map_err(err)?;
    if cmd.get_arguments().any(|a| !a.is_hide_set()) {
        man.render_options_section(&mut page).map_err(err)?;
    }
    if cmd.get_subcommands().any(|s| !s.is_hide_set()) {
        man.render_subcommands_section(&mut page).map_err(err)?;
    }
    if cmd.get_after_help().is_some() || cmd.get_after_long_help().is_some() {
        man.render_extra_section(&mut page).map_err(err)?;
    }
    if cmd.get_version().is_some() {
        man.render_version_section(&mut page).map_err(err)?;
    }
    // Each section rendered alone repeats roff's two-line preamble: keep the first.
    let text = String::from_utf8_lossy(&page).into_owned();
    let mut seen = false;
    let mut out = String::with_capacity(text.len());
    let mut lines = text.lines().peekable();
    while let Some(line) = lines.next() {
        if line.starts_with(".ie \\n(.g .ds Aq")
            && lines.peek().is_some_and(|l| l.starts_with(".el .ds Aq"))
        {
            let el = lines.next().unwrap_or_default();
            if seen {
                continue;
            }
            seen = true;
            out.push_str(line);
            out.push('\n');
            out.push_str(el);
            out.push('\n');
            continue;
        }
        out.push_str(line);
        out.push('\n');
    }
    Ok(out.into_bytes())
}

/// Prints one man page (roff), or with `--dir` writes them all.
pub(crate) fn man(args: &ManArgs, cmd: &clap::Command, ctx: &Ctx) -> CmdResult {
    let tree = page_tree(cmd);
    if let Some(dir) = &args.dir {
        return write_all(&tree, &ctx.resolve(dir), ctx);
    }
    let mut page = &tree;
    for (depth, word) in args.command.iter().enumerate() {
        let Some(sub) = page.get_subcommands().find(|s| {
            !s.is_hide_set() && (s.get_name() == word || s.get_all_aliases().any(|a| a == word))
        }) else {
            let known: Vec<&str> = page
                .get_subcommands()
                .map(clap::Command::get_name)
                .collect();
            let path = args.command[..depth].join(" ");
            let within = if path.is_empty() {
                "squad".to_owned()
            } else {
                format!("squad {path}")
            };
            let message = if known.is_empty() {
                format!("'{within}' has no subcommand '{word}', so no page")
            } else {
                format!(
                    "'{within}' has no subcommand '{word}' (it has: {})",
                    known.join(", ")
                )
            };
            return Err(CliError::usage(message)
                .with_hint("`squad man --dir <dir>` writes every page there is"));
        };
        page = sub;
    }
    ctx.out_bytes(&render(page)?)?;
    Ok(0)
}

/// Writes every page into `dir`, each through a temporary file renamed into place.
fn write_all(tree: &clap::Command, dir: &std::path::Path, ctx: &Ctx) -> CmdResult {
    let io = |what: &str, path: &std::path::Path, e: std::io::Error| {
        CliError::failure(format!("cannot {what} '{}': {e}", path.display()))
    };
    std::fs::create_dir_all(dir).map_err(|e| io("create the directory", dir, e))?;
    let mut names = Vec::new();
    for cmd in all_commands(tree) {
        let name = format!("{}.1", page_name(cmd));
        let page = render(cmd)?;
        let path = dir.join(&name);
        let tmp = dir.join(format!(".{name}.tmp-{}", std::process::id()));
        std::fs::write(&tmp, &page).map_err(|e| io("write", &tmp, e))?;
        if let Err(e) = std::fs::rename(&tmp, &path) {
            let _ = std::fs::remove_file(&tmp);
            return Err(io("write", &path, e));
        }
        names.push(name);
    }
    if ctx.json {
        ctx.print_json(&serde_json::json!({ "dir": dir.display().to_string(), "pages": names }))?;
    } else {
        for name in &names {
            outln!(ctx, "{}", dir.join(name).display())?;
        }
    }
    Ok(0)
}
