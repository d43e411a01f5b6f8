//! Signed entries against the real `ssh-keygen -Y sign` / `-Y verify`, both ways: good, wrong
//! key, key of another principal, a tampered entry, no allowed-signers file; and
//! `promote --require-signed`.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::git_repo::{Repo, run_with_stdin};

fn keygen(dir: &Path, name: &str) -> PathBuf {
    let key = dir.join(name);
    let out = Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", "", "-C", name, "-f"])
        .arg(&key)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    key
}

fn public(key: &Path) -> String {
    std::fs::read_to_string(key.with_extension("pub"))
        .unwrap()
        .trim()
        .to_owned()
}

/// `ssh-keygen -Y sign -n squad-note` over `message`: the armored signature.
fn ssh_sign(key: &Path, message: &[u8]) -> String {
    let mut c = Command::new("ssh-keygen");
    c.args(["-Y", "sign", "-n", "squad-note", "-f"]).arg(key);
    let out = run_with_stdin(&mut c, Some(std::str::from_utf8(message).unwrap()));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// `ssh-keygen -Y verify` of `sig` over `message` for `principal`: did it accept?
fn ssh_verify(allowed: &Path, principal: &str, sig: &str, message: &[u8], dir: &Path) -> bool {
    let sig_file = dir.join("check.sig");
    std::fs::write(&sig_file, sig).unwrap();
    let mut c = Command::new("ssh-keygen");
    c.args(["-Y", "verify", "-n", "squad-note", "-f"])
        .arg(allowed)
        .args(["-I", principal, "-s"])
        .arg(&sig_file);
    run_with_stdin(&mut c, Some(std::str::from_utf8(message).unwrap()))
        .status
        .success()
}

fn statuses(repo: &Repo, rev: &str) -> (Option<i32>, Vec<(String, String)>) {
    let out = repo.squad(&["--json", "notes", "verify", "--agent", "data", rev]);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    let rows = v
        .as_array()
        .map(|a| {
            a.iter()
                .map(|r| {
                    (
                        r["id"].as_str().unwrap().to_owned(),
                        r["status"].as_str().unwrap().to_owned(),
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    (out.status.code(), rows)
}

#[test]
fn signatures_check_out_both_ways_with_ssh_keygen() {
    let repo = Repo::new();
    repo.git(&["commit", "-q", "--allow-empty", "-m", "noted"]);
    let keys = tempfile::tempdir().unwrap();
    let data_key = keygen(keys.path(), "data");
    let worf_key = keygen(keys.path(), "worf");
    let stranger = keygen(keys.path(), "stranger");
    let allowed = keys.path().join("allowed_signers");
    std::fs::write(
        &allowed,
        format!(
            "data namespaces=\"squad-note\" {}\n\"worf\" {}\n",
            public(&data_key),
            public(&worf_key)
        ),
    )
    .unwrap();
    repo.git(&["config", "gpg.format", "ssh"]);
    // The .pub path, as git allows: the private key beside it signs.
    repo.git(&[
        "config",
        "user.signingKey",
        data_key.with_extension("pub").to_str().unwrap(),
    ]);
    repo.git(&[
        "config",
        "gpg.ssh.allowedSignersFile",
        allowed.to_str().unwrap(),
    ]);

    // Ours, checked by ssh-keygen.
    let out = repo.squad(&[
        "--json",
        "notes",
        "write",
        "--agent",
        "data",
        "--type",
        "decision",
        "--fields",
        r#"{"decision":"Sign me","n":1.50,"u":"é"}"#,
        "--sign",
        "--promote",
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let written: Value = serde_json::from_slice(&out.stdout).unwrap();
    let good_id = written["id"].as_str().unwrap().to_owned();
    let line = repo.git(&["notes", "--ref=squad/data", "show", "HEAD"]);
    let stored: Value = serde_json::from_str(line.lines().next().unwrap()).unwrap();
    let sig = stored["sig"].as_str().unwrap().to_owned();
    assert!(sig.starts_with("-----BEGIN SSH SIGNATURE-----\n"), "{sig}");
    assert!(sig.ends_with("-----END SSH SIGNATURE-----\n"), "{sig}");
    let message = squad_notes::sign::canonical_bytes(&stored).unwrap();
    assert!(!message.ends_with(b"\n"));
    assert!(ssh_verify(&allowed, "data", &sig, &message, keys.path()));
    assert!(!ssh_verify(&allowed, "worf", &sig, &message, keys.path()));
    // ed25519 is deterministic: ssh-keygen's own signature of the same bytes is the same text.
    assert_eq!(ssh_sign(&data_key, &message), sig);

    // ssh-keygen's, checked by us: an entry written by hand (its own key order and escapes),
    // signed over the canonical bytes, appended with git.
    let by_hand = r#"{"type":"decision","timestamp":"2026-03-23T14:00:00.500+00:00","id":"01J6AAAAAAAAAAAAAAAAAAAAAA","agent":"data","decision":"caf\u00e9","promote_to_permanent":true}"#;
    let value: Value = serde_json::from_str(by_hand).unwrap();
    let canonical = squad_notes::sign::canonical_bytes(&value).unwrap();
    assert_eq!(
        String::from_utf8(canonical.clone()).unwrap(),
        r#"{"agent":"data","decision":"café","id":"01J6AAAAAAAAAAAAAAAAAAAAAA","promote_to_permanent":true,"timestamp":"2026-03-23T14:00:00.500+00:00","type":"decision"}"#
    );
    let with_sig = |text: &str, sig: &str| {
        format!(
            "{},\"sig\":{}}}",
            text.strip_suffix('}').unwrap(),
            serde_json::to_string(sig).unwrap()
        )
    };
    let append = |line: &str| {
        repo.git(&[
            "notes",
            "--ref=squad/data",
            "append",
            "--no-separator",
            "-m",
            line,
            "HEAD",
        ])
    };
    append(&with_sig(by_hand, &ssh_sign(&data_key, &canonical)));
    // Signed by worf (another principal), by a stranger (not listed), and a tampered entry.
    let other = |n: char, text: &str| {
        by_hand
            .replace("AAAAAAAAAAAAAAAAAAAAAA", &n.to_string().repeat(22))
            .replace("caf\\u00e9", text)
    };
    let worf = other('B', "worf signed");
    let worf_value: Value = serde_json::from_str(&worf).unwrap();
    let worf_msg = squad_notes::sign::canonical_bytes(&worf_value).unwrap();
    let worf_sig = ssh_sign(&worf_key, &worf_msg);
    append(&with_sig(&worf, &worf_sig));
    let strange = other('C', "stranger signed");
    let strange_msg =
        squad_notes::sign::canonical_bytes(&serde_json::from_str(&strange).unwrap()).unwrap();
    let strange_sig = ssh_sign(&stranger, &strange_msg);
    append(&with_sig(&strange, &strange_sig));
    let honest = other('D', "honest");
    let honest_msg =
        squad_notes::sign::canonical_bytes(&serde_json::from_str(&honest).unwrap()).unwrap();
    let honest_sig = ssh_sign(&data_key, &honest_msg);
    let tampered = honest.replace("honest", "hOnest");
    append(&with_sig(&tampered, &honest_sig));
    append(&other('E', "unsigned"));

    let want = |s: &[(&str, &str)]| {
        s.iter()
            .map(|(a, b)| ((*a).to_owned(), (*b).to_owned()))
            .collect::<Vec<_>>()
    };
    let (code, rows) = statuses(&repo, "HEAD");
    assert_eq!(code, Some(1), "a signed-bad entry is exit 1");
    let mut rows = rows;
    rows.sort();
    let mut expect = want(&[
        (&good_id, "signed-verified"),
        ("01J6AAAAAAAAAAAAAAAAAAAAAA", "signed-verified"),
        ("01J6BBBBBBBBBBBBBBBBBBBBBB", "signed-unknown-key"),
        ("01J6CCCCCCCCCCCCCCCCCCCCCC", "signed-unknown-key"),
        ("01J6DDDDDDDDDDDDDDDDDDDDDD", "signed-bad"),
        ("01J6EEEEEEEEEEEEEEEEEEEEEE", "unsigned"),
    ]);
    expect.sort();
    assert_eq!(rows, expect);
    // ssh-keygen agrees on each.
    let tampered_msg =
        squad_notes::sign::canonical_bytes(&serde_json::from_str(&tampered).unwrap()).unwrap();
    assert!(!ssh_verify(
        &allowed,
        "data",
        &worf_sig,
        &worf_msg,
        keys.path()
    ));
    assert!(ssh_verify(
        &allowed,
        "worf",
        &worf_sig,
        &worf_msg,
        keys.path()
    ));
    assert!(!ssh_verify(
        &allowed,
        "data",
        &strange_sig,
        &strange_msg,
        keys.path()
    ));
    assert!(!ssh_verify(
        &allowed,
        "data",
        &honest_sig,
        &tampered_msg,
        keys.path()
    ));

    // promote --require-signed promotes the verified flagged entries and lists the others.
    repo.git(&["config", "squad.defaultBranch", "main"]);
    let out = repo.squad(&[
        "--json",
        "notes",
        "promote",
        "--require-signed",
        "--offline",
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let mut promoted: Vec<&str> = report["promoted"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    promoted.sort();
    let mut good = vec![good_id.as_str(), "01J6AAAAAAAAAAAAAAAAAAAAAA"];
    good.sort();
    assert_eq!(promoted, good);
    let refused: Vec<(String, String)> = report["refused"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["id"].as_str().unwrap().to_owned(),
                r["status"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(refused.len(), 4, "{refused:?}");
    assert!(refused.contains(&("01J6EEEEEEEEEEEEEEEEEEEEEE".into(), "unsigned".into())));
    assert!(refused.contains(&("01J6DDDDDDDDDDDDDDDDDDDDDD".into(), "signed-bad".into())));

    // Without an allowed-signers file nothing is signed-verified.
    std::fs::remove_file(&allowed).unwrap();
    let (_, rows) = statuses(&repo, "HEAD");
    assert!(rows.iter().all(|(_, s)| s != "signed-verified"), "{rows:?}");
    assert!(rows.contains(&(good_id.clone(), "signed-unknown-key".into())));

    // A carried copy keeps a valid signature (carried_from is not signed).
    std::fs::write(&allowed, format!("data {}\n", public(&data_key))).unwrap();
    repo.git(&["commit", "-q", "--allow-empty", "-m", "landed"]);
    let out = repo.squad(&["--json", "notes", "carry", "HEAD~2..HEAD~1", "--to", "HEAD"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (_, rows) = statuses(&repo, "HEAD");
    assert!(
        rows.contains(&(good_id, "signed-verified".into())),
        "{rows:?}"
    );

    // Signing without a usable key: exit 2, nothing written.
    repo.git(&["config", "gpg.format", "openpgp"]);
    let tip = repo.tip("data");
    let out = repo.squad(&[
        "notes",
        "write",
        "--agent",
        "data",
        "--type",
        "progress",
        "--content",
        "x",
        "--sign",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("gpg.format"));
    assert_eq!(repo.tip("data"), tip);
}
