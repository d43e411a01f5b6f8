//! `squad memory import | add | supersede | spawn --touch | scribe`: after a kill, every
//! distinct non-blank line of the memory files (hot, cold, wiki, archive) that was there before
//! is still in one of them and `memory validate` passes; after the rerun, the command's effect
//! is there exactly once and no entry id is in two places.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde_json::Value;

use super::{Check, Env, Fixture, Scenario};

const T0: &str = "2026-03-01T00:00:00Z";
const T1: &str = "2026-03-02T00:00:00Z";
/// Forty days after T1: past the cold TTL of what entered cold at T1.
const T2: &str = "2026-04-11T00:00:00Z";

const HISTORY: &str = "\
# Data — history

## Learnings

### 2026-01-03: Use RS256 for tokens
Keys rotate monthly; see auth.go:47.

### 2026-01-10: Deploys time out on staging
The staging runner has 2 GB; raise it before blaming the code.

## Notes
Free text line one.
- a bullet
";

const HISTORY2: &str = "\
# Data — more history

Current task: migrate the session store
Blockers: none

### 2026-02-11: Sessions move to Redis (#977)
The cookie store hit its size limit.

### 1. Retry budgets
Three retries, then page.

Loose line at the end.
";

const DECISIONS: &str = "\
# Decisions

### 2026-02-01: Postgres over MySQL
**By:** lead
Because of JSONB.
";

/// A repository whose `.squad/memory` has all four tiers: cold and the archive from an
/// imported history and a first Scribe run, a wiki topic, and hot with entries and the
/// template lines.
fn memory() -> Fixture {
    let f = Fixture::new();
    let e = f.env();
    e.git(".", &["init", "-q", "-b", "main"]);
    std::fs::write(f.path().join("history.md"), HISTORY).unwrap();
    std::fs::write(f.path().join("history2.md"), HISTORY2).unwrap();
    std::fs::write(f.path().join("decisions.md"), DECISIONS).unwrap();
    e.ok(
        ".",
        &[
            "memory",
            "import",
            "--agent",
            "data",
            "history.md",
            "--now",
            T0,
        ],
    );
    e.ok(
        ".",
        &[
            "memory",
            "import",
            "--wiki",
            "decisions",
            "decisions.md",
            "--now",
            T0,
        ],
    );
    add(e, "decision", "keep RS256", "because the keys rotate", T0);
    e.ok(".", &["memory", "scribe", "--agent", "data", "--now", T1]);
    add(e, "note", "staging runner memory", "2 GB is not enough", T1);
    add(e, "action", "page on the third retry", "", T1);
    let hot = f.path().join(".squad/memory/hot/data.md");
    let mut text = std::fs::read_to_string(&hot).unwrap();
    text.push_str("Current task: fix the staging deploy\nActive decisions: use RS256\n");
    std::fs::write(&hot, text).unwrap();
    f
}

fn add(e: Env<'_>, kind: &str, title: &str, body: &str, now: &str) -> String {
    e.ok(
        ".",
        &[
            "memory", "add", "--agent", "data", "--kind", kind, "--title", title, "--body", body,
            "--now", now,
        ],
    )
    .trim()
    .to_owned()
}

/// The memory files: `tier/name.md -> text` (temporary files excluded).
fn files(root: &Path) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for tier in ["hot", "cold", "wiki", "archive"] {
        let Ok(list) = std::fs::read_dir(root.join(".squad/memory").join(tier)) else {
            continue;
        };
        for e in list {
            let e = e.unwrap();
            let name = e.file_name().to_string_lossy().into_owned();
            if name.ends_with(".md") && !name.starts_with('.') {
                out.insert(
                    format!("{tier}/{name}"),
                    std::fs::read_to_string(e.path()).unwrap(),
                );
            }
        }
    }
    out
}

/// The distinct non-blank lines of the memory files, but `skip` field lines.
fn lines(files: &BTreeMap<String, String>, skip: &[&str]) -> BTreeSet<String> {
    files
        .values()
        .flat_map(|t| t.lines())
        .filter(|l| !l.trim().is_empty() && !skip.iter().any(|s| l.starts_with(s)))
        .map(str::to_owned)
        .collect()
}

/// Every line of `before` is still somewhere, and `memory validate` passes.
fn kept(e: Env<'_>, before: &BTreeSet<String>, skip: &[&str]) -> Check<BTreeMap<String, String>> {
    let now = files(e.root);
    let after = lines(&now, skip);
    if let Some(gone) = before.difference(&after).next() {
        return Err(format!("a memory line is gone: {gone:?}"));
    }
    let o = e.squad(".", &["memory", "validate"], None);
    if o.status.code() != Some(0) {
        return Err(format!(
            "memory validate: {}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        ));
    }
    Ok(now)
}

/// No entry id is in two entries, and every id of `before` is still an id or merged into one.
fn ids_once(before: &BTreeSet<String>, now: &BTreeMap<String, String>) -> Check {
    let mut seen: BTreeMap<&str, &str> = BTreeMap::new();
    let mut merged = BTreeSet::new();
    for (file, text) in now {
        for l in text.lines() {
            if let Some(id) = l.strip_prefix("**id:** ")
                && let Some(other) = seen.insert(id.trim(), file)
            {
                return Err(format!("entry {id} is in {other} and in {file}"));
            }
            if let Some(ids) = l.strip_prefix("**merged:** ") {
                merged.extend(ids.split(',').map(|s| s.trim().to_owned()));
            }
        }
    }
    for id in before {
        if !seen.contains_key(id.as_str()) && !merged.contains(id) {
            return Err(format!("entry {id} is gone"));
        }
    }
    Ok(())
}

fn ids(files: &BTreeMap<String, String>) -> BTreeSet<String> {
    files
        .values()
        .flat_map(|t| t.lines())
        .filter_map(|l| l.strip_prefix("**id:** "))
        .map(|s| s.trim().to_owned())
        .collect()
}

/// A scenario on a copy of the memory fixture: lines kept after the kill; after the rerun,
/// lines kept, ids once, then `check`.
fn scenario(
    name: &str,
    f: Fixture,
    args: &[&str],
    skip: &'static [&'static str],
    check: impl Fn(Env<'_>, &BTreeMap<String, String>, &std::process::Output) -> Check + 'static,
) -> Scenario {
    let before_files = files(f.path());
    let before = lines(&before_files, skip);
    let before_ids = ids(&before_files);
    let b = before.clone();
    Scenario::new(name, f, ".", args)
        .after_kill(move |e| kept(e, &b, skip).map(|_| Value::Null))
        .after_recovery(move |e, _, rerun| {
            let now = kept(e, &before, skip)?;
            ids_once(&before_ids, &now)?;
            check(e, &now, rerun)
        })
}

fn count_headings(files: &BTreeMap<String, String>, title: &str) -> usize {
    files
        .values()
        .flat_map(|t| t.lines())
        .filter(|l| l.starts_with("### ") && l.ends_with(title))
        .count()
}

pub(crate) fn write_scenarios() -> Vec<Scenario> {
    let import = scenario(
        "memory import",
        memory(),
        &[
            "--json",
            "memory",
            "import",
            "--agent",
            "data",
            "history2.md",
            "--now",
            T2,
        ],
        &[],
        |e, now, rerun| {
            let v: Value = serde_json::from_slice(&rerun.stdout).map_err(|x| x.to_string())?;
            if v["lines_in"] != v["lines_stored"] {
                return Err(format!(
                    "lines in {} != stored {}",
                    v["lines_in"], v["lines_stored"]
                ));
            }
            let have = lines(now, &[]);
            for l in HISTORY2.lines().filter(|l| !l.trim().is_empty()) {
                if !have.contains(l) {
                    return Err(format!("imported line {l:?} is not stored"));
                }
            }
            // A second import changes nothing.
            let o = e.squad(
                ".",
                &[
                    "--json",
                    "memory",
                    "import",
                    "--agent",
                    "data",
                    "history2.md",
                    "--now",
                    T2,
                ],
                None,
            );
            if o.status.code() != Some(0) || files(e.root) != *now {
                return Err(format!(
                    "a second import changed the files: {}",
                    String::from_utf8_lossy(&o.stdout)
                ));
            }
            Ok(())
        },
    );
    let add = scenario(
        "memory add",
        memory(),
        &[
            "memory",
            "add",
            "--agent",
            "data",
            "--kind",
            "decision",
            "--title",
            "crash title",
            "--body",
            "crash body",
            "--now",
            T2,
        ],
        &[],
        |_, now, rerun| {
            let id = String::from_utf8_lossy(&rerun.stdout).trim().to_owned();
            let hot = now.get("hot/data.md").cloned().unwrap_or_default();
            let k = count_headings(now, "crash title");
            if k != 1 || !hot.contains(&format!("**id:** {id}")) {
                return Err(format!("{k} entries titled `crash title`, {id} in hot?"));
            }
            Ok(())
        },
    );
    // A cold entry superseded by a hot one.
    let f = memory();
    let all = files(f.path());
    let id_of = |title: &str| -> String {
        let text: String = all.values().cloned().collect();
        let at = text.find(title).unwrap();
        text[at..]
            .lines()
            .find_map(|l| l.strip_prefix("**id:** "))
            .unwrap()
            .trim()
            .to_owned()
    };
    let old = id_of("keep RS256");
    let by = id_of("staging runner memory");
    let args = ["memory", "supersede", &old, "--by", &by].map(str::to_owned);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let o2 = old.clone();
    let by2 = by.clone();
    let supersede = scenario("memory supersede", f, &args, &[], move |e, now, _| {
        let o = e.squad(".", &["--json", "memory", "show", &o2], None);
        let v: Value = serde_json::from_slice(&o.stdout).map_err(|x| x.to_string())?;
        let marks = now
            .values()
            .flat_map(|t| t.lines())
            .filter(|l| l.starts_with("**superseded_by:**"))
            .count();
        if v["superseded_by"] != by2.as_str() || marks != 1 {
            return Err(format!(
                "{o2}: superseded_by {}, {marks} marks",
                v["superseded_by"]
            ));
        }
        Ok(())
    });
    let touch = scenario(
        "memory spawn --touch",
        memory(),
        &[
            "memory",
            "spawn",
            "--agent",
            "data",
            "--situation",
            "resuming",
            "--task",
            "staging deploy RS256",
            "--touch",
            "--now",
            T2,
        ],
        // The touch rewrites `last_loaded`.
        &["**last_loaded:**"],
        |_, now, _| {
            let stamp = format!("**last_loaded:** {T2}");
            if !now.values().any(|t| t.lines().any(|l| l == stamp)) {
                return Err("no entry records the touch".into());
            }
            Ok(())
        },
    );
    vec![import, add, supersede, touch]
}

pub(crate) fn scribe_scenarios() -> Vec<Scenario> {
    vec![scenario(
        "memory scribe",
        memory(),
        &["--json", "memory", "scribe", "--agent", "data", "--now", T2],
        &[],
        |_, now, _| {
            let hot = now.get("hot/data.md").cloned().unwrap_or_default();
            if hot
                .lines()
                .any(|l| l.starts_with("### ") || l.starts_with("Current task"))
            {
                return Err(format!("hot was not emptied:\n{hot}"));
            }
            Ok(())
        },
    )]
}

/// Where a kill of `squad doctor --fix` can leave something new: [`super::FILE_SYSCALLS`] but
/// `openat`.
const DOCTOR_SYSCALLS: [&str; 12] = [
    "write",
    "pwrite64",
    "fsync",
    "fdatasync",
    "rename",
    "renameat",
    "renameat2",
    "unlink",
    "unlinkat",
    "mkdir",
    "mkdirat",
    "flock",
];

/// `squad doctor --fix` on what killed writers left: a git ref lock no process holds and
/// temporary files in two memory tiers. After a kill, every memory line is still there; after
/// the rerun, doctor finds nothing (checked for every scenario).
pub(crate) fn doctor_scenarios() -> Vec<Scenario> {
    let f = memory();
    let memory_dir = f.path().join(".squad/memory");
    std::fs::write(memory_dir.join("hot/.data.md.tmp-999999999-0"), "half").unwrap();
    std::fs::write(memory_dir.join("cold/.data.md.tmp-999999999-1"), "half").unwrap();
    let e = f.env();
    e.git(".", &["commit", "-q", "--allow-empty", "-m", "c1"]);
    std::fs::write(f.path().join(".git/refs/heads/feature.lock"), "").unwrap();
    let before = lines(&files(f.path()), &[]);
    let b = before.clone();
    vec![
        Scenario::new("doctor --fix", f, ".", &["doctor", "--fix"])
            // Here every `openat` of doctor's reads (it scans /proc to see who holds a lock,
            // hundreds of opens): a kill at one leaves what a kill at the next removal leaves.
            .syscalls(&DOCTOR_SYSCALLS)
            // Copies are new files: the lock is as old as a killed writer's would be by now.
            .prepare(|e| super::age(&e.root.join(".git/refs/heads/feature.lock")))
            .after_kill(move |e| kept(e, &b, &[]).map(|_| Value::Null))
            .after_recovery(move |e, _, _| {
                kept(e, &before, &[])?;
                if e.root.join(".git/refs/heads/feature.lock").exists() {
                    return Err("the stale lock is still there".into());
                }
                Ok(())
            }),
    ]
}
