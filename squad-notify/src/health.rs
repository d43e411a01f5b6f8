//! The health of the state files: what `squad approval status` shows and what `squad doctor`
//! reports and repairs.
//!
//! - [`Approvals::status`] takes the lock, completes an interrupted batch, removes leftover
//!   temporary files, records a tampering it detects, and returns the state with the log's
//!   verdict and every symbolic link under the state directory.
//! - [`Approvals::health`] changes nothing (no lock, no write): interrupted batches, leftover
//!   temporary files of `state.json`, a recorded or newly found tampering, unusable files.
//! - [`Approvals::fix`] completes interrupted batches and removes stale temporary files of
//!   `state.json`. It never rewrites `notifications.md` (it may only append what a killed batch
//!   left unwritten) and never touches a lock: an OS lock dies with its process.

use std::path::PathBuf;

use crate::approvals::Approvals;
use crate::error::Result;
use crate::log::verify_log;
use crate::store::{self, LOCK_FILE, LOG_FILE, STATE_FILE, StateDoc, TamperRecord, Txn};

/// The verdict on `notifications.md`.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum LogStatus {
    /// There is no log yet.
    Missing,
    /// The hash chain verifies, and its head is the one `state.json` records.
    Intact {
        /// Entries in the file.
        entries: usize,
        /// Entries before the last acknowledged tampering (not verified again).
        acknowledged: usize,
    },
    /// The chain does not verify: the log was edited, cut or reordered.
    Broken {
        /// What is wrong, in one sentence.
        problem: String,
    },
    /// The file cannot be used: a symbolic link (never followed), not a regular file, too
    /// large, not UTF-8.
    Unusable {
        /// What is wrong, in one sentence.
        problem: String,
    },
}

/// What [`Approvals::status`] found.
#[derive(Debug, Clone)]
pub struct Status {
    /// `state.json`.
    pub state: StateDoc,
    /// The verdict on `notifications.md`.
    pub log: LogStatus,
    /// The detected tampering not yet acknowledged, if any (it stays until
    /// [`Approvals::acknowledge_tamper`]).
    pub tamper: Option<TamperRecord>,
    /// What was repaired on the way: an interrupted batch completed, leftover temporary files
    /// removed.
    pub repaired: Vec<String>,
    /// Symbolic links and special files under the state directory: never followed, each a
    /// problem to look at.
    pub unsafe_paths: Vec<squad_fs::Finding>,
    /// When the status was taken (gates past their expiry then are shown as expired).
    pub now: squad_model::Timestamp,
}

/// The verdict on the log text as read.
fn log_status(doc: &StateDoc, exists: bool, text: Result<&str>) -> LogStatus {
    match text {
        Err(e) => LogStatus::Unusable {
            problem: e.message().to_owned(),
        },
        Ok(_) if !exists => LogStatus::Missing,
        Ok(text) => match verify_log(text, doc.approval.log_head.as_deref()) {
            Ok(r) => LogStatus::Intact {
                entries: r.entries,
                acknowledged: r.acknowledged,
            },
            Err(e) => LogStatus::Broken {
                problem: e.message().to_owned(),
            },
        },
    }
}

/// What [`Approvals::health`] found, without changing anything.
#[derive(Debug, Clone, Default)]
pub struct Health {
    /// A batch a killed process left unfinished, described in one sentence
    /// ([`Approvals::fix`] or the next command completes it).
    pub interrupted: Option<String>,
    /// Temporary files of `state.json` left by killed writers.
    pub temp_files: Vec<squad_fs::TempFile>,
    /// A tampering of `notifications.md`: the recorded one, or one found by this check (the
    /// next command records it).
    pub tamper: Option<TamperRecord>,
    /// Files that cannot be used (`state.json` unreadable, `notifications.md` a symbolic link,
    /// ...), one sentence each.
    pub problems: Vec<String>,
}

impl Health {
    /// `true` when there is nothing to report.
    pub fn is_healthy(&self) -> bool {
        self.interrupted.is_none()
            && self.temp_files.is_empty()
            && self.tamper.is_none()
            && self.problems.is_empty()
    }
}

/// What [`Approvals::fix`] did, and the health after it.
#[derive(Debug, Clone, Default)]
pub struct Fixed {
    /// Interrupted batches completed, one sentence each.
    pub completed: Vec<String>,
    /// Temporary files removed, relative to the state directory.
    pub removed: Vec<PathBuf>,
    /// The health afterwards (a tampering stays until a human acknowledges it).
    pub health: Health,
}

impl Approvals {
    /// The state and the log's verdict. It only reads, and takes no lock, when there is nothing
    /// to repair; otherwise (an interrupted batch, leftover temporary files, a tampering not yet
    /// recorded) it repairs under the lock first. When the lock cannot be taken (a read-only
    /// state directory) it reports without repairing, and says so in
    /// [`Status::repaired`]. A state directory that does not exist reads as empty and is not
    /// created. Pending gates past their expiry are shown as expired (the next command that
    /// writes records the expiry).
    ///
    /// # Errors
    ///
    /// [`crate::ErrorKind::Corrupt`] when `state.json` cannot be used (torn, a symbolic link,
    /// ...); [`crate::ErrorKind::Io`].
    pub fn status(&self) -> Result<Status> {
        let now = self.clock.now();
        if !self.dir.exists() {
            return Ok(Status {
                state: StateDoc::default(),
                log: LogStatus::Missing,
                tamper: None,
                repaired: Vec::new(),
                unsafe_paths: Vec::new(),
                now,
            });
        }
        let health = self.health()?;
        let needs_repair = health.interrupted.is_some()
            || !health.temp_files.is_empty()
            || (health.tamper.is_some() && store::read(&self.dir)?.approval.tamper.is_none());
        if !needs_repair {
            let st = self.status_read_only(Vec::new())?;
            // Read without the lock, a writer may append between the two files: a log that does
            // not verify is judged again under the lock before it is called tampered.
            if !matches!(st.log, LogStatus::Broken { .. }) || st.state.approval.tamper.is_some() {
                return Ok(st);
            }
        }
        let txn = match Txn::begin(&self.dir, now) {
            Ok(txn) => txn,
            Err(e) if e.kind() == crate::ErrorKind::Io => {
                return self.status_read_only(vec![format!(
                    "nothing repaired: the state directory cannot be written ({})",
                    e.message()
                )]);
            }
            Err(e) => return Err(e),
        };
        let log = log_status(&txn.doc, txn.log_exists(), txn.log_text());
        let mut repaired = txn.recovered.clone();
        repaired.extend(
            txn.swept
                .iter()
                .map(|p| format!("removed the leftover temporary file {}", p.display())),
        );
        Ok(Status {
            tamper: txn.doc.approval.tamper.clone(),
            state: txn.doc.clone(),
            log,
            repaired,
            unsafe_paths: self.dir.audit()?,
            now,
        })
    }

    /// The status read without the lock and without writing.
    fn status_read_only(&self, repaired: Vec<String>) -> Result<Status> {
        let doc = store::read(&self.dir)?;
        let log = match self.log_text() {
            Ok(None) => log_status(&doc, false, Ok("")),
            Ok(Some(t)) => log_status(&doc, true, Ok(&t)),
            Err(e) if e.kind() == crate::ErrorKind::Io => return Err(e),
            Err(e) => log_status(&doc, true, Err(e)),
        };
        let tamper = doc.approval.tamper.clone().or_else(|| match &log {
            LogStatus::Broken { problem } => Some(TamperRecord {
                detected: self.clock.now(),
                problem: problem.clone(),
            }),
            _ => None,
        });
        Ok(Status {
            tamper,
            state: doc,
            log,
            repaired,
            unsafe_paths: self.dir.audit()?,
            now: self.clock.now(),
        })
    }

    /// Reports interrupted batches, leftover temporary files of `state.json`, a tampering of
    /// `notifications.md` and unusable state files, changing nothing (no lock is taken).
    ///
    /// # Errors
    ///
    /// [`crate::ErrorKind::Io`] when the state directory cannot be read.
    pub fn health(&self) -> Result<Health> {
        let mut h = Health::default();
        if !self.dir.exists() {
            return Ok(h);
        }
        h.temp_files = self
            .dir
            .leftover_temp_files()?
            .into_iter()
            .filter(|t| t.path.parent() == Some(std::path::Path::new("")))
            .filter(|t| {
                t.path
                    .to_str()
                    .is_some_and(|p| p.starts_with(store::STATE_TEMP_PREFIX))
            })
            .collect();
        for name in [STATE_FILE, LOG_FILE, LOCK_FILE] {
            if let Some(kind) = self.dir.kind(name)?
                && !matches!(kind, squad_fs::EntryKind::File)
            {
                h.problems.push(format!(
                    "{} is not a regular file ({kind:?}); squad never follows a symbolic link in the state directory",
                    self.dir.display_path(name).display()
                ));
            }
        }
        let doc = match store::read(&self.dir) {
            Ok(doc) => doc,
            Err(e) => {
                h.problems.push(e.message().to_owned());
                return Ok(h);
            }
        };
        h.tamper = doc.approval.tamper.clone();
        let log = match self.dir.read_capped(LOG_FILE, crate::log::MAX_LOG_BYTES) {
            Ok(b) => b,
            Err(e) => {
                if e.kind() == squad_fs::ErrorKind::Io {
                    return Err(e.into());
                }
                if !h.problems.iter().any(|p| p.contains(LOG_FILE)) {
                    h.problems.push(e.to_string());
                }
                return Ok(h);
            }
        };
        let mut full = log.clone().unwrap_or_default();
        if let Some(batch) = &doc.approval.batch {
            let want = batch.append.as_bytes();
            if let Some(g) = &batch.notifying {
                h.interrupted = Some(format!(
                    "gate {g} was being notified when its process stopped; the notification may not have arrived"
                ));
            }
            if !want.is_empty()
                && let Some(done) = batch.appended_in(&full)
            {
                h.interrupted.get_or_insert_with(|| {
                    format!(
                        "an interrupted `{}` left {} of {} bytes to append to notifications.md",
                        batch.op,
                        want.len() - done,
                        want.len()
                    )
                });
                full.extend_from_slice(&want[done..]);
            }
        }
        if h.tamper.is_none() {
            let problem = match (log.is_some(), String::from_utf8(full)) {
                (false, _) if doc.approval.log_head.is_some() => {
                    Some(store::LOG_MISSING.to_owned())
                }
                (false, _) => None,
                (true, Err(_)) => Some("notifications.md is not valid UTF-8".to_owned()),
                (true, Ok(text)) => verify_log(&text, doc.approval.log_head.as_deref())
                    .err()
                    .map(|e| e.message().to_owned()),
            };
            h.tamper = problem.map(|problem| TamperRecord {
                detected: self.clock.now(),
                problem,
            });
        }
        Ok(h)
    }

    /// Completes an interrupted batch and removes leftover temporary files of `state.json`
    /// (under the lock, so none of them belongs to a running writer), records a tampering it
    /// finds, and reports the health afterwards. Never rewrites `notifications.md`.
    ///
    /// # Errors
    ///
    /// As [`Approvals::status`].
    pub fn fix(&self) -> Result<Fixed> {
        if !self.dir.exists() {
            return Ok(Fixed::default());
        }
        let txn = Txn::begin(&self.dir, self.clock.now())?;
        let completed = txn.recovered.clone();
        let removed = txn.swept.clone();
        drop(txn);
        Ok(Fixed {
            completed,
            removed,
            health: self.health()?,
        })
    }
}

impl Status {
    /// Problems to show: symbolic links and special files under the state directory, an
    /// unusable log. One sentence each.
    pub fn problems(&self) -> Vec<String> {
        let mut out: Vec<String> = self
            .unsafe_paths
            .iter()
            .map(|f| match &f.target {
                Some(t) => format!(
                    "{} is a symbolic link to {} (never followed)",
                    f.path.display(),
                    t.display()
                ),
                None => format!("{} is not a regular file ({:?})", f.path.display(), f.kind),
            })
            .collect();
        if let LogStatus::Unusable { problem } = &self.log {
            out.push(problem.clone());
        }
        out
    }

    /// The pending gates that are not past their expiry, oldest first.
    pub fn pending(&self) -> Vec<&crate::Gate> {
        self.state
            .approval
            .pending_gates
            .iter()
            .filter(|g| !g.is_expired_at(self.now))
            .collect()
    }

    /// The decided gates, newest first: the pending gates past their expiry (shown as expired)
    /// then the recent decisions.
    fn decided(&self) -> Vec<crate::Gate> {
        let mut out: Vec<crate::Gate> = self
            .state
            .approval
            .pending_gates
            .iter()
            .filter(|g| g.is_expired_at(self.now))
            .map(|g| {
                let mut g = g.clone();
                g.expire_if_due(g.expires);
                g
            })
            .collect();
        out.extend(self.state.approval.recent.iter().rev().cloned());
        out
    }

    /// Keeps only the gates, runs and decisions of `run` (`approval status --run`).
    pub fn only_run(&mut self, run: &crate::RunId) {
        let a = &mut self.state.approval;
        a.pending_gates.retain(|g| &g.run == run);
        a.recent.retain(|g| &g.run == run);
        a.runs.retain(|r| &r.id == run);
    }

    /// The status as front ends print it (`squad approval status --json`, the MCP tool
    /// `approval_status`): snake_case keys ([`crate::output_json`]), `pending` the list of
    /// pending gates (each with its `run`, its `quorum` and the logins of its `approvals`), the
    /// `notify` object as `state.json` spells it, the five most recent decisions newest first,
    /// and the log's verdict (`{"entries", "intact": true, "acknowledged"}` or
    /// `{"intact": false, "problem"}`, `null` when there is none or it cannot be read).
    pub fn to_json(&self) -> serde_json::Value {
        let a = &self.state.approval;
        let log = match &self.log {
            LogStatus::Intact {
                entries,
                acknowledged,
            } => {
                serde_json::json!({"entries": entries, "intact": true, "acknowledged": acknowledged})
            }
            LogStatus::Broken { problem } => {
                serde_json::json!({"intact": false, "problem": problem})
            }
            LogStatus::Missing | LogStatus::Unusable { .. } => serde_json::Value::Null,
        };
        let gate_json = |g: &crate::Gate| {
            let mut v = crate::output_json(g);
            if let Some(o) = v.as_object_mut() {
                o.insert("quorum".to_owned(), g.quorum.into());
                o.insert("approvals".to_owned(), serde_json::json!(g.approvers()));
            }
            v
        };
        let pending: Vec<serde_json::Value> = self.pending().into_iter().map(gate_json).collect();
        let recent: Vec<serde_json::Value> = self.decided().iter().take(5).map(gate_json).collect();
        serde_json::json!({
            "pending": pending,
            "current_run": a.current_run,
            "runs": crate::output_json(&a.runs),
            "recent": recent,
            "notify": self.state.notify.as_ref().map(squad_model::NotifySettings::to_value),
            "log": log,
            "tamper": crate::output_json(&self.tamper),
            "repaired": self.repaired,
            "problems": self.problems(),
        })
    }
}

impl Status {
    /// The status in lines for people, as `squad approval status` prints it: the channel, the
    /// run, each pending gate with its run, the five most recent decisions, the log's verdict (a
    /// recorded tampering shows until it is acknowledged), then problems and repairs.
    pub fn lines(&self) -> Vec<String> {
        let a = &self.state.approval;
        let channel = self
            .state
            .notify
            .as_ref()
            .map_or(squad_model::ChannelKind::InChat, |n| n.approval_channel);
        let mut out = vec![format!("channel: {channel}")];
        out.push(match &a.current_run {
            Some(r) if a.run(r).is_some_and(|r| r.stopped.is_some()) => {
                format!("run: {r} (stopped)")
            }
            Some(r) => format!("run: {r}"),
            None => "run: none".to_owned(),
        });
        let pending = self.pending();
        if pending.is_empty() {
            out.push("pending: none".to_owned());
        }
        for g in pending {
            let quorum = if g.quorum > 1 {
                format!(
                    " — approvals {} of {}{}",
                    g.approvals.len(),
                    g.quorum,
                    if g.approvals.is_empty() {
                        String::new()
                    } else {
                        format!(" ({})", g.approvers().join(", "))
                    }
                )
            } else {
                String::new()
            };
            out.push(format!(
                "pending: {} run {} {} ({}) — {} — awaiting: {} — expires {}{quorum}",
                g.id, g.run, g.trigger, g.mode, g.topic, g.awaiting, g.expires
            ));
        }
        for g in self.decided().iter().take(5) {
            let at = g
                .decision
                .as_ref()
                .map(|d| d.at.to_string())
                .unwrap_or_default();
            out.push(format!(
                "decided: {} {} {} at {at} — {}",
                g.id, g.state, g.trigger, g.topic
            ));
        }
        out.push(match (&self.tamper, &self.log) {
            (Some(t), _) => format!(
                "log: TAMPERED (detected {}): {}; new gates are refused until `squad approval acknowledge-tamper`",
                t.detected, t.problem
            ),
            (None, LogStatus::Intact { entries, .. }) => {
                let noun = if *entries == 1 { "entry" } else { "entries" };
                format!("log: {entries} {noun}, hash chain intact")
            }
            (None, LogStatus::Broken { problem }) => format!("log: TAMPERED: {problem}"),
            (None, _) => "log: none".to_owned(),
        });
        out.extend(self.problems().into_iter().map(|p| format!("problem: {p}")));
        out.extend(self.repaired.iter().map(|r| format!("repaired: {r}")));
        out
    }
}
