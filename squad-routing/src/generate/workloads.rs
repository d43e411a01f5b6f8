//! Named workload shapes, each stressing a metric of `simulate`, with documented knobs.

use squad_model::{CommentId, IssueStatus, TaskStatus, WorkspaceId};

use super::{GenConfig, NewIssue, Rng, Sim, Team};
use crate::directory::Directory;
use crate::error::{Error, ErrorKind, Result};
use crate::mention::{MentionKind, format_mention};
use crate::records::Principal;

/// The shape of a generated trace.
///
/// | Name | Shape | Stresses |
/// |---|---|---|
/// | `episodes` (default) | one parent at a time walked through the rules: assignment, claim, delegation by mention, staged children, child-done, squad mentions, batch updates | the engine's throughput (the benches use it) |
/// | `steady` | a steady backlog: an issue every `arrival_seconds` assigned to a squad, delegated to a worker, reported on, reviewed, closed; some closed issues get a late comment (`late_comment_percent`) | time to first wake, wakes after the end |
/// | `review-storm` | a parent whose leader asks `reporters` members for a review; they report on the parent `report_gap_seconds` apart, and the leader handles each report before the next one | wakes per issue, the leader barrier (`leader_barrier_seconds`) |
/// | `chatter` | two agents on an unassigned issue mention each other back and forth: after the first hand-off, each answers back with `loop_percent` chance, up to `max_rounds` mentions | agent loops |
/// | `mentions` | mention-heavy threads on a squad's issue: top-level comments with up to `mentions_per_comment` mentions (agents, the squad, `@all`, members), replies (`reply_percent`) to agents and to people, agents answering in the thread, escalations made due by the generator at their due time | coalescing, escalations, redundant wakes, the thread-reply rule (`reply_falls_back_to_assignee`) |
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum Workload {
    /// Parents walked through the rules (the benches' trace).
    #[default]
    Episodes,
    /// A steady backlog.
    Steady,
    /// Many members reporting on one parent.
    ReviewStorm,
    /// Agents mentioning each other back and forth.
    Chatter,
    /// Mention-heavy threads.
    Mentions,
}

impl Workload {
    /// Every workload.
    pub const ALL: [Workload; 5] = [
        Self::Episodes,
        Self::Steady,
        Self::ReviewStorm,
        Self::Chatter,
        Self::Mentions,
    ];

    /// The name `squad route generate --workload` takes.
    pub fn name(self) -> &'static str {
        match self {
            Self::Episodes => "episodes",
            Self::Steady => "steady",
            Self::ReviewStorm => "review-storm",
            Self::Chatter => "chatter",
            Self::Mentions => "mentions",
        }
    }

    /// The workload of a name.
    ///
    /// ```
    /// use squad_routing::generate::Workload;
    ///
    /// assert_eq!(Workload::from_name("review-storm"), Some(Workload::ReviewStorm));
    /// assert_eq!(Workload::from_name("storm"), None);
    /// ```
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|w| w.name() == name)
    }
}

/// A workload, its sizes and its knobs. Each knob applies to one workload (the others ignore
/// it) and has bounds (the `MIN_*` / `MAX_*` constants); [`check`](Self::check) refuses a value
/// outside them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkloadConfig {
    /// The shape.
    pub workload: Workload,
    /// Squads, background issues, events, seed.
    pub size: GenConfig,
    /// `steady`: seconds between two new issues (1 to [`Self::MAX_SECONDS`]; default 120).
    pub arrival_seconds: u32,
    /// `steady`: the chance, in percent, that a closed issue gets a late comment (0 to 100;
    /// default 10).
    pub late_comment_percent: u32,
    /// `review-storm`: members asked for a review, each reporting on the parent (1 to
    /// [`Self::MAX_REPORTERS`]; default 5).
    pub reporters: usize,
    /// `review-storm`: seconds between two reports (0 to [`Self::MAX_GAP_SECONDS`]; default 10;
    /// events are at least a second apart).
    pub report_gap_seconds: u32,
    /// `chatter`: the chance, in percent, that an agent mentioned by the other mentions it back
    /// (0 to 100; default 50).
    pub loop_percent: u32,
    /// `chatter`: the most mentions in one conversation (1 to [`Self::MAX_ROUNDS`]; default
    /// 12).
    pub max_rounds: usize,
    /// `mentions`: the chance, in percent, that a person's comment replies to an earlier one
    /// (0 to 100; default 50).
    pub reply_percent: u32,
    /// `mentions`: the most mentions in one top-level comment (1 to
    /// [`Self::MAX_MENTIONS_PER_COMMENT`]; default 2).
    pub mentions_per_comment: usize,
}

impl WorkloadConfig {
    /// The longest `arrival_seconds` (one day).
    pub const MAX_SECONDS: u32 = 86_400;
    /// The most `reporters`.
    pub const MAX_REPORTERS: usize = 32;
    /// The longest `report_gap_seconds` (one hour).
    pub const MAX_GAP_SECONDS: u32 = 3_600;
    /// The most `max_rounds`.
    pub const MAX_ROUNDS: usize = 100;
    /// The most `mentions_per_comment`.
    pub const MAX_MENTIONS_PER_COMMENT: usize = 8;

    /// A workload with its sizes and the default knobs.
    pub fn new(workload: Workload, size: GenConfig) -> Self {
        Self {
            workload,
            size,
            arrival_seconds: 120,
            late_comment_percent: 10,
            reporters: 5,
            report_gap_seconds: 10,
            loop_percent: 50,
            max_rounds: 12,
            reply_percent: 50,
            mentions_per_comment: 2,
        }
    }

    /// Checks the sizes ([`GenConfig::check`]) and every knob against its bounds.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::OutOfRange`] naming the field and its bound.
    ///
    /// ```
    /// use squad_routing::generate::{GenConfig, Workload, WorkloadConfig};
    ///
    /// let cfg = WorkloadConfig { reporters: 40, ..WorkloadConfig::new(Workload::ReviewStorm, GenConfig::default()) };
    /// assert_eq!(cfg.check().unwrap_err().to_string(), "reporters is 40, more than the limit of 32");
    /// ```
    pub fn check(&self) -> Result<()> {
        self.size.check()?;
        let n = |v: usize| v as u64;
        range(
            "arrival_seconds",
            self.arrival_seconds.into(),
            1,
            Self::MAX_SECONDS.into(),
        )?;
        range(
            "late_comment_percent",
            self.late_comment_percent.into(),
            0,
            100,
        )?;
        range("reporters", n(self.reporters), 1, n(Self::MAX_REPORTERS))?;
        range(
            "report_gap_seconds",
            self.report_gap_seconds.into(),
            0,
            Self::MAX_GAP_SECONDS.into(),
        )?;
        range("loop_percent", self.loop_percent.into(), 0, 100)?;
        range("max_rounds", n(self.max_rounds), 1, n(Self::MAX_ROUNDS))?;
        range("reply_percent", self.reply_percent.into(), 0, 100)?;
        range(
            "mentions_per_comment",
            n(self.mentions_per_comment),
            1,
            n(Self::MAX_MENTIONS_PER_COMMENT),
        )?;
        Ok(())
    }
}

/// Checks that a size or a knob is within its bounds.
///
/// # Errors
///
/// [`ErrorKind::OutOfRange`] naming the field, its value and the bound it passes.
pub(super) fn range(field: &str, value: u64, min: u64, max: u64) -> Result<()> {
    if value < min {
        return Err(Error::new(
            ErrorKind::OutOfRange,
            format!("{field} is {value}, less than the minimum of {min}"),
        ));
    }
    if value > max {
        return Err(Error::new(
            ErrorKind::OutOfRange,
            format!("{field} is {value}, more than the limit of {max}"),
        ));
    }
    Ok(())
}

fn member(t: &Team) -> Principal {
    Principal::Member(t.human.clone())
}

/// `steady`: the `k`-th issue arrives `k * arrival_seconds` after the start (or as soon as the
/// previous one is closed), goes to a worker through the leader, is reported on and closed.
pub(super) fn steady(
    sim: &mut Sim,
    rng: &mut Rng,
    ws: &WorkspaceId,
    t: &Team,
    cfg: &WorkloadConfig,
    k: usize,
) {
    let arrival =
        i64::from(cfg.arrival_seconds).saturating_mul(i64::try_from(k).unwrap_or(i64::MAX));
    sim.wait_until(sim.origin.plus_seconds(arrival));
    let (issue, tasks) = sim.create(
        ws,
        NewIssue {
            actor: member(t),
            task: None,
            status: IssueStatus::Todo,
            assignee: Some(("squad", t.squad.to_string())),
            parent: None,
            stage: None,
        },
    );
    let Some(lt) = tasks.first().cloned() else {
        return;
    };
    let lead = Principal::Agent(t.leader.clone());
    sim.wait(5);
    sim.start(&lt);
    let w = &t.workers[rng.below(t.workers.len())];
    let wt = sim.comment(
        &issue,
        lead.clone(),
        Some(lt.clone()),
        format!(
            "{} please take this one.",
            format_mention(MentionKind::Agent, w.as_str(), "Worker")
        ),
    );
    sim.status(&lt, TaskStatus::Completed);
    let Some(wt) = wt.first().cloned() else {
        return;
    };
    sim.wait(20);
    sim.start(&wt);
    sim.wait(i64::try_from(60 + rng.below(240)).unwrap_or(60));
    let back = sim.comment(
        &issue,
        Principal::Agent(w.clone()),
        Some(wt.clone()),
        "Done: the change is ready for review.".into(),
    );
    sim.status(&wt, TaskStatus::Completed);
    if let Some(l2) = back.first() {
        sim.wait(5);
        sim.start(l2);
        sim.update(lead, Some(l2.clone()), &issue, IssueStatus::InReview);
        sim.status(l2, TaskStatus::Completed);
    }
    sim.wait(60);
    sim.update(member(t), None, &issue, IssueStatus::Done);
    if rng.chance(cfg.late_comment_percent) {
        sim.wait(300);
        let late = sim.comment(&issue, member(t), None, "Thanks! One more question.".into());
        for task in late {
            sim.work(&task);
        }
    }
    sim.work_escalations();
}

/// `review-storm`: the leader asks `reporters` members for a review; they all start, then report
/// on the parent `report_gap_seconds` apart; the leader handles each report it is woken for
/// before the next arrives; then the parent is closed.
pub(super) fn review_storm(sim: &mut Sim, ws: &WorkspaceId, t: &Team, cfg: &WorkloadConfig) {
    let (parent, tasks) = sim.create(
        ws,
        NewIssue {
            actor: member(t),
            task: None,
            status: IssueStatus::Todo,
            assignee: Some(("squad", t.squad.to_string())),
            parent: None,
            stage: None,
        },
    );
    let Some(lt) = tasks.first().cloned() else {
        return;
    };
    let lead = Principal::Agent(t.leader.clone());
    sim.start(&lt);
    let reporters = &t.workers[..cfg.reporters.min(t.workers.len())];
    let mut ask: String = reporters
        .iter()
        .enumerate()
        .map(|(i, w)| format_mention(MentionKind::Agent, w.as_str(), &format!("Reviewer {i}")))
        .collect::<Vec<_>>()
        .join(" ");
    ask.push_str(" please review this and report here.");
    let asked = sim.comment(&parent, lead, Some(lt.clone()), ask);
    sim.status(&lt, TaskStatus::Completed);
    for task in &asked {
        sim.start(task);
    }
    let first = sim.at.plus_seconds(1);
    for (i, task) in asked.iter().enumerate() {
        let Some(agent) = sim.dir.task(task).map(|x| x.agent_id.clone()) else {
            continue;
        };
        let due = i64::from(cfg.report_gap_seconds).saturating_mul(i64::try_from(i).unwrap_or(0));
        sim.wait_until(first.plus_seconds(due));
        let woken = sim.comment(
            &parent,
            Principal::Agent(agent),
            Some(task.clone()),
            format!("Review {i}: looks good to me, two nits inline."),
        );
        sim.status(task, TaskStatus::Completed);
        for l in woken {
            sim.work(&l);
        }
    }
    sim.wait(60);
    sim.update(member(t), None, &parent, IssueStatus::Done);
    sim.work_escalations();
}

/// `chatter`: a person asks one agent to sort something out with another; after the first
/// hand-off, each agent mentions the other back with `loop_percent` chance, up to `max_rounds`
/// mentions.
pub(super) fn chatter(
    sim: &mut Sim,
    rng: &mut Rng,
    ws: &WorkspaceId,
    t: &Team,
    cfg: &WorkloadConfig,
) {
    let (issue, _) = sim.create(
        ws,
        NewIssue {
            actor: member(t),
            task: None,
            status: IssueStatus::Todo,
            assignee: None,
            parent: None,
            stage: None,
        },
    );
    let (mut speaker, mut other) = (t.workers[0].clone(), t.workers[1].clone());
    let start = sim.comment(
        &issue,
        member(t),
        None,
        format!(
            "{} can you sort this out with Worker b?",
            format_mention(MentionKind::Agent, speaker.as_str(), "Worker a")
        ),
    );
    let Some(mut task) = start.first().cloned() else {
        return;
    };
    let mut rounds = 0;
    loop {
        sim.start(&task);
        sim.wait(10);
        rounds += 1;
        let answer = rounds <= cfg.max_rounds && (rounds == 1 || rng.chance(cfg.loop_percent));
        if !answer {
            sim.comment(
                &issue,
                Principal::Agent(speaker.clone()),
                Some(task.clone()),
                "Settled, closing the loop.".into(),
            );
            sim.status(&task, TaskStatus::Completed);
            break;
        }
        let next = sim.comment(
            &issue,
            Principal::Agent(speaker.clone()),
            Some(task.clone()),
            format!(
                "{} what do you think?",
                format_mention(MentionKind::Agent, other.as_str(), "peer")
            ),
        );
        sim.status(&task, TaskStatus::Completed);
        let Some(n) = next.first().cloned() else {
            break;
        };
        task = n;
        std::mem::swap(&mut speaker, &mut other);
        if sim.full() {
            return;
        }
    }
    sim.wait(30);
    sim.update(member(t), None, &issue, IssueStatus::Done);
    sim.work_escalations();
}

/// `mentions`: mention-heavy threads on a squad's issue.
pub(super) fn mentions(
    sim: &mut Sim,
    rng: &mut Rng,
    ws: &WorkspaceId,
    t: &Team,
    cfg: &WorkloadConfig,
) {
    let (issue, tasks) = sim.create(
        ws,
        NewIssue {
            actor: member(t),
            task: None,
            status: IssueStatus::InProgress,
            assignee: Some(("squad", t.squad.to_string())),
            parent: None,
            stage: None,
        },
    );
    for task in &tasks {
        sim.work(task);
    }
    let mut thread: Vec<CommentId> = Vec::new();
    let rounds = 4 + rng.below(6);
    for _ in 0..rounds {
        if sim.full() {
            return;
        }
        let (cid, woken) = if !thread.is_empty() && rng.chance(cfg.reply_percent) {
            let parent = thread[rng.below(thread.len())].clone();
            let text = if rng.chance(30) {
                format!("{} thoughts?", target(rng, t))
            } else {
                "Why is that?".to_owned()
            };
            sim.reply(&issue, member(t), None, Some(parent), text)
        } else {
            let k = 1 + rng.below(cfg.mentions_per_comment);
            let text: Vec<String> = (0..k).map(|_| target(rng, t)).collect();
            sim.reply(
                &issue,
                member(t),
                None,
                None,
                format!("{} can you take a look?", text.join(" ")),
            )
        };
        thread.push(cid.clone());
        for task in woken {
            let Some(agent) = sim.dir.task(&task).map(|x| x.agent_id.clone()) else {
                continue;
            };
            sim.start(&task);
            // The agent answers in the thread (which may wake the squad's leader, row 4).
            let (answer, more) = sim.reply(
                &issue,
                Principal::Agent(agent),
                Some(task.clone()),
                Some(cid.clone()),
                "Looking into it.".into(),
            );
            thread.push(answer);
            sim.status(&task, TaskStatus::Completed);
            for m in more {
                sim.work(&m);
            }
        }
        sim.work_escalations();
        sim.wait(20);
    }
    sim.update(member(t), None, &issue, IssueStatus::Done);
}

/// A mention of one of the team's agents, its squad, everyone, or its human.
fn target(rng: &mut Rng, t: &Team) -> String {
    match rng.below(6) {
        0 => format_mention(MentionKind::Agent, t.leader.as_str(), "Lead"),
        1 => format_mention(MentionKind::Agent, t.workers[0].as_str(), "Worker a"),
        2 => format_mention(MentionKind::Agent, t.workers[1].as_str(), "Worker b"),
        3 => format_mention(MentionKind::Squad, t.squad.as_str(), "Squad"),
        4 => "[@all](mention://all/all)".to_owned(),
        _ => format_mention(MentionKind::Member, t.human.as_str(), "Human"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for w in Workload::ALL {
            assert_eq!(Workload::from_name(w.name()), Some(w));
        }
    }

    #[test]
    fn every_knob_is_bounded_on_both_sides() {
        let base = WorkloadConfig::new(Workload::Steady, GenConfig::default());
        assert!(base.check().is_ok());
        let cases: Vec<(WorkloadConfig, &str)> = vec![
            (
                WorkloadConfig {
                    arrival_seconds: 0,
                    ..base.clone()
                },
                "arrival_seconds is 0, less than the minimum of 1",
            ),
            (
                WorkloadConfig {
                    arrival_seconds: 86_401,
                    ..base.clone()
                },
                "arrival_seconds is 86401, more than the limit of 86400",
            ),
            (
                WorkloadConfig {
                    late_comment_percent: 101,
                    ..base.clone()
                },
                "late_comment_percent is 101, more than the limit of 100",
            ),
            (
                WorkloadConfig {
                    reporters: 0,
                    ..base.clone()
                },
                "reporters is 0, less than the minimum of 1",
            ),
            (
                WorkloadConfig {
                    report_gap_seconds: 3_601,
                    ..base.clone()
                },
                "report_gap_seconds is 3601, more than the limit of 3600",
            ),
            (
                WorkloadConfig {
                    loop_percent: 200,
                    ..base.clone()
                },
                "loop_percent is 200, more than the limit of 100",
            ),
            (
                WorkloadConfig {
                    max_rounds: 0,
                    ..base.clone()
                },
                "max_rounds is 0, less than the minimum of 1",
            ),
            (
                WorkloadConfig {
                    reply_percent: 101,
                    ..base.clone()
                },
                "reply_percent is 101, more than the limit of 100",
            ),
            (
                WorkloadConfig {
                    mentions_per_comment: 9,
                    ..base.clone()
                },
                "mentions_per_comment is 9, more than the limit of 8",
            ),
        ];
        for (cfg, want) in cases {
            let err = cfg.check().unwrap_err();
            assert_eq!(err.kind(), ErrorKind::OutOfRange);
            assert_eq!(err.to_string(), want);
        }
    }
}
