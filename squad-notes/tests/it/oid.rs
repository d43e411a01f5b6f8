//! `Oid` holds its hex digits inline: it must behave exactly as the lowercase text.

use proptest::prelude::*;
use squad_notes::Oid;

fn hash_of<T: std::hash::Hash + ?Sized>(v: &T) -> u64 {
    use std::hash::{BuildHasher, BuildHasherDefault};
    BuildHasherDefault::<std::collections::hash_map::DefaultHasher>::default().hash_one(v)
}

#[test]
fn oids_refuse_what_is_not_40_or_64_hex_digits() {
    for bad in [
        "",
        "0123456789abcdef0123456789abcdef0123456",   // 39
        "0123456789abcdef0123456789abcdef012345678", // 41
        "0123456789abcdef0123456789abcdef0123456g",  // not hex
        "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcde", // 63
        "0123456789abcdef0123456789abcdef 123456",   // a space
    ] {
        let err = bad.parse::<Oid>().unwrap_err().to_string();
        assert!(err.contains("invalid object id"), "{bad:?}: {err}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, failure_persistence: None, ..ProptestConfig::default() })]

    /// SHA-1 and SHA-256 ids in any case: stored in lowercase, and ordered, compared and
    /// hashed as that text.
    #[test]
    fn oids_behave_as_their_lowercase_text(
        a in "([0-9a-fA-F]{40})|([0-9a-fA-F]{64})",
        b in "([0-9a-fA-F]{40})|([0-9a-fA-F]{64})",
    ) {
        let (x, y): (Oid, Oid) = (a.parse().unwrap(), b.parse().unwrap());
        let (la, lb) = (a.to_ascii_lowercase(), b.to_ascii_lowercase());
        prop_assert_eq!(x.as_str(), la.as_str());
        prop_assert_eq!(x.to_string(), la.clone());
        prop_assert_eq!(x.cmp(&y), la.cmp(&lb));
        prop_assert_eq!(x == y, la == lb);
        prop_assert_eq!(hash_of(&x), hash_of(la.as_str()));
    }
}
