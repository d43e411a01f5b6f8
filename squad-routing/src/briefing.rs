//! The leader briefing (§9): operating protocol, roster and squad instructions.
//!
//! The protocol text is our own wording; the markers that hosts and daemons look for
//! (`## Squad Operating Protocol`, `Delegate by @mention`, ...) and the roster format are exact.

use std::fmt::Write as _;

use squad_model::{MemberRef, Squad};

use crate::directory::Directory;
use crate::mention::{MentionKind, format_mention};

const SEP: &str = " — ";

const HEADER: &str = "## Squad Operating Protocol

**You have been activated as the leader of this squad. It does not matter how the work reached you \
(a direct assignment, an @squad mention, a quick-create, an autopilot run): your job is to coordinate \
the squad, not to do the work yourself.**

Your responsibilities, in order:
1. **Read the issue** and decide which member fits the work best, comparing it with the skills and \
the role each member has in the roster below.
2. **Delegate by @mention.** Post one comment that mentions the member(s) you chose.
   - **Be terse.** Do not repeat the issue back; in two or three sentences add only what the \
member cannot work out alone: who does it, why them, any extra constraint.
   - Copy the mention markdown exactly as the roster shows it: a plain \"@name\" wakes nobody.
3. **Record your evaluation.** After every trigger, run \
`multica squad activity <issue-id> <outcome> --reason \"<short reason>\"` with the outcome \
`action`, `no_action` or `failed`. Do this on every turn, without exception.
4. **Stop after dispatching.** End your turn once the work is handed out. You are woken again when \
a member you delegated to posts an update or a question, when a member finishes and the issue moves \
on, or when someone mentions you again.
5. **Re-evaluate on each trigger.** Hand out the next step, escalate, or close the loop. When \
nothing is needed, record `no_action` and stop without commenting.";

const OWNED: &str = "6. **Own the parent issue status.** This issue is assigned to your squad, so its \
status is yours to manage, unless your own agent identity forbids you to change statuses. On your \
first turn after the assignment, move the parent to `in_progress`, and keep it there while members \
work. Remember that a successful dispatch is not completion. Once you have confirmed that the overall \
goal is met, run `multica issue status <issue-id> in_review`: this is a standing duty, even when no \
comment asks for it. Leave `done` to a human reviewer or to an integration (for example a merged pull \
request that closes the issue).";

const NOT_OWNED: &str = "6. **Do NOT change this issue's status.** This issue is not assigned to your \
squad: you were brought in by an @mention, or this is a quick-create turn and the issue does not exist \
yet. Its status belongs to its own assignee, so never run `multica issue status` on it, however \
finished the work looks.";

const HARD_RULES: &str = "Hard rules:
- Always mention with the full syntax `[@Name](mention://<type>/<UUID>)`. Without a mention link \
there is no delegation.
- Do not restate the issue. Do not implement the work yourself unless no member is suitable. Do not \
mention anyone who is not on the roster. Post at most one delegation comment per turn.
- If no member can do the work, post a comment that explains the gap and mention the reporter.
- Always run `multica squad activity` before you end a turn, even for `no_action`.
- A child issue created with `--status todo` and an agent assignee already wakes that agent by \
itself, so pick exactly one path for a piece of work: assign it on creation, or @mention the \
member. Never both for the same work.";

/// The operating protocol, with responsibility 6 in its owned or not-owned variant.
pub fn protocol(owns_issue_status: bool) -> String {
    let six = if owns_issue_status { OWNED } else { NOT_OWNED };
    format!("{HEADER}\n{six}\n\n{HARD_RULES}")
}

/// The `## Squad Roster` section.
///
/// The leader row comes first; member rows follow in membership creation order, skipping the
/// leader's own row, agents that are missing or archived, and users that are missing.
pub fn roster(dir: &dyn Directory, squad: &Squad) -> String {
    let leader_name = dir
        .agent(&squad.leader_id)
        .map_or("Leader", |a| a.name.as_str());
    let mut out = String::from("## Squad Roster\n\nLeader (you):\n");
    let _ = writeln!(
        out,
        "- {leader_name}{SEP}agent{SEP}`{}`",
        format_mention(MentionKind::Agent, squad.leader_id.as_str(), leader_name)
    );
    let mut rows = Vec::new();
    for m in dir.squad_members(&squad.id) {
        let role = m.role.trim();
        let role = if role.is_empty() {
            String::new()
        } else {
            format!(", role: \"{role}\"")
        };
        match &m.member {
            MemberRef::Agent(id) => {
                if id == &squad.leader_id {
                    continue;
                }
                let Some(agent) = dir.agent(id).filter(|a| !a.is_archived()) else {
                    continue;
                };
                let mut skills: Vec<&str> = agent
                    .skills
                    .iter()
                    .map(String::as_str)
                    .filter(|s| !s.starts_with("multica-"))
                    .collect();
                skills.sort_unstable();
                let skills = if skills.is_empty() {
                    "no skills assigned".to_owned()
                } else {
                    format!("skills: {}", skills.join(", "))
                };
                rows.push(format!(
                    "- {}{SEP}agent{role}{SEP}{skills}{SEP}`{}`",
                    agent.name,
                    format_mention(MentionKind::Agent, id.as_str(), &agent.name)
                ));
            }
            MemberRef::Member(uid) => {
                let Some(user) = dir.user(uid) else { continue };
                rows.push(format!(
                    "- {}{SEP}member (human){role}{SEP}`{}`",
                    user.name,
                    format_mention(MentionKind::Member, uid.as_str(), &user.name)
                ));
            }
        }
    }
    if rows.is_empty() {
        out.push_str("\nMembers: (none — you are the only member of this squad)");
    } else {
        out.push_str("\nMembers:\n");
        out.push_str(&rows.join("\n"));
    }
    out
}

/// The whole briefing: protocol, roster, and the squad's instructions when they are not blank.
///
/// ```
/// use squad_routing::briefing::briefing;
/// use squad_routing::InMemoryDirectory;
/// use squad_model::{Squad, SquadId, AgentId, UserId, WorkspaceId, Timestamp};
///
/// let t = Timestamp::from_unix_seconds(0).unwrap();
/// let squad = Squad {
///     id: SquadId::new("s1").unwrap(), workspace_id: WorkspaceId::new("w").unwrap(),
///     name: "Core".into(), description: String::new(),
///     leader_id: AgentId::new("0a").unwrap(), creator_id: UserId::new("u").unwrap(),
///     instructions: "  Ship small.  ".into(), avatar_url: None, archived_at: None,
///     archived_by: None, created_at: t, updated_at: t,
/// };
/// let text = briefing(&InMemoryDirectory::new(), &squad, true);
/// assert!(text.starts_with("## Squad Operating Protocol"));
/// assert!(text.contains("- Leader — agent — `[@Leader](mention://agent/0a)`"));
/// assert!(text.ends_with("## Squad Instructions (Core)\n\nShip small."));
/// ```
pub fn briefing(dir: &dyn Directory, squad: &Squad, owns_issue_status: bool) -> String {
    let mut out = protocol(owns_issue_status);
    out.push_str("\n\n");
    out.push_str(&roster(dir, squad));
    let instructions = squad.instructions.trim();
    if !instructions.is_empty() {
        let _ = write!(
            out,
            "\n\n## Squad Instructions ({})\n\n{instructions}",
            squad.name
        );
    }
    out
}

/// The instructions a briefed leader runs with (§5): its own instructions, a blank line and the
/// briefing; the briefing alone when its own instructions are blank.
///
/// ```
/// use squad_routing::briefing::{briefing, leader_instructions};
/// use squad_routing::InMemoryDirectory;
/// use squad_model::{Squad, SquadId, AgentId, UserId, WorkspaceId, Timestamp};
///
/// let t = Timestamp::from_unix_seconds(0).unwrap();
/// let squad = Squad {
///     id: SquadId::new("s1").unwrap(), workspace_id: WorkspaceId::new("w").unwrap(),
///     name: "Core".into(), description: String::new(),
///     leader_id: AgentId::new("0a").unwrap(), creator_id: UserId::new("u").unwrap(),
///     instructions: String::new(), avatar_url: None, archived_at: None,
///     archived_by: None, created_at: t, updated_at: t,
/// };
/// let dir = InMemoryDirectory::new();
/// let b = briefing(&dir, &squad, false);
/// assert_eq!(leader_instructions(&dir, &squad, "You review Rust.", false), format!("You review Rust.\n\n{b}"));
/// assert_eq!(leader_instructions(&dir, &squad, " \n", false), b);
/// ```
pub fn leader_instructions(
    dir: &dyn Directory,
    squad: &Squad,
    own_instructions: &str,
    owns_issue_status: bool,
) -> String {
    let b = briefing(dir, squad, owns_issue_status);
    if own_instructions.trim().is_empty() {
        return b;
    }
    let mut out = String::with_capacity(own_instructions.len() + 2 + b.len());
    out.push_str(own_instructions);
    out.push_str("\n\n");
    out.push_str(&b);
    out
}
