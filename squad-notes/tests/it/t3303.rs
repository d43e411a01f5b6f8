//! The states of git's own test t3303 (notes organized in subtrees), rebuilt with the real git
//! CLI: 100 commits whose notes sit at every fanout, and at two fanouts at once (the same note
//! twice, or two different notes). On each state, a write through `GixNotes` and the same
//! write through `git notes` give the same tree, id for id: the duplicates folded where git
//! folds them, the fanout git chooses. Every state reads as git shows it, and `git fsck
//! --strict` is clean after every write.

use squad_notes::{NoteEdit, NotesBackend, NotesRef, Oid};

use crate::common::Repo;

const COMMITS: usize = 100;
const REF: &str = "refs/notes/commits";

/// The path of a note for `sha` with directories of the given widths (t3303's sed patterns:
/// `[2]` is `s|^..|&/|`, `[4]` is `s|^....|&/|`, `[]` no fanout).
fn path(sha: &str, widths: &[usize]) -> String {
    let mut out = String::new();
    let mut at = 0;
    for w in widths {
        out.push_str(&sha[at..at + w]);
        out.push('/');
        at += w;
    }
    out.push_str(&sha[at..]);
    out
}

/// t3303's setup: 100 commits on `main` by `git fast-import`, and an empty notes commit.
fn setup() -> (Repo, Vec<String>) {
    let repo = Repo::new();
    let mut stream = String::new();
    for nr in 1..=COMMITS {
        let t = 1_112_912_053 + 60 * nr;
        stream.push_str(&format!(
            "commit refs/heads/main\ncommitter C O Mitter <committer@example.com> {t} -0700\n\
             data <<COMMIT\ncommit #{nr}\nCOMMIT\n\nM 644 inline file\ndata <<EOF\n\
             file in commit #{nr}\nEOF\n\n"
        ));
    }
    stream.push_str(&format!(
        "commit {REF}\ncommitter C O Mitter <committer@example.com> 1112919000 -0700\n\
         data <<COMMIT\nno notes\nCOMMIT\n\ndeleteall\n\n"
    ));
    repo.git_stdin(&["fast-import", "--quiet"], stream.as_bytes());
    // Newest first, as `git rev-list` gives them: commit #100 first.
    let revs = repo
        .git_ok(&["rev-list", "refs/heads/main"])
        .lines()
        .map(str::to_owned)
        .collect();
    (repo, revs)
}

/// One notes commit replacing the whole tree: for each commit (newest first, numbered down
/// from 100), `(path, text)` entries in the order `entries` gives them.
fn notes_commit(
    repo: &Repo,
    revs: &[String],
    entries: impl Fn(&str, usize) -> Vec<(String, String)>,
) {
    let mut stream = format!(
        "commit {REF}\ncommitter C O Mitter <committer@example.com> 1112920000 -0700\n\
         data <<COMMIT\nnotes\nCOMMIT\n\nfrom {REF}^0\ndeleteall\n"
    );
    for (i, sha) in revs.iter().enumerate() {
        for (p, text) in entries(sha, COMMITS - i) {
            stream.push_str(&format!("M 100644 inline {p}\ndata <<EOF\n{text}\nEOF\n\n"));
        }
    }
    repo.git_stdin(&["fast-import", "--quiet"], stream.as_bytes());
}

fn tree_of(repo: &Repo, rev: &str) -> String {
    repo.git_ok(&["rev-parse", &format!("{rev}^{{tree}}")])
        .trim()
        .to_owned()
}

/// How many annotated objects have more than one entry in the notes tree at `rev`.
fn duplicated(repo: &Repo, rev: &str) -> usize {
    let listing = repo.git_ok(&["ls-tree", "-r", "--name-only", rev]);
    let mut ids: Vec<String> = listing.lines().map(|p| p.replace('/', "")).collect();
    ids.sort();
    let all = ids.len();
    ids.dedup();
    all - ids.len()
}

/// On the state at the tip of the notes ref: every note reads as git shows it; then each
/// write (overwrite an annotated commit, add a note to an object without one, remove a note)
/// gives, through `GixNotes`, the very tree git's own write gives.
fn check_state(repo: &Repo, revs: &[String], name: &str) {
    let backend = repo.backend();
    let nr = NotesRef::new(REF).unwrap();
    let tip = backend.tip(&nr).unwrap().unwrap();
    let shown = repo.git_ok(&["log", "--notes=commits", "--format=%H%x00%N%x01", "main"]);
    let mut read = 0;
    for record in shown.split('\u{1}').map(|r| r.trim_start_matches('\n')) {
        let Some((sha, note)) = record.split_once('\0') else {
            continue;
        };
        let ours = backend.read(&tip, &sha.parse().unwrap()).unwrap();
        assert_eq!(
            String::from_utf8(ours.unwrap_or_default()).unwrap(),
            note,
            "{name}: the note of {sha}"
        );
        read += 1;
    }
    assert_eq!(read, COMMITS, "{name}");
    let all = backend.read_all(&tip).unwrap();
    crate::bulk_read::check_stream(&backend, &tip, &all, name);

    let root_tree = tree_of(repo, "main");
    let cases: [(&str, Vec<&str>, NoteEdit); 3] = [
        (
            "overwrite",
            vec!["add", "-f", "-m", "a new note", revs[5].as_str()],
            NoteEdit::set(revs[5].parse().unwrap(), b"a new note\n".to_vec()),
        ),
        (
            "add to an unannotated object",
            vec!["add", "-m", "a tree note", root_tree.as_str()],
            NoteEdit::set(root_tree.parse().unwrap(), b"a tree note\n".to_vec()),
        ),
        (
            "remove",
            vec!["remove", "--ignore-missing", revs[42].as_str()],
            NoteEdit {
                object: revs[42].parse().unwrap(),
                blob: None,
            },
        ),
    ];
    for (what, git_args, edit) in cases {
        let mut args = vec!["notes", "--ref=commits"];
        args.extend(git_args);
        repo.git_ok(&args);
        let git_tree = tree_of(repo, REF);
        let git_dups = duplicated(repo, REF);
        repo.git_ok(&["update-ref", REF, tip.as_str()]);

        let ours = backend
            .update(&nr, Some(&tip), &[edit], "Notes added by 'git notes add'")
            .unwrap();
        let our_tree = tree_of(repo, ours.as_str());
        assert_eq!(
            our_tree,
            git_tree,
            "{name}, {what}: our tree\n{}\ngit's tree\n{}",
            repo.git_ok(&["ls-tree", "-r", &our_tree]),
            repo.git_ok(&["ls-tree", "-r", &git_tree]),
        );
        assert_eq!(duplicated(repo, ours.as_str()), git_dups, "{name}, {what}");
        repo.fsck();
        repo.git_ok(&["update-ref", REF, tip.as_str()]);
    }
}

/// `test_sha1_based`: every note at one layout (4/36 is a layout git reads as non-notes).
#[test]
fn one_layout_states_write_the_tree_git_writes() {
    let (repo, revs) = setup();
    for (name, widths) in [
        ("no fanout", &[][..]),
        ("2/38", &[2][..]),
        ("4/36", &[4][..]),
        ("2/2/36", &[2, 2][..]),
        ("2/2/2/34", &[2, 2, 2][..]),
    ] {
        notes_commit(&repo, &revs, |sha, nr| {
            vec![(path(sha, widths), format!("note for commit #{nr}"))]
        });
        check_state(&repo, &revs, name);
    }
}

/// `test_same_notes`: one note stored twice, at two fanouts; git counts it once.
#[test]
fn same_note_at_two_fanouts_is_folded_as_git_folds_it() {
    let (repo, revs) = setup();
    for (name, first, second) in [
        ("no fanout and 2/38", &[2][..], &[][..]),
        ("no fanout and 2/2/36", &[2, 2][..], &[][..]),
        ("2/38 and 2/2/36", &[2, 2][..], &[2][..]),
        ("2/2/2/34 and 2/2/36", &[2, 2][..], &[2, 2, 2][..]),
    ] {
        notes_commit(&repo, &revs, |sha, nr| {
            let text = format!("note for commit #{nr}");
            vec![(path(sha, second), text.clone()), (path(sha, first), text)]
        });
        assert_eq!(duplicated(&repo, REF), COMMITS, "{name}: the fixture");
        check_state(&repo, &revs, name);
    }
}

/// `test_concatenated_notes`: two different notes for one object at two fanouts; git joins
/// them with a blank line.
#[test]
fn different_notes_at_two_fanouts_are_joined_as_git_joins_them() {
    let (repo, revs) = setup();
    for (name, first, second) in [
        ("no fanout concatenated with 2/38", &[2][..], &[][..]),
        ("no fanout concatenated with 2/2/36", &[2, 2][..], &[][..]),
        ("2/38 concatenated with 2/2/36", &[2, 2][..], &[2][..]),
        (
            "2/2/36 concatenated with 2/2/2/34",
            &[2, 2, 2][..],
            &[2, 2][..],
        ),
    ] {
        notes_commit(&repo, &revs, |sha, nr| {
            vec![
                (path(sha, second), format!("second note for commit #{nr}")),
                (path(sha, first), format!("first note for commit #{nr}")),
            ]
        });
        check_state(&repo, &revs, name);
    }
}

/// The shape of the issue: after one write on a "no fanout and 2/38" tree, no object is
/// stored twice, and every note still reads as before (the written one aside).
#[test]
fn one_write_folds_every_duplicate_of_a_flat_and_fanned_out_tree() {
    let (repo, revs) = setup();
    notes_commit(&repo, &revs, |sha, nr| {
        let text = format!("note for commit #{nr}");
        vec![(path(sha, &[]), text.clone()), (path(sha, &[2]), text)]
    });
    let backend = repo.backend();
    let nr = NotesRef::new(REF).unwrap();
    let tip = backend.tip(&nr).unwrap().unwrap();
    let target: Oid = revs[0].parse().unwrap();
    let new = backend
        .update(
            &nr,
            Some(&tip),
            &[NoteEdit::set(target.clone(), b"changed\n".to_vec())],
            "Notes added by 'git notes add'",
        )
        .unwrap();
    assert_eq!(duplicated(&repo, new.as_str()), 0);
    for (i, sha) in revs.iter().enumerate().skip(1) {
        let oid: Oid = sha.parse().unwrap();
        assert_eq!(
            backend.read(&new, &oid).unwrap().unwrap(),
            format!("note for commit #{}\n", COMMITS - i).into_bytes()
        );
    }
    assert_eq!(backend.read(&new, &target).unwrap().unwrap(), b"changed\n");
    repo.fsck();
}

mod random_layouts {
    use proptest::prelude::*;

    use super::*;

    /// A note of one object: its layout (directory widths) and text, and maybe a second entry
    /// at another layout (`Some(true)`: the same text, `Some(false)`: another text).
    #[derive(Debug, Clone)]
    struct Placed {
        object: [u8; 20],
        layout: usize,
        twin: Option<(usize, bool)>,
    }

    const LAYOUTS: [&[usize]; 4] = [&[], &[2], &[2, 2], &[2, 2, 2]];

    fn placed() -> impl Strategy<Value = Placed> {
        (
            any::<[u8; 20]>(),
            0..LAYOUTS.len(),
            proptest::option::of((0..LAYOUTS.len(), any::<bool>())),
        )
            .prop_map(|(object, layout, twin)| Placed {
                object,
                layout,
                twin,
            })
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

        /// Any mix of flat and fanned-out entries, some objects twice (same or different text,
        /// at two layouts): one write through `GixNotes` gives the tree `git notes add` gives.
        #[test]
        fn any_mixed_tree_writes_as_git_writes(
            notes in proptest::collection::vec(placed(), 1..48),
            pick in any::<proptest::sample::Index>(),
            fresh in any::<[u8; 20]>(),
            to_fresh in any::<bool>(),
        ) {
            let repo = Repo::new();
            repo.commit("base");
            let mut stream = format!(
                "commit {REF}\ncommitter C O Mitter <committer@example.com> 1112920000 -0700\n\
                 data 6\nnotes\n"
            );
            for (i, p) in notes.iter().enumerate() {
                let hex = hex::encode(p.object);
                if let Some((layout, same)) = p.twin
                    && layout != p.layout
                {
                    let text = if same { format!("note {i}") } else { format!("twin {i}") };
                    stream.push_str(&format!(
                        "M 100644 inline {}\ndata <<EOF\n{text}\nEOF\n\n",
                        path(&hex, LAYOUTS[layout])
                    ));
                }
                stream.push_str(&format!(
                    "M 100644 inline {}\ndata <<EOF\nnote {i}\nEOF\n\n",
                    path(&hex, LAYOUTS[p.layout])
                ));
            }
            repo.git_stdin(&["fast-import", "--quiet"], stream.as_bytes());
            let target = if to_fresh {
                hex::encode(fresh)
            } else {
                hex::encode(notes[pick.index(notes.len())].object)
            };
            let backend = repo.backend();
            let nr = NotesRef::new(REF).unwrap();
            let tip = backend.tip(&nr).unwrap().unwrap();
            repo.git_ok(&["notes", "--ref=commits", "add", "-f", "-m", "edited", &target]);
            let git_tree = tree_of(&repo, REF);
            repo.git_ok(&["update-ref", REF, tip.as_str()]);
            let ours = backend
                .update(
                    &nr,
                    Some(&tip),
                    &[NoteEdit::set(target.parse().unwrap(), b"edited\n".to_vec())],
                    "Notes added by 'git notes add'",
                )
                .unwrap();
            prop_assert_eq!(tree_of(&repo, ours.as_str()), git_tree);
        }
    }
}
