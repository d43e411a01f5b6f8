//! `approval_wait`: the CLI's wait, driven by a tool call.
//!
//! The wait is squad-notify's `Waiter` on the channels the CLI uses, with the same rules and
//! authorizer, so every decision goes through the same state machine and `notifications.md`.
//! Nothing from the tool call is ever read as a signal. For a gate whose answers can only come
//! in-chat, the human is asked through an MCP elicitation when the client declared the
//! capability: the answer, chosen by the human in the client's form, is fed to the in-chat
//! channel as the line a human would type (`/approve <gate>`, …) and parsed like one. A decline
//! or a cancel leaves the gate pending; each call asks again. Otherwise the channels are polled
//! until the timeout, and a decision made elsewhere (another process, the GitHub issue) is
//! found.

use std::sync::Arc;
use std::time::Duration;

use rmcp::RoleServer;
use rmcp::model::{
    ElicitRequestParams, ElicitationAction, ElicitationSchema, ProgressNotificationParam,
};
use rmcp::service::{Peer, RequestContext};
use serde_json::{Value, json};
use squad_notify::{Command, Gate, Next, Parsed, WaitEnd, parse_comment};

use super::tools::Output;
use crate::approval_cmd::{
    Prepared, PreparedWait, WaitArgs, cli_err, prepare_wait, timeout_note, turn_warnings, wait_json,
};
use crate::ctx::{CliError, Ctx};

/// How long a tool call waits without `timeout_secs`: under the 60 s request timeout many
/// clients keep.
pub(crate) const DEFAULT_WAIT_SECS: u64 = 30;

/// The choices of the elicitation form, in the words of the in-chat commands.
pub(crate) const CHOICES: [&str; 4] = ["approve", "approve-all", "changes", "stop"];

/// Waits for a decision on the gate, as `squad approval wait --json` does, within the timeout.
pub(crate) async fn approval_wait(
    args: WaitArgs,
    ctx: Arc<Ctx>,
    context: RequestContext<RoleServer>,
    turn: super::TurnGuard,
) -> Result<Output, CliError> {
    let peer = &context.peer;
    let timeout = Duration::from_secs(args.timeout_secs.unwrap_or(DEFAULT_WAIT_SECS));
    let prepared = prepare_wait(&args, Some(timeout), &ctx).await?;
    // The gate is found: later calls need not wait for the human.
    drop(turn);
    let p = match prepared {
        Prepared::Done(gate) => return Ok(Output::new(wait_json(&gate))),
        Prepared::Wait(p) => p,
    };
    let PreparedWait {
        mut waiter,
        chat,
        in_chat_only,
        messages: mut notes,
        ..
    } = *p;
    let started = tokio::time::Instant::now();
    let deadline = started + timeout;
    // With a progress token, each poll tells the client the wait goes on (clients that reset
    // their request timeout on progress then wait as long as `timeout_secs` says).
    let progress = context.meta.get_progress_token();
    let mut ask = in_chat_only && elicits(peer);
    if in_chat_only && !ask {
        notes.push(
            "note: the gate is answered in-chat and this client cannot ask the human (no elicitation): \
             waiting for a decision made elsewhere (`squad approval wait` in a terminal)"
                .to_owned(),
        );
    }
    loop {
        let turn = waiter.step().await.map_err(|e| cli_err(&e))?;
        notes.extend(turn_warnings(&turn));
        let pause = match turn.next {
            Next::Done(end) => {
                match &end {
                    WaitEnd::TimedOut(g) => notes.push(timeout_note(g)),
                    WaitEnd::InputEnded(g) => {
                        notes.push(format!("note: gate {} stays pending", g.id));
                    }
                    _ => {}
                }
                return Ok(Output::new(wait_json(end.gate())).with_messages(notes));
            }
            Next::Pause(pause) => pause,
            _ => Duration::ZERO,
        };
        if std::mem::take(&mut ask) {
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            let asked = tokio::select! {
                asked = elicit(peer, waiter.gate(), left) => asked,
                () = context.ct.cancelled() => return Ok(Output::new(wait_json(waiter.gate()))),
            };
            match asked {
                Asked::Line(line) => {
                    chat.feed(&line);
                    continue;
                }
                Asked::NoAnswer(why) => {
                    notes.push(format!(
                        "note: {why}; gate {} stays pending",
                        waiter.gate().id
                    ));
                    return Ok(Output::new(wait_json(waiter.gate())).with_messages(notes));
                }
                Asked::Failed(why) => notes.push(format!("warning: {why}")),
            }
        }
        if let Some(token) = &progress {
            let waited = started.elapsed().as_secs_f64();
            let note = ProgressNotificationParam::new(token.clone(), waited)
                .with_total(timeout.as_secs_f64())
                .with_message(format!(
                    "waiting for a human's decision on gate {}",
                    waiter.gate().id
                ));
            if let Err(e) = peer.notify_progress(note).await {
                notes.push(format!("warning: cannot report progress: {e}"));
            }
        }
        // A cancelled call stops waiting; the gate stays as it is.
        tokio::select! {
            () = tokio::time::sleep(pause) => {}
            () = context.ct.cancelled() => return Ok(Output::new(wait_json(waiter.gate()))),
        }
    }
}

/// Whether the client declared form elicitation (`"elicitation": {}` means form).
fn elicits(peer: &Peer<RoleServer>) -> bool {
    peer.peer_info()
        .and_then(|info| info.capabilities.elicitation.clone())
        .is_some_and(|e| e.form.is_some() || e.url.is_none())
}

/// What asking the human gave.
enum Asked {
    /// The in-chat line for the human's choice.
    Line(String),
    /// The human declined or cancelled, or did not answer in time.
    NoAnswer(String),
    /// The question could not be asked (the client failed): keep polling.
    Failed(String),
}

/// The form: one choice among [`CHOICES`], and a note for `changes`.
pub(crate) fn form_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "answer": {
                "type": "string",
                "title": "Decision",
                "description": "approve: go ahead; approve-all: approve this and the later impactful-action gates of the run (never a risk gate); changes: ask for changes (write them in the note); stop: end the run",
                "enum": CHOICES,
            },
            "note": {
                "type": "string",
                "title": "Note",
                "description": "What to change (with changes)",
                "maxLength": squad_notify::MAX_NOTE_CHARS,
            },
        },
        "required": ["answer"],
    })
}

/// The question put to the human.
fn message(gate: &Gate) -> String {
    let mut text = format!(
        "Approval gate {} ({}): {}\nAwaiting: {}",
        gate.id, gate.trigger, gate.topic, gate.awaiting
    );
    if !gate.detail.trim().is_empty() {
        text.push_str("\n\n");
        text.push_str(gate.detail.trim());
    }
    text
}

async fn elicit(peer: &Peer<RoleServer>, gate: &Gate, left: Duration) -> Asked {
    if left.is_zero() {
        return Asked::NoAnswer("no time left to ask the human".to_owned());
    }
    let schema = match form_schema() {
        Value::Object(o) => ElicitationSchema::from_json_schema(o),
        _ => return Asked::Failed("cannot build the form".to_owned()),
    };
    let schema = match schema {
        Ok(s) => s,
        Err(e) => return Asked::Failed(format!("cannot build the form: {e}")),
    };
    let params = ElicitRequestParams::FormElicitationParams {
        meta: None,
        message: message(gate),
        requested_schema: schema,
    };
    let answer = match peer
        .create_elicitation_with_timeout(params, Some(left))
        .await
    {
        Ok(answer) => answer,
        Err(rmcp::ServiceError::Timeout { .. }) => {
            return Asked::NoAnswer("the human did not answer in time".to_owned());
        }
        Err(e) => return Asked::Failed(format!("cannot ask the human in the client: {e}")),
    };
    match answer.action {
        ElicitationAction::Accept => {}
        ElicitationAction::Decline => return Asked::NoAnswer("the human declined".to_owned()),
        _ => return Asked::NoAnswer("the human cancelled".to_owned()),
    }
    let content = answer.content.unwrap_or(Value::Null);
    // The form's field; a client that filled the form under another key still gave one of the
    // choices (the human picked it in the client).
    let choice = content.get("answer").and_then(Value::as_str).or_else(|| {
        content
            .as_object()?
            .iter()
            .filter(|(key, _)| key.as_str() != "note")
            .filter_map(|(_, v)| v.as_str())
            .find(|v| CHOICES.contains(v))
    });
    let note = content
        .get("note")
        .and_then(Value::as_str)
        .unwrap_or_default();
    match choice.and_then(|c| command_line(c, note, gate)) {
        Some(line) => Asked::Line(line),
        None => Asked::NoAnswer(format!("the answer is not one of {}", CHOICES.join(", "))),
    }
}

/// The in-chat line a human would type for `choice` on `gate` (the note on one line); `None`
/// for anything else. The line is checked to parse as that command.
pub(crate) fn command_line(choice: &str, note: &str, gate: &Gate) -> Option<String> {
    let note = note.split_whitespace().collect::<Vec<_>>().join(" ");
    let (line, expected) = match choice {
        "approve" => (format!("/approve {}", gate.id), Command::Approve),
        "approve-all" => (format!("/approve-all {}", gate.id), Command::ApproveAll),
        "stop" => (format!("/stop {}", gate.id), Command::Stop),
        "changes" => {
            let line = if note.is_empty() {
                format!("/changes {}", gate.id)
            } else {
                format!("/changes {}: {note}", gate.id)
            };
            (line, Command::Changes(String::new()))
        }
        _ => return None,
    };
    match parse_comment(&line) {
        Parsed::Command(c)
            if std::mem::discriminant(&c.command) == std::mem::discriminant(&expected) =>
        {
            Some(line)
        }
        // A note the parser reads differently (Markdown in it): the command without the note.
        _ if choice == "changes" => Some(format!("/changes {}", gate.id)),
        _ => None,
    }
}
