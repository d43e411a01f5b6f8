//! The conformance suite against every backend, as a concrete type, a `Box` and an `Arc<dyn>`.

use std::sync::Arc;

use squad_notes::{GixNotes, InMemoryNotes, NotesBackend, conformance};

use crate::common::Repo;

#[test]
fn in_memory_passes() {
    conformance::run_all(&mut InMemoryNotes::new);
}

#[test]
fn in_memory_boxed_passes() {
    conformance::run_all(&mut || Box::new(InMemoryNotes::new()));
}

#[test]
fn in_memory_arc_dyn_passes() {
    conformance::run_all(&mut || -> Arc<dyn NotesBackend> { Arc::new(InMemoryNotes::new()) });
}

/// Makes a fresh repository per backend and keeps it alive until the test ends.
fn gix_factory() -> (Vec<Repo>, impl FnMut(&mut Vec<Repo>) -> GixNotes) {
    (Vec::new(), |repos: &mut Vec<Repo>| {
        let repo = Repo::new();
        let b = repo.backend();
        repos.push(repo);
        b
    })
}

#[test]
fn gix_passes() {
    let (mut repos, mut make) = gix_factory();
    conformance::run_all(&mut || make(&mut repos));
}

#[test]
fn gix_boxed_passes() {
    let (mut repos, mut make) = gix_factory();
    conformance::run_all(&mut || Box::new(make(&mut repos)));
}

#[test]
fn gix_arc_dyn_passes() {
    let (mut repos, mut make) = gix_factory();
    conformance::run_all(&mut || -> Arc<dyn NotesBackend> { Arc::new(make(&mut repos)) });
}

#[test]
fn gix_by_reference_passes_scenarios() {
    let repo = Repo::new();
    let b = repo.backend();
    conformance::edits_remove_and_list(&&b);
}
