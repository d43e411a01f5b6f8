//! Spawn rendering: the `## Memory Context` block, budgets enforced at render time, and the
//! load manifest.

use std::collections::BTreeMap;

use sha2::{Digest, Sha256};
use squad_model::AgentName;

use crate::bm25::Bm25;
use crate::entry::{Entry, MemoryDoc};
use crate::error::{Error, ErrorKind, Result};
use crate::matrix::{LoadPlan, Situation};
use crate::name::{MemoryId, TopicName};
use crate::store::Tier;

/// Byte budgets, enforced when a prompt is rendered. Bytes are the contract; tokens are only
/// estimated (bytes / 4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Budget {
    /// The hot section's bytes (default 4 KiB).
    pub hot: usize,
    /// Hot plus cold sections' bytes (default 16 KiB); cold gets what hot leaves.
    pub hot_plus_cold: usize,
    /// Each wiki document's bytes (default 20 KiB).
    pub wiki_doc: usize,
    /// How many wiki documents a spawn picks by relevance when no topic is named (default 2).
    pub wiki_auto_max: usize,
    /// The size a cold file may reach before `validate` reports it (default 64 KiB). Rendering
    /// selects from larger files within `hot_plus_cold` anyway.
    pub cold_file: usize,
}

impl Default for Budget {
    fn default() -> Self {
        Self {
            hot: 4 * 1024,
            hot_plus_cold: 16 * 1024,
            wiki_doc: 20 * 1024,
            wiki_auto_max: 2,
            cold_file: 64 * 1024,
        }
    }
}

impl Budget {
    /// The file-size cap `validate` applies to a tier's files.
    pub fn file_cap(&self, tier: Tier) -> Option<usize> {
        match tier {
            Tier::Hot => Some(self.hot),
            Tier::Cold => Some(self.cold_file),
            Tier::Wiki => Some(self.wiki_doc),
            Tier::Archive => None,
        }
    }
}

/// A memory file read for a spawn: where it came from, its hash and its parsed content.
#[derive(Debug, Clone)]
pub struct Source {
    /// The file as the store names it (`hot/data.md`).
    pub path: String,
    /// SHA-256 of the file's bytes, lowercase hex.
    pub sha256: String,
    /// The file's size in bytes.
    pub bytes: usize,
    /// The parsed content.
    pub doc: MemoryDoc,
}

impl Source {
    /// Parses a file's text.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::InvalidInput`] with `file:line` problems when the text is malformed.
    pub fn parse(path: impl Into<String>, text: &str) -> Result<Self> {
        let path = path.into();
        let doc = MemoryDoc::parse(&path, text)?;
        Ok(Self {
            sha256: hex::encode(Sha256::digest(text.as_bytes())),
            bytes: text.len(),
            path,
            doc,
        })
    }
}

/// Everything a spawn may load, already read and parsed.
#[derive(Debug, Clone)]
pub struct SpawnInputs {
    /// The agent being spawned.
    pub agent: AgentName,
    /// Its hot file, if it exists.
    pub hot: Option<Source>,
    /// Its cold file, if it exists and is wanted.
    pub cold: Option<Source>,
    /// Wiki documents available to choose from (the named topics, or all of them for ranking).
    pub wiki: Vec<(TopicName, Source)>,
}

/// Why something was left out of a prompt.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum Reason {
    /// It did not fit the tier's byte budget (oldest or least relevant first).
    Budget,
    /// It is superseded by another entry; superseded entries are never loaded.
    Superseded,
    /// The text was cut at the budget because the lines that are always kept exceed it.
    Truncated,
    /// The situation loads the wiki but no topic was named and no task text was given.
    NoTopic,
    /// A wiki document ranked below the ones loaded (or not at all) for the task text.
    NotRelevant,
}

/// One thing left out of a prompt, and why.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct LeftOut {
    /// The tier it belongs to.
    pub tier: Tier,
    /// The file it is in (empty when none).
    pub file: String,
    /// The entry id, `line <n>`, or empty.
    pub item: String,
    /// The bytes it would have taken.
    pub bytes: usize,
    /// Why.
    pub reason: Reason,
}

/// A file loaded into a prompt.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct FileReport {
    /// The file as the store names it.
    pub path: String,
    /// SHA-256 of the file as read, lowercase hex.
    pub sha256: String,
}

/// What one tier put into a prompt.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct TierReport {
    /// Bytes of the tier's section content.
    pub bytes: usize,
    /// `bytes / 4`, rounded up: an estimate, never enforced.
    pub estimated_tokens: usize,
    /// The files loaded.
    pub files: Vec<FileReport>,
    /// The entries loaded.
    pub entries: Vec<MemoryId>,
}

/// The machine-readable account of a rendered prompt.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Manifest {
    /// The situation rendered for.
    pub situation: Situation,
    /// Per loaded tier: bytes, estimated tokens, files and entries.
    pub tiers: BTreeMap<Tier, TierReport>,
    /// Everything left out, and why.
    pub left_out: Vec<LeftOut>,
    /// Bytes of the whole prompt block.
    pub total_bytes: usize,
    /// `total_bytes / 4`, rounded up.
    pub estimated_tokens: usize,
    /// `true` when the loaded cold entries' `last_loaded` was refreshed on disk.
    pub touched: bool,
}

/// A rendered memory block and its manifest.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Rendered {
    /// The `## Memory Context` block.
    pub prompt: String,
    /// What went in and what was left out.
    pub manifest: Manifest,
}

/// Lines of the hot tier that state the current situation; they are kept when hot overflows.
pub const PINNED_PREFIXES: [&str; 4] = [
    "current task:",
    "active decisions:",
    "blockers:",
    "talking to:",
];

fn is_pinned(line: &str) -> bool {
    let l = line.trim_start().trim_start_matches(['-', '*', ' ']);
    PINNED_PREFIXES
        .iter()
        .any(|p| l.len() >= p.len() && l[..p.len()].eq_ignore_ascii_case(p))
}

fn estimate(bytes: usize) -> usize {
    bytes.div_ceil(4)
}

enum Unit<'a> {
    Line(usize, &'a str),
    Entry(&'a Entry),
}

impl Unit<'_> {
    fn text(&self) -> String {
        match self {
            Unit::Line(_, t) => format!("{}\n", t.trim_end()),
            Unit::Entry(e) => e.prompt_text(),
        }
    }
    fn item(&self) -> String {
        match self {
            Unit::Line(n, _) => format!("line {n}"),
            Unit::Entry(e) => e.id.to_string(),
        }
    }
}

struct Section {
    text: String,
    entries: Vec<MemoryId>,
}

fn superseded(tier: Tier, src: &Source, left: &mut Vec<LeftOut>) {
    for e in src.doc.entries.iter().filter(|e| e.is_superseded()) {
        left.push(LeftOut {
            tier,
            file: src.path.clone(),
            item: e.id.to_string(),
            bytes: e.prompt_text().len(),
            reason: Reason::Superseded,
        });
    }
}

/// Keeps `keep[i]` units in document order (free lines, then entries by date).
fn assemble(units: &[Unit<'_>], keep: &[bool]) -> Section {
    let mut text = String::new();
    let mut entries = Vec::new();
    let mut dated: Vec<&Entry> = Vec::new();
    for (u, k) in units.iter().zip(keep) {
        if !*k {
            continue;
        }
        match u {
            Unit::Line(..) => text.push_str(&u.text()),
            Unit::Entry(e) => dated.push(e),
        }
    }
    dated.sort_by_key(|e| e.date);
    for e in dated {
        text.push_str(&e.prompt_text());
        entries.push(e.id.clone());
    }
    Section { text, entries }
}

fn units_of(src: &Source) -> Vec<Unit<'_>> {
    let mut units: Vec<Unit<'_>> = src
        .doc
        .free
        .iter()
        .filter(|l| !l.text.trim().is_empty())
        .map(|l| Unit::Line(l.line, l.text.as_str()))
        .collect();
    units.extend(
        src.doc
            .entries
            .iter()
            .filter(|e| !e.is_superseded())
            .map(Unit::Entry),
    );
    units
}

/// Drops units in `order` until the kept ones fit `budget`; records what was dropped.
fn fit(
    tier: Tier,
    src: &Source,
    units: &[Unit<'_>],
    order: &[usize],
    budget: usize,
    left: &mut Vec<LeftOut>,
) -> Section {
    let sizes: Vec<usize> = units.iter().map(|u| u.text().len()).collect();
    let mut keep = vec![true; units.len()];
    let mut total: usize = sizes.iter().sum();
    for &i in order {
        if total <= budget {
            break;
        }
        keep[i] = false;
        total -= sizes[i];
        left.push(LeftOut {
            tier,
            file: src.path.clone(),
            item: units[i].item(),
            bytes: sizes[i],
            reason: Reason::Budget,
        });
    }
    let mut section = assemble(units, &keep);
    if section.text.len() > budget {
        let mut cut = budget;
        while !section.text.is_char_boundary(cut) {
            cut -= 1;
        }
        left.push(LeftOut {
            tier,
            file: src.path.clone(),
            item: String::new(),
            bytes: section.text.len() - cut,
            reason: Reason::Truncated,
        });
        section.text.truncate(cut);
    }
    section
}

/// Renders the memory block for `plan` from `inputs` within `budget`.
///
/// Pure and deterministic: no I/O, no clock.
///
/// Overflow policy, declared and never silent (each drop is a [`LeftOut`] in the manifest and a
/// `> Memory notice:` line in the prompt):
/// - **Hot:** superseded entries are never loaded. Over budget, the entries go first (oldest
///   date first), then free lines from the top of the file, except the pinned lines
///   ([`PINNED_PREFIXES`]). If the pinned lines alone exceed the budget, the text is cut at the
///   budget.
/// - **Cold:** gets `hot_plus_cold` minus the hot bytes. Entries are taken best first: by BM25
///   score against the task when there is one (then the rest newest first), otherwise newest
///   first; each entry that does not fit is left out. Free lines come before entries.
/// - **Wiki:** each document is capped at `wiki_doc`: entries go first (oldest first), then
///   free lines from the end of the document.
///
/// # Errors
///
/// [`ErrorKind::NotFound`] when a named wiki topic is not among `inputs.wiki`.
pub fn render(plan: &LoadPlan, inputs: &SpawnInputs, budget: &Budget) -> Result<Rendered> {
    let tiers = plan.tiers();
    let mut left: Vec<LeftOut> = Vec::new();
    let mut reports: BTreeMap<Tier, TierReport> = BTreeMap::new();
    let mut notices: Vec<String> = Vec::new();
    let mut prompt = String::from("## Memory Context\n### Hot (current session)\n");

    // Hot.
    let mut hot_bytes = 0;
    let mut hot_report = TierReport::default();
    if let Some(src) = &inputs.hot {
        superseded(Tier::Hot, src, &mut left);
        let units = units_of(src);
        let mut entries: Vec<usize> = (0..units.len())
            .filter(|&i| matches!(units[i], Unit::Entry(_)))
            .collect();
        entries.sort_by_key(|&i| match units[i] {
            Unit::Entry(e) => Some(e.date),
            Unit::Line(..) => None,
        });
        let lines =
            (0..units.len()).filter(|&i| matches!(units[i], Unit::Line(_, t) if !is_pinned(t)));
        let order: Vec<usize> = entries.into_iter().chain(lines).collect();
        let before = left.len();
        let section = fit(Tier::Hot, src, &units, &order, budget.hot, &mut left);
        notice(&mut notices, Tier::Hot, &left[before..], budget.hot);
        hot_bytes = section.text.len();
        prompt.push_str(&section.text);
        hot_report.files.push(FileReport {
            path: src.path.clone(),
            sha256: src.sha256.clone(),
        });
        hot_report.entries = section.entries;
    } else {
        prompt.push_str("(no hot memory)\n");
    }
    hot_report.bytes = hot_bytes;
    hot_report.estimated_tokens = estimate(hot_bytes);
    reports.insert(Tier::Hot, hot_report);

    // Cold.
    if tiers.cold {
        let cold_budget = budget.hot_plus_cold.saturating_sub(hot_bytes);
        let mut report = TierReport::default();
        prompt.push_str("### Cold (summarized history)\n");
        if let Some(src) = &inputs.cold {
            superseded(Tier::Cold, src, &mut left);
            let units = units_of(src);
            let order = cold_priority(&units, plan.task.as_deref());
            // Greedy: take units best first while they fit; everything else is left out.
            let sizes: Vec<usize> = units.iter().map(|u| u.text().len()).collect();
            let mut keep = vec![false; units.len()];
            let mut used = 0;
            let before = left.len();
            for &i in &order {
                if used + sizes[i] <= cold_budget {
                    keep[i] = true;
                    used += sizes[i];
                } else {
                    left.push(LeftOut {
                        tier: Tier::Cold,
                        file: src.path.clone(),
                        item: units[i].item(),
                        bytes: sizes[i],
                        reason: Reason::Budget,
                    });
                }
            }
            notice(&mut notices, Tier::Cold, &left[before..], cold_budget);
            let section = assemble(&units, &keep);
            prompt.push_str(&section.text);
            report.bytes = section.text.len();
            report.files.push(FileReport {
                path: src.path.clone(),
                sha256: src.sha256.clone(),
            });
            report.entries = section.entries;
        } else {
            prompt.push_str("(no cold memory)\n");
        }
        report.estimated_tokens = estimate(report.bytes);
        reports.insert(Tier::Cold, report);
    }

    // Wiki.
    if tiers.wiki {
        let mut report = TierReport::default();
        let chosen: Vec<&(TopicName, Source)> = if !plan.wiki_topics.is_empty() {
            plan.wiki_topics
                .iter()
                .map(|t| {
                    inputs.wiki.iter().find(|(n, _)| n == t).ok_or_else(|| {
                        Error::new(
                            ErrorKind::NotFound,
                            "memory.render",
                            format!("wiki topic {t:?} not found (wiki/{t}.md)"),
                        )
                    })
                })
                .collect::<Result<_>>()?
        } else if let Some(task) = plan.task.as_deref() {
            // Rank on what could load: superseded entries do not make a document relevant.
            let idx = Bm25::new(inputs.wiki.iter().map(|(t, s)| {
                let mut text = t.as_str().replace(['-', '_'], " ");
                for u in units_of(s) {
                    text.push(' ');
                    text.push_str(&u.text());
                }
                text
            }));
            let picked: Vec<usize> = idx
                .rank(task)
                .into_iter()
                .take(budget.wiki_auto_max)
                .map(|(i, _)| i)
                .collect();
            for (i, (topic, src)) in inputs.wiki.iter().enumerate() {
                if !picked.contains(&i) {
                    left.push(LeftOut {
                        tier: Tier::Wiki,
                        file: src.path.clone(),
                        item: topic.to_string(),
                        bytes: src.bytes,
                        reason: Reason::NotRelevant,
                    });
                }
            }
            picked.into_iter().map(|i| &inputs.wiki[i]).collect()
        } else {
            left.push(LeftOut {
                tier: Tier::Wiki,
                file: String::new(),
                item: String::new(),
                bytes: 0,
                reason: Reason::NoTopic,
            });
            notices.push(
                "> Memory notice: this situation loads the wiki, but no topic was named and no \
                 task was given to rank by; no wiki document loaded."
                    .to_owned(),
            );
            Vec::new()
        };
        for (topic, src) in chosen {
            superseded(Tier::Wiki, src, &mut left);
            let units = units_of(src);
            let mut entries: Vec<usize> = (0..units.len())
                .filter(|&i| matches!(units[i], Unit::Entry(_)))
                .collect();
            entries.sort_by_key(|&i| match units[i] {
                Unit::Entry(e) => Some(e.date),
                Unit::Line(..) => None,
            });
            let lines: Vec<usize> = (0..units.len())
                .filter(|&i| matches!(units[i], Unit::Line(..)))
                .rev()
                .collect();
            let order: Vec<usize> = entries.into_iter().chain(lines).collect();
            let before = left.len();
            let section = fit(Tier::Wiki, src, &units, &order, budget.wiki_doc, &mut left);
            notice(&mut notices, Tier::Wiki, &left[before..], budget.wiki_doc);
            prompt.push_str(&format!("### Wiki (durable reference: {topic})\n"));
            prompt.push_str(&section.text);
            report.bytes += section.text.len();
            report.files.push(FileReport {
                path: src.path.clone(),
                sha256: src.sha256.clone(),
            });
            report.entries.extend(section.entries);
        }
        report.estimated_tokens = estimate(report.bytes);
        reports.insert(Tier::Wiki, report);
    }

    for n in &notices {
        prompt.push_str(n);
        prompt.push('\n');
    }
    let total = prompt.len();
    Ok(Rendered {
        prompt,
        manifest: Manifest {
            situation: plan.situation,
            tiers: reports,
            left_out: left,
            total_bytes: total,
            estimated_tokens: estimate(total),
            touched: false,
        },
    })
}

fn notice(notices: &mut Vec<String>, tier: Tier, dropped: &[LeftOut], budget: usize) {
    let budgeted: Vec<&LeftOut> = dropped
        .iter()
        .filter(|l| matches!(l.reason, Reason::Budget | Reason::Truncated))
        .collect();
    if budgeted.is_empty() {
        return;
    }
    let bytes: usize = budgeted.iter().map(|l| l.bytes).sum();
    let policy = match tier {
        Tier::Cold => "least relevant or oldest first",
        _ => "oldest first",
    };
    notices.push(format!(
        "> Memory notice: {} {tier} item(s) ({bytes} bytes) left out to fit the {budget}-byte \
         {tier} budget ({policy}); see the manifest.",
        budgeted.len()
    ));
}

/// Cold units best first: free lines, then entries by BM25 score against the task (positive
/// scores first), then the rest newest first.
fn cold_priority(units: &[Unit<'_>], task: Option<&str>) -> Vec<usize> {
    let mut order: Vec<usize> = (0..units.len())
        .filter(|&i| matches!(units[i], Unit::Line(..)))
        .collect();
    let entries: Vec<(usize, &Entry)> = units
        .iter()
        .enumerate()
        .filter_map(|(i, u)| match u {
            Unit::Entry(e) => Some((i, *e)),
            Unit::Line(..) => None,
        })
        .collect();
    let scores: Vec<f64> = match task {
        Some(task) => Bm25::new(
            entries
                .iter()
                .map(|(_, e)| format!("{} {} {}", e.kind, e.summary, e.body)),
        )
        .scores(task),
        None => vec![0.0; entries.len()],
    };
    let mut ranked: Vec<(usize, f64, &Entry)> = entries
        .iter()
        .zip(scores)
        .map(|((i, e), s)| (*i, s, *e))
        .collect();
    ranked.sort_by(|a, b| b.1.total_cmp(&a.1).then(b.2.date.cmp(&a.2.date)));
    order.extend(ranked.into_iter().map(|(i, _, _)| i));
    order
}
