//! The Markdown written by promotion: sections of `decisions.md` and files under `research/`.

use squad_model::NoteEntry;

use super::FoundEntry;
use crate::oid::Oid;

/// The first lines of a new `decisions.md`.
pub(super) const DECISIONS_HEADER: &str = "# Decisions\n\nPromoted from agent notes by `squad notes promote`; one section per decision.\n\n";

/// A value on one line: line breaks become `<br>` so that a value never starts a new block.
pub(super) fn inline(value: &str) -> String {
    let value = value.trim();
    let mut out = String::with_capacity(value.len());
    let mut lines = value.lines().peekable();
    while let Some(line) = lines.next() {
        out.push_str(line.trim_end_matches('\r'));
        if lines.peek().is_some() {
            out.push_str("<br>");
        }
    }
    out.replace('\r', " ")
}

/// A heading text: one line, no leading `#` (escaped) and no trailing `#` run (escaped).
pub(super) fn heading(value: &str) -> String {
    let flat: String = value
        .split(['\n', '\r'])
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" ");
    let mut out = flat;
    if out.starts_with('#') {
        out.insert(0, '\\');
    }
    if out.ends_with('#') {
        let at = out.len() - 1;
        out.insert(at, '\\');
    }
    out
}

/// The title of an entry: its decision, topic or the first line of its content.
pub(super) fn title(entry: &NoteEntry) -> String {
    let text = entry
        .decision
        .as_deref()
        .or(entry.topic.as_deref())
        .or(entry.content.as_deref())
        .map(str::trim)
        .filter(|t| !t.is_empty());
    match text {
        Some(t) => heading(t),
        None => format!("{} entry {}", entry.kind, entry.id),
    }
}

/// One section of `decisions.md`.
pub(super) fn decision(found: &FoundEntry) -> String {
    let e = &found.entry;
    let mut s = format!("### {}\n\n", title(e));
    if e.decision.is_some()
        && let Some(content) = e.content.as_deref().filter(|c| !c.trim().is_empty())
    {
        s.push_str(&format!("- **Details:** {}\n", inline(content)));
    }
    if let Some(r) = e.reasoning.as_deref() {
        s.push_str(&format!("- **Reasoning:** {}\n", inline(r)));
    }
    if let Some(alts) = e.alternatives_considered.as_deref()
        && !alts.is_empty()
    {
        let alts: Vec<String> = alts.iter().map(|a| inline(a)).collect();
        s.push_str(&format!(
            "- **Alternatives considered:** {}\n",
            alts.join("; ")
        ));
    }
    if let Some(c) = e.confidence {
        s.push_str(&format!("- **Confidence:** {c}\n"));
    }
    s.push_str(&format!("- **Agent:** {}\n", e.agent));
    s.push_str(&format!("- **Namespace:** `{}`\n", found.notes_ref));
    s.push_str(&format!("- **Commit:** {}\n", found.commit));
    s.push_str(&format!("- **Entry:** {}\n", e.id));
    s.push_str(&format!("- **Noted:** {}\n\n", e.timestamp));
    s
}

/// The file name of an archived entry: `<date>-<slug>-<id suffix>.md`.
pub(super) fn archive_name(entry: &NoteEntry) -> String {
    let date: String = entry.timestamp.to_string().chars().take(10).collect();
    let source = entry
        .topic
        .as_deref()
        .or(entry.decision.as_deref())
        .or(entry.content.as_deref())
        .unwrap_or("");
    let mut slug = String::new();
    for c in source.chars().flat_map(char::to_lowercase) {
        if c.is_ascii_alphanumeric() {
            slug.push(c);
        } else if !slug.is_empty() && !slug.ends_with('-') {
            slug.push('-');
        }
        if slug.len() >= 48 {
            break;
        }
    }
    let slug = slug.trim_matches('-');
    let slug = if slug.is_empty() {
        entry.kind.as_str()
    } else {
        slug
    };
    let id = entry.id.as_str().to_ascii_lowercase();
    let suffix = &id[id.len().saturating_sub(10)..];
    format!("{date}-{slug}-{suffix}.md")
}

/// The file of an archived entry: readable fields, then the entry itself, verbatim.
pub(super) fn archived(found: &FoundEntry, closed_tip: &Oid) -> String {
    let e = &found.entry;
    let mut s = format!("# {}\n\n", title(e));
    s.push_str(&format!("- **Type:** {}\n", e.kind));
    if let Some(c) = e.confidence {
        s.push_str(&format!("- **Confidence:** {c}\n"));
    }
    s.push_str(&format!("- **Agent:** {}\n", e.agent));
    s.push_str(&format!("- **Namespace:** `{}`\n", found.notes_ref));
    s.push_str(&format!("- **Commit:** {}\n", found.commit));
    s.push_str(&format!("- **Closed branch tip:** {closed_tip}\n"));
    s.push_str(&format!("- **Entry:** {}\n", e.id));
    s.push_str(&format!("- **Noted:** {}\n", e.timestamp));
    if let Some(r) = e.reasoning.as_deref() {
        s.push_str(&format!("- **Reasoning:** {}\n", inline(r)));
    }
    if let Some(content) = e.content.as_deref().filter(|c| !c.trim().is_empty()) {
        s.push_str("\n## Content\n\n");
        s.push_str(&fenced("text", content));
    }
    if let Some(findings) = &e.findings
        && let Ok(pretty) = serde_json::to_string_pretty(findings)
    {
        s.push_str("\n## Findings\n\n");
        s.push_str(&fenced("json", &pretty));
    }
    s.push_str("\n## Entry\n\n");
    s.push_str(&fenced("json", e.to_line().trim_end()));
    s
}

/// A fenced code block whose fence is longer than any backtick run inside `body`.
fn fenced(lang: &str, body: &str) -> String {
    let mut longest = 0;
    let mut run = 0;
    for c in body.chars() {
        if c == '`' {
            run += 1;
            longest = longest.max(run);
        } else {
            run = 0;
        }
    }
    let fence = "`".repeat(longest.max(2) + 1);
    format!("{fence}{lang}\n{}\n{fence}\n", body.trim_end_matches('\n'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_stay_on_one_line_and_headings_are_escaped() {
        assert_eq!(inline("a\nb\r\nc"), "a<br>b<br>c");
        assert_eq!(
            heading("# Not a heading\n## nor this"),
            "\\# Not a heading ## nor this"
        );
        assert_eq!(heading("Closing #"), "Closing \\#");
        assert_eq!(
            fenced("text", "has ``` inside"),
            "````text\nhas ``` inside\n````\n"
        );
    }
}
