//! Store-level operations: [`spawn`] (read, render, refresh TTLs) and [`validate`].

use std::collections::HashSet;

use squad_model::{AgentName, Timestamp};

use crate::entry::MemoryDoc;
use crate::error::{Error, ErrorKind, Problem, Result};
use crate::matrix::LoadPlan;
use crate::name::{MemoryId, TopicName};
use crate::render::{Budget, Rendered, Source, SpawnInputs, render};
use crate::store::{DocRef, MemoryStore, Tier};

/// How [`spawn`] treats the cold TTL.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Touch {
    /// Read-only: nothing is written (`squad memory spawn --no-touch`).
    #[default]
    No,
    /// Record `last_loaded = at` on every cold entry loaded, which restarts its rolling TTL.
    /// Needs the store lock; when a Scribe holds it the refresh is skipped and the manifest says
    /// `touched: false`.
    At(Timestamp),
}

fn read_source(
    store: &dyn MemoryStore,
    doc: &DocRef,
    problems: &mut Vec<Problem>,
) -> Result<Option<Source>> {
    let text = match store.read(doc) {
        Ok(t) => t,
        Err(e) if !e.problems().is_empty() => {
            problems.extend(e.problems().iter().cloned());
            return Ok(None);
        }
        Err(e) => return Err(e),
    };
    match text {
        None => Ok(None),
        Some(t) => match Source::parse(doc.path(), &t) {
            Ok(s) => Ok(Some(s)),
            Err(e) => {
                problems.extend(e.problems().iter().cloned());
                Ok(None)
            }
        },
    }
}

/// Reads what `plan` needs for `agent` from `store`, renders it within `budget`, and (with
/// [`Touch::At`]) refreshes the TTL of the cold entries loaded.
///
/// ```
/// use squad_memory::{Budget, DocRef, InMemoryStore, LoadPlan, MemoryStore, Situation, Touch, spawn};
///
/// let store = InMemoryStore::new();
/// let data: squad_model::AgentName = "data".parse()?;
/// store.write(&DocRef::Hot(data.clone()), "Current task: fix login\nBlockers: none\n")?;
/// let out = spawn(&store, &data, &LoadPlan::new(Situation::NewTask), &Budget::default(), Touch::No)?;
/// assert!(out.prompt.starts_with("## Memory Context\n### Hot (current session)\nCurrent task: fix login"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
///
/// [`ErrorKind::InvalidInput`] listing `file:line` problems when a file it needs is malformed
/// (never skipped); [`ErrorKind::NotFound`] for a named wiki topic with no document;
/// [`ErrorKind::Backend`] on storage failure.
pub fn spawn(
    store: &dyn MemoryStore,
    agent: &AgentName,
    plan: &LoadPlan,
    budget: &Budget,
    touch: Touch,
) -> Result<Rendered> {
    let tiers = plan.tiers();
    let mut problems = Vec::new();
    let hot = read_source(store, &DocRef::Hot(agent.clone()), &mut problems)?;
    let cold = if tiers.cold {
        read_source(store, &DocRef::Cold(agent.clone()), &mut problems)?
    } else {
        None
    };
    let mut wiki = Vec::new();
    if tiers.wiki {
        let topics: Vec<TopicName> = if plan.wiki_topics.is_empty() {
            if plan.task.is_some() {
                store
                    .list(Tier::Wiki)?
                    .into_iter()
                    .filter_map(|n| TopicName::new(n).ok())
                    .collect()
            } else {
                Vec::new()
            }
        } else {
            plan.wiki_topics.clone()
        };
        for t in topics {
            if let Some(src) = read_source(store, &DocRef::Wiki(t.clone()), &mut problems)? {
                wiki.push((t, src));
            }
        }
    }
    if !problems.is_empty() {
        return Err(Error::malformed("memory.spawn", problems));
    }
    let inputs = SpawnInputs {
        agent: agent.clone(),
        hot,
        cold,
        wiki,
    };
    let mut rendered = render(plan, &inputs, budget)?;
    if let Touch::At(now) = touch {
        let loaded: HashSet<MemoryId> = rendered
            .manifest
            .tiers
            .get(&Tier::Cold)
            .map(|r| r.entries.iter().cloned().collect())
            .unwrap_or_default();
        if !loaded.is_empty() {
            rendered.manifest.touched = refresh(store, agent, &loaded, now)?;
        }
    }
    Ok(rendered)
}

/// Sets `last_loaded = now` on the `loaded` cold entries, under the lock. `Ok(false)` when the
/// lock is busy.
fn refresh(
    store: &dyn MemoryStore,
    agent: &AgentName,
    loaded: &HashSet<MemoryId>,
    now: Timestamp,
) -> Result<bool> {
    let _lock = match store.lock() {
        Ok(l) => l,
        Err(e) if e.kind() == ErrorKind::Locked => return Ok(false),
        Err(e) => return Err(e),
    };
    let doc_ref = DocRef::Cold(agent.clone());
    let Some(text) = store.read(&doc_ref)? else {
        return Ok(false);
    };
    let mut doc = MemoryDoc::parse(&doc_ref.path(), &text)?;
    let mut changed = false;
    for e in doc.entries.iter_mut().filter(|e| loaded.contains(&e.id)) {
        if e.last_loaded.is_none_or(|l| l < now) {
            e.last_loaded = Some(now);
            changed = true;
        }
    }
    if changed {
        store.write(&doc_ref, &doc.to_text())?;
    }
    Ok(true)
}

/// Checks every memory document in `store`: names valid for their tier, UTF-8, well-formed
/// markup, and size within [`Budget::file_cap`]. Returns every problem found (empty when all is
/// well), in tier and name order.
///
/// # Errors
///
/// [`ErrorKind::Backend`] when the store cannot be listed or read.
pub fn validate(store: &dyn MemoryStore, budget: &Budget) -> Result<Vec<Problem>> {
    let mut problems = Vec::new();
    for tier in Tier::ALL {
        for name in store.list(tier)? {
            let path = format!("{tier}/{name}.md");
            let doc = match DocRef::new(tier, &name) {
                Ok(d) => d,
                Err(e) => {
                    problems.push(Problem {
                        file: path,
                        line: 1,
                        message: e.message().to_owned(),
                    });
                    continue;
                }
            };
            let text = match store.read(&doc) {
                Ok(Some(t)) => t,
                Ok(None) => continue,
                Err(e) if !e.problems().is_empty() => {
                    problems.extend(e.problems().iter().cloned());
                    continue;
                }
                Err(e) => return Err(e),
            };
            if let Some(cap) = budget.file_cap(tier)
                && text.len() > cap
            {
                problems.push(Problem {
                    file: path.clone(),
                    line: 1,
                    message: format!("{} bytes, over the {tier} cap of {cap} bytes", text.len()),
                });
            }
            if let Err(e) = MemoryDoc::parse(&path, &text) {
                problems.extend(e.problems().iter().cloned());
            }
        }
    }
    Ok(problems)
}
