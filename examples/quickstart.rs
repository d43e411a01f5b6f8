//! Quickstart: one squad round, offline, told as it happens.
//!
//! 1. Two agents write notes in two clones of one repository, sync them through a bare remote,
//!    and the flagged decision is promoted into the `squad-state` branch.
//! 2. A risk gate is raised and approved in the chat; the audit log's hash chain verifies.
//! 3. A spawn prompt is assembled from hot, cold and wiki memory.
//! 4. An issue assigned to a squad wakes its leader, who gets a briefing.
//!
//! Run with `cargo run -p squad-examples --example quickstart` (needs the `git` CLI).
#![expect(clippy::print_stdout, reason = "an example prints what it does")]

use std::path::Path;
use std::process::Command;
use std::sync::Arc;

use anyhow::{Context as _, bail, ensure};
use squad_model::{AgentName, Confidence, NoteEntry, NoteType};

fn main() -> anyhow::Result<()> {
    let tmp = tempfile::tempdir()?;
    let root = tmp.path();
    println!("A squad round in {}", root.display());
    notes_round(root)?;
    approval_round(root)?;
    memory_round(root)?;
    routing_round()?;
    println!("\nDone: notes promoted, gate decided, prompt assembled, leader woken.");
    Ok(())
}

/// Runs `git` in `dir` with a fixed identity and no system or global config.
fn git(dir: &Path, home: &Path, args: &[&str]) -> anyhow::Result<String> {
    let out = Command::new("git")
        .current_dir(dir)
        .args([
            "-c",
            "user.name=Squad Example",
            "-c",
            "user.email=squad@example.invalid",
        ])
        .args(args)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("HOME", home)
        .output()
        .context("cannot run git; is it installed?")?;
    if !out.status.success() {
        bail!(
            "git {} failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(String::from_utf8(out.stdout)?.trim().to_owned())
}

fn notes_round(root: &Path) -> anyhow::Result<()> {
    use squad_notes::promote::{DECISIONS_KEY, PromoteOptions, Promoter};
    use squad_notes::state::{OrphanBranchStore, STATE_REF, StateStore};
    use squad_notes::transport::GitCliTransport;
    use squad_notes::{GixNotes, Notes, Oid};

    println!("\n== 1. Notes: two clones, one remote, one promoted decision");
    let home = root.join("home");
    std::fs::create_dir_all(&home)?;
    let remote = root.join("remote.git");
    git(
        root,
        &home,
        &["init", "-q", "--bare", "-b", "main", "remote.git"],
    )?;
    let remote_url = remote.to_str().context("temp path is not UTF-8")?;
    git(root, &home, &["clone", "-q", remote_url, "a"])?;
    let (a, b) = (root.join("a"), root.join("b"));
    for (k, v) in [
        ("user.name", "Squad Example"),
        ("user.email", "squad@example.invalid"),
    ] {
        git(&a, &home, &["config", k, v])?;
    }
    git(&a, &home, &["checkout", "-q", "-b", "main"])?;
    git(
        &a,
        &home,
        &["commit", "-q", "--allow-empty", "-m", "Add auth middleware"],
    )?;
    git(&a, &home, &["push", "-q", "origin", "main"])?;
    git(root, &home, &["clone", "-q", remote_url, "b"])?;
    for (k, v) in [
        ("user.name", "Squad Example"),
        ("user.email", "squad@example.invalid"),
    ] {
        git(&b, &home, &["config", k, v])?;
    }
    let head: Oid = git(&a, &home, &["rev-parse", "HEAD"])?.parse()?;
    println!(
        "Commit {} pushed to the remote's main; clones a/ and b/ have it.",
        &head.to_string()[..12]
    );

    let (ta, tb) = (GitCliTransport::new(&a), GitCliTransport::new(&b));
    let added = ta.setup("origin")?.added.len() + tb.setup("origin")?.added.len();
    println!("Notes transport set up in both clones ({added} refspecs added).");

    let data = AgentName::new("data")?;
    let mut decision = NoteEntry::new(data.clone(), NoteType::Decision);
    decision.decision = Some("Use JWT RS256 for auth middleware".into());
    decision.reasoning = Some("The existing services already verify RS256 tokens.".into());
    decision.alternatives_considered = Some(vec!["HS256".into(), "session tokens".into()]);
    decision.confidence = Some(Confidence::High);
    decision.promote_to_permanent = Some(true);
    Notes::new(GixNotes::open(&a)?).write(&data, &head, &decision)?;
    println!("data (clone a) notes a decision on it, flagged promote_to_permanent.");

    let worf = AgentName::new("worf")?;
    let mut security = NoteEntry::new(worf.clone(), NoteType::Security);
    security.reasoning = Some("Token lifetime must stay under 15 minutes.".into());
    Notes::new(GixNotes::open(&b)?).write(&worf, &head, &security)?;
    println!("worf (clone b) notes a security finding on the same commit.");

    let (ga, gb) = (GixNotes::open(&a)?, GixNotes::open(&b)?);
    let r1 = squad_notes::sync::sync(&ga, &ta, "origin")?;
    let r2 = squad_notes::sync::sync(&gb, &tb, "origin")?;
    let r3 = squad_notes::sync::sync(&ga, &ta, "origin")?;
    println!(
        "sync a: pushed {}; sync b: fetched {}, pushed {}; sync a: fetched {} ({} squad refs).",
        r1.pushed, r2.fetched, r2.pushed, r3.fetched, r3.refs
    );
    let seen = Notes::new(GixNotes::open(&a)?).show(&worf, &head)?;
    ensure!(
        seen.entries == vec![security],
        "worf's note did not reach clone a"
    );
    println!("Clone a now reads worf's note too.");

    git(&a, &home, &["config", "squad.defaultBranch", "main"])?;
    let promoter = Promoter::open(&a, OrphanBranchStore::open(&a)?)?;
    let report = promoter.promote(&PromoteOptions::default())?;
    ensure!(report.promoted.len() == 1, "expected one promoted entry");
    println!(
        "Promoter on `{}`: {} commit(s) scanned, promoted {}, left {} unflagged.",
        report.branch, report.commits_scanned, report.promoted[0].entry.id, report.unflagged
    );
    let again = promoter.promote(&PromoteOptions::default())?;
    println!(
        "A second run promotes {} (exactly once).",
        again.promoted.len()
    );
    let md = promoter
        .state()
        .read(DECISIONS_KEY)?
        .context("decisions.md is missing")?;
    println!("{DECISIONS_KEY} on {STATE_REF}:");
    for line in String::from_utf8(md)?.lines().filter(|l| !l.is_empty()) {
        println!("  | {line}");
    }
    Ok(())
}

/// Drives a future that never waits on I/O (in-chat channel, files) to completion.
fn block_on<F: std::future::Future>(f: F) -> F::Output {
    let waker = std::task::Waker::noop();
    let mut cx = std::task::Context::from_waker(waker);
    let mut f = std::pin::pin!(f);
    loop {
        if let std::task::Poll::Ready(v) = f.as_mut().poll(&mut cx) {
            return v;
        }
    }
}

fn approval_round(root: &Path) -> anyhow::Result<()> {
    use squad_notify::{
        ApprovalChannel as _, Approvals, ApproverRules, FanOut, FixedClock, GateRequest,
        InChatChannel, Mode, RequestOutcome, StateDir, StaticAuthorizer, Trigger, verify_log,
    };

    println!("\n== 2. Approval: a risk gate decided in the chat");
    let clock = Arc::new(FixedClock::at_unix_seconds(1_800_000_000));
    let approvals = Approvals::new(StateDir::new(root.join(".squad")), clock.clone());
    let chat = Arc::new(InChatChannel::new(Box::new(std::io::sink()), clock.clone()));
    let channels = FanOut::new().with(chat.clone());
    let request = GateRequest {
        mode: Mode::Autopilot,
        trigger: Trigger::RiskGate,
        topic: "Rotate the auth signing keys".into(),
        awaiting: "approve the key rotation".into(),
        detail: "Every session token is invalidated.".into(),
    };
    let RequestOutcome::Opened { gate, .. } =
        block_on(approvals.request(&request, None, 3600, &channels))?
    else {
        bail!("autopilot should open a gate at a risk gate");
    };
    println!("Risk gate {} opened: {}.", gate.id, gate.topic);
    chat.feed("/approve");
    chat.close();
    println!("The human types `/approve` in the chat.");
    let polled = block_on(channels.poll(&gate))?;
    let rules = ApproverRules {
        approver: None,
        own_identities: vec![],
    };
    let done = block_on(approvals.consume(&polled.signals, &rules, &StaticAuthorizer::new()))?;
    let decided = done.decided.context("the gate was not decided")?;
    println!("Decision: {} (gate {}).", decided.state, decided.id);
    let log = approvals.log_text()?.unwrap_or_default();
    let head = approvals.state()?.approval.log_head;
    let verified = verify_log(&log, head.as_deref())?;
    println!(
        "notifications.md: {} entries, hash chain verifies up to {}.",
        verified.entries,
        verified.head.chars().take(19).collect::<String>()
    );
    Ok(())
}

fn memory_round(root: &Path) -> anyhow::Result<()> {
    use squad_memory::{Budget, DocRef, FsStore, LoadPlan, MemoryStore, Situation, Touch, spawn};

    println!("\n== 3. Memory: a spawn prompt from hot, cold and wiki");
    let store = FsStore::new(root.join(".squad"));
    let data: AgentName = "data".parse()?;
    store.write(
        &DocRef::Hot(data.clone()),
        "Current task: rotate the auth signing keys\nActive decisions: keep RS256\nBlockers: none\n",
    )?;
    let mut cold = String::new();
    for (i, (day, text)) in [
        (
            "10",
            "decision: tokens are RS256, verified by every service",
        ),
        (
            "14",
            "note: the login redirect loops when the cookie is stale",
        ),
        ("18", "note: key rotation needs a 15 minute overlap window"),
        ("20", "note: the CSS build is slow on CI"),
    ]
    .iter()
    .enumerate()
    {
        cold.push_str(&format!(
            "### 2026-11-{day}T10:00:00Z: {text}\n**id:** c-{i}\n{}\n---\n",
            "Details of this entry, kept short. ".repeat(6)
        ));
    }
    store.write(&DocRef::Cold(data.clone()), &cold)?;
    store.write(
        &DocRef::Wiki("auth".parse()?),
        "# Auth\n\nTokens are RS256 JWTs. Keys rotate monthly with an overlap window.\n",
    )?;
    let budget = Budget {
        hot_plus_cold: 700,
        ..Budget::default()
    };
    let plan = LoadPlan::new(Situation::Resuming)
        .include_wiki("auth".parse()?)
        .task("rotate auth signing keys");
    let out = spawn(&store, &data, &plan, &budget, Touch::No)?;
    for (tier, report) in &out.manifest.tiers {
        println!(
            "  {tier:<5} {:>5} bytes, {} file(s), {} entries",
            report.bytes,
            report.files.len(),
            report.entries.len()
        );
    }
    println!(
        "Prompt: {} bytes (~{} tokens); left out under a {}-byte hot+cold budget: {}",
        out.manifest.total_bytes,
        out.manifest.estimated_tokens,
        budget.hot_plus_cold,
        out.manifest.left_out.len()
    );
    for l in &out.manifest.left_out {
        // The reason as `squad memory spawn --json` spells it (`not_relevant`).
        let reason = serde_json::to_value(l.reason)?;
        println!(
            "  - {} {} {} ({} bytes): {}",
            l.tier,
            l.file,
            l.item,
            l.bytes,
            reason.as_str().unwrap_or_default()
        );
    }
    Ok(())
}

fn routing_round() -> anyhow::Result<()> {
    use squad_model::*;
    use squad_routing::event::{AddMember, CreateIssue, CreateSquad};
    use squad_routing::*;

    println!("\n== 4. Routing: an issue assigned to a squad");
    let t = Timestamp::parse("2026-11-30T10:00:00Z")?;
    let ws = WorkspaceId::new("w1")?;
    let sam = UserId::new("00000000-0000-4000-8000-0000000000e1")?;
    let lead = AgentId::new("00000000-0000-4000-8000-0000000000a1")?;
    let member = AgentId::new("00000000-0000-4000-8000-0000000000a2")?;
    let squad = SquadId::new("00000000-0000-4000-8000-0000000005a1")?;

    let mut dir = InMemoryDirectory::new();
    dir.put_workspace(Workspace {
        id: ws.clone(),
        name: "Acme".into(),
        issue_prefix: "SQ".into(),
    });
    dir.put_user(User {
        id: sam.clone(),
        name: "Sam".into(),
    });
    dir.put_membership(Membership {
        workspace_id: ws.clone(),
        user_id: sam.clone(),
        role: WorkspaceRole::Member,
    });
    for (id, name) in [(&lead, "Data"), (&member, "Worf")] {
        dir.put_agent(Agent {
            id: id.clone(),
            workspace_id: ws.clone(),
            name: name.into(),
            owner_id: Some(sam.clone()),
            archived_at: None,
            runtime: Some(RuntimeBinding {
                runtime_id: RuntimeId::new("rt1")?,
                status: RuntimeStatus::Online,
                last_seen_at: None,
            }),
            permission_mode: PermissionMode::Private,
            invocation_targets: vec![],
            skills: vec![],
            instructions: String::new(),
            created_at: t,
        });
    }
    let engine = Engine::default();
    let step = |dir: &mut InMemoryDirectory, event: Event| {
        let d = engine.decide(dir, t, &event);
        apply(dir, &d);
        d
    };
    let d = step(
        &mut dir,
        Event::CreateSquad(CreateSquad {
            actor: sam.clone(),
            workspace_id: ws.clone(),
            squad_id: squad.clone(),
            name: "Core".into(),
            description: "Auth and sessions".into(),
            instructions: "Security review before merge.".into(),
            leader_id: lead.to_string(),
            avatar_url: None,
        }),
    );
    ensure!(
        d.rejection().is_none(),
        "squad refused: {:?}",
        d.rejection()
    );
    let d = step(
        &mut dir,
        Event::AddMember(AddMember {
            actor: sam.clone(),
            squad_id: squad.clone(),
            member_type: "agent".into(),
            member_id: member.to_string(),
            role: "member".into(),
        }),
    );
    ensure!(
        d.rejection().is_none(),
        "member refused: {:?}",
        d.rejection()
    );
    println!("Squad Core: leader Data (runtime online), member Worf.");
    let d = step(
        &mut dir,
        Event::CreateIssue(CreateIssue {
            actor: Principal::Member(sam.clone()),
            task_id: None,
            workspace_id: ws.clone(),
            issue_id: IssueId::new("i1")?,
            number: Some(1),
            title: "Rotate the auth signing keys".into(),
            status: None,
            assignee_type: Some("squad".into()),
            assignee_id: Some(squad.to_string()),
            parent_issue_id: None,
            stage: None,
            suppress_run: false,
        }),
    );
    let task = d.enqueued().next().context("the leader was not woken")?;
    ensure!(task.is_leader_task && task.agent_id == lead);
    println!(
        "Issue SQ-1 assigned to the squad: leader task enqueued for agent {} (leader task: {}).",
        task.agent_id, task.is_leader_task
    );
    let squad_row = dir.squad(&squad).context("squad missing")?;
    let text = briefing::briefing(&dir, squad_row, true);
    let lines: Vec<&str> = text.lines().collect();
    let roster = lines
        .iter()
        .position(|l| l.starts_with("## Squad Roster"))
        .context("the briefing has no roster")?;
    println!(
        "Leader briefing ({} lines): {}, {} protocol lines, then:",
        lines.len(),
        lines[0],
        roster - 1
    );
    for line in lines[roster..].iter().filter(|l| !l.is_empty()) {
        println!("  | {line}");
    }
    Ok(())
}
