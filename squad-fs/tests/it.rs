//! `StateDir` on a real file system: symlinks below the root are never followed, paths never
//! leave the root, writes are atomic and concurrent appends lose nothing.
#![expect(
    clippy::unwrap_used,
    reason = "a test panics on failure; that is the point"
)]

use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};

use proptest::prelude::*;
use squad_fs::{EntryKind, ErrorKind, RelPath, StateDir};

struct World {
    _tmp: tempfile::TempDir,
    state: StateDir,
    outside: std::path::PathBuf,
}

/// A state directory and, beside it, an "outside" directory holding a secret file.
fn world() -> World {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join(".squad");
    std::fs::create_dir_all(root.join("memory/hot")).unwrap();
    let outside = tmp.path().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("secret.md"), "SECRET\n").unwrap();
    World {
        state: StateDir::new(root),
        outside,
        _tmp: tmp,
    }
}

fn outside_untouched(w: &World) {
    let names: Vec<_> = std::fs::read_dir(&w.outside)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(names, ["secret.md"]);
    assert_eq!(
        std::fs::read_to_string(w.outside.join("secret.md")).unwrap(),
        "SECRET\n"
    );
}

#[test]
fn a_symlinked_file_is_neither_read_nor_written_through() {
    let w = world();
    let link = w.state.root().join("memory/hot/data.md");
    symlink(w.outside.join("secret.md"), &link).unwrap();

    let e = w.state.read("memory/hot/data.md").unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Symlink, "{e}");
    assert!(e.to_string().contains("memory/hot/data.md"), "{e}");
    assert!(e.to_string().contains("secret.md"), "{e}");
    assert_eq!(
        w.state
            .write_atomic("memory/hot/data.md", b"x")
            .unwrap_err()
            .kind(),
        ErrorKind::Symlink
    );
    assert_eq!(
        w.state
            .append("memory/hot/data.md", b"x")
            .unwrap_err()
            .kind(),
        ErrorKind::Symlink
    );
    assert_eq!(
        w.state.lock("memory/hot/data.md").unwrap_err().kind(),
        ErrorKind::Symlink
    );
    outside_untouched(&w);
    // The link itself is still there, untouched, and can be removed as a link.
    assert!(std::fs::symlink_metadata(&link).unwrap().is_symlink());
    assert!(w.state.remove("memory/hot/data.md").unwrap());
    outside_untouched(&w);
}

#[test]
fn a_symlinked_directory_on_the_way_is_refused() {
    let w = world();
    symlink(&w.outside, w.state.root().join("memory/cold")).unwrap();
    for e in [
        w.state.read("memory/cold/secret.md").unwrap_err(),
        w.state
            .write_atomic("memory/cold/data.md", b"x")
            .unwrap_err(),
        w.state.append("memory/cold/data.md", b"x").unwrap_err(),
        w.state.list("memory/cold").unwrap_err(),
        w.state.kind("memory/cold/secret.md").unwrap_err(),
    ] {
        assert_eq!(e.kind(), ErrorKind::Symlink, "{e}");
    }
    outside_untouched(&w);
}

#[test]
fn even_a_symlink_that_stays_inside_the_root_is_not_followed() {
    let w = world();
    w.state
        .write_atomic("memory/hot/real.md", b"real\n")
        .unwrap();
    symlink("real.md", w.state.root().join("memory/hot/alias.md")).unwrap();
    assert_eq!(
        w.state.read("memory/hot/alias.md").unwrap_err().kind(),
        ErrorKind::Symlink
    );
}

#[test]
fn the_root_itself_may_be_a_symlink_the_user_chose() {
    let w = world();
    let alias = w.state.root().with_file_name("alias");
    symlink(w.state.root(), &alias).unwrap();
    let via = StateDir::new(&alias);
    via.write_atomic("state.json", b"{}").unwrap();
    assert_eq!(w.state.read("state.json").unwrap().unwrap(), b"{}");
}

#[test]
fn paths_that_leave_the_root_are_refused_before_any_io() {
    let w = world();
    for bad in [
        "",
        "../outside/secret.md",
        "memory/../../outside/secret.md",
        "/etc/passwd",
        "./state.json",
        "memory/./hot/x.md",
        "a\0b",
    ] {
        let e = w.state.read(bad).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidPath, "{bad:?}: {e}");
        let e = w.state.write_atomic(bad, b"x").unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidPath, "{bad:?}: {e}");
    }
    outside_untouched(&w);
}

#[test]
fn audit_lists_every_symlink_with_its_target() {
    let w = world();
    symlink(
        w.outside.join("secret.md"),
        w.state.root().join("memory/hot/a.md"),
    )
    .unwrap();
    std::fs::create_dir_all(w.state.root().join("memory/wiki")).unwrap();
    symlink("../../..", w.state.root().join("memory/wiki/up")).unwrap();
    w.state.write_atomic("notifications.md", b"log\n").unwrap();
    let found = w.state.audit().unwrap();
    let paths: Vec<_> = found.iter().map(|f| f.path.display().to_string()).collect();
    assert_eq!(paths, ["memory/hot/a.md", "memory/wiki/up"]);
    assert!(found.iter().all(|f| f.kind == EntryKind::Symlink));
    assert_eq!(found[1].target.as_deref(), Some(Path::new("../../..")));
    let listing = w.state.list("memory/hot").unwrap();
    assert_eq!(listing[0].name, "a.md");
    assert_eq!(listing[0].kind, EntryKind::Symlink);
}

#[test]
fn a_fifo_is_refused_without_blocking() {
    let w = world();
    let fifo = w.state.root().join("memory/hot/pipe.md");
    let status = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(status.success());
    assert_eq!(
        w.state.read("memory/hot/pipe.md").unwrap_err().kind(),
        ErrorKind::NotAFile
    );
}

#[test]
fn reads_report_absence_size_and_encoding() {
    let w = world();
    assert!(w.state.read("nothing.md").unwrap().is_none());
    assert!(w.state.read("no/such/dir/x.md").unwrap().is_none());
    assert!(
        StateDir::new(w.state.root().join("nope"))
            .read("x")
            .unwrap()
            .is_none()
    );
    w.state.write_atomic("big.md", &[b'a'; 100]).unwrap();
    let e = w.state.read_capped("big.md", 99).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::TooLarge);
    assert!(e.to_string().contains("100 bytes, the limit is 99"), "{e}");
    w.state
        .write_atomic("bad.md", b"ok\nok\ncaf\xe9\n")
        .unwrap();
    let e = w.state.read_to_string("bad.md").unwrap_err();
    assert_eq!((e.kind(), e.line()), (ErrorKind::NotUtf8, Some(3)));
    assert!(
        e.to_string().ends_with("bad.md:3: is not valid UTF-8"),
        "{e}"
    );
}

#[test]
fn concurrent_writers_and_appenders_lose_nothing() {
    let w = world();
    std::thread::scope(|s| {
        for t in 0..8 {
            let state = w.state.clone();
            s.spawn(move || {
                for i in 0..50 {
                    state
                        .append("notifications.md", format!("t{t} line {i}\n").as_bytes())
                        .unwrap();
                    let body = format!("writer {t} round {i}\n").repeat(200);
                    state.write_atomic("state.json", body.as_bytes()).unwrap();
                }
            });
        }
    });
    let log = w.state.read_to_string("notifications.md").unwrap().unwrap();
    assert_eq!(log.lines().count(), 400);
    for t in 0..8 {
        for i in 0..50 {
            assert!(log.contains(&format!("t{t} line {i}\n")));
        }
    }
    // The last write is whole: one writer's text, 200 times.
    let state = w.state.read_to_string("state.json").unwrap().unwrap();
    let first = state.lines().next().unwrap().to_owned();
    assert!(state.lines().all(|l| l == first));
    assert_eq!(state.lines().count(), 200);
    assert!(w.state.leftover_temp_files().unwrap().is_empty());
}

#[test]
fn a_lock_is_exclusive_and_released_on_drop() {
    let w = world();
    let held = w.state.try_lock(".lock").unwrap().unwrap();
    assert_eq!(held.path(), Path::new(".lock"));
    assert!(w.state.try_lock(".lock").unwrap().is_none());
    drop(held);
    assert!(w.state.try_lock(".lock").unwrap().is_some());
}

#[test]
fn leftover_temp_files_name_their_writer() {
    let w = world();
    // A writer that no longer runs (pid far above any real one), and one that runs (us).
    w.state
        .write_atomic("memory/hot/.data.md.tmp-999999999-0", b"half")
        .unwrap();
    let mine = format!(".state.json.tmp-{}-7", std::process::id());
    w.state.write_atomic(&mine, b"half").unwrap();
    let found = w.state.leftover_temp_files().unwrap();
    assert_eq!(found.len(), 2, "{found:?}");
    let dead = found.iter().find(|t| t.pid == 999_999_999).unwrap();
    assert!(!dead.writer_alive);
    assert_eq!(dead.path, Path::new("memory/hot/.data.md.tmp-999999999-0"));
    assert!(
        found
            .iter()
            .any(|t| t.pid == std::process::id() && t.writer_alive)
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Whatever the text, an accepted path is made of plain names only, and a read of it never
    /// panics and never leaves the root.
    #[test]
    fn accepted_paths_stay_inside(parts in proptest::collection::vec("[a-z./\\\\\0]{0,6}", 1..5)) {
        let text = parts.join("/");
        if let Ok(rel) = RelPath::new(&text) {
            let p = rel.as_path();
            prop_assert!(p.is_relative());
            prop_assert!(p.components().all(|c| matches!(c, std::path::Component::Normal(_))));
            prop_assert!(!text.split('/').any(|s| s == ".." || s == "."));
        }
        let w = world();
        let _ = w.state.read(&text);
        let _ = w.state.write_atomic(&text, b"x");
        outside_untouched(&w);
    }
}

#[test]
fn dead_writers_temp_files_are_removed_below_a_directory_only() {
    let w = world();
    w.state
        .write_atomic("memory/hot/.data.md.tmp-999999999-0", b"half")
        .unwrap();
    w.state
        .write_atomic(".state.json.tmp-999999999-1", b"half")
        .unwrap();
    // A running writer's (ours) stays.
    let mine = format!("memory/cold/.data.md.tmp-{}-7", std::process::id());
    w.state.write_atomic(&mine, b"half").unwrap();
    let removed = w.state.remove_dead_temp_files("memory").unwrap();
    assert_eq!(removed, [Path::new("memory/hot/.data.md.tmp-999999999-0")]);
    let left: Vec<PathBuf> = w
        .state
        .leftover_temp_files()
        .unwrap()
        .into_iter()
        .map(|t| t.path)
        .collect();
    assert_eq!(left.len(), 2, "{left:?}");
    assert!(left.contains(&PathBuf::from(&mine)));
    assert!(matches!(
        w.state.remove_dead_temp_files("../x"),
        Err(e) if e.kind() == ErrorKind::InvalidPath
    ));
    assert_eq!(w.state.remove_dead_temp_files("").unwrap().len(), 1);
}

#[test]
fn dead_writers_temp_files_are_looked_for_only_through_real_directories() {
    let w = world();
    // A dead writer's temporary file outside the root, reachable through a link below it.
    std::fs::write(w.outside.join(".secret.md.tmp-999999999-0"), "half").unwrap();
    symlink(&w.outside, w.state.root().join("linked")).unwrap();
    std::fs::write(w.state.root().join("file.md"), "x").unwrap();
    let fifo = w.state.root().join("pipe");
    let status = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(status.success());
    for rel_dir in [
        "nothing",
        "no/such/dir",
        "linked",
        "linked/x",
        "file.md",
        "file.md/x",
        "pipe",
        "pipe/x",
    ] {
        assert!(
            w.state.remove_dead_temp_files(rel_dir).unwrap().is_empty(),
            "{rel_dir}"
        );
    }
    assert!(w.state.remove_dead_temp_files("").unwrap().is_empty());
    outside_untouched_but_the_temp_file(&w);
    // Deep below the root, and nothing beside the directory asked for.
    w.state
        .write_atomic("memory/hot/a/b/.x.md.tmp-999999999-0", b"half")
        .unwrap();
    w.state
        .write_atomic("memory/cold/.y.md.tmp-999999999-0", b"half")
        .unwrap();
    assert_eq!(
        w.state.remove_dead_temp_files("memory/hot/a").unwrap(),
        [Path::new("memory/hot/a/b/.x.md.tmp-999999999-0")]
    );
    assert_eq!(w.state.leftover_temp_files().unwrap().len(), 1);
}

fn outside_untouched_but_the_temp_file(w: &World) {
    let mut names: Vec<_> = std::fs::read_dir(&w.outside)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    assert_eq!(names, [".secret.md.tmp-999999999-0", "secret.md"]);
}

#[test]
fn unsynced_append_and_remove_do_what_the_synced_ones_do_and_refuse_the_same_paths() {
    let dir = tempfile::tempdir().unwrap();
    let state = StateDir::new(dir.path());
    state.append_unsynced("q/ticket", b"one\n").unwrap();
    state.append_unsynced("q/ticket", b"two\n").unwrap();
    assert_eq!(
        std::fs::read_to_string(dir.path().join("q/ticket")).unwrap(),
        "one\ntwo\n"
    );
    assert!(state.remove_unsynced("q/ticket").unwrap());
    assert!(!state.remove_unsynced("q/ticket").unwrap(), "already gone");
    assert!(!dir.path().join("q/ticket").exists());
    for bad in ["../escape", "/abs", "q/../../x", ""] {
        assert!(state.append_unsynced(bad, b"x").is_err(), "{bad:?}");
        assert!(state.remove_unsynced(bad).is_err(), "{bad:?}");
    }
    #[cfg(unix)]
    {
        std::os::unix::fs::symlink(dir.path().join("q"), dir.path().join("link")).unwrap();
        assert!(state.append_unsynced("link/ticket", b"x").is_err());
        assert!(
            !dir.path().join("q/ticket").exists(),
            "nothing written through the link"
        );
    }
}
