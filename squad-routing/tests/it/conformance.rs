//! The `Directory` conformance suite on every directory of the crate, plain and boxed.

use squad_routing::{Directory, InMemoryDirectory, SimpleDirectory, SqliteDirectory, conformance};

fn sqlite() -> SqliteDirectory {
    SqliteDirectory::open_in_memory().unwrap()
}

#[test]
fn in_memory_directory_conforms() {
    conformance::run_all(InMemoryDirectory::new);
    conformance::run_all(|| Box::new(InMemoryDirectory::new()) as Box<dyn Directory>);
}

#[test]
fn simple_directory_conforms() {
    conformance::run_all(SimpleDirectory::new);
    conformance::run_all(|| Box::new(SimpleDirectory::new()) as Box<dyn Directory>);
}

#[test]
fn sqlite_directory_conforms() {
    conformance::run_all(sqlite);
    conformance::run_all(|| Box::new(sqlite()) as Box<dyn Directory>);
    // Inside a transaction too, and with no storage error left behind.
    for (name, scenario) in conformance::SCENARIOS {
        let mut d = sqlite();
        d.begin().unwrap();
        scenario(&mut d);
        d.commit().unwrap_or_else(|e| panic!("{name}: {e}"));
    }
}

#[test]
fn sqlite_directory_on_disk_conforms_and_keeps_its_state() {
    let tmp = tempfile::tempdir().unwrap();
    let mut n = 0;
    conformance::run_all(|| {
        n += 1;
        SqliteDirectory::open(tmp.path().join(format!("d{n}.db"))).unwrap()
    });
    // The last scenario's database, reopened, holds what it wrote.
    let again = SqliteDirectory::open(tmp.path().join(format!("d{n}.db"))).unwrap();
    assert!(
        again
            .agent_by_str("00000000-0000-4000-8000-0000000000a1")
            .is_some()
    );
    again.check().unwrap();
}

/// The suite fails a directory that breaks a sentence of `# Behavior` (here: a directory that
/// is not empty, so `id_seq` is not 0), naming the scenario.
#[test]
fn the_suite_fails_a_directory_that_does_not_behave() {
    let err = std::panic::catch_unwind(|| {
        conformance::run_all(|| {
            let mut d = SimpleDirectory::new();
            d.advance_id_seq(5);
            d
        });
    })
    .unwrap_err();
    let msg = err.downcast_ref::<String>().unwrap();
    assert!(
        msg.starts_with("conformance scenario `unknown_ids_find_nothing` failed"),
        "{msg}"
    );
}
