//! `squad approval configure|request|status|wait|acknowledge-tamper`: a front end over
//! squad-notify. Policy, the wait loop's schedule, the secret check and the state files live in
//! the library; this module parses flags, builds the channels from the environment, drives the
//! library's `Waiter` with a `select!` between stdin and a sleep, and prints.

use std::sync::Arc;

use clap::builder::{PossibleValuesParser, TypedValueParser};
use serde_json::json;
use squad_model::{ChannelKind, GithubTarget, NotifySettings};
use squad_notify::github::RepoSlug;
use squad_notify::host::notify_channels;
use squad_notify::{
    Approvals, ErrorKind, Gate, GateRequest, GateState, InChatChannel, Mode, RequestOutcome, RunId,
    StateDir, SystemClock, Trigger, output_json,
};

use crate::ctx::{CliError, CmdResult, Ctx, errln, outln};

mod wait;

pub(crate) use wait::{Prepared, PreparedWait, prepare_wait, timeout_note, turn_warnings};

const WAIT_HELP: &str = "Example:\n  echo '/approve' | squad approval wait --timeout 600\n\n\
With the github-issue channel it also polls the approval issue every --interval seconds (longer when\nGitHub asks), with GITHUB_TOKEN or GH_TOKEN and GITHUB_API_URL; stdin stays open for in-chat answers.\n\
Lines inside a Markdown block (``` or ~~~ fences, quotes, HTML comments) are never commands.\n\n\
Exit codes: 0 approved or approve-all, 3 changes requested (the note is printed on stdout),\n4 stopped, 5 still pending (timeout or end of input; a timeout never approves), 6 expired,\n1 no pending gate, or notifications.md was tampered with and not yet acknowledged;\n2 bad input, an unknown --run, or several gates pending and neither --gate nor --run.";

/// `squad approval` subcommands.
#[derive(Debug, clap::Subcommand)]
pub(crate) enum Cmd {
    /// Write the `notify` object of state.json (replace semantics). Never takes a webhook URL or token.
    #[command(
        after_help = "Example:\n  squad approval configure --channel github-issue --handle octocat --repo owner/repo\n\n\
--repo defaults to the repository's GitHub remote (origin). The webhook URL and secret are read from\nSQUAD_WEBHOOK_URL and SQUAD_WEBHOOK_SECRET when a ping is sent; they are never arguments and never stored."
    )]
    Configure(ConfigureArgs),
    /// Open a gate if the mode pings at this trigger, notify, and record it as pending.
    #[command(
        after_help = "Example:\n  squad approval request --mode autopilot --trigger impactful-action \\\n    --topic 'Deploy to staging' --awaiting 'approve the deploy' --detail @detail.md\n\n\
Prints the gate id (--json: the gate record), or `no gate: <reason>` when the mode does not ping.\n\
Exit 1 while a gate of the same run is pending, after the run was stopped, or while a tampering of notifications.md\nis not acknowledged; exit 2 for bad input. Nothing is sent before the state files were checked."
    )]
    Request(RequestArgs),
    /// Show the pending gates (one per run), the current run, the last decisions and the state files' health.
    #[command(
        after_help = "Example:\n  squad approval status --json\n  squad approval status --run r-7"
    )]
    Status(StatusArgs),
    /// Wait for an authorized decision on a pending gate (in-chat: reads stdin lines).
    #[command(after_help = WAIT_HELP)]
    Wait(WaitArgs),
    /// Record that a human checked a detected tampering of notifications.md; gates can be requested again.
    #[command(
        after_help = "Example:\n  squad approval acknowledge-tamper --by 'Jane Doe <jane@example.com>'\n\n\
Appends a tamper-acknowledged entry (who, when, what was found) that restarts the hash chain from the\nlog as it is now. Without a recorded tampering it changes nothing (exit 0)."
    )]
    AcknowledgeTamper(AckArgs),
}

/// Arguments of `squad approval configure`.
#[derive(Debug, clap::Args)]
pub(crate) struct ConfigureArgs {
    /// The approval channel.
    #[arg(long, value_name = "CHANNEL", value_parser = wire::<ChannelKind>(&["github-issue", "webhook", "in-chat"]))]
    channel: ChannelKind,
    /// GitHub login to assign and @mention (github-issue).
    #[arg(long, value_name = "LOGIN")]
    handle: Option<String>,
    /// owner/repo hosting the approval issues (github-issue; default: the GitHub remote origin).
    #[arg(long, value_name = "OWNER/REPO")]
    repo: Option<String>,
    /// Courtesy email address (never an approval path).
    #[arg(long, value_name = "ADDR")]
    email: Option<String>,
    /// How many distinct authorized approvers must approve a gate (1 to 100; default 1;
    /// above 1 only with github-issue). The same login counts once; bots and the squad's own
    /// identity never count; one /changes or /stop decides at once.
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = crate::ctx::bounded(1, u64::from(squad_notify::MAX_QUORUM)),
          allow_negative_numbers = true)]
    quorum: u64,
}

/// Arguments of `squad approval request`, and the input of the MCP tool `approval_request`.
#[derive(Debug, clap::Args, serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct RequestArgs {
    /// How the squad runs.
    #[arg(long, value_name = "MODE", value_parser = wire::<Mode>(&Mode::ALL.map(|m| m.as_str())))]
    #[schemars(schema_with = "crate::mcp::schema::mode")]
    mode: Mode,
    /// Why the gate is raised.
    #[arg(long, value_name = "TRIGGER", value_parser = wire::<Trigger>(&Trigger::ALL.map(|t| t.as_str())))]
    #[schemars(schema_with = "crate::mcp::schema::trigger")]
    trigger: Trigger,
    /// One-line summary of the work, at most 200 characters.
    #[arg(long, value_name = "TEXT")]
    topic: String,
    /// What the human is asked to decide: one line, at most 200 characters.
    #[arg(long, value_name = "TEXT")]
    awaiting: String,
    /// A short summary: what happened, what is about to happen, any conditions; at most 2000
    /// characters and 8 lines (at the command line, @FILE reads a file and - reads stdin).
    #[arg(long, value_name = "TEXT")]
    pub(crate) detail: String,
    /// The run the gate belongs to (default: the current run of state.json, or a new one).
    #[arg(long, value_name = "ID")]
    #[serde(default)]
    run: Option<String>,
    /// Seconds until the gate expires (expiry never approves). At most one year (31536000);
    /// default 86400.
    #[arg(long, value_name = "SECS", default_value_t = squad_notify::DEFAULT_EXPIRES_IN_SECS,
          value_parser = crate::ctx::bounded(1, squad_notify::MAX_EXPIRES_IN_SECS), allow_negative_numbers = true)]
    #[serde(default = "default_expires_in")]
    #[schemars(range(min = 1, max = 31_536_000), default = "default_expires_in")]
    expires_in: u64,
}

fn default_expires_in() -> u64 {
    squad_notify::DEFAULT_EXPIRES_IN_SECS
}

/// Arguments of `squad approval status`, and the input of the MCP tool `approval_status`.
#[derive(Debug, clap::Args, serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct StatusArgs {
    /// Show only this run: its pending gate, its runs record and its decisions.
    #[arg(long, value_name = "ID")]
    #[serde(default)]
    pub(crate) run: Option<String>,
}

/// Arguments of `squad approval wait`, and the input of the MCP tool `approval_wait`. None of
/// them can carry a decision: decisions come only from the human, through a channel.
#[derive(Debug, clap::Args, serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct WaitArgs {
    /// The gate to wait for (default: the only pending gate; with several pending, name one).
    #[arg(long, value_name = "ID", conflicts_with = "run")]
    #[serde(default)]
    pub(crate) gate: Option<String>,
    /// Wait for the pending gate of this run.
    #[arg(long, value_name = "ID")]
    #[serde(default)]
    pub(crate) run: Option<String>,
    /// Give up after SECS seconds, leaving the gate pending (the CLI's exit 5; a tool call
    /// returns `state: pending`). Without it the CLI waits until a decision or the end of
    /// input, and a tool call for 30 seconds.
    #[arg(long = "timeout", visible_alias = "timeout-secs", value_name = "SECS",
          value_parser = crate::ctx::bounded(0, crate::ctx::ONE_YEAR_SECS), allow_negative_numbers = true)]
    #[serde(default)]
    #[schemars(range(min = 0, max = 31_536_000))]
    pub(crate) timeout_secs: Option<u64>,
    /// Seconds between polls of remote channels (1 to 86400; default 2).
    #[arg(long, value_name = "SECS", default_value_t = 2, value_parser = crate::ctx::bounded(1, 86_400),
          allow_negative_numbers = true)]
    #[serde(default = "default_interval")]
    #[schemars(range(min = 1, max = 86_400), default = "default_interval")]
    pub(crate) interval: u64,
}

fn default_interval() -> u64 {
    2
}

/// Arguments of `squad approval acknowledge-tamper`.
#[derive(Debug, clap::Args)]
pub(crate) struct AckArgs {
    /// Who acknowledges (default: git's user.name and user.email, else $USER).
    #[arg(long, value_name = "NAME")]
    by: Option<String>,
}

/// A closed set of wire names as a clap value parser: `--help` lists them, a typo gets a
/// suggestion, and the library parses the chosen one.
fn wire<T>(names: &[&'static str]) -> impl TypedValueParser<Value = T>
where
    T: std::str::FromStr + Clone + Send + Sync + 'static,
    T::Err: std::error::Error + Send + Sync + 'static,
{
    PossibleValuesParser::new(names.iter().copied()).try_map(|s| s.parse::<T>())
}

pub(crate) fn run(cmd: Cmd, ctx: &Ctx) -> CmdResult {
    match cmd {
        Cmd::Configure(args) => configure(&args, ctx),
        Cmd::Request(args) => crate::ctx::runtime()?.block_on(request(&args, ctx)),
        Cmd::Status(args) => status(&args, ctx),
        Cmd::Wait(args) => crate::ctx::runtime()?.block_on(wait::wait(&args, ctx)),
        Cmd::AcknowledgeTamper(args) => acknowledge(&args, ctx),
    }
}

fn approvals(dir: std::path::PathBuf) -> Approvals {
    Approvals::new(StateDir::new(dir), Arc::new(SystemClock))
}

/// Maps a library error to the CLI's exit codes (2 for bad input, 1 otherwise).
pub(crate) fn cli_err(e: &squad_notify::Error) -> CliError {
    let err = |hint: &str| CliError::failure(e.to_string()).with_hint(hint);
    match e.kind() {
        ErrorKind::InvalidInput => CliError::usage(e.to_string()),
        ErrorKind::Tampered => {
            err("check notifications.md, then run `squad approval acknowledge-tamper`")
        }
        ErrorKind::Corrupt => err(
            "state.json or notifications.md was damaged, edited by hand or replaced by a link; `squad doctor` names what is wrong",
        ),
        _ => CliError::failure(e.to_string()),
    }
}

/// Runs `git <args>` in the working directory; its trimmed stdout when it succeeds.
fn git(ctx: &Ctx, args: &[&str]) -> Option<String> {
    let out = std::process::Command::new("git")
        .arg("-C")
        .arg(&ctx.dir)
        .args(args)
        .stderr(std::process::Stdio::null())
        .output()
        .ok()?;
    let text = String::from_utf8(out.stdout).ok()?;
    (out.status.success() && !text.trim().is_empty()).then(|| text.trim().to_owned())
}

fn configure(args: &ConfigureArgs, ctx: &Ctx) -> CmdResult {
    let github = match (&args.handle, &args.repo) {
        (Some(handle), repo) => {
            let repo = match repo {
                Some(r) => r.clone(),
                None => {
                    let origin = git(ctx, &["remote", "get-url", "origin"]);
                    let r = origin.as_deref().and_then(RepoSlug::from_remote_url_env);
                    let r = r.map(|r| r.to_string()).ok_or_else(|| {
                        CliError::usage(
                            "--repo is needed: the origin remote is not a GitHub repository",
                        )
                        .with_hint("pass --repo <owner/repo>")
                    })?;
                    errln!("note: --repo defaults to {r} (the origin remote)");
                    r
                }
            };
            Some(GithubTarget {
                handle: handle.trim_start_matches('@').to_owned(),
                repo,
                extra: Default::default(),
            })
        }
        (None, None) => None,
        (None, Some(_)) => return Err(CliError::usage("--repo needs --handle <login>")),
    };
    if args.channel == ChannelKind::GithubIssue && github.is_none() {
        return Err(CliError::usage(
            "--channel github-issue needs --handle <login> (and --repo <owner/repo> outside a GitHub clone)",
        ));
    }
    let mut settings = NotifySettings {
        approval_channel: args.channel,
        enabled: args.channel != ChannelKind::InChat,
        email: args.email.clone().unwrap_or_default(),
        github,
        trigger: None,
        extra: Default::default(),
    };
    let quorum = u32::try_from(args.quorum).unwrap_or(u32::MAX);
    if quorum > 1 && args.channel != ChannelKind::GithubIssue {
        return Err(CliError::usage(format!(
            "--quorum {quorum} needs --channel github-issue: {} has one human and no identity to count",
            args.channel
        )));
    }
    settings.set_quorum(quorum);
    let svc = approvals(ctx.state_dir()?);
    svc.configure(settings.clone()).map_err(|e| cli_err(&e))?;
    if ctx.json {
        ctx.print_json(&settings.to_value())?;
    } else {
        let enabled = if settings.enabled { " (enabled)" } else { "" };
        outln!(ctx, "notify: channel {}{enabled}", args.channel)?;
    }
    if args.channel == ChannelKind::Webhook && std::env::var_os("SQUAD_WEBHOOK_URL").is_none() {
        errln!("note: SQUAD_WEBHOOK_URL is not set; pings degrade to in-chat until it is");
    }
    Ok(0)
}

async fn request(args: &RequestArgs, ctx: &Ctx) -> CmdResult {
    let detail = ctx.text_arg("--detail", &args.detail, MAX_DETAIL_BYTES)?;
    let chat = InChatChannel::new(Box::new(std::io::stderr()), Arc::new(SystemClock));
    let requested = open_gate(args, detail, Arc::new(chat), ctx).await?;
    for line in &requested.messages {
        errln!("{line}");
    }
    if ctx.json {
        ctx.print_json(&requested.json)?;
    } else {
        match &requested.gate {
            Some(gate) => outln!(ctx, "{gate}")?,
            None => outln!(ctx, "no gate: {}", requested.reason.unwrap_or_default())?,
        }
    }
    Ok(0)
}

/// The most bytes `--detail @FILE` or `-` reads.
const MAX_DETAIL_BYTES: u64 = 64 * 1024;

/// What `approval request` did.
pub(crate) struct Requested {
    /// The `--json` document: the gate record, or `{"gate": null, "reason": …}`.
    pub(crate) json: serde_json::Value,
    /// The new gate's id, when a gate was opened (or recorded as pre-approved).
    pub(crate) gate: Option<String>,
    /// Why no gate was opened.
    reason: Option<String>,
    /// `note: …` and `warning: …` lines for the human (the CLI prints them on stderr).
    pub(crate) messages: Vec<String>,
}

/// `approval request` without its printing: `detail` is the text of `--detail` (the CLI reads
/// `@FILE` and `-` first); `chat` receives the in-chat notification.
pub(crate) async fn open_gate(
    args: &RequestArgs,
    detail: String,
    chat: Arc<InChatChannel>,
    ctx: &Ctx,
) -> Result<Requested, CliError> {
    let run = args.run.as_deref().map(RunId::new).transpose();
    if !(1..=squad_notify::MAX_EXPIRES_IN_SECS).contains(&args.expires_in) {
        return Err(CliError::usage(format!(
            "--expires-in: {} is out of range (1 to {})",
            args.expires_in,
            squad_notify::MAX_EXPIRES_IN_SECS
        )));
    }
    let req = GateRequest {
        mode: args.mode,
        trigger: args.trigger,
        topic: args.topic.clone(),
        awaiting: args.awaiting.clone(),
        detail,
    };
    let svc = approvals(ctx.state_dir()?);
    let settings = svc.state().map_err(|e| cli_err(&e))?.notify;
    let built = notify_channels(settings.as_ref(), chat, Arc::new(SystemClock));
    let mut messages: Vec<String> = built.notes.iter().map(|n| format!("note: {n}")).collect();
    let outcome = svc
        .request(
            &req,
            run.map_err(|e| cli_err(&e))?,
            args.expires_in,
            &built.channels,
        )
        .await
        .map_err(|e| cli_err(&e))?;
    let gate = match outcome {
        RequestOutcome::NoGate { reason } => {
            return Ok(Requested {
                json: json!({"gate": null, "reason": reason}),
                gate: None,
                reason: Some(reason.to_owned()),
                messages,
            });
        }
        RequestOutcome::PreApproved(gate) => {
            messages.push(format!(
                "note: gate {} is pre-approved by an earlier /approve-all of run {}; no ping sent",
                gate.id, gate.run
            ));
            gate
        }
        RequestOutcome::Opened { gate, deliveries } => {
            for d in &deliveries {
                match &d.result {
                    Ok(ok) if d.channel == ChannelKind::GithubIssue => {
                        messages.push(format!("note: approval issue {}", ok.approval_ref));
                    }
                    Ok(_) => {}
                    Err(e) => messages.push(format!(
                        "warning: {} channel: {e}; the gate stays pending, approve in-chat",
                        d.channel
                    )),
                }
            }
            gate
        }
    };
    Ok(Requested {
        json: output_json(&gate),
        gate: Some(gate.id.to_string()),
        reason: None,
        messages,
    })
}

/// `approval status` without its printing: the status document (`--json`) and its lines.
pub(crate) fn status_of(args: &StatusArgs, ctx: &Ctx) -> Result<squad_notify::Status, CliError> {
    let run = args
        .run
        .as_deref()
        .map(RunId::new)
        .transpose()
        .map_err(|e| cli_err(&e))?;
    let dir = ctx.existing_state_dir()?;
    let mut st = approvals(dir).status().map_err(|e| cli_err(&e))?;
    if let Some(run) = run {
        if st.state.approval.run(&run).is_none() {
            return Err(CliError::usage(format!(
                "unknown run {run}: state.json records no such run"
            )));
        }
        st.only_run(&run);
    }
    Ok(st)
}

fn status(args: &StatusArgs, ctx: &Ctx) -> CmdResult {
    let st = status_of(args, ctx)?;
    if ctx.json {
        return ctx.print_json(&st.to_json()).map(|()| 0);
    }
    for line in st.lines() {
        outln!(ctx, "{line}")?;
    }
    Ok(0)
}

fn acknowledge(args: &AckArgs, ctx: &Ctx) -> CmdResult {
    let by = args
        .by
        .clone()
        .or_else(|| {
            let name = git(ctx, &["config", "user.name"])?;
            Some(match git(ctx, &["config", "user.email"]) {
                Some(email) => format!("{name} <{email}>"),
                None => name,
            })
        })
        .or_else(|| std::env::var("USER").ok().filter(|u| !u.is_empty()))
        .unwrap_or_else(|| "unknown".to_owned());
    let svc = approvals(ctx.existing_state_dir()?);
    let acked = svc.acknowledge_tamper(&by).map_err(|e| cli_err(&e))?;
    if ctx.json {
        ctx.print_json(&json!({"acknowledged": output_json(&acked), "by": by}))?;
    } else {
        match acked {
            Some(t) => outln!(
                ctx,
                "acknowledged by {by}: {} (detected {})",
                t.problem,
                t.detected
            )?,
            None => outln!(ctx, "nothing to acknowledge: no tampering was detected")?,
        }
    }
    Ok(0)
}

fn exit_code(state: GateState) -> u8 {
    match state {
        GateState::Approved | GateState::ApproveAll => 0,
        GateState::ChangesRequested => 3,
        GateState::Stopped => 4,
        GateState::Pending => 5,
        GateState::Expired => 6,
    }
}

/// The `approval wait --json` document of `gate` as it stands.
pub(crate) fn wait_json(gate: &Gate) -> serde_json::Value {
    let note = gate.decision.as_ref().and_then(|d| d.note.clone());
    json!({
        "gate": gate.id,
        "state": gate.state,
        "note": note,
        "decision": output_json(&gate.decision),
    })
}

/// Prints the decision and returns its exit code. The decision stands whether or not it could be
/// printed: a failure to print is reported on stderr (silently for a closed pipe) and the exit
/// code still tells the decision.
fn report(ctx: &Ctx, gate: &Gate) -> u8 {
    let printed = if ctx.json {
        ctx.print_json(&wait_json(gate))
    } else if gate.state == GateState::ChangesRequested {
        let note = gate.decision.as_ref().and_then(|d| d.note.clone());
        outln!(ctx, "{}", note.unwrap_or_default())
    } else {
        outln!(ctx, "{}", gate.state)
    };
    if let Err(e) = printed {
        let _ = e.report();
    }
    exit_code(gate.state)
}
