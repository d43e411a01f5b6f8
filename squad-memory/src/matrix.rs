//! The load matrix: which tiers each situation loads, as data.

use std::fmt;
use std::str::FromStr;

use crate::error::{Error, ErrorKind, Result};
use crate::name::TopicName;

/// Why an agent is being spawned; decides which tiers load ([`Situation::tiers`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Situation {
    /// New task, no prior context needed: hot only.
    #[default]
    NewTask,
    /// Resuming interrupted work: hot and cold.
    Resuming,
    /// Debugging a recurring issue: hot and cold.
    Debugging,
    /// Implementing against a spec or ADR: hot and wiki.
    ImplementingSpec,
    /// Onboarding to an unfamiliar subsystem: hot and wiki.
    Onboarding,
    /// Post-incident review: hot, cold and wiki.
    PostIncident,
}

/// The tiers a spawn loads. Hot is always loaded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
pub struct TierSet {
    /// Always `true`: every spawn includes the hot tier.
    pub hot: bool,
    /// Load the agent's cold tier.
    pub cold: bool,
    /// Load wiki documents (named topics, else the most relevant ones).
    pub wiki: bool,
}

impl Situation {
    /// Every situation, in the seed's order.
    pub const ALL: [Situation; 6] = [
        Situation::NewTask,
        Situation::Resuming,
        Situation::Debugging,
        Situation::ImplementingSpec,
        Situation::Onboarding,
        Situation::PostIncident,
    ];

    /// The seed's load matrix.
    ///
    /// | Situation | Hot | Cold | Wiki |
    /// |---|---|---|---|
    /// | `new-task` | yes | no | no |
    /// | `resuming` | yes | yes | no |
    /// | `debugging` | yes | yes | no |
    /// | `implementing-spec` | yes | no | yes |
    /// | `onboarding` | yes | no | yes |
    /// | `post-incident` | yes | yes | yes |
    pub fn tiers(&self) -> TierSet {
        let (cold, wiki) = match self {
            Situation::NewTask => (false, false),
            Situation::Resuming | Situation::Debugging => (true, false),
            Situation::ImplementingSpec | Situation::Onboarding => (false, true),
            Situation::PostIncident => (true, true),
        };
        TierSet {
            hot: true,
            cold,
            wiki,
        }
    }

    /// The CLI name: `new-task`, `resuming`, `debugging`, `implementing-spec`, `onboarding`,
    /// `post-incident`.
    pub fn as_str(&self) -> &'static str {
        match self {
            Situation::NewTask => "new-task",
            Situation::Resuming => "resuming",
            Situation::Debugging => "debugging",
            Situation::ImplementingSpec => "implementing-spec",
            Situation::Onboarding => "onboarding",
            Situation::PostIncident => "post-incident",
        }
    }
}

impl fmt::Display for Situation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Situation {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        Situation::ALL
            .into_iter()
            .find(|x| x.as_str() == s)
            .ok_or_else(|| {
                Error::new(
                    ErrorKind::InvalidInput,
                    "situation.parse",
                    format!(
                        "unknown situation {s:?} (expected one of: {})",
                        Situation::ALL.map(|x| x.as_str()).join(", ")
                    ),
                )
            })
    }
}

/// What one spawn loads: the situation plus explicit overrides and the task text.
///
/// ```
/// use squad_memory::{LoadPlan, Situation};
///
/// let plan = LoadPlan::new(Situation::NewTask).include_cold().include_wiki("auth".parse()?);
/// let tiers = plan.tiers();
/// assert!(tiers.hot && tiers.cold && tiers.wiki);
/// # Ok::<(), squad_memory::Error>(())
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LoadPlan {
    /// The situation (row of the load matrix).
    pub situation: Situation,
    /// Load cold even when the situation does not.
    pub include_cold: bool,
    /// Wiki topics to load, in this order. Naming one loads the wiki tier whatever the
    /// situation; when empty and the situation loads the wiki, the documents most relevant to
    /// `task` are chosen.
    pub wiki_topics: Vec<TopicName>,
    /// The task text, used to rank cold entries and wiki documents (BM25).
    pub task: Option<String>,
}

impl LoadPlan {
    /// The plan for `situation` with no overrides.
    pub fn new(situation: Situation) -> Self {
        Self {
            situation,
            ..Self::default()
        }
    }

    /// Adds the cold tier.
    pub fn include_cold(mut self) -> Self {
        self.include_cold = true;
        self
    }

    /// Adds one wiki topic.
    pub fn include_wiki(mut self, topic: TopicName) -> Self {
        if !self.wiki_topics.contains(&topic) {
            self.wiki_topics.push(topic);
        }
        self
    }

    /// Sets the task text.
    pub fn task(mut self, task: impl Into<String>) -> Self {
        self.task = Some(task.into());
        self
    }

    /// The tiers this plan loads: the situation's row plus the overrides.
    pub fn tiers(&self) -> TierSet {
        let mut t = self.situation.tiers();
        t.cold |= self.include_cold;
        t.wiki |= !self.wiki_topics.is_empty();
        t
    }
}
