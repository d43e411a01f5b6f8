//! Leader briefing snapshots (§9) and the claim decision (§5).

use expect_test::{Expect, expect};
use squad_model::{Assignee, IssueStatus, MemberRef, TaskStatus};
use squad_routing::briefing::{BriefingCommands, briefing, briefing_with, protocol, roster};
use squad_routing::mention::{MentionKind, parse_mentions};
use squad_routing::{Decision, Directory, Event};

use crate::world::*;
use squad_routing::event::*;

#[track_caller]
fn check(actual: &str, expect: Expect) {
    expect.assert_eq(actual);
}

/// Replaces the UUID-shaped ids of the test world by short names, for readable snapshots.
fn short(text: &str) -> String {
    let mut out = text.to_owned();
    for (kind, name) in [(0xa, "agent"), (0x5, "squad"), (0xe, "user")] {
        for n in 1..100 {
            out = out.replace(&uuid(kind, n), &format!("<{name}{n}>"));
        }
    }
    out
}

fn team() -> (World, squad_model::SquadId) {
    let mut w = World::new();
    let alice = w.alice.clone();
    let bob = w.bob.clone();
    let lead = w.agent("Lead", &alice, ONLINE_PRIVATE);
    let ada = w.agent("Ada", &alice, ONLINE_PRIVATE);
    w.edit_agent(&ada, |a| {
        a.skills = vec!["rust".into(), "multica-squads".into(), "postgres".into()];
    });
    let lin = w.agent("Lin", &alice, ONLINE_PRIVATE);
    let gone = w.agent(
        "Gone",
        &alice,
        AgentSpec {
            archived: true,
            ..ONLINE_PRIVATE
        },
    );
    let squad = w.squad("Core", &lead, &alice);
    w.member(&squad, MemberRef::Agent(ada), "  backend ");
    w.member(&squad, MemberRef::Agent(gone), "ghost");
    w.member(&squad, MemberRef::Member(bob), "reviewer");
    w.member(&squad, MemberRef::Agent(lin), "   ");
    (w, squad)
}

#[test]
fn roster_format() {
    let (w, squad) = team();
    let s = w.dir.squad(&squad).unwrap();
    check(
        &short(&roster(&w.dir, s)),
        expect![[r#"
            ## Squad Roster

            Leader (you):
            - Lead — agent — `[@Lead](mention://agent/<agent1>)`

            Members:
            - Ada — agent, role: "backend" — skills: postgres, rust — `[@Ada](mention://agent/<agent2>)`
            - Bob — member (human), role: "reviewer" — `[@Bob](mention://member/<user4>)`
            - Lin — agent — no skills assigned — `[@Lin](mention://agent/<agent3>)`"#]],
    );
}

#[test]
fn every_roster_mention_parses_back() {
    let (w, squad) = team();
    let s = w.dir.squad(&squad).unwrap();
    let text = briefing(&w.dir, s, true);
    let parsed: Vec<(MentionKind, String)> = parse_mentions(&text)
        .into_iter()
        .filter(|m| m.id.len() == 36)
        .map(|m| (m.kind, m.id.to_owned()))
        .collect();
    let want = vec![
        (MentionKind::Agent, uuid(0xa, 1)),
        (MentionKind::Agent, uuid(0xa, 2)),
        (MentionKind::Member, uuid(0xe, 4)),
        (MentionKind::Agent, uuid(0xa, 3)),
    ];
    assert_eq!(parsed, want);
    assert!(!text.contains("Gone"), "archived agents are skipped");
    assert!(!text.contains(&uuid(0xa, 4)));
}

#[test]
fn lone_leader_missing_leader_and_instructions() {
    let mut w = World::new();
    let alice = w.alice.clone();
    let lead = w.agent("Lead", &alice, ONLINE_PRIVATE);
    let squad = w.squad("Solo", &lead, &alice);
    let mut s = w.dir.squad(&squad).unwrap().clone();
    s.leader_id = squad_model::AgentId::new(uuid(0xa, 99)).unwrap();
    s.instructions = "\n  Prefer small PRs.\n".into();
    let text = briefing(&w.dir, &s, false);
    let tail = &text[text.find("## Squad Roster").unwrap()..];
    check(
        &short(tail),
        expect![[r#"
            ## Squad Roster

            Leader (you):
            - Leader — agent — `[@Leader](mention://agent/<agent99>)`

            Members:
            - Lead — agent, role: "leader" — no skills assigned — `[@Lead](mention://agent/<agent1>)`

            ## Squad Instructions (Solo)

            Prefer small PRs."#]],
    );
    s.leader_id = lead;
    s.instructions = "   ".into();
    let text = briefing(&w.dir, &s, false);
    assert!(
        text.ends_with("\n\nMembers: (none — you are the only member of this squad)"),
        "{text}"
    );
    assert!(!text.contains("## Squad Instructions"));
}

#[test]
fn protocol_markers() {
    let owned = protocol(true);
    let not_owned = protocol(false);
    for p in [&owned, &not_owned] {
        for marker in [
            "## Squad Operating Protocol",
            "Delegate by @mention",
            "Record your evaluation",
            "Stop after dispatching",
            "A child issue created with `--status todo` and an agent assignee already wakes that agent",
            "Never both for the same work.",
        ] {
            assert!(p.contains(marker), "{marker}");
        }
    }
    for marker in [
        "Own the parent issue status",
        "move the parent to `in_progress`",
        "successful dispatch is not completion",
        "multica issue status <issue-id> in_review",
        "Leave `done` to a human reviewer",
    ] {
        assert!(owned.contains(marker), "{marker}");
    }
    for marker in [
        "Do NOT change this issue's status",
        "not assigned to your squad",
        "never run `multica issue status` on it",
    ] {
        assert!(not_owned.contains(marker), "{marker}");
    }
    assert!(!not_owned.contains("Own the parent issue status"));
    assert!(!not_owned.contains("multica issue status <issue-id> in_review"));
}

#[test]
fn protocol_snapshot_owned() {
    check(
        &protocol(true),
        expect![[r#"
            ## Squad Operating Protocol

            **You have been activated as the leader of this squad. It does not matter how the work reached you (a direct assignment, an @squad mention, a quick-create, an autopilot run): your job is to coordinate the squad, not to do the work yourself.**

            Your responsibilities, in order:
            1. **Read the issue** and decide which member fits the work best, comparing it with the skills and the role each member has in the roster below.
            2. **Delegate by @mention.** Post one comment that mentions the member(s) you chose.
               - **Be terse.** Do not repeat the issue back; in two or three sentences add only what the member cannot work out alone: who does it, why them, any extra constraint.
               - Copy the mention markdown exactly as the roster shows it: a plain "@name" wakes nobody.
            3. **Record your evaluation.** After every trigger, run `multica squad activity <issue-id> <outcome> --reason "<short reason>"` with the outcome `action`, `no_action` or `failed`. Do this on every turn, without exception.
            4. **Stop after dispatching.** End your turn once the work is handed out. You are woken again when a member you delegated to posts an update or a question, when a member finishes and the issue moves on, or when someone mentions you again.
            5. **Re-evaluate on each trigger.** Hand out the next step, escalate, or close the loop. When nothing is needed, record `no_action` and stop without commenting.
            6. **Own the parent issue status.** This issue is assigned to your squad, so its status is yours to manage, unless your own agent identity forbids you to change statuses. On your first turn after the assignment, move the parent to `in_progress`, and keep it there while members work. Remember that a successful dispatch is not completion. Once you have confirmed that the overall goal is met, run `multica issue status <issue-id> in_review`: this is a standing duty, even when no comment asks for it. Leave `done` to a human reviewer or to an integration (for example a merged pull request that closes the issue).

            Hard rules:
            - Always mention with the full syntax `[@Name](mention://<type>/<UUID>)`. Without a mention link there is no delegation.
            - Do not restate the issue. Do not implement the work yourself unless no member is suitable. Do not mention anyone who is not on the roster. Post at most one delegation comment per turn.
            - If no member can do the work, post a comment that explains the gap and mention the reporter.
            - Always run `multica squad activity` before you end a turn, even for `no_action`.
            - A child issue created with `--status todo` and an agent assignee already wakes that agent by itself, so pick exactly one path for a piece of work: assign it on creation, or @mention the member. Never both for the same work."#]],
    );
}

fn claim(w: &mut World, task: &squad_model::TaskId) -> (bool, Option<bool>) {
    let d = w.event(Event::Claim(ClaimTask {
        task_id: task.clone(),
    }));
    d.decisions
        .iter()
        .find_map(|d| match d {
            Decision::Claim {
                is_leader_task,
                owns_issue_status,
                leader_role_resolved,
                ..
            } => {
                assert!(leader_role_resolved);
                Some((*is_leader_task, *owns_issue_status))
            }
            _ => None,
        })
        .unwrap()
}

#[test]
fn claim_injects_the_briefing_only_for_a_current_leader() {
    let (mut w, squad) = team();
    let lead = w.dir.squad(&squad).unwrap().leader_id.clone();
    let alice = w.alice.clone();
    let other_lead = w.agent("Other", &alice, ONLINE_PRIVATE);
    let own = w.issue(IssueStatus::Todo, Some(Assignee::Squad(squad.clone())));
    let foreign = w.issue(IssueStatus::Todo, None);
    let plain = w.task(&lead, &own, TaskStatus::Queued, None);
    assert_eq!(claim(&mut w, &plain), (false, None));
    let owned = w.task(&lead, &own, TaskStatus::Queued, Some(&squad));
    assert_eq!(claim(&mut w, &owned), (true, Some(true)));
    let mention = w.task(&lead, &foreign, TaskStatus::Queued, Some(&squad));
    assert_eq!(claim(&mut w, &mention), (true, Some(false)));
    // The leader was swapped after the enqueue: the flag is cleared.
    let swapped = w.task(&other_lead, &own, TaskStatus::Queued, Some(&squad));
    assert_eq!(claim(&mut w, &swapped), (false, None));
    assert_eq!(w.dir.task(&swapped).unwrap().status, TaskStatus::Dispatched);
}

/// The host's wording replaces every command the briefing names, in both variants; the default
/// wording is the reference's, byte for byte.
#[test]
fn the_briefing_names_the_hosts_commands() {
    let (w, squad) = team();
    let s = w.dir.squad(&squad).unwrap();
    let default = BriefingCommands::default();
    for owns in [true, false] {
        assert_eq!(
            briefing_with(&w.dir, s, owns, &default),
            briefing(&w.dir, s, owns)
        );
    }
    assert!(
        briefing(&w.dir, s, true)
            .contains("`multica squad activity <issue-id> <outcome> --reason \"<short reason>\"`")
    );
    let ours = BriefingCommands::from_json(
        r#"{"activity": "squadctl record <issue-id> <outcome> --why '<reason>'", "set_status": "squadctl status <issue-id> <status>"}"#,
    )
    .unwrap();
    let owned = briefing_with(&w.dir, s, true, &ours);
    let not_owned = briefing_with(&w.dir, s, false, &ours);
    for text in [&owned, &not_owned] {
        assert!(!text.contains("multica"), "{text}");
        assert!(
            text.contains("`squadctl record <issue-id> <outcome> --why '<reason>'`"),
            "{text}"
        );
        assert!(
            text.contains("Always run `squadctl record` before you end a turn"),
            "{text}"
        );
        // The roster is untouched.
        assert!(text.contains("## Squad Roster"), "{text}");
    }
    assert!(
        owned.contains("run `squadctl status <issue-id> in_review`"),
        "{owned}"
    );
    assert!(
        not_owned.contains("never run `squadctl status` on it"),
        "{not_owned}"
    );
    // One template given: the other keeps its default.
    let half =
        BriefingCommands::from_json(r#"{"set_status": "gh-issue-move <issue-id> <status>"}"#)
            .unwrap();
    assert_eq!(half.activity(), BriefingCommands::DEFAULT_ACTIVITY);
    assert_eq!(half.set_status(), "gh-issue-move <issue-id> <status>");
}

/// Bad wordings tried: not JSON, not an object, an unknown key, a template that is empty, too
/// long, two lines, holds a backtick, starts with a placeholder, or lacks a placeholder.
#[test]
fn bad_briefing_commands_are_refused_naming_the_rule() {
    let long = format!(
        "x <issue-id> <outcome> {}",
        "y".repeat(BriefingCommands::MAX_LEN)
    );
    let cases: Vec<(String, &str)> = vec![
        ("not json".into(), "briefing commands:"),
        ("[]".into(), "briefing commands:"),
        (
            r#"{"activty": "a <issue-id> <outcome>"}"#.into(),
            "unknown field `activty`",
        ),
        (r#"{"activity": " "}"#.into(), "activity is empty"),
        (
            format!(r#"{{"activity": "{long}"}}"#),
            "activity is longer than 300 characters",
        ),
        (
            r#"{"activity": "a <issue-id>\n<outcome>"}"#.into(),
            "activity must be one line",
        ),
        (
            r#"{"activity": "a `<issue-id>` <outcome>"}"#.into(),
            "activity must not contain a backtick",
        ),
        (
            r#"{"activity": "<issue-id> <outcome>"}"#.into(),
            "activity must start with the command's name",
        ),
        (
            r#"{"activity": "log <issue-id>"}"#.into(),
            "activity lacks the placeholder <outcome>",
        ),
        (
            r#"{"set_status": "move <issue-id> done"}"#.into(),
            "set_status lacks the placeholder <status>",
        ),
    ];
    for (text, want) in cases {
        let err = BriefingCommands::from_json(&text).unwrap_err();
        assert_eq!(
            err.kind(),
            squad_routing::ErrorKind::InvalidCommands,
            "{text}"
        );
        assert!(err.to_string().contains(want), "{text}: {err}");
    }
}
