//! `squad approval configure | request | wait | acknowledge-tamper`: after a kill, nothing is
//! lost, no false tampering alarm, no phantom pending entry; the next command completes an
//! interrupted batch.

use std::path::Path;

use serde_json::Value;

use super::{Check, Env, Fixture, Scenario};

fn request_args(topic: &str) -> Vec<&str> {
    vec![
        "approval",
        "request",
        "--mode",
        "autopilot",
        "--trigger",
        "risk-gate",
        "--topic",
        topic,
        "--awaiting",
        "a",
        "--detail",
        "d",
    ]
}

fn state(root: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(root.join(".squad/state.json")).unwrap()).unwrap()
}

fn log(root: &Path) -> String {
    std::fs::read_to_string(root.join(".squad/notifications.md")).unwrap_or_default()
}

fn entries(log: &str) -> usize {
    let body = log
        .rsplit("below this line. -->\n")
        .next()
        .unwrap_or_default();
    body.lines().filter(|l| l.starts_with("### ")).count()
}

/// A git repository (doctor looks for its locks) with a decided gate, so that both state
/// files exist.
fn with_history() -> (Fixture, usize) {
    let f = Fixture::new();
    let env = f.env();
    env.git(".", &["init", "-q", "-b", "main"]);
    env.ok(".", &request_args("first"));
    let o = env.squad(".", &["approval", "wait"], Some("/approve\n"));
    assert_eq!(o.status.code(), Some(0));
    let n = entries(&log(f.path()));
    (f, n)
}

/// Every `Resolved: pending` entry names a gate that state.json holds (no phantom).
fn no_phantom(root: &Path) -> Check {
    let s = state(root);
    let a = &s["approval"];
    let known: Vec<&str> = a["recent"]
        .as_array()
        .into_iter()
        .flatten()
        .chain(
            a["pendingGates"][0]
                .as_object()
                .map(|_| &a["pendingGates"][0]),
        )
        .filter_map(|g| g["id"].as_str())
        .collect();
    let text = log(root);
    for entry in text.split("\n### ").skip(1) {
        if entry.contains("* Resolved: pending") {
            let gate = entry
                .lines()
                .find_map(|l| l.strip_prefix("* Gate: "))
                .and_then(|l| l.split_whitespace().next())
                .unwrap_or_default();
            if !known.contains(&gate) {
                return Err(format!("phantom pending entry for {gate}"));
            }
        }
    }
    Ok(())
}

fn status(env: Env<'_>) -> Check<Value> {
    let o = env.squad(".", &["--json", "approval", "status"], None);
    if o.status.code() != Some(0) {
        return Err(format!(
            "status failed: {}",
            String::from_utf8_lossy(&o.stderr)
        ));
    }
    serde_json::from_slice(&o.stdout).map_err(|e| e.to_string())
}

/// The next command (`approval status`) sees no tampering unless there was some.
fn no_false_alarm(tampered_before: bool) -> impl Fn(Env<'_>) -> Check<Value> {
    move |env| {
        let st = status(env)?;
        if !tampered_before && (!st["tamper"].is_null() || st["log"]["intact"] == false) {
            return Err(format!("false tampering alarm: {}", st["tamper"]));
        }
        Ok(Value::Null)
    }
}

/// After the rerun: an intact log, no open batch, no phantom, then the scenario's own check.
fn whole(
    check: impl Fn(&Path) -> Check + 'static,
) -> impl Fn(Env<'_>, &Value, &std::process::Output) -> Check {
    move |env, _, _| {
        let st = status(env)?;
        if !st["tamper"].is_null() || st["log"]["intact"] != true {
            return Err(format!(
                "log after the rerun: {} {}",
                st["log"], st["tamper"]
            ));
        }
        if state(env.root)["approval"]["batch"].is_object() {
            return Err("a batch is still open".into());
        }
        no_phantom(env.root)?;
        check(env.root)
    }
}

pub(crate) fn scenarios() -> Vec<Scenario> {
    let (configure, n_configure) = with_history();
    let (request, n_request) = with_history();

    let (pending, _) = with_history();
    let env = pending.env();
    let gate = env.ok(".", &request_args("second")).trim().to_owned();
    let wait_args = ["approval", "wait", "--gate", &gate];

    let (tampered, _) = with_history();
    let text = log(tampered.path());
    let cut = &text[..text.rfind("\n### ").unwrap() + 1];
    std::fs::write(tampered.path().join(".squad/notifications.md"), cut).unwrap();
    let env = tampered.env();
    let o = env.squad(".", &["approval", "status"], None);
    assert!(String::from_utf8_lossy(&o.stdout).contains("TAMPERED"));

    vec![
        Scenario::new(
            "approval configure",
            configure,
            ".",
            &["approval", "configure", "--channel", "webhook"],
        )
        .after_kill(no_false_alarm(false))
        .after_recovery(whole(move |root| {
            let s = state(root);
            (s["notify"]["approvalChannel"] == "webhook" && entries(&log(root)) == n_configure)
                .then_some(())
                .ok_or_else(|| format!("notify {} entries {}", s["notify"], entries(&log(root))))
        })),
        Scenario::new("approval request", request, ".", &request_args("crash"))
            // A request killed after it recorded its gate finds it pending: exit 1, as
            // documented.
            .rerun_ok(|code| code == Some(0) || code == Some(1))
            .after_kill(no_false_alarm(false))
            .after_recovery(whole(move |root| {
                let s = state(root);
                let pending = s["approval"]["pendingGates"][0]["id"]
                    .as_str()
                    .unwrap_or_default();
                let text = log(root);
                let opened = text
                    .split("\n### ")
                    .filter(|e| e.contains(pending) && e.contains("* Resolved: pending"))
                    .count();
                (!pending.is_empty() && opened == 1 && entries(&text) == n_request + 1)
                    .then_some(())
                    .ok_or_else(|| {
                        format!(
                            "pending {pending:?}, opened {opened}, entries {}",
                            entries(&text)
                        )
                    })
            })),
        Scenario::new("approval wait (deciding)", pending, ".", &wait_args)
            .stdin("/approve\n")
            .after_kill(no_false_alarm(false))
            .after_recovery(whole(move |root| {
                let s = state(root);
                let decided = s["approval"]["recent"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .any(|g| g["id"] == gate.as_str() && g["state"] == "approved");
                let text = log(root);
                let resolutions = text
                    .split("\n### ")
                    .filter(|e| e.contains(gate.as_str()) && e.contains("* Resolved: approved"))
                    .count();
                (decided && s["approval"]["pendingGates"][0].is_null() && resolutions == 1)
                    .then_some(())
                    .ok_or_else(|| format!("decided {decided}, resolutions {resolutions}"))
            })),
        Scenario::new(
            "approval acknowledge-tamper",
            tampered,
            ".",
            &["approval", "acknowledge-tamper", "--by", "tester"],
        )
        .after_kill(no_false_alarm(true))
        .after_recovery(whole(|root| {
            let acks = log(root).matches("tamper-acknowledged\n").count();
            let s = state(root);
            (acks == 1 && s["approval"]["tamper"].is_null())
                .then_some(())
                .ok_or_else(|| {
                    format!(
                        "{acks} acknowledgements, tamper {}",
                        s["approval"]["tamper"]
                    )
                })
        })),
    ]
}
