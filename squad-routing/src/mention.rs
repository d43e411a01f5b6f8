//! The mention syntax: `[@label](mention://<type>/<id>)`.
//!
//! The grammar is the one of the routing reference: a label of at least one character on one
//! line (an optional leading `@` is not part of it), then `](mention://`, a type among `member`,
//! `agent`, `squad`, `issue`, `all`, a slash, and an id made of hex digits and dashes (or the word
//! `all`), then `)`. `@all` is written `[@all](mention://all/all)`.
//! Mentions are returned in text order, de-duplicated by type and id.
//! `mention://issue/...` is a cross-reference and never routes anyone.

use serde::Serialize;

/// The type of a mention.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum MentionKind {
    /// A human member (`mention://member/<user id>`).
    Member,
    /// An agent (`mention://agent/<agent id>`).
    Agent,
    /// A squad (`mention://squad/<squad id>`): wakes its leader.
    Squad,
    /// An issue cross-reference: never routes.
    Issue,
    /// `@all`.
    All,
}

impl MentionKind {
    /// The kind as it appears in the link.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Member => "member",
            Self::Agent => "agent",
            Self::Squad => "squad",
            Self::Issue => "issue",
            Self::All => "all",
        }
    }
}

/// One parsed mention.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Mention<'a> {
    /// Its type.
    pub kind: MentionKind,
    /// The id (hex digits and dashes, or `all`), as written.
    pub id: &'a str,
    /// The label between the brackets, without a leading `@`.
    pub label: &'a str,
}

const LINK: &str = "](mention://";

/// Parses every mention of `text`, in order, de-duplicated by type and id.
///
/// ```
/// use squad_routing::mention::{parse_mentions, MentionKind};
///
/// let text = "hi [@Ada](mention://agent/0a-1b) and [@Ada](mention://agent/0a-1b) [@all](mention://all/all)";
/// let m = parse_mentions(text);
/// assert_eq!(m.len(), 2);
/// assert_eq!((m[0].kind, m[0].id, m[0].label), (MentionKind::Agent, "0a-1b", "Ada"));
/// assert_eq!(m[1].kind, MentionKind::All);
/// ```
pub fn parse_mentions(text: &str) -> Vec<Mention<'_>> {
    let mut out: Vec<Mention<'_>> = Vec::new();
    let bytes = text.as_bytes();
    let mut pos = 0;
    while let Some(rel) = text[pos..].find('[') {
        let open = pos + rel;
        match match_at(text, open) {
            Some((mention, end)) => {
                if !out
                    .iter()
                    .any(|m| m.kind == mention.kind && m.id == mention.id)
                {
                    out.push(mention);
                }
                pos = end;
            }
            None => pos = open + 1,
        }
        if pos >= bytes.len() {
            break;
        }
    }
    out
}

/// Tries to match one mention whose `[` is at `open`; returns it and the end offset.
fn match_at(text: &str, open: usize) -> Option<(Mention<'_>, usize)> {
    let label_start = open + 1;
    // The label cannot span lines, so only look up to the end of this line.
    let line_end = text[label_start..]
        .find('\n')
        .map_or(text.len(), |i| label_start + i);
    let mut search = label_start;
    while let Some(rel) = find_link(&text[search..line_end]) {
        let close = search + rel;
        if close > label_start
            && let Some((kind, id, end)) = parse_target(text, close + LINK.len())
        {
            let raw = &text[label_start..close];
            let label = match raw.strip_prefix('@') {
                Some(rest) if !rest.is_empty() => rest,
                _ => raw,
            };
            return Some((Mention { kind, id, label }, end));
        }
        search = close + 1;
    }
    None
}

/// The offset of the first `](mention://` in `hay` (what `hay.find(LINK)` gives, without setting
/// up a substring searcher for every candidate `[`: this runs for every comment).
fn find_link(hay: &str) -> Option<usize> {
    let bytes = hay.as_bytes();
    let mut from = 0;
    while let Some(rel) = bytes[from..].iter().position(|&b| b == b']') {
        let at = from + rel;
        if bytes[at..].starts_with(LINK.as_bytes()) {
            return Some(at);
        }
        from = at + 1;
    }
    None
}

/// Parses `<type>/<id>)` at `at`; returns the kind, the id and the offset after `)`.
fn parse_target(text: &str, at: usize) -> Option<(MentionKind, &str, usize)> {
    let rest = &text[at..];
    let (kind, skip) = [
        (MentionKind::Member, "member/"),
        (MentionKind::Agent, "agent/"),
        (MentionKind::Squad, "squad/"),
        (MentionKind::Issue, "issue/"),
        (MentionKind::All, "all/"),
    ]
    .into_iter()
    .find(|(_, p)| rest.starts_with(p))?;
    let id_start = at + skip.len();
    let tail = &text[id_start..];
    let hex_len = tail
        .bytes()
        .take_while(|b| b.is_ascii_hexdigit() || *b == b'-')
        .count();
    if hex_len > 0 && tail.as_bytes().get(hex_len) == Some(&b')') {
        return Some((kind, &tail[..hex_len], id_start + hex_len + 1));
    }
    if tail.starts_with("all)") {
        return Some((kind, &tail[..3], id_start + 4));
    }
    None
}

/// `true` when `s` is a UUID in its 8-4-4-4-12 hex form.
pub fn is_uuid(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == 36
        && b.iter().enumerate().all(|(i, c)| match i {
            8 | 13 | 18 | 23 => *c == b'-',
            _ => c.is_ascii_hexdigit(),
        })
}

/// Formats a mention link: `[@label](mention://kind/id)`.
pub fn format_mention(kind: MentionKind, id: &str, label: &str) -> String {
    // 16: the link's own characters, `[@`, `](mention://`, `/` and `)`.
    let mut out = String::with_capacity(label.len() + kind.as_str().len() + id.len() + 16);
    push_mention(&mut out, kind, id, label);
    out
}

/// Appends `[@label](mention://kind/id)` ([`format_mention`] without the allocation).
pub(crate) fn push_mention(out: &mut String, kind: MentionKind, id: &str, label: &str) {
    out.push_str("[@");
    out.push_str(label);
    out.push_str("](mention://");
    out.push_str(kind.as_str());
    out.push('/');
    out.push_str(id);
    out.push(')');
}

/// `true` when the first whitespace-delimited token is `/note` (any case): such comments never
/// trigger anything.
pub fn is_note_comment(text: &str) -> bool {
    // The first token is `/note` when the text (past leading whitespace) starts with those five
    // ASCII bytes and whitespace or the end follows: no need to find where the token ends.
    let rest = text.trim_start();
    rest.get(..5)
        .is_some_and(|t| t.eq_ignore_ascii_case("/note"))
        && rest[5..].chars().next().is_none_or(char::is_whitespace)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn label_may_contain_brackets_and_at_only_label_is_kept() {
        let m = parse_mentions("[x [@B](mention://agent/ab)");
        assert_eq!(m.len(), 1);
        assert_eq!(m[0].label, "x [@B");
        let m = parse_mentions("[@](mention://agent/ab)");
        assert_eq!(m[0].label, "@");
    }

    #[test]
    fn rejects_non_hex_ids_empty_labels_and_multi_line_labels() {
        assert!(parse_mentions("[@A](mention://agent/xyz)").is_empty());
        assert!(parse_mentions("[](mention://agent/ab)").is_empty());
        assert!(parse_mentions("[@A\nB](mention://agent/ab)").is_empty());
        assert!(parse_mentions("[@A](mention://robot/ab)").is_empty());
        assert!(parse_mentions("[@A](mention://agent/ab").is_empty());
    }

    #[test]
    fn the_label_extends_past_a_failed_link_as_in_the_regex() {
        let m = parse_mentions("[@A](mention://agent/zz) [@B](mention://squad/0f)");
        assert_eq!(m.len(), 1);
        assert_eq!(m[0].label, "A](mention://agent/zz) [@B");
        assert_eq!(m[0].kind, MentionKind::Squad);
    }

    #[test]
    fn uuid_shape() {
        assert!(is_uuid("0a0b0c0d-0000-4000-8000-000000000001"));
        assert!(!is_uuid("0a0b0c0d-0000-4000-8000-00000000000"));
        assert!(!is_uuid("0a0b0c0d00000-4000-8000-000000000001"));
    }

    #[test]
    fn note_prefix() {
        assert!(is_note_comment("  /NOTE remember this"));
        assert!(!is_note_comment("/notes"));
        assert!(!is_note_comment("see /note"));
        assert!(is_note_comment("/note"));
        assert!(is_note_comment("\u{3000}/Note\u{2003}x"));
        assert!(!is_note_comment("/note\u{e9}"));
        assert!(!is_note_comment("/no"));
        assert!(!is_note_comment("/not\u{e9}"));
    }
}
