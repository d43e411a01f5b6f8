//! `squad approval wait`: sets up a pending gate's wait (shared with the MCP tool
//! `approval_wait`) and drives the library's `Waiter`, with a `select!` between the lines of
//! stdin (fed to the in-chat channel) and the pause the `Waiter` asks for.

use std::io::BufRead;
use std::sync::Arc;
use std::time::Duration;

use squad_model::ChannelKind;
use squad_notify::host::wait_channels;
use squad_notify::{
    Gate, GateId, InChatChannel, Next, NotCommand, PacerOptions, Parsed, RunId, SystemClock, Turn,
    WaitEnd, Waiter,
};

use super::{WaitArgs, approvals, cli_err, report};
use crate::ctx::{CliError, CmdResult, Ctx, errln};

/// A wait, set up: the gate (already decided, or a `Waiter` on its channels).
pub(crate) enum Prepared {
    /// The gate is no longer pending.
    Done(Box<Gate>),
    /// The gate is pending: wait on it.
    Wait(Box<PreparedWait>),
}

/// A pending gate's wait, ready to step.
pub(crate) struct PreparedWait {
    /// The wait.
    pub(crate) waiter: Waiter,
    /// The in-chat channel the host feeds the human's answers into.
    pub(crate) chat: Arc<InChatChannel>,
    /// `true` when the in-chat channel is the only one answers can come from (no GitHub
    /// approval issue is polled).
    pub(crate) in_chat_only: bool,
    /// The gate's GitHub approval issue, when it is polled.
    pub(crate) issue: Option<u64>,
    /// `note: …` lines about the channels.
    pub(crate) messages: Vec<String>,
}

/// Finds the gate `args.gate` names (or the pending one) and sets up its wait, as both the CLI
/// and the MCP tool do: the channels from the settings and the environment, the same rules and
/// authorizer, a new in-chat channel.
pub(crate) async fn prepare_wait(
    args: &WaitArgs,
    timeout: Option<Duration>,
    ctx: &Ctx,
) -> Result<Prepared, CliError> {
    let gate_id = args
        .gate
        .as_deref()
        .map(GateId::new)
        .transpose()
        .map_err(|e| cli_err(&e))?;
    if !(1..=86_400).contains(&args.interval) {
        return Err(CliError::usage(format!(
            "--interval: {} is out of range (1 to 86400)",
            args.interval
        )));
    }
    if args
        .timeout_secs
        .is_some_and(|t| t > crate::ctx::ONE_YEAR_SECS)
    {
        return Err(CliError::usage(format!(
            "--timeout: out of range (0 to {})",
            crate::ctx::ONE_YEAR_SECS
        )));
    }
    let run = args
        .run
        .as_deref()
        .map(RunId::new)
        .transpose()
        .map_err(|e| cli_err(&e))?;
    if gate_id.is_some() && run.is_some() {
        return Err(CliError::usage("give --gate or --run, not both"));
    }
    let svc = approvals(ctx.existing_state_dir()?);
    let gate = match &run {
        Some(run) => svc.target_run(run),
        None => svc.target(gate_id.as_ref()),
    }
    .map_err(|e| cli_err(&e))?;
    if gate.state.is_terminal() {
        return Ok(Prepared::Done(Box::new(gate)));
    }
    if gate.is_expired_at(svc.clock().now()) {
        // Report the expiry at once, never "waiting…" first.
        let expired = svc.expire_if_due(&gate.id).map_err(|e| cli_err(&e))?;
        let gate = match expired {
            Some(g) => g,
            None => svc.target(Some(&gate.id)).map_err(|e| cli_err(&e))?,
        };
        if gate.state.is_terminal() {
            return Ok(Prepared::Done(Box::new(gate)));
        }
    }
    let settings = svc.state().map_err(|e| cli_err(&e))?.notify;
    let chat = Arc::new(InChatChannel::new(
        Box::new(std::io::sink()),
        Arc::new(SystemClock),
    ));
    let clock = Arc::new(SystemClock);
    let setup = wait_channels(&gate, settings.as_ref(), chat.clone(), clock)
        .await
        .map_err(|e| cli_err(&e))?;
    let in_chat_only = setup
        .channels
        .channels()
        .iter()
        .all(|c| c.kind() == ChannelKind::InChat);
    let options = PacerOptions {
        interval: Duration::from_secs(args.interval),
        timeout,
        ..PacerOptions::default()
    };
    let messages = setup.notes.iter().map(|n| format!("note: {n}")).collect();
    let waiter = Waiter::new(
        svc,
        gate,
        &setup.channels,
        setup.rules,
        setup.authorizer,
        &options,
    );
    Ok(Prepared::Wait(Box::new(PreparedWait {
        waiter,
        chat,
        in_chat_only,
        issue: setup.issue,
        messages,
    })))
}

/// The `warning:` lines of one step of a wait (the CLI's and the MCP tool's): the signals
/// that did not count, then the step's warnings.
pub(crate) fn turn_warnings(turn: &Turn) -> impl Iterator<Item = String> + '_ {
    let ignored = turn
        .ignored
        .iter()
        .map(|i| format!("warning: ignored a signal: {}", i.reason));
    ignored.chain(turn.warnings.iter().map(|w| format!("warning: {w}")))
}

/// The `note:` line of a wait that timed out.
pub(crate) fn timeout_note(gate: &Gate) -> String {
    format!(
        "note: timeout; gate {} stays pending (a timeout never approves)",
        gate.id
    )
}

fn spawn_stdin_reader() -> tokio::sync::mpsc::UnboundedReceiver<String> {
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    // A plain thread: stdin reads block, and the process exits without joining it.
    std::thread::spawn(move || {
        for line in std::io::stdin().lock().lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    rx
}

pub(super) async fn wait(args: &WaitArgs, ctx: &Ctx) -> CmdResult {
    let prepared = prepare_wait(args, args.timeout_secs.map(Duration::from_secs), ctx).await?;
    let p = match prepared {
        Prepared::Done(gate) => return Ok(report(ctx, &gate)),
        Prepared::Wait(p) => p,
    };
    let PreparedWait {
        mut waiter,
        chat,
        issue,
        messages,
        ..
    } = *p;
    for line in &messages {
        errln!("{line}");
    }
    let gate = waiter.gate().clone();
    let on_issue = issue.map(|n| format!(", or answer on issue #{n}"));
    errln!(
        "waiting for a decision on gate {} ({}: {}); type /approve, /approve-all, /changes: <note> or /stop{}",
        gate.id,
        gate.trigger,
        gate.topic,
        on_issue.unwrap_or_default()
    );
    let mut lines = spawn_stdin_reader();
    let mut stdin_open = true;
    loop {
        let turn = waiter.step().await.map_err(|e| cli_err(&e))?;
        for line in turn_warnings(&turn) {
            errln!("{line}");
        }
        let pause = match turn.next {
            Next::Pause(pause) => pause,
            Next::Done(end) => {
                match &end {
                    WaitEnd::TimedOut(g) => errln!("{}", timeout_note(g)),
                    WaitEnd::InputEnded(g) => {
                        errln!("note: end of input; gate {} stays pending", g.id);
                    }
                    _ => {}
                }
                return Ok(report(ctx, end.gate()));
            }
            _ => Duration::ZERO,
        };
        if stdin_open {
            tokio::select! {
                line = lines.recv() => match line {
                    Some(l) => {
                        if chat.feed(&l) == Parsed::Note(NotCommand::InsideBlock)
                            && l.trim_start().starts_with('/')
                        {
                            errln!("note: that line is inside a Markdown block (a fence or a quote): not a command");
                        }
                    }
                    None => {
                        stdin_open = false;
                        chat.close();
                    }
                },
                () = tokio::time::sleep(pause) => {}
            }
        } else {
            tokio::time::sleep(pause).await;
        }
    }
}
