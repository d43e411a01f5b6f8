//! `squad approval configure|request|status|wait`: approval gates over squad-notify.

use std::io::BufRead;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use squad_model::{ChannelKind, GithubTarget, NotifySettings};
use squad_notify::github::GithubIssueChannel;
use squad_notify::webhook::{WebhookChannel, WebhookConfig};
use squad_notify::{
    ApprovalChannel, Approvals, ApproverRules, Authorizer, ErrorKind, FanOut, Gate, GateId,
    GateRequest, GateState, Identity, InChatChannel, Mode, RequestOutcome, RunId, StateDir,
    StaticAuthorizer, SystemClock, Trigger, verify_log,
};

use crate::ctx::{CliError, CmdResult, Ctx, errln, outln};

/// `squad approval` subcommands.
#[derive(Debug, clap::Subcommand)]
pub(crate) enum Cmd {
    /// Write the `notify` object of state.json (replace semantics). Never takes a webhook URL or token.
    #[command(
        after_help = "Example:\n  squad approval configure --channel github-issue --handle octocat --repo owner/repo\n\n\
The webhook URL and secret are read from SQUAD_WEBHOOK_URL and SQUAD_WEBHOOK_SECRET when a ping is sent;\nthey are never arguments and never stored."
    )]
    Configure(ConfigureArgs),
    /// Open a gate if the mode pings at this trigger, notify, and record it as pending.
    #[command(
        after_help = "Example:\n  squad approval request --mode autopilot --trigger impactful-action \\\n    --topic 'Deploy to staging' --awaiting 'approve the deploy' --detail 'Migrations ready.'\n\n\
Prints the gate id (--json: the gate record), or `no gate: <reason>` when the mode does not ping.\nExit 1 while a gate is pending or after the run was stopped; exit 2 for bad input."
    )]
    Request(RequestArgs),
    /// Show the pending gate, the current run and the last decisions.
    #[command(after_help = "Example:\n  squad approval status --json")]
    Status,
    /// Wait for an authorized decision on the pending gate (in-chat: reads stdin lines).
    #[command(
        after_help = "Example:\n  echo '/approve' | squad approval wait --timeout 600\n\n\
With the github-issue channel it also polls the approval issue every --interval seconds (longer when\nGitHub asks), with GITHUB_TOKEN or GH_TOKEN and GITHUB_API_URL; stdin stays open for in-chat answers.\n\n\
Exit codes: 0 approved or approve-all, 3 changes requested (the note is printed on stdout),\n4 stopped, 5 still pending (timeout or end of input; a timeout never approves), 6 expired,\n1 no pending gate."
    )]
    Wait(WaitArgs),
}

/// Arguments of `squad approval configure`.
#[derive(Debug, clap::Args)]
pub(crate) struct ConfigureArgs {
    /// The approval channel: github-issue, webhook or in-chat.
    #[arg(long, value_name = "CHANNEL")]
    channel: String,
    /// GitHub login to assign and @mention (github-issue).
    #[arg(long, value_name = "LOGIN")]
    handle: Option<String>,
    /// owner/repo hosting the approval issues (github-issue).
    #[arg(long, value_name = "OWNER/REPO")]
    repo: Option<String>,
    /// Courtesy email address (never an approval path).
    #[arg(long, value_name = "ADDR")]
    email: Option<String>,
}

/// Arguments of `squad approval request`.
#[derive(Debug, clap::Args)]
pub(crate) struct RequestArgs {
    /// autopilot, interactive or autonomous.
    #[arg(long)]
    mode: String,
    /// final-outcome, impactful-action, risk-gate, step:research, step:plan, step:council,
    /// step:implement, step:review or escalation.
    #[arg(long)]
    trigger: String,
    /// One-line summary of the work.
    #[arg(long)]
    topic: String,
    /// The decision the human must make.
    #[arg(long)]
    awaiting: String,
    /// A short summary: what happened, what is about to happen, any conditions.
    #[arg(long)]
    detail: String,
    /// The run the gate belongs to (default: the current run of state.json, or a new one).
    #[arg(long, value_name = "ID")]
    run: Option<String>,
    /// Seconds until the gate expires (expiry never approves).
    /// At most one year (31536000).
    #[arg(long, value_name = "SECS", default_value_t = squad_notify::DEFAULT_EXPIRES_IN_SECS,
          value_parser = crate::ctx::bounded(1, crate::ctx::ONE_YEAR_SECS), allow_negative_numbers = true)]
    expires_in: u64,
}

/// Arguments of `squad approval wait`.
#[derive(Debug, clap::Args)]
pub(crate) struct WaitArgs {
    /// The gate to wait for (default: the pending gate).
    #[arg(long, value_name = "ID")]
    gate: Option<String>,
    /// Give up after SECS seconds (exit 5; the gate stays pending).
    #[arg(long, value_name = "SECS", value_parser = crate::ctx::bounded(0, crate::ctx::ONE_YEAR_SECS),
          allow_negative_numbers = true)]
    timeout: Option<u64>,
    /// Seconds between polls of remote channels.
    #[arg(long, value_name = "SECS", default_value_t = 2, value_parser = crate::ctx::bounded(1, 86_400),
          allow_negative_numbers = true)]
    interval: u64,
}

pub(crate) fn run(cmd: Cmd, ctx: &Ctx) -> CmdResult {
    match cmd {
        Cmd::Configure(args) => configure(&args, ctx),
        Cmd::Request(args) => runtime()?.block_on(request(&args, ctx)),
        Cmd::Status => status(ctx),
        Cmd::Wait(args) => runtime()?.block_on(wait(&args, ctx)),
    }
}

fn runtime() -> Result<tokio::runtime::Runtime, CliError> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| CliError::failure(format!("cannot start the async runtime: {e}")))
}

fn approvals(ctx: &Ctx) -> Result<Approvals, CliError> {
    Ok(Approvals::new(
        StateDir::new(ctx.state_dir()?),
        Arc::new(SystemClock),
    ))
}

/// The service over an existing state directory, for commands that only read state.
fn existing_approvals(ctx: &Ctx) -> Result<Approvals, CliError> {
    Ok(Approvals::new(
        StateDir::new(ctx.existing_state_dir()?),
        Arc::new(SystemClock),
    ))
}

/// Maps a library error to the CLI's exit codes (2 for bad input, 1 otherwise).
fn cli_err(e: &squad_notify::Error) -> CliError {
    match e.kind() {
        ErrorKind::InvalidInput => CliError::usage(e.to_string()),
        ErrorKind::Corrupt => CliError::failure(e.to_string())
            .with_hint("state.json or notifications.md was damaged or edited by hand"),
        _ => CliError::failure(e.to_string()),
    }
}

fn looks_like_secret(v: &str) -> bool {
    let l = v.to_ascii_lowercase();
    l.contains("://")
        || l.starts_with("ghp_")
        || l.starts_with("github_pat_")
        || l.starts_with("xox")
}

fn configure(args: &ConfigureArgs, ctx: &Ctx) -> CmdResult {
    let channel: ChannelKind = args
        .channel
        .parse()
        .map_err(|e: squad_model::Error| CliError::usage(e.to_string()))?;
    for (flag, v) in [
        ("--handle", &args.handle),
        ("--repo", &args.repo),
        ("--email", &args.email),
    ] {
        if v.as_deref().is_some_and(looks_like_secret) {
            // Never echo the value: it may be a secret.
            return Err(CliError::usage(format!(
                "{flag} looks like a URL or a token; configure never takes a webhook URL or token"
            ))
            .with_hint(
                "set SQUAD_WEBHOOK_URL (and SQUAD_WEBHOOK_SECRET) in the environment instead",
            ));
        }
    }
    let github = match (&args.handle, &args.repo) {
        (Some(handle), Some(repo)) => Some(GithubTarget {
            handle: handle.trim_start_matches('@').to_owned(),
            repo: repo.clone(),
            extra: Default::default(),
        }),
        (None, None) => None,
        _ => {
            return Err(CliError::usage("--handle and --repo go together"));
        }
    };
    if channel == ChannelKind::GithubIssue && github.is_none() {
        return Err(CliError::usage(
            "--channel github-issue needs --handle <login> and --repo <owner/repo>",
        ));
    }
    let settings = NotifySettings {
        approval_channel: channel,
        enabled: channel != ChannelKind::InChat,
        email: args.email.clone().unwrap_or_default(),
        github,
        trigger: None,
        extra: Default::default(),
    };
    let settings = NotifySettings::from_value(settings.to_value())
        .map_err(|e| CliError::usage(format!("invalid notify settings: {e}")))?;
    approvals(ctx)?
        .configure(settings.clone())
        .map_err(|e| cli_err(&e))?;
    if ctx.json {
        ctx.print_json(&settings.to_value())?;
    } else {
        outln!(
            ctx,
            "notify: channel {channel}{}",
            if settings.enabled { " (enabled)" } else { "" }
        )?;
    }
    if channel == ChannelKind::Webhook && std::env::var_os("SQUAD_WEBHOOK_URL").is_none() {
        errln!("note: SQUAD_WEBHOOK_URL is not set; pings degrade to in-chat until it is");
    }
    Ok(0)
}

fn webhook_config() -> WebhookConfig {
    let mut c = WebhookConfig::default();
    if let Some(ms) = std::env::var("SQUAD_WEBHOOK_TIMEOUT_MS")
        .ok()
        .and_then(|v| v.parse().ok())
    {
        c.timeout = Duration::from_millis(ms);
    }
    if let Some(n) = std::env::var("SQUAD_WEBHOOK_RETRIES")
        .ok()
        .and_then(|v| v.parse().ok())
    {
        c.retries = n;
    }
    c
}

/// The github-issue channel, when it is configured and a token is set; otherwise says why it
/// degrades to in-chat.
fn github_channel(settings: Option<&NotifySettings>) -> Option<Arc<GithubIssueChannel>> {
    let s = settings.filter(|s| s.approval_channel == ChannelKind::GithubIssue)?;
    match GithubIssueChannel::from_env(s, Arc::new(SystemClock)) {
        Ok(c) => Some(Arc::new(c)),
        Err(e) => {
            errln!("note: the github-issue channel degrades to in-chat: {e}");
            None
        }
    }
}

/// The configured channel (when it can work here) plus in-chat, which is always available.
fn channels(settings: Option<&NotifySettings>, chat: Arc<InChatChannel>) -> FanOut {
    let mut fan = FanOut::new();
    match settings.map(|s| s.approval_channel) {
        Some(ChannelKind::Webhook) => {
            match WebhookChannel::from_env(webhook_config(), Arc::new(SystemClock)) {
                Ok(w) if w.is_configured() => fan = fan.with(Arc::new(w)),
                Ok(_) => errln!(
                    "note: the webhook channel degrades to in-chat: SQUAD_WEBHOOK_URL is not set"
                ),
                Err(e) => errln!("note: the webhook channel degrades to in-chat: {e}"),
            }
        }
        Some(ChannelKind::GithubIssue) => {
            if let Some(gh) = github_channel(settings) {
                fan = fan.with(gh);
            }
        }
        _ => {}
    }
    fan.with(chat)
}

fn gate_json(g: &Gate) -> Value {
    serde_json::to_value(g).unwrap_or(Value::Null)
}

async fn request(args: &RequestArgs, ctx: &Ctx) -> CmdResult {
    let mode: Mode = args.mode.parse().map_err(|e| cli_err(&e))?;
    let trigger: Trigger = args.trigger.parse().map_err(|e| cli_err(&e))?;
    let run = args
        .run
        .as_deref()
        .map(RunId::new)
        .transpose()
        .map_err(|e| cli_err(&e))?;
    let req = GateRequest {
        mode,
        trigger,
        topic: args.topic.clone(),
        awaiting: args.awaiting.clone(),
        detail: args.detail.clone(),
    };
    let svc = approvals(ctx)?;
    let settings = svc.state().map_err(|e| cli_err(&e))?.notify;
    let chat = Arc::new(InChatChannel::new(
        Box::new(std::io::stderr()),
        Arc::new(SystemClock),
    ));
    let fan = channels(settings.as_ref(), chat);
    let outcome = svc
        .request(&req, run, args.expires_in, &fan)
        .await
        .map_err(|e| cli_err(&e))?;
    match outcome {
        RequestOutcome::NoGate { reason } => {
            if ctx.json {
                ctx.print_json(&json!({"gate": null, "reason": reason}))?;
            } else {
                outln!(ctx, "no gate: {reason}")?;
            }
        }
        RequestOutcome::PreApproved(gate) => {
            errln!(
                "note: gate {} is pre-approved by an earlier /approve-all of run {}; no ping sent",
                gate.id,
                gate.run
            );
            print_gate(ctx, &gate)?;
        }
        RequestOutcome::Opened { gate, deliveries } => {
            for d in &deliveries {
                if let Ok(ok) = &d.result
                    && d.channel == ChannelKind::GithubIssue
                {
                    errln!("note: approval issue {}", ok.approval_ref);
                }
                if let Err(e) = &d.result {
                    errln!(
                        "warning: {} channel: {e}; the gate stays pending, approve in-chat",
                        d.channel
                    );
                }
            }
            print_gate(ctx, &gate)?;
        }
    }
    Ok(0)
}

fn print_gate(ctx: &Ctx, gate: &Gate) -> Result<(), CliError> {
    if ctx.json {
        ctx.print_json(&gate_json(gate))
    } else {
        outln!(ctx, "{}", gate.id)
    }
}

fn status(ctx: &Ctx) -> CmdResult {
    let svc = existing_approvals(ctx)?;
    let doc = svc.state().map_err(|e| cli_err(&e))?;
    let a = &doc.approval;
    let log = match std::fs::read_to_string(svc.dir().log_path()) {
        Ok(text) => Some(verify_log(&text, a.log_head.as_deref())),
        Err(_) => None,
    };
    let recent: Vec<&Gate> = a.recent.iter().rev().take(5).collect();
    if ctx.json {
        let log_json = match &log {
            None => Value::Null,
            Some(Ok(r)) => json!({"entries": r.entries, "intact": true}),
            Some(Err(e)) => json!({"intact": false, "problem": e.to_string()}),
        };
        ctx.print_json(&json!({
            "pending": a.pending_gate.as_ref().map(gate_json),
            "currentRun": a.current_run,
            "runs": a.runs,
            "recent": recent.iter().map(|g| gate_json(g)).collect::<Vec<_>>(),
            "notify": doc.notify.as_ref().map(NotifySettings::to_value),
            "log": log_json,
        }))?;
    } else {
        let channel = doc
            .notify
            .as_ref()
            .map_or(ChannelKind::InChat, |n| n.approval_channel);
        outln!(ctx, "channel: {channel}")?;
        match &a.current_run {
            Some(r) => {
                let stopped = a.run(r).is_some_and(|r| r.stopped.is_some());
                outln!(ctx, "run: {r}{}", if stopped { " (stopped)" } else { "" })?;
            }
            None => outln!(ctx, "run: none")?,
        }
        match &a.pending_gate {
            Some(g) => outln!(
                ctx,
                "pending: {} {} ({}) — {} — awaiting: {} — expires {}",
                g.id,
                g.trigger,
                g.mode,
                g.topic,
                g.awaiting,
                g.expires
            )?,
            None => outln!(ctx, "pending: none")?,
        }
        for g in recent {
            let at = g
                .decision
                .as_ref()
                .map(|d| d.at.to_string())
                .unwrap_or_default();
            outln!(
                ctx,
                "decided: {} {} {} at {at} — {}",
                g.id,
                g.state,
                g.trigger,
                g.topic
            )?;
        }
        match &log {
            Some(Err(e)) => outln!(ctx, "log: TAMPERED: {e}")?,
            Some(Ok(r)) => outln!(ctx, "log: {} entries, hash chain intact", r.entries)?,
            None => outln!(ctx, "log: none")?,
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

/// Prints the decision and returns its exit code. The decision stands whether or not it could be
/// printed: a failure to print is reported on stderr (silently for a closed pipe) and the exit
/// code still tells the decision.
fn report(ctx: &Ctx, gate: &Gate) -> u8 {
    if let Err(e) = print_decision(ctx, gate) {
        let _ = e.report();
    }
    exit_code(gate.state)
}

fn print_decision(ctx: &Ctx, gate: &Gate) -> Result<(), CliError> {
    let note = gate.decision.as_ref().and_then(|d| d.note.clone());
    if ctx.json {
        ctx.print_json(&json!({
            "gate": gate.id,
            "state": gate.state,
            "note": note,
            "decision": gate.decision,
        }))?;
    } else if gate.state == GateState::ChangesRequested {
        outln!(ctx, "{}", note.unwrap_or_default())?;
    } else {
        outln!(ctx, "{}", gate.state)?;
    }
    Ok(())
}

fn spawn_stdin_reader() -> tokio::sync::mpsc::UnboundedReceiver<String> {
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    // A plain thread: stdin reads block, and the process exits without joining it.
    std::thread::spawn(move || {
        let stdin = std::io::stdin();
        for line in stdin.lock().lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    rx
}

async fn wait(args: &WaitArgs, ctx: &Ctx) -> CmdResult {
    let gate_id = args
        .gate
        .as_deref()
        .map(GateId::new)
        .transpose()
        .map_err(|e| cli_err(&e))?;
    let svc = existing_approvals(ctx)?;
    let gate = svc.target(gate_id.as_ref()).map_err(|e| cli_err(&e))?;
    if gate.state.is_terminal() {
        return Ok(report(ctx, &gate));
    }
    let doc = svc.state().map_err(|e| cli_err(&e))?;
    let handle_rules = ApproverRules {
        approver: doc
            .notify
            .as_ref()
            .and_then(|n| n.github.as_ref())
            .map(|g| Identity::login(&g.handle)),
        own_identities: Vec::new(),
    };
    // The gate's approval issue, when it was opened on GitHub and a token is set here.
    let github = if gate
        .deliveries
        .iter()
        .any(|d| d.channel == ChannelKind::GithubIssue)
    {
        github_channel(doc.notify.as_ref())
    } else {
        None
    };
    let (rules, authorizer): (ApproverRules, Arc<dyn Authorizer>) = match &github {
        Some(gh) => (
            gh.approver_rules(&gate).await.map_err(|e| cli_err(&e))?,
            gh.clone(),
        ),
        None => (handle_rules, Arc::new(StaticAuthorizer::new())),
    };
    let chat = Arc::new(InChatChannel::new(
        Box::new(std::io::sink()),
        Arc::new(SystemClock),
    ));
    let fan = FanOut::new().with(chat.clone());
    errln!(
        "waiting for a decision on gate {} ({}: {}); type /approve, /approve-all, /changes: <note> or /stop{}",
        gate.id,
        gate.trigger,
        gate.topic,
        github
            .as_ref()
            .and_then(|gh| gh.issue_number(&gate))
            .map(|n| format!(", or answer on issue #{n}"))
            .unwrap_or_default()
    );
    let mut lines = spawn_stdin_reader();
    let mut stdin_open = true;
    let deadline = args
        .timeout
        .map(|t| Instant::now() + Duration::from_secs(t));
    let interval = Duration::from_secs(args.interval.max(1));
    loop {
        let mut polled = fan.poll(&gate).await.map_err(|e| cli_err(&e))?;
        let mut backoff = None;
        if let Some(gh) = &github {
            match gh.poll(&gate).await {
                Ok(p) => {
                    polled.signals.extend(p.signals);
                    polled.ignored.extend(p.ignored);
                    // GitHub may ask for a longer pause (x-poll-interval).
                    backoff = gh.pause_hint().filter(|h| *h > interval);
                }
                Err(e) if e.is_retryable() => {
                    errln!("warning: github-issue channel: {e}; retrying");
                    backoff = Some(
                        gh.pause_hint()
                            .unwrap_or(interval.saturating_mul(4).max(Duration::from_secs(5))),
                    );
                }
                // 401/403, a superseded issue (it shows a later gate), a broken answer: stop.
                Err(e) => return Err(cli_err(&e)),
            }
            if let Some(loc) = gh.take_locator(&gate) {
                svc.update_locator(&gate.id, ChannelKind::GithubIssue, &loc)
                    .map_err(|e| cli_err(&e))?;
            }
        }
        if let Err(e) = svc.note_ignored(&gate.id, &polled.ignored) {
            return Err(cli_err(&e));
        }
        for i in &polled.ignored {
            errln!("warning: ignored a signal: {}", i.reason);
        }
        match svc
            .consume(&polled.signals, &rules, authorizer.as_ref())
            .await
        {
            Ok(consumed) => {
                for i in &consumed.ignored {
                    errln!("warning: ignored a signal: {}", i.reason);
                }
                if let Some(decided) = consumed.decided {
                    if let Some(gh) = &github {
                        resolve_on_github(&svc, gh, &decided).await;
                    }
                    return Ok(report(ctx, &decided));
                }
            }
            Err(e) if e.kind() == ErrorKind::NotFound => {
                // Another process decided the gate meanwhile.
                let g = svc.target(Some(&gate.id)).map_err(|e| cli_err(&e))?;
                return Ok(report(ctx, &g));
            }
            Err(e) => return Err(cli_err(&e)),
        }
        if polled.exhausted && github.is_none() {
            errln!("note: end of input; gate {} stays pending", gate.id);
            return Ok(report(ctx, &gate));
        }
        let now = Instant::now();
        if deadline.is_some_and(|d| now >= d) {
            errln!(
                "note: timeout; gate {} stays pending (a timeout never approves)",
                gate.id
            );
            return Ok(report(ctx, &gate));
        }
        let until_expiry = u64::try_from(
            gate.expires
                .seconds_since(&squad_model::Timestamp::now())
                .max(0),
        )
        .unwrap_or(0);
        let mut pause = backoff
            .unwrap_or(interval)
            .min(Duration::from_secs(until_expiry) + Duration::from_millis(50));
        if let Some(d) = deadline {
            pause = pause.min(d.saturating_duration_since(now));
        }
        if stdin_open {
            tokio::select! {
                line = lines.recv() => match line {
                    Some(l) => chat.feed(&l),
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

/// Shows the decision on the approval issue and records that in notifications.md. A failure
/// is reported and does not change the outcome: the decision is already recorded.
async fn resolve_on_github(svc: &Approvals, gh: &GithubIssueChannel, gate: &Gate) {
    match gh.resolve(gate).await {
        Ok(Some(action)) => {
            let repo = gh.client().config().repo();
            let approval_ref = gh.issue_number(gate).map_or_else(
                || "github-issue".to_owned(),
                |n| format!("#{n} {}/{}", repo.owner(), repo.name()),
            );
            if let Err(e) =
                svc.record_resolution(gate, ChannelKind::GithubIssue, &approval_ref, &action)
            {
                errln!("warning: cannot record the resolution: {e}");
            }
        }
        Ok(None) => {}
        Err(e) => {
            errln!("warning: github-issue channel: cannot show the decision on the issue: {e}")
        }
    }
}
