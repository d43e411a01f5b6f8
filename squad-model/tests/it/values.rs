//! Ids and timestamps.

use squad_model::{EntryId, SquadId, Timestamp};

#[test]
fn generated_ids_are_uuid_v7_and_increase() {
    let ids: Vec<EntryId> = (0..1000).map(|_| EntryId::generate()).collect();
    for w in ids.windows(2) {
        assert!(w[0] < w[1], "{:?} !< {:?}", w[0], w[1]);
    }
    for id in &ids {
        assert_eq!(EntryId::new(id.as_str()).unwrap(), *id);
        assert_eq!(id.as_str().as_bytes()[14], b'7');
    }
}

#[test]
fn entry_id_forms() {
    assert!(EntryId::new("01ARZ3NDEKTSV4RRFFQ69G5FAV").is_ok());
    assert!(EntryId::new("01arz3ndektsv4rrffq69g5fav").is_ok());
    assert!(EntryId::new("0190b9a4-9a7e-7cc4-8b5e-3f2a1c9d0e11").is_ok());
    for bad in [
        "",
        "81ARZ3NDEKTSV4RRFFQ69G5FAV",  // ULID overflow: first char > 7
        "01ARZ3NDEKTSV4RRFFQ69G5FAU1", // 27 characters
        "01ARZ3NDEKTSV4RRFFQ69G5FIL",  // I and L are not Crockford
        "0190b9a4-9a7e-4cc4-8b5e-3f2a1c9d0e11", // UUIDv4
        "0190b9a49a7e7cc48b5e3f2a1c9d0e11", // no hyphens
        "not-an-id",
    ] {
        let err = EntryId::new(bad).unwrap_err().to_string();
        assert!(err.starts_with("invalid entry id"), "{bad:?}: {err}");
    }
}

#[test]
fn timestamps_are_utc_rfc3339() {
    let t = Timestamp::parse("2026-03-23T14:00:00Z").unwrap();
    assert_eq!(t.to_string(), "2026-03-23T14:00:00Z");
    assert_eq!(Timestamp::parse("2026-03-23T14:00:00+00:00").unwrap(), t);
    assert_eq!(
        Timestamp::parse("2026-03-23T14:00:00.250Z")
            .unwrap()
            .to_string(),
        "2026-03-23T14:00:00.25Z"
    );
    for bad in [
        "",
        "2026-03-23",
        "2026-03-23 14:00:00",
        "2026-03-23T14:00:00+01:00",
        "2026-13-01T00:00:00Z",
    ] {
        assert!(Timestamp::parse(bad).is_err(), "{bad:?}");
    }
    assert_eq!(t.plus_seconds(60).seconds_since(&t), 60);
    assert_eq!(Timestamp::from_unix_seconds(t.unix_seconds()).unwrap(), t);
    assert_eq!(Timestamp::from_unix_millis(t.unix_millis()).unwrap(), t);
}

#[test]
fn opaque_ids_refuse_empty_and_whitespace() {
    assert!(SquadId::new("sq-1").is_ok());
    assert!(
        SquadId::new("")
            .unwrap_err()
            .to_string()
            .contains("must not be empty")
    );
    assert!(
        SquadId::new("a b")
            .unwrap_err()
            .to_string()
            .contains("whitespace")
    );
    assert!(SquadId::new("a\nb").is_err());
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(512))]

    /// Opaque ids accept exactly the non-empty strings without whitespace or control
    /// characters, whatever the mix of ASCII and other text.
    #[test]
    fn opaque_ids_refuse_exactly_whitespace_and_control_characters(
        s in "(\\PC|\\s|[\\x00-\\x1f\\x7f-\\u{9f}\\u{85}\\u{a0}\\u{2028}]){0,12}"
    ) {
        let expected = !s.is_empty() && !s.chars().any(|c| c.is_whitespace() || c.is_control());
        proptest::prop_assert_eq!(squad_model::TaskId::new(s.clone()).is_ok(), expected, "{:?}", s);
        proptest::prop_assert_eq!(squad_model::IssueId::new(s.clone()).is_ok(), expected, "{:?}", s);
    }
}
