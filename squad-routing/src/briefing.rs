//! The leader briefing (§9): operating protocol, roster and squad instructions.
//!
//! The protocol text is our own wording; the markers that hosts and daemons look for
//! (`## Squad Operating Protocol`, `Delegate by @mention`, ...) and the roster format are exact.

use squad_model::{MemberRef, Squad};

use crate::directory::Directory;
use crate::mention::{MentionKind, push_mention};

const SEP: &str = " — ";

macro_rules! header_text {
    () => {
        "## Squad Operating Protocol

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
nothing is needed, record `no_action` and stop without commenting."
    };
}

macro_rules! owned_text {
    () => {
        "6. **Own the parent issue status.** This issue is assigned to your squad, so its \
status is yours to manage, unless your own agent identity forbids you to change statuses. On your \
first turn after the assignment, move the parent to `in_progress`, and keep it there while members \
work. Remember that a successful dispatch is not completion. Once you have confirmed that the overall \
goal is met, run `multica issue status <issue-id> in_review`: this is a standing duty, even when no \
comment asks for it. Leave `done` to a human reviewer or to an integration (for example a merged pull \
request that closes the issue)."
    };
}

macro_rules! not_owned_text {
    () => {
        "6. **Do NOT change this issue's status.** This issue is not assigned to your \
squad: you were brought in by an @mention, or this is a quick-create turn and the issue does not exist \
yet. Its status belongs to its own assignee, so never run `multica issue status` on it, however \
finished the work looks."
    };
}

macro_rules! hard_rules_text {
    () => {
        "Hard rules:
- Always mention with the full syntax `[@Name](mention://<type>/<UUID>)`. Without a mention link \
there is no delegation.
- Do not restate the issue. Do not implement the work yourself unless no member is suitable. Do not \
mention anyone who is not on the roster. Post at most one delegation comment per turn.
- If no member can do the work, post a comment that explains the gap and mention the reporter.
- Always run `multica squad activity` before you end a turn, even for `no_action`.
- A child issue created with `--status todo` and an agent assignee already wakes that agent by \
itself, so pick exactly one path for a piece of work: assign it on creation, or @mention the \
member. Never both for the same work."
    };
}

/// The protocol with responsibility 6 owned, and not owned: built at compile time, since every
/// leader claim copies one of them.
const PROTOCOL_OWNED: &str = concat!(
    header_text!(),
    "\n",
    owned_text!(),
    "\n\n",
    hard_rules_text!()
);
const PROTOCOL_NOT_OWNED: &str = concat!(
    header_text!(),
    "\n",
    not_owned_text!(),
    "\n\n",
    hard_rules_text!()
);

/// The wording of the commands the briefing tells a leader to run: the host's own command line.
///
/// The briefing asks the leader to record an evaluation of every turn and, for an issue its squad
/// owns, to mark the issue ready for review; this names the commands that do so. Each template
/// is one line, quoted in the briefing as code, with placeholders the leader fills in:
///
/// | Template | Placeholders | Default (the routing reference's wording) |
/// |---|---|---|
/// | `activity` | `<issue-id>`, `<outcome>` | `multica squad activity <issue-id> <outcome> --reason "<short reason>"` |
/// | `set_status` | `<issue-id>`, `<status>` | `multica issue status <issue-id> <status>` |
///
/// The briefing quotes `set_status` with `<status>` as `in_review`, and each command by its name
/// alone (the text before its first placeholder, `multica squad activity`) where it only refers
/// to it.
///
/// ```
/// use squad_routing::briefing::{BriefingCommands, protocol, protocol_with};
///
/// let ours = BriefingCommands::from_json(
///     r#"{"activity": "acme log <issue-id> <outcome> -m '<why>'", "set_status": "acme move <issue-id> <status>"}"#,
/// )
/// .unwrap();
/// let text = protocol_with(true, &ours);
/// assert!(text.contains("`acme log <issue-id> <outcome> -m '<why>'`"));
/// assert!(text.contains("`acme move <issue-id> in_review`"));
/// assert!(text.contains("Always run `acme log` before you end a turn"));
/// assert!(!text.contains("multica"));
/// assert_eq!(protocol_with(false, &BriefingCommands::default()), protocol(false));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BriefingCommands {
    activity: String,
    set_status: String,
}

impl BriefingCommands {
    /// The default `activity` template.
    pub const DEFAULT_ACTIVITY: &'static str =
        "multica squad activity <issue-id> <outcome> --reason \"<short reason>\"";
    /// The default `set_status` template.
    pub const DEFAULT_SET_STATUS: &'static str = "multica issue status <issue-id> <status>";
    /// The longest template, in characters.
    pub const MAX_LEN: usize = 300;

    /// Checks and keeps two templates.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::InvalidCommands`](crate::ErrorKind::InvalidCommands) naming the template and
    /// the rule it breaks: empty, longer than [`MAX_LEN`](Self::MAX_LEN), more than one line or
    /// a control character, a backtick (the briefing quotes it as code), no command name before
    /// the first `<`, or a missing placeholder.
    pub fn new(activity: &str, set_status: &str) -> crate::Result<Self> {
        check_template("activity", activity, &["<issue-id>", "<outcome>"])?;
        check_template("set_status", set_status, &["<issue-id>", "<status>"])?;
        Ok(Self {
            activity: activity.to_owned(),
            set_status: set_status.to_owned(),
        })
    }

    /// Reads a JSON object `{"activity": …, "set_status": …}`; a template left out keeps its
    /// default, an unknown key is refused.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::InvalidCommands`](crate::ErrorKind::InvalidCommands) for text that is not
    /// such an object, and as [`new`](Self::new) for a bad template.
    pub fn from_json(text: &str) -> crate::Result<Self> {
        #[derive(serde::Deserialize)]
        #[serde(deny_unknown_fields)]
        struct File {
            activity: Option<String>,
            set_status: Option<String>,
        }
        let file: File = serde_json::from_str(text).map_err(|e| {
            crate::Error::new(
                crate::ErrorKind::InvalidCommands,
                format!("briefing commands: {e}"),
            )
        })?;
        Self::new(
            file.activity.as_deref().unwrap_or(Self::DEFAULT_ACTIVITY),
            file.set_status
                .as_deref()
                .unwrap_or(Self::DEFAULT_SET_STATUS),
        )
    }

    /// The `activity` template.
    pub fn activity(&self) -> &str {
        &self.activity
    }

    /// The `set_status` template.
    pub fn set_status(&self) -> &str {
        &self.set_status
    }

    fn is_default(&self) -> bool {
        self.activity == Self::DEFAULT_ACTIVITY && self.set_status == Self::DEFAULT_SET_STATUS
    }
}

impl Default for BriefingCommands {
    fn default() -> Self {
        Self {
            activity: Self::DEFAULT_ACTIVITY.to_owned(),
            set_status: Self::DEFAULT_SET_STATUS.to_owned(),
        }
    }
}

fn check_template(name: &str, text: &str, placeholders: &[&str]) -> crate::Result<()> {
    let bad = |why: String| {
        Err(crate::Error::new(
            crate::ErrorKind::InvalidCommands,
            format!("briefing commands: {name} {why}"),
        ))
    };
    if text.trim().is_empty() {
        return bad("is empty".to_owned());
    }
    if text.chars().count() > BriefingCommands::MAX_LEN {
        return bad(format!(
            "is longer than {} characters",
            BriefingCommands::MAX_LEN
        ));
    }
    if text.chars().any(char::is_control) {
        return bad("must be one line without control characters".to_owned());
    }
    if text.contains('`') {
        return bad("must not contain a backtick (the briefing quotes it as code)".to_owned());
    }
    if command_name(text).is_empty() {
        return bad(
            "must start with the command's name, before its first <placeholder>".to_owned(),
        );
    }
    for p in placeholders {
        if !text.contains(p) {
            return bad(format!("lacks the placeholder {p}"));
        }
    }
    Ok(())
}

/// A template's command name: the text before its first placeholder.
fn command_name(template: &str) -> &str {
    template.split('<').next().unwrap_or_default().trim()
}

/// The protocol with `commands` in place of the default wording.
fn protocol_for(
    owns_issue_status: bool,
    commands: &BriefingCommands,
) -> std::borrow::Cow<'static, str> {
    let text = protocol_text(owns_issue_status);
    if commands.is_default() {
        return std::borrow::Cow::Borrowed(text);
    }
    let default_status = BriefingCommands::DEFAULT_SET_STATUS.replace("<status>", "in_review");
    let status = commands.set_status.replace("<status>", "in_review");
    // The full forms first, then the names alone.
    let text = text
        .replace(
            &format!("`{}`", BriefingCommands::DEFAULT_ACTIVITY),
            &format!("`{}`", commands.activity),
        )
        .replace(&format!("`{default_status}`"), &format!("`{status}`"))
        .replace(
            &format!("`{}`", command_name(BriefingCommands::DEFAULT_ACTIVITY)),
            &format!("`{}`", command_name(&commands.activity)),
        )
        .replace(
            &format!("`{}`", command_name(BriefingCommands::DEFAULT_SET_STATUS)),
            &format!("`{}`", command_name(&commands.set_status)),
        );
    std::borrow::Cow::Owned(text)
}

/// The operating protocol with the host's wording of its commands (see [`BriefingCommands`]).
pub fn protocol_with(owns_issue_status: bool, commands: &BriefingCommands) -> String {
    protocol_for(owns_issue_status, commands).into_owned()
}

fn protocol_text(owns_issue_status: bool) -> &'static str {
    if owns_issue_status {
        PROTOCOL_OWNED
    } else {
        PROTOCOL_NOT_OWNED
    }
}

/// The operating protocol, with responsibility 6 in its owned or not-owned variant.
pub fn protocol(owns_issue_status: bool) -> String {
    protocol_text(owns_issue_status).to_owned()
}

/// The `## Squad Roster` section.
///
/// The leader row comes first; member rows follow in membership creation order, skipping the
/// leader's own row, agents that are missing or archived, and users that are missing.
pub fn roster(dir: &dyn Directory, squad: &Squad) -> String {
    let mut out = String::with_capacity(512);
    push_roster(&mut out, dir, squad);
    out
}

/// Appends the roster (written piece by piece: a leader claim renders it every time).
fn push_roster(out: &mut String, dir: &dyn Directory, squad: &Squad) {
    let leader_name = dir
        .agent(&squad.leader_id)
        .map_or("Leader", |a| a.name.as_str());
    out.push_str("## Squad Roster\n\nLeader (you):\n- ");
    out.push_str(leader_name);
    out.push_str(SEP);
    out.push_str("agent");
    out.push_str(SEP);
    out.push('`');
    push_mention(
        out,
        MentionKind::Agent,
        squad.leader_id.as_str(),
        leader_name,
    );
    out.push_str("`\n");
    let members_start = out.len();
    out.push_str("\nMembers:");
    let mut rows = 0;
    let mut skills: Vec<&str> = Vec::new();
    for m in dir.squad_members(&squad.id) {
        let role = m.role.trim();
        let push_role = |out: &mut String| {
            if !role.is_empty() {
                out.push_str(", role: \"");
                out.push_str(role);
                out.push('"');
            }
        };
        match &m.member {
            MemberRef::Agent(id) => {
                if id == &squad.leader_id {
                    continue;
                }
                let Some(agent) = dir.agent(id).filter(|a| !a.is_archived()) else {
                    continue;
                };
                out.push_str("\n- ");
                out.push_str(&agent.name);
                out.push_str(SEP);
                out.push_str("agent");
                push_role(out);
                out.push_str(SEP);
                skills.clear();
                skills.extend(
                    agent
                        .skills
                        .iter()
                        .map(String::as_str)
                        .filter(|s| !s.starts_with("multica-")),
                );
                if skills.is_empty() {
                    out.push_str("no skills assigned");
                } else {
                    skills.sort_unstable();
                    out.push_str("skills: ");
                    for (i, s) in skills.iter().enumerate() {
                        if i > 0 {
                            out.push_str(", ");
                        }
                        out.push_str(s);
                    }
                }
                out.push_str(SEP);
                out.push('`');
                push_mention(out, MentionKind::Agent, id.as_str(), &agent.name);
                out.push('`');
                rows += 1;
            }
            MemberRef::Member(uid) => {
                let Some(user) = dir.user(uid) else { continue };
                out.push_str("\n- ");
                out.push_str(&user.name);
                out.push_str(SEP);
                out.push_str("member (human)");
                push_role(out);
                out.push_str(SEP);
                out.push('`');
                push_mention(out, MentionKind::Member, uid.as_str(), &user.name);
                out.push('`');
                rows += 1;
            }
        }
    }
    if rows == 0 {
        out.truncate(members_start);
        out.push_str("\nMembers: (none — you are the only member of this squad)");
    }
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
    briefing_with(dir, squad, owns_issue_status, &BriefingCommands::default())
}

/// [`briefing`] with the host's wording of the commands the leader runs.
///
/// ```
/// use squad_routing::briefing::{BriefingCommands, briefing_with};
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
/// let ours = BriefingCommands::new("acme log <issue-id> <outcome>", "acme move <issue-id> <status>").unwrap();
/// let text = briefing_with(&InMemoryDirectory::new(), &squad, false, &ours);
/// assert!(text.contains("never run `acme move` on it"));
/// ```
pub fn briefing_with(
    dir: &dyn Directory,
    squad: &Squad,
    owns_issue_status: bool,
    commands: &BriefingCommands,
) -> String {
    let mut out = String::new();
    push_briefing(&mut out, dir, squad, owns_issue_status, commands);
    out
}

/// Appends the briefing, in one buffer sized for it.
fn push_briefing(
    out: &mut String,
    dir: &dyn Directory,
    squad: &Squad,
    owns_issue_status: bool,
    commands: &BriefingCommands,
) {
    let protocol = protocol_for(owns_issue_status, commands);
    let instructions = squad.instructions.trim();
    out.reserve(protocol.len() + 1024 + instructions.len());
    out.push_str(&protocol);
    out.push_str("\n\n");
    push_roster(out, dir, squad);
    if !instructions.is_empty() {
        out.push_str("\n\n## Squad Instructions (");
        out.push_str(&squad.name);
        out.push_str(")\n\n");
        out.push_str(instructions);
    }
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
    let mut out = String::new();
    if !own_instructions.trim().is_empty() {
        out.reserve(own_instructions.len() + 4096);
        out.push_str(own_instructions);
        out.push_str("\n\n");
    }
    push_briefing(
        &mut out,
        dir,
        squad,
        owns_issue_status,
        &BriefingCommands::default(),
    );
    out
}

/// The instructions a claim hands the agent (§5): its own instructions and, when the claim
/// injects the briefing, a blank line and the briefing (the briefing alone when its own are
/// blank). `None` when `claim` is not a claim decision or there is nothing to say.
///
/// The engine decides *whether* and *which* briefing (the claim's `is_leader_task`, `squad_id`
/// and `owns_issue_status`); this renders it, from the directory as the claim saw it (a claim
/// changes no squad, member or agent, so before or after applying it is the same).
///
/// ```
/// use squad_routing::briefing::claim_instructions;
/// use squad_routing::{Decision, InMemoryDirectory};
/// use squad_model::TaskId;
///
/// let plain = Decision::Claim {
///     task_id: TaskId::new("t1").unwrap(), is_leader_task: false, squad_id: None,
///     squad_name: None, owns_issue_status: None, leader_role_resolved: true,
/// };
/// // An unknown task's agent has no instructions.
/// assert_eq!(claim_instructions(&InMemoryDirectory::new(), &plain), None);
/// ```
pub fn claim_instructions(dir: &dyn Directory, claim: &crate::Decision) -> Option<String> {
    let crate::Decision::Claim {
        task_id,
        is_leader_task,
        squad_id,
        owns_issue_status,
        ..
    } = claim
    else {
        return None;
    };
    let own = dir
        .task(task_id)
        .and_then(|t| dir.agent(&t.agent_id))
        .map_or("", |a| a.instructions.as_str());
    let squad = squad_id.as_ref().and_then(|s| dir.squad(s));
    match squad {
        Some(squad) if *is_leader_task => Some(leader_instructions(
            dir,
            squad,
            own,
            owns_issue_status.unwrap_or(false),
        )),
        _ => (!own.trim().is_empty()).then(|| own.to_owned()),
    }
}
