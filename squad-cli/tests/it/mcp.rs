//! `squad mcp`: the server driven as a separate process, by rmcp's client over the child's stdin
//! and stdout, and by a hand-written newline-delimited JSON-RPC client; on real git repositories,
//! with the CLI checking what the server wrote.

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rmcp::model::{
    CallToolRequestParams, CallToolResult, ClientCapabilities, ClientConfig, ElicitRequestParams,
    ElicitResult, ElicitationAction, Implementation, ProtocolVersion, ReadResourceRequestParams,
    ResourceContents,
};
use rmcp::service::{RequestContext, RunningService};
use rmcp::transport::TokioChildProcess;
use rmcp::{ClientHandler, ErrorData, RoleClient, ServiceExt};
use serde_json::{Value, json};

use crate::git_repo::{RISK_GATE_REQUEST, Repo};

/// Every tool, and the ones `--read-only` keeps.
const TOOLS: [&str; 10] = [
    "notes_write",
    "notes_show",
    "notes_list",
    "memory_context",
    "memory_search",
    "memory_add",
    "approval_request",
    "approval_status",
    "approval_wait",
    "route_briefing",
];
const READ_TOOLS: [&str; 6] = [
    "notes_show",
    "notes_list",
    "memory_context",
    "memory_search",
    "approval_status",
    "route_briefing",
];

/// Words no approval tool argument may contain: such an argument could carry a decision.
const DECISION_WORDS: [&str; 10] = [
    "decision", "decide", "action", "verdict", "approv", "signal", "answer", "choice", "command",
    "stop",
];

/// A client: declares elicitation when it has an answer to give, records every question.
#[derive(Clone)]
struct Human {
    version: ProtocolVersion,
    answer: Option<(ElicitationAction, Value)>,
    asked: Arc<Mutex<Vec<ElicitRequestParams>>>,
}

impl Human {
    /// A client without the elicitation capability.
    fn absent() -> Self {
        Self {
            version: ProtocolVersion::V_2025_11_25,
            answer: None,
            asked: Arc::default(),
        }
    }

    /// A client whose human answers every question with `action` and `content`.
    fn answering(action: ElicitationAction, content: Value) -> Self {
        Self {
            answer: Some((action, content)),
            ..Self::absent()
        }
    }

    fn questions(&self) -> Vec<ElicitRequestParams> {
        self.asked.lock().unwrap().clone()
    }
}

impl ClientHandler for Human {
    fn get_info(&self) -> ClientConfig {
        let caps = if self.answer.is_some() {
            ClientCapabilities::builder().enable_elicitation().build()
        } else {
            ClientCapabilities::default()
        };
        let mut config = ClientConfig::new(caps, Implementation::new("squad-test", "1.0.0"));
        config.protocol_version = self.version.clone();
        config
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        self.asked.lock().unwrap().push(request);
        let (action, content) = self
            .answer
            .clone()
            .unwrap_or((ElicitationAction::Decline, Value::Null));
        let accept = action == ElicitationAction::Accept;
        let mut result = ElicitResult::new(action);
        if accept {
            result.content = Some(content);
        }
        Ok(result)
    }
}

type Client = RunningService<RoleClient, Human>;

/// `squad <global> mcp <args>` in `repo`, isolated, with stderr discarded.
fn server_command(repo: &Repo, global: &[&str], args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_squad"));
    c.arg("-C")
        .arg(repo.path())
        .args(global)
        .arg("mcp")
        .args(args);
    repo.env(&mut c);
    c
}

async fn connect(repo: &Repo, global: &[&str], args: &[&str], human: Human) -> Client {
    let cmd = tokio::process::Command::from(server_command(repo, global, args));
    let (transport, _) = TokioChildProcess::builder(cmd)
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    human.serve(transport).await.unwrap()
}

async fn call(client: &Client, name: &str, args: Value) -> CallToolResult {
    let Value::Object(args) = args else {
        panic!("arguments must be an object")
    };
    let result = client
        .call_tool(CallToolRequestParams::new(name.to_owned()).with_arguments(args))
        .await
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    check_result_shape(client, name, &result).await;
    result
}

/// Every result, of every call these tests make: exactly one content block, a text; for a
/// success, that text is one JSON document, equal to `structuredContent`, and valid against the
/// tool's `outputSchema` (jsonschema); for an error, the CLI's `error:` line and the structured
/// `{error, hint, exit_code}`.
async fn check_result_shape(client: &Client, name: &str, result: &CallToolResult) {
    assert_eq!(result.content.len(), 1, "{name}: {result:?}");
    let text = result.content[0]
        .as_text()
        .unwrap_or_else(|| panic!("{name}: not a text block: {result:?}"))
        .text
        .clone();
    let structured = result.structured_content.clone().unwrap();
    if result.is_error == Some(true) {
        assert!(text.starts_with("error: "), "{name}: {text}");
        assert!(structured["exit_code"].is_u64(), "{name}: {structured}");
        return;
    }
    let doc: Value = serde_json::from_str(&text).unwrap_or_else(|e| {
        panic!("{name}: the text block is not one JSON document ({e}): {text}")
    });
    assert_eq!(doc, structured, "{name}");
    let tools = client.list_all_tools().await.unwrap();
    let tool = tools.iter().find(|t| t.name == name).unwrap();
    let schema = Value::Object(
        tool.output_schema
            .as_deref()
            .unwrap_or_else(|| panic!("{name} has no outputSchema"))
            .clone(),
    );
    let validator = jsonschema::validator_for(&schema).unwrap();
    let errors: Vec<String> = validator
        .iter_errors(&doc)
        .map(|e| format!("{e} (at {})", e.instance_path()))
        .collect();
    assert!(
        errors.is_empty(),
        "{name}: the result breaks its outputSchema: {errors:?}\n{doc:#}"
    );
}

/// The result of a successful call: its structured content (equal to its one text block, as
/// [`check_result_shape`] checked).
#[track_caller]
fn ok(result: &CallToolResult) -> Value {
    assert_eq!(result.is_error, Some(false), "{result:?}");
    result.structured_content.clone().unwrap()
}

fn text_of(result: &CallToolResult) -> String {
    result.content[0].as_text().unwrap().text.clone()
}

#[track_caller]
fn tool_error(result: &CallToolResult) -> String {
    assert_eq!(result.is_error, Some(true), "{result:?}");
    text_of(result)
}

fn squad_json(repo: &Repo, args: &[&str]) -> Value {
    let mut all = vec!["--json"];
    all.extend_from_slice(args);
    let out = repo.squad(&all);
    assert!(
        out.status.success(),
        "squad {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

fn repo_with_in_chat() -> Repo {
    let repo = Repo::new();
    let out = repo.squad(&["approval", "configure", "--channel", "in-chat"]);
    assert!(out.status.success());
    repo
}

async fn open_risk_gate(client: &Client) -> String {
    let gate = ok(&call(
        client,
        "approval_request",
        json!({
            "mode": "autopilot",
            "trigger": "risk-gate",
            "topic": "Drop the legacy table",
            "awaiting": "approval of the migration",
            "detail": "Migration 42 drops users_old.",
        }),
    )
    .await);
    gate["id"].as_str().unwrap().to_owned()
}

#[tokio::test]
async fn initialize_echoes_both_contract_versions_and_answers_others_with_the_newest() {
    let repo = Repo::new();
    for (asked, answered) in [
        ("2025-06-18", "2025-06-18"),
        ("2025-11-25", "2025-11-25"),
        ("2099-01-01", "2025-11-25"),
    ] {
        let human = Human {
            version: serde_json::from_value(json!(asked)).unwrap(),
            ..Human::absent()
        };
        let client = connect(&repo, &[], &[], human).await;
        let info = client.peer_info().unwrap();
        assert_eq!(info.protocol_version.to_string(), answered);
        assert_eq!(info.server_info.as_ref().unwrap().name, "squad");
        assert!(info.capabilities.tools.is_some());
        assert!(info.capabilities.resources.is_some());
        client.cancel().await.unwrap();
    }
}

#[tokio::test]
async fn tools_have_schemas_annotations_and_no_argument_that_could_carry_a_decision() {
    let repo = Repo::new();
    let client = connect(&repo, &[], &[], Human::absent()).await;
    let tools = client.list_all_tools().await.unwrap();
    let names: BTreeSet<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    assert_eq!(names, TOOLS.into_iter().collect());
    for tool in &tools {
        let schema = &tool.input_schema;
        assert_eq!(schema["type"], "object", "{}", tool.name);
        assert_eq!(schema["additionalProperties"], false, "{}", tool.name);
        let props = schema["properties"].as_object().unwrap();
        let read_only = READ_TOOLS.contains(&tool.name.as_ref());
        let ann = tool.annotations.as_ref().unwrap();
        assert_eq!(ann.read_only_hint, Some(read_only), "{}", tool.name);
        assert_eq!(ann.destructive_hint, Some(false), "{}", tool.name);
        assert!(tool.description.as_ref().is_some_and(|d| !d.is_empty()));
        // Every tool has an output schema: an object (as MCP requires), valid JSON Schema, that
        // allows the `messages` every result may carry.
        let output = Value::Object(
            tool.output_schema
                .as_deref()
                .unwrap_or_else(|| panic!("{} has no outputSchema", tool.name))
                .clone(),
        );
        assert_eq!(output["type"], "object", "{}", tool.name);
        assert!(jsonschema::meta::is_valid(&output), "{}", tool.name);
        assert!(
            output["properties"]["messages"].is_object(),
            "{}",
            tool.name
        );
        for (name, prop) in props {
            assert!(
                prop.get("type").is_some() || prop.get("oneOf").is_some(),
                "{}.{name} has no type",
                tool.name
            );
            if tool.name.starts_with("approval_") {
                let lower = name.to_lowercase();
                assert!(
                    !DECISION_WORDS.iter().any(|w| lower.contains(w)),
                    "{}.{name} could carry a decision",
                    tool.name
                );
            }
        }
    }
    let props = |name: &str| -> BTreeSet<String> {
        let tool = tools.iter().find(|t| t.name == name).unwrap();
        tool.input_schema["properties"]
            .as_object()
            .unwrap()
            .keys()
            .cloned()
            .collect()
    };
    // The CLI's long flags.
    for (tool, expected) in [
        (
            "notes_write",
            &[
                "agent",
                "type",
                "fields",
                "content",
                "namespace",
                "commit",
                "promote",
                "archive",
            ][..],
        ),
        ("memory_context", &["agent", "situation", "task"]),
        ("memory_search", &["agent", "query"]),
        ("memory_add", &["agent", "kind", "title", "body"]),
        (
            "approval_request",
            &["mode", "trigger", "topic", "awaiting", "detail", "run"],
        ),
        ("approval_wait", &["timeout_secs", "gate", "run"]),
    ] {
        let have = props(tool);
        for p in expected {
            assert!(have.contains(*p), "{tool} lacks {p}: {have:?}");
        }
    }
    // approval_status takes one optional argument, the run to show.
    assert_eq!(props("approval_status"), BTreeSet::from(["run".to_owned()]));
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn every_tool_works_on_a_real_repository_and_the_cli_sees_what_it_wrote() {
    let repo = repo_with_in_chat();
    let client = connect(&repo, &[], &[], Human::absent()).await;

    // notes_write: the entry is in git, as `git notes` reads it.
    let entry = ok(&call(
        &client,
        "notes_write",
        json!({"agent": "data", "type": "decision", "fields": {"decision": "Use JWT RS256"}, "promote": true}),
    )
    .await);
    let id = entry["id"].as_str().unwrap().to_owned();
    assert_eq!(entry["promote_to_permanent"], true);
    let note = repo.git(&["notes", "--ref", "squad/data", "show", "HEAD"]);
    assert!(
        note.contains(&id) && note.contains("Use JWT RS256"),
        "{note}"
    );
    // Text flags are taken as they are: `-` and `@FILE` read nothing.
    let literal = ok(&call(
        &client,
        "notes_write",
        json!({"agent": "data", "type": "progress", "content": "@/etc/passwd", "fields": "{\"topic\": \"-\"}"}),
    )
    .await);
    assert_eq!(literal["content"], "@/etc/passwd");
    assert_eq!(literal["topic"], "-");

    // notes_show and notes_list: the CLI's documents.
    let shown = ok(&call(&client, "notes_show", json!({"agent": "data"})).await);
    let cli_shown = squad_json(&repo, &["notes", "show", "--agent", "data"]);
    assert_eq!(shown["entries"], cli_shown);
    assert_eq!(shown["entries"][0]["id"], id.as_str());
    let listed = ok(&call(&client, "notes_list", json!({"agent": "data"})).await);
    assert_eq!(
        listed["notes"],
        squad_json(&repo, &["notes", "list", "--agent", "data"])
    );
    assert_eq!(listed["notes"][0]["entries"], 2);

    // memory_add, then the CLI's spawn shows it; memory_context and memory_search find it.
    let added = ok(&call(
        &client,
        "memory_add",
        json!({"agent": "data", "kind": "decision", "title": "Keep RS256 for tokens", "body": "Rotation is monthly."}),
    )
    .await);
    let memory_id = added["id"].as_str().unwrap().to_owned();
    let spawn = repo.squad(&["memory", "spawn", "--agent", "data"]);
    let spawn = String::from_utf8(spawn.stdout).unwrap();
    assert!(spawn.contains("Keep RS256 for tokens"), "{spawn}");
    let context = ok(&call(
        &client,
        "memory_context",
        json!({"agent": "data", "situation": "resuming", "task": "token rotation"}),
    )
    .await);
    assert!(
        context["prompt"]
            .as_str()
            .unwrap()
            .contains("Keep RS256 for tokens")
    );
    assert!(
        context["manifest"]["tiers"]["hot"]["bytes"]
            .as_u64()
            .unwrap()
            > 0
    );
    assert_eq!(
        context,
        squad_json(
            &repo,
            &[
                "memory",
                "spawn",
                "--agent",
                "data",
                "--situation",
                "resuming",
                "--task",
                "token rotation"
            ]
        )
    );
    let hits = ok(&call(
        &client,
        "memory_search",
        json!({"agent": "data", "query": "RS256 tokens"}),
    )
    .await);
    assert_eq!(hits["hits"][0]["id"], memory_id.as_str());

    // approval_request, approval_status, approval_wait (no elicitation: polls, then pending).
    let status = ok(&call(&client, "approval_status", json!({})).await);
    assert!(
        status["pending"].as_array().is_some_and(Vec::is_empty),
        "{status}"
    );
    let gate = open_risk_gate(&client).await;
    let status = ok(&call(&client, "approval_status", json!({})).await);
    assert_eq!(status["pending"][0]["id"], gate.as_str());
    assert_eq!(status, squad_json(&repo, &["approval", "status"]));
    let started = Instant::now();
    let waited = call(&client, "approval_wait", json!({"timeout_secs": 1})).await;
    let waited_doc = ok(&waited);
    assert_eq!(waited_doc["state"], "pending");
    assert_eq!(waited_doc["gate"], gate.as_str());
    assert!(started.elapsed() < Duration::from_secs(30));
    // A second request while one is pending is refused, with the CLI's message.
    let again = call(
        &client,
        "approval_request",
        json!({"mode": "autopilot", "trigger": "risk-gate", "topic": "t", "awaiting": "a", "detail": "d"}),
    )
    .await;
    let message = tool_error(&again);
    let cli = repo.squad(&RISK_GATE_REQUEST);
    let cli_stderr = String::from_utf8(cli.stderr).unwrap();
    assert_eq!(cli.status.code(), Some(1));
    assert_eq!(
        message.lines().next(),
        cli_stderr.lines().next(),
        "{message}"
    );
    assert_eq!(again.structured_content.as_ref().unwrap()["exit_code"], 1);

    // route_briefing, from a trace and from the database a replay kept.
    let trace = repo.path().join("trace.jsonl");
    let generated = repo.squad(&["route", "generate", "--squads", "2", "--events", "20"]);
    std::fs::write(&trace, &generated.stdout).unwrap();
    let text = String::from_utf8(generated.stdout).unwrap();
    let squad = text
        .split("\"squad_id\":\"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .unwrap()
        .to_owned();
    let briefing = ok(&call(
        &client,
        "route_briefing",
        json!({"trace": "trace.jsonl", "squad": squad, "owns_status": true}),
    )
    .await);
    assert!(
        briefing["briefing"]
            .as_str()
            .unwrap()
            .starts_with("## Squad Operating Protocol")
    );
    assert_eq!(
        briefing,
        squad_json(
            &repo,
            &[
                "route",
                "briefing",
                "--trace",
                "trace.jsonl",
                "--squad",
                &squad,
                "--owns-status"
            ]
        )
    );
    let out = repo.squad(&["route", "replay", "--db", "state.db", "trace.jsonl"]);
    assert!(out.status.success());
    let from_db = ok(&call(
        &client,
        "route_briefing",
        json!({"db": "state.db", "squad": squad, "owns_status": true}),
    )
    .await);
    assert_eq!(from_db, briefing);
    // A tool call never reads stdin (it is the protocol), and a database is never created.
    let stdin = call(
        &client,
        "route_briefing",
        json!({"trace": "-", "squad": squad}),
    )
    .await;
    assert!(tool_error(&stdin).contains("cannot read stdin"));
    let missing = call(
        &client,
        "route_briefing",
        json!({"db": "new.db", "squad": squad}),
    )
    .await;
    tool_error(&missing);
    assert!(!repo.path().join("new.db").exists());

    client.cancel().await.unwrap();
}

#[tokio::test]
async fn an_elicitation_answered_approve_decides_the_gate_through_the_log() {
    let repo = repo_with_in_chat();
    let human = Human::answering(ElicitationAction::Accept, json!({"answer": "approve"}));
    let client = connect(&repo, &[], &[], human.clone()).await;
    let gate = open_risk_gate(&client).await;
    let waited = ok(&call(&client, "approval_wait", json!({"timeout_secs": 60})).await);
    assert_eq!(waited["state"], "approved", "{waited}");
    assert_eq!(waited["gate"], gate.as_str());
    // Asked once, in form mode, with one field of the four choices and a note.
    let questions = human.questions();
    assert_eq!(questions.len(), 1);
    let ElicitRequestParams::FormElicitationParams {
        message,
        requested_schema,
        ..
    } = &questions[0]
    else {
        panic!("not a form: {questions:?}")
    };
    assert!(message.contains("Drop the legacy table") && message.contains(&gate));
    let schema = serde_json::to_value(requested_schema).unwrap();
    assert_eq!(
        schema["properties"]["answer"]["enum"],
        json!(["approve", "approve-all", "changes", "stop"])
    );
    assert_eq!(schema["properties"]["note"]["type"], "string");
    assert_eq!(schema["required"], json!(["answer"]));
    // The decision is the CLI's: recorded in state.json and notifications.md.
    let status = squad_json(&repo, &["approval", "status"]);
    assert!(
        status["pending"].as_array().is_some_and(Vec::is_empty),
        "{status}"
    );
    let log = std::fs::read_to_string(repo.path().join(".squad/notifications.md")).unwrap();
    assert!(log.contains(&gate) && log.contains("approve"), "{log}");
    // Waiting again on the decided gate returns the decision without asking.
    let again = ok(&call(&client, "approval_wait", json!({"gate": gate})).await);
    assert_eq!(again["state"], "approved");
    assert_eq!(human.questions().len(), 1);
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn changes_carry_the_note_and_a_decline_or_cancel_leaves_the_gate_pending() {
    let repo = repo_with_in_chat();
    // Declined: pending at once (no waiting out the timeout), and every call asks again.
    let decline = Human::answering(ElicitationAction::Decline, Value::Null);
    let client = connect(&repo, &[], &[], decline.clone()).await;
    let gate = open_risk_gate(&client).await;
    for n in 1..=2 {
        let started = Instant::now();
        let waited = call(&client, "approval_wait", json!({"timeout_secs": 120})).await;
        let doc = ok(&waited);
        assert_eq!(doc["state"], "pending");
        assert!(started.elapsed() < Duration::from_secs(60));
        assert_eq!(decline.questions().len(), n);
        assert_eq!(
            doc["messages"],
            json!([format!(
                "note: the human declined; gate {gate} stays pending"
            )]),
            "{doc}"
        );
    }
    client.cancel().await.unwrap();
    let status = squad_json(&repo, &["approval", "status"]);
    assert_eq!(status["pending"][0]["id"], gate.as_str());

    let cancel = Human::answering(ElicitationAction::Cancel, Value::Null);
    let client = connect(&repo, &[], &[], cancel.clone()).await;
    let doc = ok(&call(&client, "approval_wait", json!({"timeout_secs": 120})).await);
    assert_eq!(doc["state"], "pending");
    assert_eq!(cancel.questions().len(), 1);
    client.cancel().await.unwrap();

    // An accepted form whose answer is not one of the choices decides nothing.
    let odd = Human::answering(ElicitationAction::Accept, json!({"answer": "yes please"}));
    let client = connect(&repo, &[], &[], odd).await;
    let doc = ok(&call(&client, "approval_wait", json!({"timeout_secs": 120})).await);
    assert_eq!(doc["state"], "pending");
    client.cancel().await.unwrap();

    let changes = Human::answering(
        ElicitationAction::Accept,
        json!({"answer": "changes", "note": "Keep a backup\nof users_old first"}),
    );
    let client = connect(&repo, &[], &[], changes).await;
    let doc = ok(&call(&client, "approval_wait", json!({"timeout_secs": 120})).await);
    assert_eq!(doc["state"], "changes-requested", "{doc}");
    assert_eq!(doc["note"], "Keep a backup of users_old first");
    client.cancel().await.unwrap();
    let status = squad_json(&repo, &["approval", "status"]);
    assert!(status["pending"].as_array().is_some_and(Vec::is_empty));
}

#[tokio::test]
async fn a_decision_made_elsewhere_ends_the_wait_and_state_is_read_on_every_call() {
    let repo = repo_with_in_chat();
    let client = connect(&repo, &[], &[], Human::absent()).await;
    // A gate opened by the CLI while the server runs is seen by the next call.
    let out = repo.squad(&[
        "approval",
        "request",
        "--mode",
        "autopilot",
        "--trigger",
        "risk-gate",
        "--topic",
        "Deploy",
        "--awaiting",
        "go",
        "--detail",
        "staging",
    ]);
    assert!(out.status.success());
    let gate = String::from_utf8(out.stdout).unwrap().trim().to_owned();
    let status = ok(&call(&client, "approval_status", json!({})).await);
    assert_eq!(status["pending"][0]["id"], gate.as_str());
    // A human approves at a terminal while the tool call waits (it cannot ask: no elicitation).
    let mut human = repo.command(&["approval", "wait", "--timeout", "30"]);
    let terminal = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(500));
        crate::git_repo::run_with_stdin(&mut human, Some("/approve\n"))
    });
    let waited = call(
        &client,
        "approval_wait",
        json!({"timeout_secs": 60, "interval": 1}),
    )
    .await;
    assert_eq!(ok(&waited)["state"], "approved");
    assert_eq!(terminal.join().unwrap().status.code(), Some(0));
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn a_read_only_server_lists_and_runs_only_the_read_tools() {
    let repo = Repo::new();
    let client = connect(&repo, &[], &["--read-only"], Human::absent()).await;
    let names: BTreeSet<String> = client
        .list_all_tools()
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.name.into_owned())
        .collect();
    assert_eq!(names, READ_TOOLS.iter().map(|s| (*s).to_owned()).collect());
    for (tool, args) in [
        (
            "notes_write",
            json!({"agent": "data", "type": "decision", "content": "x"}),
        ),
        (
            "memory_add",
            json!({"agent": "data", "kind": "note", "title": "x"}),
        ),
        (
            "approval_request",
            json!({"mode": "autopilot", "trigger": "risk-gate", "topic": "t", "awaiting": "a", "detail": "d"}),
        ),
        ("approval_wait", json!({})),
    ] {
        let Value::Object(args) = args else {
            unreachable!()
        };
        let err = client
            .call_tool(CallToolRequestParams::new(tool).with_arguments(args))
            .await
            .unwrap_err();
        assert!(err.to_string().contains("read-only"), "{tool}: {err}");
    }
    assert_eq!(repo.tip("data"), None);
    assert!(!repo.path().join(".squad").exists());
    // Reads still work.
    let shown = ok(&call(&client, "notes_show", json!({"agent": "data"})).await);
    assert_eq!(shown["entries"], json!([]));
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn unknown_tools_and_arguments_that_break_the_schema_are_refused_and_change_nothing() {
    let repo = Repo::new();
    let client = connect(&repo, &[], &[], Human::absent()).await;
    let err = client
        .call_tool(CallToolRequestParams::new("notes_delete"))
        .await
        .unwrap_err();
    assert!(
        err.to_string().contains("unknown tool: notes_delete"),
        "{err}"
    );
    for (tool, args, expect) in [
        (
            "notes_write",
            json!({"agent": "data", "type": "decision"}),
            "--fields or --content",
        ),
        (
            "notes_write",
            json!({"agent": 7, "type": "decision", "content": "x"}),
            "invalid type",
        ),
        (
            "notes_write",
            json!({"agent": "data", "type": "decision", "content": "x", "sign": true}),
            "unknown field `sign`",
        ),
        (
            "notes_write",
            json!({"agent": "data", "type": "opinion", "content": "x"}),
            "opinion",
        ),
        (
            "notes_write",
            json!({"agent": "Data/..", "type": "decision", "content": "x"}),
            "--agent",
        ),
        (
            "notes_write",
            json!({"agent": "data", "type": "decision", "fields": [1, 2]}),
            "expected a JSON object",
        ),
        ("notes_show", json!({}), "missing field `agent`"),
        (
            "memory_search",
            json!({"agent": "data", "query": "q", "limit": 0}),
            "out of range",
        ),
        (
            "memory_add",
            json!({"agent": "data", "kind": "rumour", "title": "x"}),
            "unknown variant",
        ),
        (
            "approval_wait",
            json!({"decision": "approve"}),
            "unknown field `decision`",
        ),
        (
            "approval_wait",
            json!({"timeout_secs": -1}),
            "invalid value",
        ),
        (
            "approval_request",
            json!({"mode": "autopilot", "trigger": "risk-gate", "topic": "t", "awaiting": "a", "detail": "d", "approve": true}),
            "unknown field `approve`",
        ),
        (
            "approval_status",
            json!({"verdict": "approved"}),
            "unknown field `verdict`",
        ),
        (
            "route_briefing",
            json!({"squad": "s"}),
            "exactly one of --trace and --db",
        ),
    ] {
        let result = call(&client, tool, args.clone()).await;
        let text = tool_error(&result);
        assert!(text.starts_with("error: "), "{text}");
        assert!(text.contains(expect), "{tool} {args}: {text}");
        assert_eq!(
            result.structured_content.as_ref().unwrap()["exit_code"],
            2,
            "{tool} {args}"
        );
    }
    assert_eq!(repo.tip("data"), None);
    assert!(!repo.path().join(".squad").exists());
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn resources_are_the_memory_files_decisions_and_schemas_and_never_follow_a_symlink() {
    let repo = Repo::new();
    let out = repo.squad(&[
        "memory",
        "add",
        "--agent",
        "data",
        "--kind",
        "note",
        "--title",
        "Staging needs VPN",
    ]);
    assert!(out.status.success());
    let hot = repo.path().join(".squad/memory/hot");
    let secret = repo.path().join("secret.md");
    std::fs::write(&secret, "### not memory\n").unwrap();
    std::os::unix::fs::symlink(&secret, hot.join("evil.md")).unwrap();
    // decisions.md on the state branch, promoted from a note.
    repo.git(&["config", "squad.defaultBranch", "main"]);
    let out = repo.squad(&[
        "notes",
        "write",
        "--agent",
        "data",
        "--type",
        "decision",
        "--fields",
        r#"{"decision":"Ship on Fridays never"}"#,
        "--promote",
    ]);
    assert!(out.status.success());
    let out = repo.squad(&["notes", "promote"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let client = connect(&repo, &[], &[], Human::absent()).await;
    let uris: BTreeSet<String> = client
        .list_all_resources()
        .await
        .unwrap()
        .into_iter()
        .map(|r| r.uri.clone())
        .collect();
    for uri in [
        "squad://memory/hot/data",
        "squad://state/decisions.md",
        "squad://schema/note-entry",
        "squad://schema/notify-state",
        "squad://schema/approval-state",
        "squad://schema/trace",
    ] {
        assert!(uris.contains(uri), "{uri} not in {uris:?}");
    }
    assert!(!uris.iter().any(|u| u.contains("evil")), "{uris:?}");
    let templates = client.list_all_resource_templates().await.unwrap();
    assert!(
        templates
            .iter()
            .any(|t| t.uri_template == "squad://memory/hot/{agent}")
    );

    let read = |uri: &str| {
        let client = &client;
        let uri = uri.to_owned();
        async move {
            client
                .read_resource(ReadResourceRequestParams::new(uri))
                .await
        }
    };
    let text = |r: &rmcp::model::ReadResourceResult| match &r.contents[0] {
        ResourceContents::TextResourceContents { text, .. } => text.clone(),
        other => panic!("not text: {other:?}"),
    };
    let memory = read("squad://memory/hot/data").await.unwrap();
    assert!(text(&memory).contains("Staging needs VPN"));
    let decisions = read("squad://state/decisions.md").await.unwrap();
    assert!(text(&decisions).contains("Ship on Fridays never"));
    let schema = read("squad://schema/note-entry").await.unwrap();
    let _: Value = serde_json::from_str(&text(&schema)).unwrap();
    // Never through a symlink, never outside the tiers, never an unknown thing.
    for uri in [
        "squad://memory/hot/evil",
        "squad://memory/hot/../../secret",
        "squad://memory/cold/data",
        "squad://memory/nope/data",
        "file:///etc/passwd",
    ] {
        let err = read(uri).await.unwrap_err();
        assert!(!err.to_string().contains("not memory"), "{uri}: {err}");
    }
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn global_state_dir_and_c_apply() {
    let repo = Repo::new();
    let elsewhere = tempfile::tempdir().unwrap();
    let state = elsewhere.path().display().to_string();
    let client = connect(&repo, &["--state-dir", &state], &[], Human::absent()).await;
    ok(&call(
        &client,
        "memory_add",
        json!({"agent": "data", "kind": "note", "title": "here"}),
    )
    .await);
    client.cancel().await.unwrap();
    assert!(elsewhere.path().join("memory/hot/data.md").is_file());
    assert!(!repo.path().join(".squad").exists());
}

/// The hand-written client: one JSON-RPC message per line on the child's stdin, answers read
/// from its stdout; every stdout line must be a JSON-RPC 2.0 message.
struct Plain {
    child: std::process::Child,
    stdin: Option<std::process::ChildStdin>,
    lines: std::sync::mpsc::Receiver<String>,
}

impl Plain {
    fn start(repo: &Repo) -> Self {
        let mut child = server_command(repo, &[], &[])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let stdin = child.stdin.take();
        Self {
            child,
            stdin,
            lines,
        }
    }

    fn send(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().unwrap();
        stdin.write_all(line.as_bytes()).unwrap();
        stdin.write_all(b"\n").unwrap();
        stdin.flush().unwrap();
    }

    /// The next message on stdout (a server never writes anything else).
    fn next(&self) -> Value {
        let line = self.lines.recv_timeout(Duration::from_secs(30)).unwrap();
        let v: Value = serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("stdout holds a line that is not JSON ({e}): {line}"));
        assert_eq!(v["jsonrpc"], "2.0", "{line}");
        v
    }

    /// Sends a request and returns its answer.
    fn request(&mut self, id: u64, method: &str, params: Value) -> Value {
        self.send(
            &json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string(),
        );
        let answer = self.next();
        assert_eq!(answer["id"], id, "{answer}");
        answer
    }

    /// Closes stdin; the server must end cleanly, and say nothing more on stdout.
    fn finish(mut self) {
        drop(self.stdin.take());
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                assert!(status.success(), "{status}");
                break;
            }
            assert!(
                Instant::now() < deadline,
                "the server did not end at the end of input"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        assert!(self.lines.recv_timeout(Duration::from_secs(5)).is_err());
    }
}

fn initialize(plain: &mut Plain, version: &str) -> Value {
    let answer = plain.request(
        1,
        "initialize",
        json!({"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "plain", "version": "0"}}),
    );
    plain.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
    answer
}

#[test]
fn a_plain_json_rpc_client_runs_a_session_over_newline_delimited_json() {
    let repo = Repo::new();
    let mut plain = Plain::start(&repo);
    let init = initialize(&mut plain, "2025-06-18");
    assert_eq!(init["result"]["protocolVersion"], "2025-06-18");
    assert_eq!(init["result"]["serverInfo"]["name"], "squad");
    let tools = plain.request(2, "tools/list", json!({}));
    assert_eq!(
        tools["result"]["tools"].as_array().unwrap().len(),
        TOOLS.len()
    );
    let written = plain.request(
        3,
        "tools/call",
        json!({"name": "notes_write", "arguments": {"agent": "data", "type": "progress", "content": "half done"}}),
    );
    assert_eq!(written["result"]["isError"], false, "{written}");
    let id = written["result"]["structuredContent"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let text: Value =
        serde_json::from_str(written["result"]["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(text["id"], id.as_str());
    let shown = plain.request(
        4,
        "tools/call",
        json!({"name": "notes_show", "arguments": {"agent": "data", "rev": "HEAD"}}),
    );
    assert_eq!(
        shown["result"]["structuredContent"]["entries"][0]["content"],
        "half done"
    );
    let resource = plain.request(
        5,
        "resources/read",
        json!({"uri": "squad://schema/note-entry"}),
    );
    assert!(
        resource["result"]["contents"][0]["text"]
            .as_str()
            .unwrap()
            .contains("\"$schema\"")
    );
    let ping = plain.request(6, "ping", json!({}));
    assert_eq!(ping["result"], json!({}));
    // Pipelined calls (each sent before the previous answer came) run in the order they came:
    // a read sees the write before it, and lines that are not entries are warnings in the
    // result, not text on stdout.
    repo.git(&[
        "notes",
        "--ref",
        "squad/data",
        "append",
        "-m",
        "not an entry",
        "HEAD",
    ]);
    for (id, tool, args) in [
        (
            7,
            "memory_add",
            json!({"agent": "data", "kind": "note", "title": "pipelined"}),
        ),
        (8, "memory_context", json!({"agent": "data"})),
        (
            9,
            "notes_write",
            json!({"agent": "data", "type": "progress", "content": "second"}),
        ),
        (10, "notes_show", json!({"agent": "data"})),
    ] {
        plain.send(
            &json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": tool, "arguments": args}})
                .to_string(),
        );
    }
    let mut answers = std::collections::BTreeMap::new();
    for _ in 0..4 {
        let a = plain.next();
        answers.insert(a["id"].as_u64().unwrap(), a);
    }
    // A wait with a progress token reports progress while it polls, then answers `pending`.
    let gate = plain.request(
        11,
        "tools/call",
        json!({"name": "approval_request", "arguments": {"mode": "autopilot", "trigger": "risk-gate", "topic": "t", "awaiting": "a", "detail": "d"}}),
    );
    assert_eq!(gate["result"]["isError"], false, "{gate}");
    plain.send(
        &json!({"jsonrpc": "2.0", "id": 12, "method": "tools/call", "params": {"name": "approval_wait", "arguments": {"timeout_secs": 3, "interval": 1}, "_meta": {"progressToken": "p-12"}}})
            .to_string(),
    );
    let mut progress = 0;
    let waited = loop {
        let line = plain.next();
        if line["method"] == "notifications/progress" {
            assert_eq!(line["params"]["progressToken"], "p-12", "{line}");
            progress += 1;
            continue;
        }
        break line;
    };
    assert_eq!(waited["id"], 12, "{waited}");
    assert_eq!(waited["result"]["structuredContent"]["state"], "pending");
    assert!(progress >= 1, "no progress reported");
    let prompt = &answers[&8]["result"]["structuredContent"]["prompt"];
    assert!(prompt.as_str().unwrap().contains("pipelined"), "{prompt}");
    let shown = &answers[&10]["result"];
    assert_eq!(
        shown["structuredContent"]["entries"]
            .as_array()
            .unwrap()
            .len(),
        2,
        "{shown}"
    );
    // The warning is inside the one JSON document, not in a second block.
    assert_eq!(shown["content"].as_array().unwrap().len(), 1, "{shown}");
    let doc: Value = serde_json::from_str(shown["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(doc, shown["structuredContent"], "{shown}");
    assert!(
        doc["messages"][0]
            .as_str()
            .unwrap()
            .starts_with("warning: "),
        "{shown}"
    );
    plain.finish();
    assert!(
        repo.git(&["notes", "--ref", "squad/data", "show", "HEAD"])
            .contains(&id)
    );
}

#[test]
fn malformed_json_rpc_gets_json_rpc_errors_and_the_server_keeps_serving() {
    let repo = Repo::new();
    let mut plain = Plain::start(&repo);
    // Before initialize: a request is refused, a notification ignored; the session still starts.
    let early = plain.request(1, "tools/list", json!({}));
    assert_eq!(early["error"]["code"], -32600);
    plain.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
    initialize(&mut plain, "2025-11-25");
    let cases: [(&str, Value, i64); 14] = [
        ("this is not json", Value::Null, -32700),
        (
            r#"{"jsonrpc":"2.0","id":7,"method":"tools/list""#,
            Value::Null,
            -32700,
        ),
        (
            r#"[{"jsonrpc":"2.0","id":8,"method":"ping"}]"#,
            Value::Null,
            -32600,
        ),
        (r#""just a string""#, Value::Null, -32600),
        (
            r#"{"jsonrpc":"1.0","id":9,"method":"ping"}"#,
            json!(9),
            -32600,
        ),
        (r#"{"id":10}"#, json!(10), -32600),
        (r#"{"foo":"boo"}"#, Value::Null, -32600),
        (
            r#"{"jsonrpc":"2.0","method":1,"params":"bar"}"#,
            Value::Null,
            -32600,
        ),
        (
            r#"{"jsonrpc":"2.0","id":null,"method":"ping"}"#,
            Value::Null,
            -32600,
        ),
        (
            r#"{"jsonrpc":"2.0","id":1.5,"method":"ping"}"#,
            Value::Null,
            -32600,
        ),
        (
            r#"{"jsonrpc":"2.0","id":16,"method":"tools/call","params":"not an object"}"#,
            json!(16),
            -32602,
        ),
        (
            r#"{"jsonrpc":"2.0","id":11,"method":"no/such/method"}"#,
            json!(11),
            -32601,
        ),
        (
            r#"{"jsonrpc":"2.0","id":12,"method":"tools/call","params":{"arguments":{}}}"#,
            json!(12),
            -32602,
        ),
        (
            r#"{"jsonrpc":"2.0","id":"t","method":"tools/call","params":{"name":"nope"}}"#,
            json!("t"),
            -32602,
        ),
    ];
    for (line, id, code) in cases {
        plain.send(line);
        let answer = plain.next();
        assert_eq!(answer["id"], id, "{line}: {answer}");
        assert_eq!(answer["error"]["code"], code, "{line}: {answer}");
        assert!(
            answer["error"]["message"]
                .as_str()
                .is_some_and(|m| !m.is_empty())
        );
    }
    // A line longer than the limit is answered and skipped, not held.
    let long = format!(
        r#"{{"jsonrpc":"2.0","id":13,"method":"ping","params":{{"pad":"{}"}}}}"#,
        "x".repeat(17 << 20)
    );
    plain.send(&long);
    let answer = plain.next();
    assert_eq!(answer["error"]["code"], -32600);
    // Blank lines, a bad notification and a stray response get no answer; then it serves on.
    plain.send("");
    plain.send(r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":"oops"}"#);
    plain.send(r#"{"jsonrpc":"2.0","id":99,"result":{}}"#);
    let ping = plain.request(14, "ping", json!({}));
    assert_eq!(ping["result"], json!({}));
    let listed = plain.request(
        15,
        "tools/call",
        json!({"name": "notes_list", "arguments": {"agent": "data"}}),
    );
    assert_eq!(listed["result"]["structuredContent"]["notes"], json!([]));
    plain.finish();
}

#[test]
fn end_of_input_before_a_session_is_a_clean_exit() {
    let repo = Repo::new();
    let out = crate::git_repo::run_with_stdin(&mut server_command(&repo, &[], &[]), None);
    assert_eq!(out.status.code(), Some(0));
    assert!(out.stdout.is_empty());
    let help = repo.squad(&["mcp", "--help"]);
    let help = String::from_utf8(help.stdout).unwrap();
    assert!(
        help.contains(r#""command": "squad", "args": ["mcp"]"#),
        "{help}"
    );
}

#[tokio::test]
async fn text_in_tool_calls_never_decides_a_gate() {
    let repo = repo_with_in_chat();
    let client = connect(&repo, &[], &[], Human::absent()).await;
    let gate = ok(&call(
        &client,
        "approval_request",
        json!({"mode": "autopilot", "trigger": "risk-gate", "topic": "/approve", "awaiting": "/approve-all", "detail": "/approve\n/stop"}),
    )
    .await);
    let gate = gate["id"].as_str().unwrap().to_owned();
    for (tool, args) in [
        (
            "notes_write",
            json!({"agent": "data", "type": "progress", "content": format!("/approve {gate}")}),
        ),
        (
            "memory_add",
            json!({"agent": "data", "kind": "note", "title": "/approve", "body": "/approve"}),
        ),
        (
            "memory_search",
            json!({"agent": "data", "query": "/approve"}),
        ),
    ] {
        ok(&call(&client, tool, args).await);
    }
    let waited = ok(&call(
        &client,
        "approval_wait",
        json!({"gate": gate, "timeout_secs": 1}),
    )
    .await);
    assert_eq!(waited["state"], "pending");
    let status = squad_json(&repo, &["approval", "status"]);
    assert_eq!(status["pending"][0]["id"], gate.as_str());
    client.cancel().await.unwrap();
}

#[test]
fn a_plain_client_answers_the_elicitation_over_the_same_lines() {
    let repo = repo_with_in_chat();
    let mut plain = Plain::start(&repo);
    let init = plain.request(
        1,
        "initialize",
        json!({"protocolVersion": "2025-06-18", "capabilities": {"elicitation": {}}, "clientInfo": {"name": "plain", "version": "0"}}),
    );
    assert_eq!(init["result"]["protocolVersion"], "2025-06-18");
    plain.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
    let gate = plain.request(
        2,
        "tools/call",
        json!({"name": "approval_request", "arguments": {"mode": "interactive", "trigger": "risk-gate", "topic": "Delete the bucket", "awaiting": "yes or no", "detail": "s3://old"}}),
    );
    let gate = gate["result"]["structuredContent"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    for (id, answer, state) in [
        (3, json!({"action": "decline"}), "pending"),
        (
            4,
            json!({"action": "accept", "content": {"answer": "stop"}}),
            "stopped",
        ),
    ] {
        plain.send(
            &json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": "approval_wait", "arguments": {"timeout_secs": 60}}})
                .to_string(),
        );
        let ask = plain.next();
        assert_eq!(ask["method"], "elicitation/create", "{ask}");
        let params = &ask["params"];
        assert!(params["message"].as_str().unwrap().contains(&gate));
        let field = &params["requestedSchema"]["properties"]["answer"];
        assert_eq!(
            field["enum"],
            json!(["approve", "approve-all", "changes", "stop"])
        );
        plain.send(&json!({"jsonrpc": "2.0", "id": ask["id"], "result": answer}).to_string());
        let result = plain.next();
        assert_eq!(result["id"], id, "{result}");
        assert_eq!(
            result["result"]["structuredContent"]["state"], state,
            "{result}"
        );
        assert_eq!(result["result"]["isError"], false);
    }
    plain.finish();
    let status = squad_json(&repo, &["approval", "status"]);
    assert!(
        status["pending"].as_array().is_some_and(Vec::is_empty),
        "{status}"
    );
}

/// Two harnesses on one repository: two `squad mcp` servers, each driven by its own client at the
/// same time, write notes, add memory and open gates for their own runs; nothing is lost.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_servers_on_one_repository_driven_at_once_lose_nothing() {
    const EACH: usize = 6;
    let repo = repo_with_in_chat();
    let (a, b) = tokio::join!(
        connect(&repo, &[], &[], Human::absent()),
        connect(&repo, &[], &[], Human::absent())
    );
    async fn drive(client: &Client, who: &str) -> (Vec<String>, Vec<String>, String) {
        let mut notes = Vec::new();
        let mut memories = Vec::new();
        for i in 0..EACH {
            let note = call(
                client,
                "notes_write",
                json!({"agent": "data", "type": "progress", "content": format!("{who} step {i}")}),
            );
            let memory = call(
                client,
                "memory_add",
                json!({"agent": "data", "kind": "note", "title": format!("{who} learned {i}")}),
            );
            let (note, memory) = tokio::join!(note, memory);
            notes.push(ok(&note)["id"].as_str().unwrap().to_owned());
            memories.push(ok(&memory)["id"].as_str().unwrap().to_owned());
        }
        let gate = ok(&call(
            client,
            "approval_request",
            json!({
                "mode": "autopilot",
                "trigger": "risk-gate",
                "topic": format!("{who} drops a table"),
                "awaiting": "approval of the migration",
                "detail": "Migration 42 drops users_old.",
                "run": format!("run-{who}"),
            }),
        )
        .await);
        (notes, memories, gate["id"].as_str().unwrap().to_owned())
    }
    let ((notes_a, mem_a, gate_a), (notes_b, mem_b, gate_b)) =
        tokio::join!(drive(&a, "alpha"), drive(&b, "beta"));
    a.cancel().await.unwrap();
    b.cancel().await.unwrap();

    // Every note of both servers is on the commit, once, as the CLI reads them.
    let shown = squad_json(&repo, &["notes", "show", "--agent", "data"]);
    let ids: Vec<&str> = shown
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["id"].as_str().unwrap())
        .collect();
    for id in notes_a.iter().chain(&notes_b) {
        assert_eq!(
            ids.iter().filter(|x| *x == id).count(),
            1,
            "note {id}: {ids:?}"
        );
    }
    assert_eq!(ids.len(), 2 * EACH, "{ids:?}");

    // Every memory entry exists exactly once, whichever server added it.
    for id in mem_a.iter().chain(&mem_b) {
        let entry = squad_json(&repo, &["memory", "show", id]);
        assert_eq!(entry["id"], id.as_str());
    }
    let hot =
        std::fs::read_to_string(repo.path().join(".squad/memory/hot/data.md")).unwrap_or_default();
    for who in ["alpha", "beta"] {
        for i in 0..EACH {
            let title = format!("{who} learned {i}");
            assert_eq!(hot.matches(&title).count(), 1, "{title} in {hot}");
        }
    }

    // Both gates are pending, each in its own run, and the log's chain holds.
    let status = squad_json(&repo, &["approval", "status"]);
    let pending: BTreeSet<(String, String)> = status["pending"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| {
            (
                g["id"].as_str().unwrap().to_owned(),
                g["run"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        pending,
        BTreeSet::from([
            (gate_a, "run-alpha".to_owned()),
            (gate_b, "run-beta".to_owned())
        ])
    );
    let human = repo.squad(&["approval", "status"]);
    let human = String::from_utf8(human.stdout).unwrap();
    assert!(human.contains("hash chain intact"), "{human}");
}
