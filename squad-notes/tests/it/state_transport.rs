//! The git-CLI transport and `setup` against a bare repository as the remote and real clones.

use std::path::{Path, PathBuf};

use squad_notes::ErrorKind;
use squad_notes::transport::{
    FetchRefspec, GitCliTransport, PushStatus, PushUpdate, TrackingRef, Transport,
};

use crate::state_git::{configure, git, git_output, repo_with_commit};

const NOTES_SPEC: &str = "+refs/notes/squad/*:refs/notes/remotes/origin/squad/*";

struct World {
    _dir: tempfile::TempDir,
    remote: PathBuf,
    clones: Vec<PathBuf>,
}

/// A bare remote with one commit on `main`, and `n` clones of it.
fn world(n: usize) -> World {
    let dir = tempfile::tempdir().unwrap();
    let remote = dir.path().join("remote.git");
    git(
        dir.path(),
        &[
            "init",
            "-q",
            "--bare",
            "-b",
            "main",
            remote.to_str().unwrap(),
        ],
    );
    let seed = repo_with_commit(&dir.path().join("seed"));
    git(&seed, &["push", "-q", remote.to_str().unwrap(), "main"]);
    let clones = (0..n)
        .map(|i| {
            let path = dir.path().join(format!("clone{i}"));
            git(
                dir.path(),
                &[
                    "clone",
                    "-q",
                    remote.to_str().unwrap(),
                    path.to_str().unwrap(),
                ],
            );
            configure(&path);
            path
        })
        .collect();
    World {
        _dir: dir,
        remote,
        clones,
    }
}

/// The transport under test, isolated from the machine's git configuration.
fn transport(repo: &Path) -> GitCliTransport {
    GitCliTransport::new(repo)
        .with_env("GIT_CONFIG_NOSYSTEM", "1")
        .with_env("GIT_CONFIG_GLOBAL", "/dev/null")
}

fn add_note(repo: &Path, agent: &str, text: &str) {
    git(
        repo,
        &[
            "notes",
            &format!("--ref=squad/{agent}"),
            "add",
            "-f",
            "-m",
            text,
            "HEAD",
        ],
    );
}

fn rev(repo: &Path, name: &str) -> String {
    git(repo, &["rev-parse", name]).trim().to_owned()
}

fn refs(repo: &Path, prefix: &str) -> String {
    git(
        repo,
        &["for-each-ref", "--format=%(objectname) %(refname)", prefix],
    )
}

fn fetch_specs(repo: &Path) -> Vec<String> {
    git(repo, &["config", "--get-all", "remote.origin.fetch"])
        .lines()
        .map(str::to_owned)
        .collect()
}

/// Setup adds its refspec once and keeps the user's own (issue 14: it used to delete
/// `refs/notes/*:refs/notes/*`, which also covered notes outside the squad's), reporting it.
#[test]
fn setup_is_idempotent_and_keeps_the_users_refspecs() {
    let w = world(1);
    let clone = &w.clones[0];
    git(
        clone,
        &[
            "config",
            "--add",
            "remote.origin.fetch",
            "refs/notes/*:refs/notes/*",
        ],
    );
    let transport = transport(clone);
    let report = transport.setup("origin").unwrap();
    assert_eq!(report.added, vec![NOTES_SPEC.to_owned()]);
    assert!(report.removed.is_empty());
    assert_eq!(report.kept, vec!["refs/notes/*:refs/notes/*".to_owned()]);
    assert_eq!(report.warnings.len(), 1);
    let again = transport.setup("origin").unwrap();
    assert!(again.is_unchanged(), "{again:?}");
    assert_eq!(
        fetch_specs(clone),
        [
            "+refs/heads/*:refs/remotes/origin/*",
            "refs/notes/*:refs/notes/*",
            NOTES_SPEC
        ],
        "the notes refspec is added once; the user's refspecs are kept"
    );
}

#[test]
fn three_clones_share_notes_and_plain_fetch_and_pull_keep_working() {
    let w = world(3);
    let (a, b, c) = (&w.clones[0], &w.clones[1], &w.clones[2]);

    // Clone a publishes its notes.
    add_note(a, "data", r#"{"from":"a"}"#);
    let ta = transport(a);
    ta.setup("origin").unwrap();
    let pushed = ta
        .push(
            "origin",
            &[PushUpdate::same_name("refs/notes/squad/data", None)],
        )
        .unwrap();
    assert_eq!(pushed[0].status, PushStatus::Created);
    let remote_a = rev(&w.remote, "refs/notes/squad/data");
    assert_eq!(remote_a, rev(a, "refs/notes/squad/data"));

    // Clone c still has the seed's refspec and diverging local notes: plain `git fetch` fails.
    // This is the failure setup exists to prevent.
    git(
        c,
        &[
            "config",
            "--add",
            "remote.origin.fetch",
            "refs/notes/*:refs/notes/*",
        ],
    );
    add_note(c, "data", r#"{"from":"c"}"#);
    let local_c = rev(c, "refs/notes/squad/data");
    let out = git_output(c, &["fetch", "origin"]);
    assert!(
        !out.status.success(),
        "the seed's refspec makes git fetch fail"
    );
    let report = transport(c).setup("origin").unwrap();
    // Setup keeps the user's refspec and says what it does; the user takes its advice.
    assert_eq!(report.kept, vec!["refs/notes/*:refs/notes/*".to_owned()]);
    git(
        c,
        &[
            "config",
            "--fixed-value",
            "--unset-all",
            "remote.origin.fetch",
            "refs/notes/*:refs/notes/*",
        ],
    );

    // Clone b has its own, different notes for the same namespace, and sets up.
    add_note(b, "data", r#"{"from":"b"}"#);
    add_note(b, "worf", r#"{"from":"b","only":"local"}"#);
    let local_b = rev(b, "refs/notes/squad/data");
    let local_b_worf = rev(b, "refs/notes/squad/worf");
    transport(b).setup("origin").unwrap();

    for clone in [b, c] {
        let fetch = git_output(clone, &["fetch"]);
        assert!(
            fetch.status.success(),
            "git fetch: {}",
            String::from_utf8_lossy(&fetch.stderr)
        );
        let pull = git_output(clone, &["pull", "--ff-only"]);
        assert!(
            pull.status.success(),
            "git pull: {}",
            String::from_utf8_lossy(&pull.stderr)
        );
        let pull = git_output(clone, &["pull"]);
        assert!(pull.status.success(), "plain git pull");
        assert_eq!(
            rev(clone, "refs/notes/remotes/origin/squad/data"),
            remote_a,
            "plain fetch brings the notes into the tracking ref"
        );
    }
    assert_eq!(
        rev(b, "refs/notes/squad/data"),
        local_b,
        "local notes untouched"
    );
    assert_eq!(rev(b, "refs/notes/squad/worf"), local_b_worf);
    assert_eq!(
        rev(c, "refs/notes/squad/data"),
        local_c,
        "local notes untouched"
    );

    // Clone b's push without a lease on the existing remote ref is refused, per ref.
    let tb = transport(b);
    let results = tb
        .push(
            "origin",
            &[PushUpdate::same_name("refs/notes/squad/data", None)],
        )
        .unwrap();
    assert_eq!(results[0].status, PushStatus::StaleLease);
    assert_eq!(
        rev(&w.remote, "refs/notes/squad/data"),
        remote_a,
        "remote unchanged"
    );

    // b fetches through the transport, merges (here with git), and pushes with the lease.
    let seen = tb
        .fetch("origin", &[FetchRefspec::notes("origin")])
        .unwrap();
    assert_eq!(
        seen,
        [TrackingRef {
            name: "refs/notes/remotes/origin/squad/data".into(),
            oid: remote_a.clone(),
        }]
    );
    git(
        b,
        &[
            "notes",
            "--ref=squad/data",
            "merge",
            "-q",
            "-s",
            "cat_sort_uniq",
            "refs/notes/remotes/origin/squad/data",
        ],
    );
    let results = tb
        .push(
            "origin",
            &[
                PushUpdate::same_name("refs/notes/squad/data", Some(remote_a.clone())),
                PushUpdate::same_name("refs/notes/squad/worf", None),
            ],
        )
        .unwrap();
    assert_eq!(results[0].status, PushStatus::FastForward);
    assert_eq!(results[1].status, PushStatus::Created);
    let merged = git(&w.remote, &["notes", "--ref=squad/data", "show", "main"]);
    assert_eq!(merged, "{\"from\":\"a\"}\n{\"from\":\"b\"}\n");

    // a fetches: its tracking refs follow the remote, its local ref stays where it was.
    let seen = ta
        .fetch("origin", &[FetchRefspec::notes("origin")])
        .unwrap();
    let names: Vec<&str> = seen.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "refs/notes/remotes/origin/squad/data",
            "refs/notes/remotes/origin/squad/worf"
        ]
    );
    assert_eq!(rev(a, "refs/notes/squad/data"), remote_a);
    assert!(
        refs(a, "refs/notes/squad/worf").is_empty(),
        "a fetch never creates local notes refs"
    );
    // And plain git keeps working in every clone.
    for clone in [a, b, c] {
        assert!(git_output(clone, &["fetch"]).status.success());
        assert!(git_output(clone, &["pull"]).status.success());
    }
}

#[test]
fn pushes_report_each_ref_and_leases_hold() {
    let w = world(1);
    let clone = &w.clones[0];
    let t = transport(clone);
    add_note(clone, "data", "one");
    add_note(clone, "q", "q-one");
    let first = rev(clone, "refs/notes/squad/data");
    let wrong = "1".repeat(40);
    let results = t
        .push(
            "origin",
            &[
                PushUpdate::same_name("refs/notes/squad/data", None),
                PushUpdate::same_name("refs/notes/squad/q", Some(wrong.clone())),
            ],
        )
        .unwrap();
    assert_eq!(results[0].status, PushStatus::Created);
    assert_eq!(
        results[1].status,
        PushStatus::StaleLease,
        "q does not exist remotely"
    );
    assert!(refs(&w.remote, "refs/notes/squad/q").is_empty());

    // Same value again: up to date.
    let again = t
        .push(
            "origin",
            &[PushUpdate::same_name(
                "refs/notes/squad/data",
                Some(first.clone()),
            )],
        )
        .unwrap();
    assert_eq!(again[0].status, PushStatus::UpToDate);
    assert!(again[0].status.is_accepted());

    // A rewrite (not a fast-forward) goes through only with the right lease.
    git(clone, &["update-ref", "-d", "refs/notes/squad/data"]);
    add_note(clone, "data", "rewritten");
    let stale = t
        .push(
            "origin",
            &[PushUpdate::same_name("refs/notes/squad/data", Some(wrong))],
        )
        .unwrap();
    assert_eq!(stale[0].status, PushStatus::StaleLease);
    assert!(!stale[0].status.is_accepted());
    assert_eq!(rev(&w.remote, "refs/notes/squad/data"), first);
    let forced = t
        .push(
            "origin",
            &[PushUpdate::same_name("refs/notes/squad/data", Some(first))],
        )
        .unwrap();
    assert_eq!(forced[0].status, PushStatus::Forced);
    assert_eq!(
        rev(&w.remote, "refs/notes/squad/data"),
        rev(clone, "refs/notes/squad/data")
    );

    // A hook refusal is reported per ref, with git's reason.
    let hook = w.remote.join("hooks/pre-receive");
    std::fs::write(&hook, "#!/bin/sh\necho nope >&2\nexit 1\n").unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    add_note(clone, "ralph", "r");
    let refused = t
        .push(
            "origin",
            &[PushUpdate::same_name("refs/notes/squad/ralph", None)],
        )
        .unwrap();
    assert_eq!(
        refused[0].status,
        PushStatus::Rejected {
            reason: "pre-receive hook declined".into()
        }
    );
}

#[test]
fn fetch_prunes_tracking_refs_and_only_writes_tracking_refs() {
    let w = world(2);
    let (a, b) = (&w.clones[0], &w.clones[1]);
    add_note(a, "data", "d");
    add_note(a, "seven", "s");
    let ta = transport(a);
    ta.push(
        "origin",
        &[
            PushUpdate::same_name("refs/notes/squad/data", None),
            PushUpdate::same_name("refs/notes/squad/seven", None),
        ],
    )
    .unwrap();
    let tb = transport(b);
    let before_local = refs(b, "refs/heads/");
    assert_eq!(
        tb.fetch("origin", &[FetchRefspec::notes("origin")])
            .unwrap()
            .len(),
        2
    );
    git(&w.remote, &["update-ref", "-d", "refs/notes/squad/seven"]);
    let seen = tb
        .fetch("origin", &[FetchRefspec::notes("origin")])
        .unwrap();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].name, "refs/notes/remotes/origin/squad/data");
    assert!(refs(b, "refs/notes/squad/").is_empty());
    assert_eq!(refs(b, "refs/heads/"), before_local);
    // A branch into its tracking ref works too (an exact refspec).
    let seen = tb
        .fetch(
            "origin",
            &[FetchRefspec::new(
                "refs/heads/main",
                "refs/remotes/origin/main",
            )],
        )
        .unwrap();
    assert_eq!(seen[0].oid, rev(&w.remote, "main"));
    // Nothing to fetch: nothing returned, not an error.
    let empty = world(1);
    let seen = transport(&empty.clones[0])
        .fetch("origin", &[FetchRefspec::notes("origin")])
        .unwrap();
    assert_eq!(seen, []);
}

#[test]
fn bad_input_is_refused_and_pushes_nothing() {
    let w = world(1);
    let clone = &w.clones[0];
    add_note(clone, "data", "d");
    let t = transport(clone);
    let kind =
        |r: squad_notes::Result<Vec<squad_notes::transport::PushResult>>| r.unwrap_err().kind();
    for remote in [
        "",
        "--upload-pack=touch x",
        "a b",
        "../x",
        "x..y",
        "/abs",
        "x.lock",
        "ori\ngin",
    ] {
        assert_eq!(
            t.setup(remote).unwrap_err().kind(),
            ErrorKind::InvalidInput,
            "setup {remote:?}"
        );
        assert_eq!(
            t.fetch(remote, &[FetchRefspec::notes(remote)])
                .unwrap_err()
                .kind(),
            ErrorKind::InvalidInput,
            "fetch {remote:?}"
        );
        assert_eq!(
            kind(t.push(
                remote,
                &[PushUpdate::same_name("refs/notes/squad/data", None)]
            )),
            ErrorKind::InvalidInput,
            "push {remote:?}"
        );
    }
    assert_eq!(t.setup("nosuch").unwrap_err().kind(), ErrorKind::NotFound);
    assert_eq!(
        t.fetch("nosuch", &[FetchRefspec::notes("nosuch")])
            .unwrap_err()
            .kind(),
        ErrorKind::NotFound
    );
    for spec in [
        FetchRefspec::new("refs/notes/squad/*", "refs/notes/squad/*"),
        FetchRefspec::new("refs/notes/*", "refs/notes/*"),
        FetchRefspec::new("refs/heads/main", "refs/heads/main"),
        FetchRefspec::notes("upstream"),
        FetchRefspec::new("refs/notes/squad/*", "refs/notes/remotes/origin/squad/x"),
        FetchRefspec::new("refs/notes/sq uad/*", "refs/notes/remotes/origin/squad/*"),
    ] {
        assert_eq!(
            t.fetch("origin", std::slice::from_ref(&spec))
                .unwrap_err()
                .kind(),
            ErrorKind::InvalidInput,
            "refspec {spec}"
        );
    }
    for (local, expected) in [
        ("refs/notes/squad/a b", None),
        ("HEAD", None),
        ("-f", None),
        ("refs/notes/squad/data:refs/heads/main", None),
        ("refs/notes/squad/data", Some("abc")),
        (
            "refs/notes/squad/data",
            Some("gggggggggggggggggggggggggggggggggggggggg"),
        ),
    ] {
        let update = PushUpdate::same_name(local, expected.map(str::to_owned));
        assert_eq!(
            kind(t.push("origin", &[update])),
            ErrorKind::InvalidInput,
            "push {local:?} expecting {expected:?}"
        );
    }
    assert_eq!(
        kind(t.push(
            "origin",
            &[
                PushUpdate::same_name("refs/notes/squad/data", None),
                PushUpdate::same_name("refs/notes/squad/missing", None)
            ]
        )),
        ErrorKind::NotFound
    );
    assert!(
        refs(&w.remote, "refs/notes/").is_empty(),
        "nothing was pushed"
    );
    // An unreachable remote is an error with git's message, not a panic or a hang.
    git(clone, &["remote", "add", "gone", "/nonexistent/remote.git"]);
    let err = t.fetch("gone", &[FetchRefspec::notes("gone")]).unwrap_err();
    assert!(
        matches!(err.kind(), ErrorKind::NotFound | ErrorKind::Backend),
        "{}",
        crate::common::with_sources(&err)
    );
    assert!(err.to_string().contains("git failed"), "{err}");
}

/// A lock file a killed git left behind (no process holds it) makes git itself fail at once
/// with "File exists"; the transport reports it as `Locked`, naming the file, so that the user
/// hears how to clear it (issue 14), and leaves the repository as it was. A lock a running git
/// holds for a moment is waited for, and the command runs again.
#[test]
fn a_left_over_git_lock_is_named_and_a_held_one_is_waited_for() {
    let w = world(1);
    let clone = &w.clones[0];
    let transport = transport(clone);
    let config = std::fs::read(clone.join(".git/config")).unwrap();

    // `git config` (setup): `could not lock config file .git/config: File exists`.
    let lock = clone.join(".git/config.lock");
    std::fs::write(&lock, "").unwrap();
    let err = transport.setup("origin").unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Locked, "{err:#}");
    assert!(!err.is_retryable() && !err.is_user_error());
    assert_eq!(
        err.path().map(|p| p.canonicalize().unwrap()),
        Some(lock.canonicalize().unwrap())
    );
    assert!(err.to_string().contains("config.lock"), "{err}");
    assert_eq!(std::fs::read(clone.join(".git/config")).unwrap(), config);
    std::fs::remove_file(&lock).unwrap();
    transport.setup("origin").unwrap();

    // `git fetch`: `cannot lock ref …: Unable to create '….lock': File exists`.
    let remote_main = rev(&w.remote, "main");
    git(
        &w.remote,
        &["update-ref", "refs/notes/squad/data", &remote_main],
    );
    let tracking = clone.join(".git/refs/notes/remotes/origin/squad");
    std::fs::create_dir_all(&tracking).unwrap();
    let lock = tracking.join("data.lock");
    std::fs::write(&lock, "").unwrap();
    let err = transport
        .fetch("origin", &[FetchRefspec::notes("origin")])
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Locked, "{err:#}");
    assert_eq!(
        err.path().map(|p| p.canonicalize().unwrap()),
        Some(lock.canonicalize().unwrap())
    );

    // Held by a running process that finishes in a moment: waited for, then fetched.
    // The holder says `ready` once it has the lock open, so the fetch never looks before it does
    // (on a loaded machine `spawn` returns long before `sh` runs).
    let mut holder = std::process::Command::new("sh")
        .arg("-c")
        .arg("exec 3<\"$0\"; echo ready; sleep 1; rm \"$0\"")
        .arg(&lock)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut ready = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(holder.stdout.take().unwrap()),
        &mut ready,
    )
    .unwrap();
    assert_eq!(ready.trim(), "ready");
    let fetched = transport.fetch("origin", &[FetchRefspec::notes("origin")]);
    holder.wait().unwrap();
    let fetched = fetched.unwrap();
    assert!(
        fetched
            .iter()
            .any(|r| r.name == "refs/notes/remotes/origin/squad/data"),
        "{fetched:?}"
    );
}
