//! The signal parser: which text is a command, and which is only a note (pure, synchronous).
//!
//! # Grammar
//!
//! A comment (or an in-chat line) is a command when the first Markdown block that is not a
//! block quote, a code block, an HTML block (such as `<!-- ... -->`) or a thematic break is a
//! paragraph whose first line is one of:
//!
//! ```text
//! /approve      [<gate-id>]
//! /approve-all  [<gate-id>]
//! /stop         [<gate-id>]
//! /revoke-all   [<gate-id>]
//! /changes      [<gate-id>] [:] [<note>]
//! ```
//!
//! Keywords are matched case-insensitively and must end at a space, a colon (for `/changes`) or
//! the end of the line: `/approve-foo` and `/approvefoo` are not commands. Any other text on an
//! `/approve`, `/approve-all` or `/stop` line makes the whole comment a note (`/approve thanks`
//! does not approve); lines after such a command line are ignored (they never change the
//! decision). The `/changes` note is the rest of its line plus every following line,
//! capped at [`MAX_NOTE_CHARS`] characters; it is data for a role to consider, never a command.
//! Quoted (`> /approve`), fenced, indented, inline-code, emphasised or linked commands never count.
//!
//! Labels: `squad/approved`, `squad/approve-all`, `squad/changes` and `squad/stop`
//! (case-insensitive, exact).
//!
//! # In-chat lines
//!
//! A chat session arrives line by line, and each line outside a Markdown block is a message of
//! its own. [`ChatLines`] keeps the Markdown state across lines with the same parser and the
//! same options as [`parse_comment`]: a line inside a fenced code block (```` ``` ```` or `~~~`,
//! closed only by a fence of the same kind at least as long), a block quote (including its lazy
//! continuation lines), a list item or an HTML block (`<!-- ... -->`) is never a command, exactly
//! as in a comment. A line that starts a paragraph outside any block is judged by
//! [`parse_comment`].

use pulldown_cmark::{Event, Options, Parser, Tag};
use serde::{Deserialize, Serialize};

use crate::gate::GateId;

/// Most characters kept from a `/changes` note.
pub const MAX_NOTE_CHARS: usize = 500;

/// A control signal.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "command", content = "note", rename_all = "kebab-case")]
pub enum Command {
    /// `/approve` or `squad/approved`.
    Approve,
    /// `/approve-all` or `squad/approve-all`.
    ApproveAll,
    /// `/changes: <note>` or `squad/changes` (the note is data, possibly empty).
    Changes(String),
    /// `/stop` or `squad/stop`.
    Stop,
    /// `/revoke-all` or `squad/revoke-all`: ends the run's `/approve-all` pre-authorization.
    /// Not a decision: the gate it is sent on stays pending.
    RevokeAll,
}

impl Command {
    /// The keyword (`approve`, `approve-all`, `changes`, `stop`, `revoke-all`).
    pub fn keyword(&self) -> &'static str {
        match self {
            Command::Approve => "approve",
            Command::ApproveAll => "approve-all",
            Command::Changes(_) => "changes",
            Command::Stop => "stop",
            Command::RevokeAll => "revoke-all",
        }
    }
}

/// A recognised command, possibly bound to a gate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParsedCommand {
    /// The command.
    pub command: Command,
    /// The gate the command names, if it names one.
    pub gate: Option<GateId>,
    /// `true` when the `/changes` note was cut at [`MAX_NOTE_CHARS`].
    pub note_truncated: bool,
}

/// Why a text is not a command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NotCommand {
    /// Nothing but white space (an empty in-chat line never approves).
    Empty,
    /// The text holds no command where one counts (prose, or commands only in quotes or code).
    Prose,
    /// A slash word that is not one of the four commands (`/merge`, `/approve-foo`).
    UnknownCommand(String),
    /// A command followed by other text on its line (`/approve thanks`), or a malformed gate id.
    TrailingText,
    /// An in-chat line that is part of a Markdown block other than a paragraph of its own (it
    /// opens or continues a fence, a quote, a list, an HTML block, or is a heading): never a
    /// command ([`ChatLines`]).
    InsideBlock,
}

/// The result of parsing a comment or an in-chat line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Parsed {
    /// A control signal.
    Command(ParsedCommand),
    /// Not a control signal: the text is only a note.
    Note(NotCommand),
}

impl Parsed {
    /// The command, if any.
    pub fn command(&self) -> Option<&ParsedCommand> {
        match self {
            Parsed::Command(c) => Some(c),
            Parsed::Note(_) => None,
        }
    }
}

/// Parses a comment body or an in-chat line (see the module docs for the grammar).
///
/// ```
/// use squad_notify::{parse_comment, Command, Parsed};
///
/// let p = parse_comment("> /stop\n\n/Approve g-0123456789ab");
/// let c = p.command().expect("a command");
/// assert_eq!(c.command, Command::Approve);
/// assert_eq!(c.gate.as_ref().map(|g| g.as_str()), Some("g-0123456789ab"));
/// assert!(parse_comment("```\n/approve\n```").command().is_none());
/// assert!(parse_comment("").command().is_none());
/// ```
pub fn parse_comment(text: &str) -> Parsed {
    if text.trim().is_empty() {
        return Parsed::Note(NotCommand::Empty);
    }
    let Some(range) = first_paragraph(text) else {
        return Parsed::Note(NotCommand::Prose);
    };
    let para = &text[range.start..];
    let (first_line, rest) = match para.find('\n') {
        Some(i) => (&para[..i], &para[i + 1..]),
        None => (para, ""),
    };
    parse_command_line(first_line.trim(), rest)
}

/// Parses a label name (`squad/approved`, `squad/approve-all`, `squad/changes`, `squad/stop`).
/// Any other label is `None`.
pub fn parse_label(name: &str) -> Option<Command> {
    match name.trim().to_ascii_lowercase().as_str() {
        "squad/approved" => Some(Command::Approve),
        "squad/approve-all" => Some(Command::ApproveAll),
        "squad/changes" => Some(Command::Changes(String::new())),
        "squad/stop" => Some(Command::Stop),
        "squad/revoke-all" => Some(Command::RevokeAll),
        _ => None,
    }
}

/// Longest text of an open block [`ChatLines`] keeps; beyond it only the block's first line and
/// the latest line are kept (enough for fences, quotes and HTML blocks to end as they should).
const MAX_OPEN_BLOCK_BYTES: usize = 64 * 1024;

/// Reads a chat session line by line, keeping the Markdown state across lines (see the module
/// docs): what [`parse_comment`] would say of each line within the session so far.
///
/// ```
/// use squad_notify::{ChatLines, Command, NotCommand, Parsed};
///
/// let mut chat = ChatLines::new();
/// let judged: Vec<Parsed> = ["```", "/approve", "```", "/stop"]
///     .iter()
///     .map(|l| chat.push(l))
///     .collect();
/// assert_eq!(judged[1], Parsed::Note(NotCommand::InsideBlock));
/// assert_eq!(judged[3].command().map(|c| &c.command), Some(&Command::Stop));
/// ```
#[derive(Debug, Clone, Default)]
pub struct ChatLines {
    /// The lines of the block still open, each ending in a newline; empty when none is.
    open: String,
}

impl ChatLines {
    /// A session with no block open.
    pub fn new() -> Self {
        Self::default()
    }

    /// Whether a block (a fence, a quote, a list, an HTML block) is open after the lines so far.
    pub fn in_block(&self) -> bool {
        !self.open.is_empty()
    }

    /// Reads the next line (a trailing newline is ignored): a command when the line starts a
    /// paragraph outside any block and [`parse_comment`] finds a command in it, else why not.
    pub fn push(&mut self, line: &str) -> Parsed {
        let line = line.trim_end_matches(['\r', '\n']);
        // A newline or NUL inside the line would split it; a line is one line.
        let line = line.replace(['\n', '\r', '\0'], " ");
        let start = self.open.len();
        let doc = format!("{}{line}\n", self.open);
        if paragraph_starts_in(&doc, start) {
            self.open.clear();
            return parse_comment(&line);
        }
        // Not a paragraph of its own: does the block it belongs to (or opens) go on? It does when
        // a paragraph typed on the next line would still be inside it.
        let probe = format!("{doc}p\n");
        if paragraph_starts_in(&probe, doc.len()) {
            self.open.clear();
        } else {
            self.open = doc;
            if self.open.len() > MAX_OPEN_BLOCK_BYTES {
                let first_end = self.open.find('\n').map_or(0, |i| i + 1);
                let first = self.open[..first_end].to_owned();
                self.open = format!("{first}{line}\n");
            }
        }
        if line.trim().is_empty() {
            Parsed::Note(NotCommand::Empty)
        } else {
            Parsed::Note(NotCommand::InsideBlock)
        }
    }
}

/// Whether a top-level paragraph starts at or after byte `from` of `text` (in its last line).
fn paragraph_starts_in(text: &str, from: usize) -> bool {
    let mut depth = 0usize;
    for (event, range) in Parser::new_ext(text, Options::empty()).into_offset_iter() {
        match event {
            Event::Start(tag) => {
                if depth == 0 && matches!(tag, Tag::Paragraph) && range.start >= from {
                    return true;
                }
                depth += 1;
            }
            Event::End(_) => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    false
}

/// The byte range of the first top-level paragraph, if the first counting block is one.
fn first_paragraph(text: &str) -> Option<std::ops::Range<usize>> {
    let mut depth = 0usize;
    for (event, range) in Parser::new_ext(text, Options::empty()).into_offset_iter() {
        match event {
            Event::Start(tag) => {
                if depth == 0 {
                    match tag {
                        Tag::Paragraph => return Some(range),
                        Tag::BlockQuote(_) | Tag::CodeBlock(_) | Tag::HtmlBlock => {}
                        _ => return None,
                    }
                }
                depth += 1;
            }
            Event::End(_) => depth = depth.saturating_sub(1),
            Event::Rule => {}
            // Loose top-level text or HTML outside a block: treat as prose.
            Event::Text(_) | Event::Code(_) | Event::InlineHtml(_) if depth == 0 => return None,
            _ => {}
        }
    }
    None
}

const KEYWORDS: [&str; 5] = [
    "/approve-all",
    "/approve",
    "/changes",
    "/stop",
    "/revoke-all",
];

fn parse_command_line(line: &str, rest: &str) -> Parsed {
    if !line.starts_with('/') {
        return Parsed::Note(NotCommand::Prose);
    }
    let lower = line.to_ascii_lowercase();
    let keyword = KEYWORDS.into_iter().find(|k| {
        lower.starts_with(k)
            && lower[k.len()..]
                .chars()
                .next()
                .is_none_or(|c| c.is_whitespace() || (c == ':' && *k == "/changes"))
    });
    let Some(keyword) = keyword else {
        let word: String = line
            .chars()
            .take_while(|c| !c.is_whitespace())
            .take(40)
            .collect();
        return Parsed::Note(NotCommand::UnknownCommand(word));
    };
    // `keyword` is ASCII and matched case-insensitively, so this byte offset is a char boundary.
    let after = &line[keyword.len()..];
    if keyword == "/changes" {
        return parse_changes(after, rest);
    }
    let arg = after.trim();
    let gate = if arg.is_empty() {
        None
    } else if arg.split_whitespace().count() == 1 {
        match GateId::new(arg) {
            Ok(g) => Some(g),
            Err(_) => return Parsed::Note(NotCommand::TrailingText),
        }
    } else {
        return Parsed::Note(NotCommand::TrailingText);
    };
    let command = match keyword {
        "/approve-all" => Command::ApproveAll,
        "/approve" => Command::Approve,
        "/revoke-all" => Command::RevokeAll,
        _ => Command::Stop,
    };
    Parsed::Command(ParsedCommand {
        command,
        gate,
        note_truncated: false,
    })
}

fn parse_changes(after: &str, rest: &str) -> Parsed {
    let mut s = after.trim_start();
    let mut gate = None;
    let token: String = s
        .chars()
        .take_while(|c| !c.is_whitespace() && *c != ':')
        .collect();
    if token.to_ascii_lowercase().starts_with("g-")
        && let Ok(g) = GateId::new(&token)
    {
        gate = Some(g);
        s = s[token.len()..].trim_start();
    }
    if let Some(stripped) = s.strip_prefix(':') {
        s = stripped;
    }
    let mut note = s.trim().to_owned();
    if note.is_empty() {
        note = rest.trim().to_owned();
    } else if !rest.trim().is_empty() {
        note.push('\n');
        note.push_str(rest.trim_end());
    }
    let (note, note_truncated) = cap_note(&note);
    Parsed::Command(ParsedCommand {
        command: Command::Changes(note),
        gate,
        note_truncated,
    })
}

/// Drops control characters (other than newline and tab) and cuts at [`MAX_NOTE_CHARS`].
fn cap_note(note: &str) -> (String, bool) {
    let clean: String = note
        .chars()
        .filter(|c| !c.is_control() || matches!(c, '\n' | '\t'))
        .collect();
    let count = clean.chars().count();
    if count > MAX_NOTE_CHARS {
        (clean.chars().take(MAX_NOTE_CHARS).collect(), true)
    } else {
        (clean, false)
    }
}
