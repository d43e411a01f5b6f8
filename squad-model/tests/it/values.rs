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
        let json = serde_json::to_string(bad).unwrap();
        let err = serde_json::from_str::<EntryId>(&json)
            .unwrap_err()
            .to_string();
        assert!(err.contains("invalid entry id"), "{bad:?} from JSON: {err}");
    }
    // Not a string at all.
    for json in ["7", "null", "[\"01ARZ3NDEKTSV4RRFFQ69G5FAV\"]"] {
        let err = serde_json::from_str::<EntryId>(json)
            .unwrap_err()
            .to_string();
        assert!(err.contains("an entry id"), "{json}: {err}");
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

/// Hashes `v` with the standard hasher.
fn hash_of<T: std::hash::Hash + ?Sized>(v: &T) -> u64 {
    use std::hash::{BuildHasher, BuildHasherDefault};
    BuildHasherDefault::<std::collections::hash_map::DefaultHasher>::default().hash_one(v)
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(256))]

    /// An entry id (held inline) orders, compares and hashes exactly as its text, for ULIDs
    /// of either case and UUIDv7s, mixed; its text and its JSON survive a round trip.
    #[test]
    fn entry_ids_order_compare_and_hash_as_their_text(
        a in "(0[0-9A-HJKMNP-TV-Za-hjkmnp-tv-z]{25})|([0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12})",
        b in "(0[0-9A-HJKMNP-TV-Za-hjkmnp-tv-z]{25})|([0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12})",
    ) {
        let (x, y) = (EntryId::new(a.as_str()).unwrap(), EntryId::new(b.as_str()).unwrap());
        proptest::prop_assert_eq!(x.as_str(), a.as_str());
        proptest::prop_assert_eq!(x.cmp(&y), a.cmp(&b));
        proptest::prop_assert_eq!(x == y, a == b);
        proptest::prop_assert_eq!(hash_of(&x), hash_of(a.as_str()));
        let json = serde_json::to_string(&x).unwrap();
        proptest::prop_assert_eq!(serde_json::from_str::<EntryId>(&json).unwrap(), x.clone());
        proptest::prop_assert_eq!(x.to_string(), a);
    }
}
