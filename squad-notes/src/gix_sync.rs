//! The sync support of [`GixNotes`](crate::GixNotes): listing refs, ancestry and fast-forwards.

use gix::refs::transaction::PreviousValue;

use crate::error::{Error, ErrorKind, Result};
use crate::gix_backend::{backend_err, current_tip, from_gix, to_gix};
use crate::oid::{NotesRef, Oid};

/// The notes refs under `prefix` with the commits they point at, sorted by name.
pub(crate) fn list_refs(repo: &gix::Repository, prefix: &str) -> Result<Vec<(NotesRef, Oid)>> {
    const OP: &str = "notes.list_refs";
    let platform = repo
        .references()
        .map_err(backend_err(OP, "cannot list references"))?;
    let refs = platform
        .all()
        .map_err(backend_err(OP, "cannot list references"))?;
    let mut out = Vec::new();
    for r in refs {
        let mut r = r.map_err(|e| {
            Error::new(ErrorKind::Backend, OP, "cannot read a reference").with_source(e)
        })?;
        let name = r.name().as_bstr().to_string();
        if !name.starts_with(prefix) {
            continue;
        }
        let Ok(notes_ref) = NotesRef::new(&name) else {
            continue;
        };
        let id = r
            .peel_to_id()
            .map_err(backend_err(OP, format!("cannot resolve {name}")))?;
        out.push((notes_ref, from_gix(&id)));
    }
    out.sort();
    Ok(out)
}

/// Fails with `NotFound` unless `oid` names a commit in the repository.
pub(crate) fn require_commit(repo: &gix::Repository, op: &'static str, oid: &Oid) -> Result<()> {
    let id = to_gix(repo, oid)?;
    match repo.try_find_object(id) {
        Ok(Some(object)) if object.kind == gix::object::Kind::Commit => Ok(()),
        Ok(Some(_)) => Err(Error::new(
            ErrorKind::InvalidInput,
            op,
            format!("{oid} is not a notes commit"),
        )),
        Ok(None) => Err(Error::new(
            ErrorKind::NotFound,
            op,
            format!("notes tip {oid} not found"),
        )),
        Err(e) => {
            Err(Error::new(ErrorKind::Backend, op, format!("cannot read {oid}")).with_source(e))
        }
    }
}

/// `true` when `ancestor` is `descendant` or one of its ancestors.
pub(crate) fn is_ancestor(
    repo: &gix::Repository,
    ancestor: &Oid,
    descendant: &Oid,
) -> Result<bool> {
    const OP: &str = "notes.is_ancestor";
    require_commit(repo, OP, ancestor)?;
    require_commit(repo, OP, descendant)?;
    if ancestor == descendant {
        return Ok(true);
    }
    let a = to_gix(repo, ancestor)?;
    let d = to_gix(repo, descendant)?;
    let base = repo.merge_base(a, d).map_err(backend_err(
        OP,
        format!("cannot compare {ancestor} and {descendant}"),
    ))?;
    Ok(base.is_some_and(|b| b.detach() == a))
}

/// Moves `notes_ref` from `expected` to `to` when that is a fast-forward, by compare-and-swap.
pub(crate) fn fast_forward(
    repo: &gix::Repository,
    notes_ref: &NotesRef,
    expected: Option<&Oid>,
    to: &Oid,
) -> Result<()> {
    const OP: &str = "notes.fast_forward";
    require_commit(repo, OP, to)?;
    let current = current_tip(repo, notes_ref)?.map(|c| from_gix(&c));
    if current.as_ref() != expected {
        return Err(moved(notes_ref, expected, current.as_ref()));
    }
    if let Some(from) = expected
        && !is_ancestor(repo, from, to)?
    {
        return Err(Error::new(
            ErrorKind::InvalidInput,
            OP,
            format!("cannot fast-forward {notes_ref}: {from} is not an ancestor of {to}"),
        ));
    }
    let constraint = match expected {
        Some(tip) => {
            PreviousValue::MustExistAndMatch(gix::refs::Target::Object(to_gix(repo, tip)?))
        }
        None => PreviousValue::MustNotExist,
    };
    let log = format!("notes: fast-forward to {to}");
    match repo.reference(notes_ref.as_str(), to_gix(repo, to)?, constraint, log) {
        Ok(_) => Ok(()),
        Err(e) => {
            let now = current_tip(repo, notes_ref)?.map(|c| from_gix(&c));
            let text = format!("{e:?}");
            if let Some(locked) =
                crate::health::stale_lock_error(OP, repo.common_dir(), notes_ref.as_str())
            {
                Err(locked.with_source(e))
            } else if now.as_ref() != expected || text.contains("lock") || text.contains("Lock") {
                Err(moved(notes_ref, expected, now.as_ref()).with_source(e))
            } else {
                Err(
                    Error::new(ErrorKind::Backend, OP, format!("cannot update {notes_ref}"))
                        .with_source(e),
                )
            }
        }
    }
}

fn moved(notes_ref: &NotesRef, expected: Option<&Oid>, found: Option<&Oid>) -> Error {
    Error::new(
        ErrorKind::Conflict,
        "notes.fast_forward",
        format!(
            "{notes_ref} moved: expected {}, found {}",
            expected.map_or("nothing", Oid::as_str),
            found.map_or("nothing", Oid::as_str)
        ),
    )
}
