//! The README quickstart's squad round, end to end through the `squad` binary: notes written in two
//! clones, synced through a bare remote and promoted; a gate approved in-chat; a spawn prompt
//! from hot, cold and wiki memory; an issue routed to a squad and the leader's briefing.

use serde_json::Value;

use crate::git_repo::Clones;

const SQUAD: &str = "00000000-0000-4000-8000-0000000005a1";
const LEAD: &str = "00000000-0000-4000-8000-0000000000a1";
const SAM: &str = "00000000-0000-4000-8000-0000000000e1";

fn trace() -> String {
    let mut t = String::new();
    for line in [
        r#"{"kind":"workspace","id":"w1","issue_prefix":"SQ"}"#.to_owned(),
        format!(r#"{{"kind":"user","id":"{SAM}","name":"Sam"}}"#),
        format!(r#"{{"kind":"membership","workspace_id":"w1","user_id":"{SAM}","role":"member"}}"#),
        format!(
            r#"{{"kind":"agent","id":"{LEAD}","workspace_id":"w1","name":"Data","owner_id":"{SAM}","runtime":{{"runtime_id":"rt1","status":"online"}},"created_at":"2026-11-30T09:00:00Z"}}"#
        ),
        format!(
            r#"{{"kind":"agent","id":"00000000-0000-4000-8000-0000000000a2","workspace_id":"w1","name":"Worf","owner_id":"{SAM}","skills":["security"],"created_at":"2026-11-30T09:00:00Z"}}"#
        ),
        r#"{"kind":"issue","id":"i1","workspace_id":"w1","title":"Rotate keys","status":"todo","created_at":"2026-11-30T09:00:00Z","number":1}"#.to_owned(),
        format!(
            r#"{{"kind":"event","at":"2026-11-30T10:00:00Z","event":{{"type":"create_squad","actor":"{SAM}","workspace_id":"w1","squad_id":"{SQUAD}","name":"Core","leader_id":"{LEAD}"}}}}"#
        ),
        format!(
            r#"{{"kind":"event","event":{{"type":"add_member","actor":"{SAM}","squad_id":"{SQUAD}","member_type":"agent","member_id":"00000000-0000-4000-8000-0000000000a2","role":"security"}}}}"#
        ),
        format!(
            r#"{{"kind":"event","event":{{"type":"update_issue","actor":{{"type":"member","id":"{SAM}"}},"issue_id":"i1","assignee_type":"squad","assignee_id":"{SQUAD}"}}}}"#
        ),
    ] {
        t.push_str(&line);
        t.push('\n');
    }
    t
}

#[test]
fn a_squad_round_through_the_cli() {
    // 1. Notes: a bare remote with one commit on main, two clones, notes synced and promoted.
    let w = Clones::new("Add auth middleware");
    let root = w.root();
    let (a, b) = (w.path("a"), w.path("b"));
    let fields =
        r#"{"decision":"Use JWT RS256","reasoning":"services verify RS256","confidence":"high"}"#;
    let id = w.ok(
        &a,
        &[
            "notes",
            "write",
            "--agent",
            "data",
            "--type",
            "decision",
            "--fields",
            fields,
            "--promote",
        ],
        None,
    );
    let id = id.trim();
    assert!(!id.is_empty());
    w.ok(
        &b,
        &[
            "notes",
            "write",
            "--agent",
            "worf",
            "--type",
            "security",
            "--content",
            "Token lifetime must stay under 15 minutes",
        ],
        None,
    );
    let s1 = w.json(&a, &["--json", "notes", "sync"]);
    assert_eq!(s1["pushed"], 1, "{s1}");
    let s2 = w.json(&b, &["--json", "notes", "sync"]);
    assert_eq!(
        (s2["fetched"].clone(), s2["pushed"].clone()),
        (1.into(), 1.into()),
        "{s2}"
    );
    let s3 = w.json(&a, &["--json", "notes", "sync"]);
    assert_eq!(s3["fetched"], 1, "{s3}");
    let worf = w.git(
        &a,
        &["notes", "--ref", "refs/notes/squad/worf", "show", "HEAD"],
    );
    assert!(worf.contains("15 minutes"), "{worf}");

    w.git(&a, &["config", "squad.defaultBranch", "main"]);
    let promoted = w.json(&a, &["notes", "promote", "--json"]);
    assert_eq!(promoted["promoted"], serde_json::json!([id]), "{promoted}");
    let again = w.json(&a, &["notes", "promote", "--json"]);
    assert_eq!(again["promoted"], serde_json::json!([]), "{again}");
    let md = w.git(&a, &["show", "squad-state:decisions.md"]);
    assert!(md.contains("### Use JWT RS256") && md.contains(id), "{md}");

    // 2. Approval: a gate opened and approved with `/approve` typed in the chat.
    w.ok(&a, &["approval", "configure", "--channel", "in-chat"], None);
    let gate = w.ok(
        &a,
        &[
            "approval",
            "request",
            "--mode",
            "interactive",
            "--trigger",
            "step:plan",
            "--topic",
            "Rotate the signing keys",
            "--awaiting",
            "approve the rotation",
            "--detail",
            "Every session is invalidated.",
        ],
        None,
    );
    let gate = gate.trim();
    assert!(gate.starts_with("g-"), "{gate}");
    let decided = w.ok(&a, &["approval", "wait"], Some("/approve\n"));
    assert_eq!(decided.trim(), "approved");
    let log = std::fs::read_to_string(a.join(".squad/notifications.md")).unwrap();
    assert!(log.contains(gate), "{log}");

    // 3. Memory: hot, cold and wiki tiers in the spawn prompt.
    let mem = a.join(".squad/memory");
    for (rel, body) in [
        ("hot/data.md", "Current task: rotate the signing keys\n"),
        (
            "cold/data.md",
            "### 2026-11-20T10:00:00Z: note: key rotation needs an overlap window\n**id:** c1\n---\n",
        ),
        ("wiki/auth.md", "# Auth\nTokens are RS256.\n"),
    ] {
        std::fs::create_dir_all(mem.join(rel).parent().unwrap()).unwrap();
        std::fs::write(mem.join(rel), body).unwrap();
    }
    let spawned = w.json(
        &a,
        &[
            "memory",
            "spawn",
            "--agent",
            "data",
            "--situation",
            "resuming",
            "--include-wiki",
            "auth",
            "--no-touch",
            "--json",
        ],
    );
    let tiers = &spawned["manifest"]["tiers"];
    for tier in ["hot", "cold", "wiki"] {
        assert!(
            tiers[tier]["bytes"].as_u64().unwrap() > 0,
            "{tier}: {spawned}"
        );
    }
    assert!(
        spawned["prompt"]
            .as_str()
            .unwrap()
            .contains("overlap window")
    );

    // 4. Routing: the assignment wakes the leader; the briefing lists the roster.
    std::fs::write(root.join("t.jsonl"), trace()).unwrap();
    let replay = w.ok(root, &["route", "replay", "t.jsonl"], None);
    let docs: Vec<Value> = serde_json::Deserializer::from_str(&replay)
        .into_iter()
        .map(Result::unwrap)
        .collect();
    let enqueue = docs
        .iter()
        .flat_map(|d| d["decisions"].as_array().unwrap().iter())
        .find(|d| d["type"] == "enqueue")
        .unwrap_or_else(|| panic!("no task enqueued: {replay}"));
    assert_eq!(enqueue["task"]["is_leader_task"], true, "{enqueue}");
    assert_eq!(enqueue["task"]["agent_id"], LEAD, "{enqueue}");
    let brief = w.ok(
        root,
        &[
            "route",
            "briefing",
            "--trace",
            "t.jsonl",
            "--squad",
            SQUAD,
            "--owns-status",
        ],
        None,
    );
    assert!(brief.starts_with("## Squad Operating Protocol"), "{brief}");
    assert!(
        brief.contains(&format!(
            "- Data — agent — `[@Data](mention://agent/{LEAD})`"
        )),
        "{brief}"
    );
    assert!(brief.contains("Worf"), "{brief}");
}
