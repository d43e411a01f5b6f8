//! `AgentName` against git's own ref rules.

use std::process::Command;

use proptest::prelude::*;
use squad_model::AgentName;

/// Asks the real git whether `refs/notes/squad/<component>` is a valid ref.
fn git_accepts_component(component: &str) -> bool {
    if component.contains('\0') {
        return false; // cannot be passed as an argument at all, and git refuses NUL in refs
    }
    Command::new("git")
        .args(["check-ref-format", &format!("refs/notes/squad/{component}")])
        .status()
        .expect("git is installed")
        .success()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    /// Whatever string we try, an accepted name is a ref component git accepts too.
    #[test]
    fn accepted_names_are_valid_ref_components(s in any::<String>()) {
        if let Ok(name) = AgentName::new(s.clone()) {
            prop_assert!(git_accepts_component(name.as_str()), "{s:?} accepted by us, refused by git");
        }
    }

    /// Strings shaped like near-misses (dots, slashes, locks, uppercase) are checked against git.
    #[test]
    fn near_miss_names_are_never_invalid_refs(s in "[a-zA-Z0-9._/@{}~^:?*\\[\\\\ -]{0,70}") {
        if let Ok(name) = AgentName::new(s.clone()) {
            prop_assert!(git_accepts_component(name.as_str()), "{s:?}");
            prop_assert!(!s.contains('/') && !s.contains('.') && !s.contains('@'));
        }
    }

    /// Every string of the allowed alphabet and length is accepted and is a valid ref.
    #[test]
    fn allowed_alphabet_is_accepted(s in "[a-z0-9_-]{1,64}") {
        let name = AgentName::new(s.clone()).expect("allowed");
        prop_assert_eq!(name.notes_ref(), format!("refs/notes/squad/{s}"));
        prop_assert!(git_accepts_component(&s));
    }
}

#[test]
fn named_rejections() {
    for (input, reason) in [
        ("", "must not be empty"),
        ("Data", "only lowercase"),
        ("../etc", "only lowercase"),
        ("a/b", "only lowercase"),
        ("a.lock", "only lowercase"),
        ("a b", "only lowercase"),
        ("a\0b", "only lowercase"),
        ("é", "only lowercase"),
    ] {
        let err = AgentName::new(input).unwrap_err().to_string();
        assert!(err.contains(reason), "{input:?}: {err}");
        assert!(
            err.contains(&format!("{input:?}")),
            "message names the input: {err}"
        );
    }
    let long = "a".repeat(65);
    assert!(
        AgentName::new(long)
            .unwrap_err()
            .to_string()
            .contains("at most 64")
    );
    assert!(AgentName::new("a".repeat(64)).is_ok());
}

#[test]
fn shared_namespaces_and_write_rule() {
    let data = AgentName::new("data").unwrap();
    let worf = AgentName::new("worf").unwrap();
    let research = AgentName::new("research").unwrap();
    let review = AgentName::new("review").unwrap();
    assert!(research.is_shared() && review.is_shared() && !data.is_shared());
    assert!(data.may_write(&data));
    assert!(data.may_write(&research));
    assert!(data.may_write(&review));
    assert!(!data.may_write(&worf));
    assert_eq!(
        AgentName::from_notes_ref("refs/notes/squad/research"),
        Some(research)
    );
    assert_eq!(AgentName::from_notes_ref("refs/notes/squad/Bad"), None);
    assert_eq!(AgentName::from_notes_ref("refs/notes/commits"), None);
}
