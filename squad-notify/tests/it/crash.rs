//! Crash safety: a process killed while writing leaves state.json old or new, never torn.

use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::json;
use squad_notify::StateDir;

use crate::common::Paths;

const CHILD_ENV: &str = "SQUAD_NOTIFY_CRASH_DIR";

/// Generation `n` pads to a length derived from `n`, so a mix of two versions cannot verify.
fn doc_for(n: u64) -> serde_json::Value {
    let len = 50_000 + (n as usize % 7) * 10_000;
    json!({"gen": n, "len": len, "pad": "x".repeat(len)})
}

fn check(text: &str) -> u64 {
    let v: serde_json::Value =
        serde_json::from_str(text).unwrap_or_else(|e| panic!("torn state.json: {e}"));
    let n = v["gen"].as_u64().unwrap();
    assert_eq!(
        v["pad"].as_str().unwrap().len() as u64,
        v["len"].as_u64().unwrap()
    );
    assert_eq!(v, doc_for(n));
    n
}

fn write_generation(dir: &StateDir, n: u64) {
    let lock = squad_notify::store::lock(dir).unwrap();
    let mut doc = squad_notify::store::read(dir).unwrap();
    doc.other = doc_for(n).as_object().unwrap().clone();
    squad_notify::store::write(dir, &doc, &lock).unwrap();
}

fn read_state(dir: &StateDir) -> String {
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.state_path()).unwrap()).unwrap();
    let mut o = v.as_object().unwrap().clone();
    o.remove("approval");
    serde_json::Value::Object(o).to_string()
}

/// The writer. Run by `a_killed_writer_never_leaves_a_torn_file` as a child process (with
/// `SQUAD_NOTIFY_CRASH_DIR` set), it writes generations until killed. Run on its own, it writes a
/// few generations and checks each one reads back.
#[test]
fn crash_writer_child() {
    match std::env::var(CHILD_ENV) {
        Ok(dir) => {
            let dir = StateDir::new(dir);
            let start = check(&read_state(&dir)) + 1;
            for n in start.. {
                write_generation(&dir, n);
            }
        }
        Err(_) => {
            let tmp = tempfile::tempdir().unwrap();
            let dir = StateDir::new(tmp.path());
            for n in 1..=5 {
                write_generation(&dir, n);
                assert_eq!(check(&read_state(&dir)), n);
            }
        }
    }
}

#[test]
fn a_killed_writer_never_leaves_a_torn_file() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = StateDir::new(tmp.path());
    write_generation(&dir, 0);
    let exe = std::env::current_exe().unwrap();
    let mut last = 0;
    let mut advanced = 0;
    for round in 0..12u64 {
        let mut child = Command::new(&exe)
            .args(["crash::crash_writer_child", "--exact", "--test-threads=1"])
            .env(CHILD_ENV, tmp.path())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        // Kill at varied moments (a cheap deterministic spread of delays).
        std::thread::sleep(Duration::from_millis(20 + (round * 37) % 90));
        child.kill().unwrap();
        child.wait().unwrap();
        let n = check(&read_state(&dir));
        assert!(n >= last, "generations never go back");
        if n > last {
            advanced += 1;
        }
        last = n;
    }
    assert!(
        advanced > 0,
        "the child wrote at least once before being killed"
    );
    // Leftover temporary files of killed writers do not affect readers...
    assert_eq!(check(&read_state(&dir)), last);
    // ...and the next command sweeps them under the lock (one is planted, as a kill may not
    // have left any).
    std::fs::write(tmp.path().join(".state.json.tmp-1-0"), b"{\"torn\":").unwrap();
    let fixed = squad_notify::Approvals::new(dir.clone(), crate::common::clock())
        .fix()
        .unwrap();
    assert!(!fixed.removed.is_empty());
    assert!(fixed.health.temp_files.is_empty());
    assert_eq!(check(&read_state(&dir)), last);
    let left: Vec<String> = std::fs::read_dir(tmp.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains(".tmp-"))
        .collect();
    assert!(left.is_empty(), "temporary files left behind: {left:?}");
}
