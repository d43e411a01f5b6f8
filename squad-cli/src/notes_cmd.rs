//! `squad notes write | show | list | carry | verify`: commit-scoped agent notes under
//! `refs/notes/squad/<ns>`.

use serde_json::{Map, Value};
use squad_model::{AgentName, EntryId, NoteEntry, NoteType, Timestamp};
use squad_notes::format::parse_note_sourced;
use squad_notes::{GixNotes, Notes, NotesBackend, Oid};

use crate::ctx::{CliError, CmdResult, Ctx, errln, outln};

/// Arguments of `squad notes`.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Example:\n  squad notes write --agent data --type decision --fields '{\"decision\":\"Use JWT RS256\"}' --promote\n  squad notes show --agent data HEAD --json\n  squad notes setup && squad notes sync\n  squad notes promote --dry-run"
)]
pub(crate) struct Args {
    #[command(subcommand)]
    command: NotesCommand,
}

#[derive(Debug, clap::Subcommand)]
enum NotesCommand {
    /// Add one entry to the note of a commit in refs/notes/squad/NAMESPACE.
    Write(WriteArgs),
    /// Show the entries of one commit in a namespace, oldest first.
    Show(ShowInput),
    /// List the commits that have a note in a namespace.
    List(ListInput),
    /// Configure fetching notes into refs/notes/remotes/REMOTE/squad/* (idempotent).
    Setup(crate::notes_setup_cmd::SetupArgs),
    /// Fetch, merge entry by entry and push the squad notes with a lease (retries lost races).
    Sync(crate::notes_sync_cmd::SyncArgs),
    /// Promote flagged entries on the default branch to decisions.md on squad-state, once.
    Promote(crate::notes_promote_cmd::PromoteArgs),
    /// Archive flagged entries of a closed, unmerged branch to research/ on squad-state, once.
    Archive(crate::notes_promote_cmd::ArchiveArgs),
    /// Copy the entries of a squash-merged or rebased PR (BASE..HEAD) onto the commit that landed.
    Carry(CarryArgs),
    /// Check the SSH signatures of the entries on one object against gpg.ssh.allowedSignersFile.
    Verify(VerifyArgs),
}

#[derive(Debug, clap::Args)]
#[command(
    after_help = "Example:\n  squad notes write --agent data --type decision \\\n    --fields '{\"decision\":\"Use JWT RS256\",\"reasoning\":\"auth.go:47\"}' --promote\n  squad notes write --agent data --type progress --content @report.md\n  git log -1 --format=%B | squad notes write --agent data --type progress --content -\n\nRetries: without --id every run writes a new entry, so a retried run after an\nerror or a timeout may write the entry twice. Pass --id with an id you generated\nonce (a ULID or a UUIDv7) and retry as often as needed: the same write again is a\nno-op (exit 0, nothing written), and a different entry with that id is refused\n(exit 2). Entries are append-only: correct one with a new entry whose fields\nname it: --fields '{\"supersedes\":\"<id>\", ...}'."
)]
struct WriteArgs {
    #[command(flatten)]
    input: WriteInput,
    /// Sign the entry with your SSH signing key (git config gpg.format=ssh, user.signingKey).
    #[arg(long)]
    sign: bool,
}

/// What `squad notes write` and the MCP tool `notes_write` take (the tool's input schema is
/// derived from this type; the names are the long flags).
#[derive(Debug, clap::Args, serde::Deserialize, schemars::JsonSchema)]
#[command(group(clap::ArgGroup::new("body").required(true).args(["fields", "content"])))]
#[serde(deny_unknown_fields)]
pub(crate) struct WriteInput {
    /// The writing agent (lowercase a-z, 0-9, '-', '_'; 1 to 64 characters).
    #[arg(long, value_name = "name")]
    pub(crate) agent: String,
    /// The entry type.
    #[arg(long = "type", value_name = "type",
          value_parser = clap::builder::PossibleValuesParser::new(squad_model::NoteType::ALL.map(|t| t.as_str())))]
    #[serde(rename = "type")]
    #[schemars(schema_with = "crate::mcp::schema::note_type")]
    pub(crate) kind: String,
    /// A JSON object merged into the entry (fields or content is required). At the command
    /// line: the object's text, @FILE to read it from a file, - from stdin.
    #[arg(long, value_name = "json-object")]
    #[serde(default)]
    pub(crate) fields: Option<crate::mcp::schema::JsonObjectText>,
    /// Free text for the entry's `content` (fields or content is required). At the command
    /// line: @FILE reads it from a file, - from stdin.
    #[arg(long, value_name = "text")]
    #[serde(default)]
    pub(crate) content: Option<String>,
    /// The namespace to write: the agent's own (default), `research` or `review`.
    #[arg(long, value_name = "ns")]
    #[serde(default)]
    pub(crate) namespace: Option<String>,
    /// The commit to annotate (default HEAD).
    #[arg(long, value_name = "rev", default_value = "HEAD")]
    #[serde(default = "head")]
    #[schemars(default = "head")]
    pub(crate) commit: String,
    /// The entry id (a ULID or UUIDv7): makes a retried write a no-op, and a different entry
    /// with that id is refused.
    #[arg(long, value_name = "id")]
    #[serde(default)]
    pub(crate) id: Option<String>,
    /// Set `promote_to_permanent: true` (Ralph copies it to decisions.md after merge).
    #[arg(long)]
    #[serde(default)]
    pub(crate) promote: bool,
    /// Set `archive_on_close: true` (Ralph archives it even when the PR is closed).
    #[arg(long)]
    #[serde(default)]
    pub(crate) archive: bool,
}

fn head() -> String {
    "HEAD".to_owned()
}

/// What `squad notes show` and the MCP tool `notes_show` take.
#[derive(Debug, clap::Args, serde::Deserialize, schemars::JsonSchema)]
#[command(
    after_help = "Example:\n  squad notes show --agent data HEAD~1 --json\n  squad notes show --agent data v1.0      # an annotated tag's own note\n  squad notes show --agent data 0123456789abcdef0123456789abcdef01234567"
)]
#[serde(deny_unknown_fields)]
pub(crate) struct ShowInput {
    /// The namespace to read (an agent name, `research` or `review`).
    #[arg(long, value_name = "ns")]
    pub(crate) agent: String,
    /// The object whose note to show: any revision, or a full object id (present or not);
    /// default HEAD.
    #[arg(value_name = "rev", default_value = "HEAD")]
    #[serde(default = "head", alias = "commit")]
    #[schemars(default = "head")]
    pub(crate) rev: String,
}

/// What `squad notes list` and the MCP tool `notes_list` take.
#[derive(Debug, clap::Args, serde::Deserialize, schemars::JsonSchema)]
#[command(after_help = "Example:\n  squad notes list --agent research --json")]
#[serde(deny_unknown_fields)]
pub(crate) struct ListInput {
    /// The namespace to list (an agent name, `research` or `review`).
    #[arg(long, value_name = "ns")]
    pub(crate) agent: String,
}

#[derive(Debug, clap::Args)]
#[command(
    group(clap::ArgGroup::new("which").args(["namespace", "all"])),
    after_help = "Example:\n  squad notes carry origin/main..feature/login --to origin/main\n  squad notes carry $BASE..$HEAD --to $MERGE --namespace data --json"
)]
struct CarryArgs {
    /// The commits of the PR: BASE..HEAD.
    #[arg(value_name = "base..head")]
    range: String,
    /// The commit that landed (the squash or rebase result).
    #[arg(long, value_name = "commit")]
    to: String,
    /// Carry only this namespace.
    #[arg(long, value_name = "ns")]
    namespace: Option<String>,
    /// Carry every refs/notes/squad/* namespace (the default).
    #[arg(long)]
    all: bool,
}

#[derive(Debug, clap::Args)]
#[command(
    after_help = "Example:\n  squad notes verify --agent data HEAD --json\n\nStatuses: signed-verified (a valid signature by a key that\ngpg.ssh.allowedSignersFile lists for the namespace's agent), signed-unknown-key\n(valid, but the key is not listed for that principal, or there is no\nallowed-signers file), signed-bad (exit 1), unsigned."
)]
struct VerifyArgs {
    /// The namespace to check (an agent name, `research` or `review`).
    #[arg(long, value_name = "ns")]
    agent: String,
    /// The object whose entries to check: any revision, or a full object id.
    #[arg(value_name = "rev", default_value = "HEAD")]
    rev: String,
}

pub(crate) fn run(args: &Args, ctx: &Ctx) -> CmdResult {
    match &args.command {
        NotesCommand::Write(a) => write(a, ctx),
        NotesCommand::Show(a) => show(a, ctx),
        NotesCommand::List(a) => list(a, ctx),
        NotesCommand::Setup(a) => crate::notes_setup_cmd::run(a, ctx),
        NotesCommand::Sync(a) => crate::notes_sync_cmd::run(a, ctx),
        NotesCommand::Promote(a) => crate::notes_promote_cmd::promote(a, ctx),
        NotesCommand::Archive(a) => crate::notes_promote_cmd::archive(a, ctx),
        NotesCommand::Carry(a) => carry(a, ctx),
        NotesCommand::Verify(a) => verify(a, ctx),
    }
}

/// Maps a library error to the CLI's exit codes: caller errors are 2, the rest 1. A lock file
/// left by a killed process gets a hint saying how to clear it.
pub(crate) fn lib_err(e: squad_notes::Error) -> CliError {
    if e.is_user_error() {
        CliError::usage(e.to_string())
    } else if e.kind() == squad_notes::ErrorKind::Locked {
        let err = CliError::failure(e.to_string());
        match e.path() {
            Some(path) => err.with_hint(format!(
                "if no git command is running in this repository, remove it: rm '{}' (or run `squad doctor --fix`)",
                path.display()
            )),
            None => err,
        }
    } else {
        CliError::failure(crate::ctx::with_sources(&e))
    }
}

/// The most `--fields` or `--content` reads from a file or stdin: 16 MiB (a note is a few
/// hundred bytes; the bound keeps `@/dev/zero` from filling the memory).
const MAX_INPUT_BYTES: u64 = 16 << 20;

/// The text of `--<flag>`: the value itself, `@FILE` for a file's contents, `-` for stdin (as
/// `gh -F` and `git notes -F` take them), at most [`MAX_INPUT_BYTES`]. Errors name the flag
/// and the file.
pub(crate) fn input_text(ctx: &Ctx, flag: &str, value: &str) -> Result<String, CliError> {
    ctx.text_arg(&format!("--{flag}"), value, MAX_INPUT_BYTES)
}

fn name(value: &str, what: &str) -> Result<AgentName, CliError> {
    AgentName::new(value).map_err(|e| CliError::usage(format!("{what}: {e}")))
}

/// An error opening the repository's notes or state: bad usage, with the way out.
pub(crate) fn not_repo(e: squad_notes::Error) -> CliError {
    CliError::usage(e.to_string()).with_hint("run inside a git repository or pass -C <path>")
}

fn open(ctx: &Ctx) -> Result<GixNotes, CliError> {
    ctx.repo_root()?;
    GixNotes::discover(&ctx.dir).map_err(not_repo)
}

/// Whose key must sign an entry by `author` in `namespace`: in a shared namespace (`research`,
/// `review`) the author's, in an agent's own namespace only that agent's.
pub(crate) fn signer<'a>(namespace: &'a str, author: &'a str) -> &'a str {
    if AgentName::new(namespace).is_ok_and(|n| n.is_shared()) {
        author
    } else {
        namespace
    }
}

fn resolve(backend: &GixNotes, rev: &str) -> Result<Oid, CliError> {
    backend.resolve_commit(rev).map_err(lib_err)
}

/// The object `rev` names, resolved as `git notes show` resolves it, and its note in `ns`: an
/// annotated tag with a note of its own is the tag; one without is followed to what it tags.
fn resolve_noted(
    notes: &Notes<GixNotes>,
    ns: &AgentName,
    rev: &str,
) -> Result<(Oid, Option<Vec<u8>>), CliError> {
    let mut object = notes.backend().resolve_object(rev).map_err(lib_err)?;
    for _ in 0..16 {
        let raw = notes.read_raw(ns, &object).map_err(lib_err)?;
        if raw.is_some() {
            return Ok((object, raw));
        }
        match notes.backend().tag_target(&object).map_err(lib_err)? {
            Some(target) => object = target,
            None => return Ok((object, None)),
        }
    }
    Ok((object, None))
}

fn build_entry(
    args: &WriteInput,
    agent: &AgentName,
    fields: Option<&str>,
    content: Option<String>,
) -> Result<NoteEntry, CliError> {
    let kind: NoteType = args
        .kind
        .parse()
        .map_err(|e: squad_model::Error| CliError::usage(e.to_string()))?;
    let id = match &args.id {
        Some(id) => EntryId::new(id).map_err(|e| CliError::usage(format!("--id: {e}")))?,
        None => EntryId::generate(),
    };
    let mut obj = Map::new();
    obj.insert("id".into(), Value::String(id.to_string()));
    obj.insert("agent".into(), Value::String(agent.to_string()));
    obj.insert(
        "timestamp".into(),
        Value::String(Timestamp::now().to_string()),
    );
    obj.insert("type".into(), Value::String(kind.to_string()));
    if let Some(fields) = fields {
        let value: Value = serde_json::from_str(fields)
            .map_err(|e| CliError::usage(format!("--fields is not valid JSON: {e}")))?;
        let Value::Object(fields) = value else {
            return Err(CliError::usage("--fields must be a JSON object"));
        };
        for (key, value) in fields {
            let fixed = match key.as_str() {
                "agent" => Some(agent.as_str()),
                "type" => Some(kind.as_str()),
                _ => None,
            };
            if let Some(fixed) = fixed
                && value.as_str() != Some(fixed)
            {
                return Err(CliError::usage(format!(
                    "--fields sets {key:?} to {value}, which contradicts --{} {fixed}",
                    if key == "type" { "type" } else { "agent" }
                )));
            }
            if key == "id"
                && let Some(given) = &args.id
                && value.as_str() != Some(given.as_str())
            {
                return Err(CliError::usage(format!(
                    "--fields sets \"id\" to {value}, which contradicts --id {given}"
                )));
            }
            obj.insert(key, value);
        }
    }
    if let Some(content) = content {
        obj.insert("content".into(), Value::String(content));
    }
    if args.promote {
        obj.insert("promote_to_permanent".into(), Value::Bool(true));
    }
    if args.archive {
        obj.insert("archive_on_close".into(), Value::Bool(true));
    }
    NoteEntry::from_value(Value::Object(obj))
        .map_err(|e| CliError::usage(format!("invalid note entry: {e}")))
}

fn write(args: &WriteArgs, ctx: &Ctx) -> CmdResult {
    let input = &args.input;
    // Names are checked before any input is read (a bad name never waits for stdin).
    name(&input.agent, "--agent")?;
    if let Some(ns) = &input.namespace {
        name(ns, "--namespace")?;
    }
    if input.fields.as_ref().map(|f| f.0.as_str()) == Some("-")
        && input.content.as_deref() == Some("-")
    {
        return Err(CliError::usage(
            "only one of --fields and --content can read stdin",
        ));
    }
    let fields = input
        .fields
        .as_ref()
        .map(|v| input_text(ctx, "fields", &v.0))
        .transpose()?;
    let content = input
        .content
        .as_deref()
        .map(|v| input_text(ctx, "content", v))
        .transpose()?;
    let entry = write_entry(input, fields.as_deref(), content, args.sign, ctx)?;
    if ctx.json {
        ctx.print_json(&entry.to_value())?;
    } else {
        outln!(ctx, "{}", entry.id)?;
    }
    Ok(0)
}

/// `notes write` without its printing: writes the entry that `input` describes, with the texts
/// of `--fields` and `--content` as given (the CLI reads `@FILE` and `-` first; an MCP tool call
/// passes them as they are), and returns it (the `--json` document).
pub(crate) fn write_entry(
    input: &WriteInput,
    fields: Option<&str>,
    content: Option<String>,
    sign: bool,
    ctx: &Ctx,
) -> Result<NoteEntry, CliError> {
    let agent = name(&input.agent, "--agent")?;
    let namespace = match &input.namespace {
        Some(ns) => name(ns, "--namespace")?,
        None => agent.clone(),
    };
    if fields.is_none() && content.is_none() {
        return Err(CliError::usage("give --fields or --content (or both)"));
    }
    let mut entry = build_entry(input, &agent, fields, content)?;
    let backend = open(ctx)?;
    let commit = resolve(&backend, &input.commit)?;
    let notes = Notes::new(backend);
    if input.id.is_some() {
        // A retry of a write with a fixed id: the stored entry's time is the entry's time, so
        // the same write again is byte-identical (a no-op) and anything else is refused.
        let raw = notes.read_raw(&namespace, &commit).map_err(lib_err)?;
        if let Some(raw) = raw
            && let Some(stored) = parse_note_sourced(&raw)
                .entries
                .into_iter()
                .find(|e| e.entry.id == entry.id)
        {
            entry.timestamp = stored.entry.timestamp;
        }
    }
    if sign {
        let root = ctx.repo_root()?;
        let key = squad_notes::sign::SigningKey::from_git_config(&root).map_err(lib_err)?;
        let sig = key.sign(&entry.to_value()).map_err(lib_err)?;
        entry
            .extra
            .insert(squad_notes::sign::SIG_KEY.into(), Value::String(sig));
    }
    notes.write(&namespace, &commit, &entry).map_err(lib_err)?;
    Ok(entry)
}

/// What `notes show` found on one object.
pub(crate) struct Shown {
    /// Each entry as its author wrote it (the `--json` array).
    pub(crate) values: Vec<Value>,
    /// The entries, parsed (for the text output).
    entries: Vec<NoteEntry>,
    /// One `warning: <object> line <n>: <problem>` per line that is not a valid entry.
    pub(crate) warnings: Vec<String>,
}

/// `notes show` without its printing.
pub(crate) fn show_entries(args: &ShowInput, ctx: &Ctx) -> Result<Shown, CliError> {
    let namespace = name(&args.agent, "--agent")?;
    let notes = Notes::new(open(ctx)?);
    let (object, raw) = resolve_noted(&notes, &namespace, &args.rev)?;
    let raw = raw.unwrap_or_default();
    let note = parse_note_sourced(&raw);
    let warnings = note
        .unparsed
        .iter()
        .map(|u| format!("warning: {object} line {}: {}", u.line, u.error))
        .collect();
    // Each entry as its author wrote it (key order, timestamp spelling, null fields).
    let values = note
        .entries
        .iter()
        .map(|e| serde_json::from_str(e.text(&raw)).unwrap_or_else(|_| e.entry.to_value()))
        .collect();
    Ok(Shown {
        values,
        entries: note.entries.into_iter().map(|e| e.entry).collect(),
        warnings,
    })
}

fn show(args: &ShowInput, ctx: &Ctx) -> CmdResult {
    let shown = show_entries(args, ctx)?;
    for w in &shown.warnings {
        errln!("{w}");
    }
    if ctx.json {
        ctx.print_json(&Value::Array(shown.values))?;
    } else {
        for e in &shown.entries {
            outln!(ctx, "{} {} {} {}", e.timestamp, e.agent, e.kind, e.id)?;
            let text = e
                .content
                .as_deref()
                .or(e.decision.as_deref())
                .or(e.topic.as_deref());
            if let Some(text) = text {
                for line in text.lines() {
                    outln!(ctx, "    {line}")?;
                }
            }
        }
    }
    Ok(0)
}

/// The noted objects with their number of entries, and (when asked) their types.
pub(crate) type Listed = (Vec<(Oid, usize)>, Vec<squad_notes::ObjectType>);

/// The commits (any objects) with a note in `args.agent`'s namespace and the number of valid
/// entries in each; with `types`, also each object's type (`commit`, `tag`, ..., `missing`).
pub(crate) fn list_notes(args: &ListInput, ctx: &Ctx, types: bool) -> Result<Listed, CliError> {
    let namespace = name(&args.agent, "--agent")?;
    let backend = open(ctx)?;
    // Only the number of valid entries per note is printed: count them without building them.
    let all: Vec<(Oid, usize)> = match backend
        .tip(&squad_notes::NotesRef::squad(&namespace))
        .map_err(lib_err)?
    {
        Some(tip) => backend
            .read_all_map(&tip, squad_notes::format::count_entries)
            .map_err(lib_err)?,
        None => Vec::new(),
    };
    let kinds = if types {
        let objects: Vec<Oid> = all.iter().map(|(o, _)| o.clone()).collect();
        backend.object_types(&objects).map_err(lib_err)?
    } else {
        Vec::new()
    };
    Ok((all, kinds))
}

/// The `notes list --json` document as a value (the CLI writes the same text piece by piece).
pub(crate) fn list_json(all: &[(Oid, usize)], types: &[squad_notes::ObjectType]) -> Value {
    Value::Array(
        all.iter()
            .zip(types)
            .map(|((commit, entries), kind)| {
                serde_json::json!({"commit": commit.as_str(), "entries": entries, "type": kind.as_str()})
            })
            .collect(),
    )
}

fn list(args: &ListInput, ctx: &Ctx) -> CmdResult {
    let namespace = name(&args.agent, "--agent")?;
    let backend = open(ctx)?;
    let tip = backend
        .tip(&squad_notes::NotesRef::squad(&namespace))
        .map_err(lib_err)?;
    let mut out = ListWriter::new(ctx);
    if let Some(tip) = tip {
        // One window of notes at a time, handed over in batches: walked, counted, typed,
        // written, dropped, so memory does not grow with the number of notes. A failed write
        // stops the read; its error (a closed pipe ends the command quietly) is the command's.
        // A read that fails after the first batch leaves the output cut short (exit 1), as a
        // failing `git notes list` does.
        let mut failed = None;
        let mut written = |result: Result<(), CliError>| {
            result.map_err(|e| {
                failed = Some(e);
                squad_notes::Error::new(
                    squad_notes::ErrorKind::Backend,
                    "notes.list",
                    "cannot write the list",
                )
            })
        };
        let count = squad_notes::format::count_entries;
        let walked = if ctx.json {
            backend
                .stream_windows_typed(&tip, LIST_WINDOW, count, |batch| written(out.typed(&batch)))
        } else {
            backend.stream_windows(&tip, LIST_WINDOW, count, |batch| written(out.plain(&batch)))
        };
        if let Some(e) = failed {
            return Err(e);
        }
        walked.map_err(lib_err)?;
    }
    out.finish()?;
    Ok(0)
}

/// Writes `notes list` as it is read, in pieces of [`OUT_CHUNK`] bytes: lines of
/// `<object> <entries>`, or with `--json` the array serde_json's pretty printer writes, without
/// building a value per note (100k notes are 100k maps).
struct ListWriter<'c> {
    ctx: &'c Ctx,
    text: String,
    /// Notes written so far (the JSON array's separators depend on it).
    written: usize,
    digits: itoa::Buffer,
}

impl<'c> ListWriter<'c> {
    fn new(ctx: &'c Ctx) -> Self {
        Self {
            ctx,
            text: String::with_capacity(OUT_CHUNK + 256),
            written: 0,
            digits: itoa::Buffer::new(),
        }
    }

    /// Writes the notes of `batch` as elements of the JSON array.
    fn typed(&mut self, batch: &[(Oid, usize, squad_notes::ObjectType)]) -> Result<(), CliError> {
        for (commit, entries, kind) in batch {
            // Each element's closing brace waits for the next element's comma (or the end).
            // Pieces pushed one by one: `write!` costs several times more per note.
            self.text.push_str(if self.written == 0 {
                "[\n  {\n    \"commit\": \""
            } else {
                ",\n  {\n    \"commit\": \""
            });
            self.text.push_str(commit.as_str());
            self.text.push_str("\",\n    \"entries\": ");
            self.text.push_str(self.digits.format(*entries));
            self.text.push_str(",\n    \"type\": \"");
            self.text.push_str(kind.as_str());
            self.text.push_str("\"\n  }");
            self.written += 1;
            self.flush(false)?;
        }
        Ok(())
    }

    /// Writes the notes of `batch` as lines of `<object> <entries>`.
    fn plain(&mut self, batch: &[(Oid, usize)]) -> Result<(), CliError> {
        for (commit, entries) in batch {
            self.text.push_str(commit.as_str());
            self.text.push(' ');
            self.text.push_str(self.digits.format(*entries));
            self.text.push('\n');
            self.written += 1;
            self.flush(false)?;
        }
        Ok(())
    }

    /// Ends the output (closes the JSON array) and writes what is left.
    fn finish(mut self) -> Result<(), CliError> {
        if self.ctx.json {
            self.text
                .push_str(if self.written == 0 { "[]\n" } else { "\n]\n" });
        }
        self.flush(true)
    }

    fn flush(&mut self, force: bool) -> Result<(), CliError> {
        if force || self.text.len() >= OUT_CHUNK {
            self.ctx.out_bytes(self.text.as_bytes())?;
            self.text.clear();
        }
        Ok(())
    }
}

/// The size of the pieces `notes list` writes its output in.
const OUT_CHUNK: usize = 64 * 1024;

/// The notes `notes list` reads at a time (see [`GixNotes::stream_windows`]): a namespace of up
/// to about 130k notes is one window, read as fast as a whole read; a larger one is read in
/// windows of about half as many, each sweeping the pack. Either way the heap peaks at about
/// 40 MiB (bench `notes_scale`).
const LIST_WINDOW: usize = 1 << 17;

fn carry(args: &CarryArgs, ctx: &Ctx) -> CmdResult {
    let Some((base, head)) = args
        .range
        .split_once("..")
        .filter(|(b, h)| !b.is_empty() && !h.is_empty() && !h.starts_with('.'))
    else {
        return Err(CliError::usage(format!(
            "invalid range {:?}: expected BASE..HEAD (the commits of the merged PR)",
            args.range
        )));
    };
    let only = args
        .namespace
        .as_deref()
        .map(|ns| name(ns, "--namespace"))
        .transpose()?;
    let backend = open(ctx)?;
    let to = resolve(&backend, &args.to)?;
    let commits = backend.commits_between(base, head).map_err(lib_err)?;
    let namespaces: Vec<AgentName> = match only {
        Some(ns) => vec![ns],
        None => backend
            .list_refs(squad_notes::sync::SQUAD_PREFIX)
            .map_err(lib_err)?
            .into_iter()
            .filter_map(|(r, _)| {
                r.as_str()
                    .strip_prefix(squad_notes::sync::SQUAD_PREFIX)
                    .and_then(|n| AgentName::new(n).ok())
            })
            .collect(),
    };
    let notes = Notes::new(backend);
    let mut carried = Vec::new();
    let mut skipped = 0;
    for ns in &namespaces {
        let report = notes.carry(ns, &commits, &to).map_err(lib_err)?;
        skipped += report.skipped;
        carried.extend(
            report
                .carried
                .into_iter()
                .map(|(id, from)| (ns.clone(), id, from)),
        );
    }
    if ctx.json {
        ctx.print_json(&serde_json::json!({
            "carried": carried.iter().map(|(_, id, _)| id.to_string()).collect::<Vec<_>>(),
            "skipped": skipped,
            "to": to.as_str(),
            "commits": commits.len(),
        }))?;
    } else {
        for (ns, id, from) in &carried {
            outln!(ctx, "carried {id} ({ns}) from {from}")?;
        }
        outln!(
            ctx,
            "carried {} onto {to}, skipped {skipped} already there ({} in {})",
            carried.len(),
            crate::ctx::count(commits.len(), "commit"),
            args.range
        )?;
    }
    Ok(0)
}

fn verify(args: &VerifyArgs, ctx: &Ctx) -> CmdResult {
    use squad_notes::sign::{AllowedSigners, SignatureStatus, verify_entry};
    let namespace = name(&args.agent, "--agent")?;
    let root = ctx.repo_root()?;
    let notes = Notes::new(open(ctx)?);
    let (object, raw) = resolve_noted(&notes, &namespace, &args.rev)?;
    let raw = raw.unwrap_or_default();
    let allowed = AllowedSigners::from_git_config(&root).map_err(lib_err)?;
    let note = parse_note_sourced(&raw);
    for u in &note.unparsed {
        errln!("warning: {object} line {}: {}", u.line, u.error);
    }
    let mut bad = false;
    let mut rows = Vec::new();
    for e in &note.entries {
        let principal = signer(namespace.as_str(), e.entry.agent.as_str());
        let v = verify_entry(e.text(&raw), principal, allowed.as_ref());
        bad |= v.status == SignatureStatus::Bad;
        rows.push((e.entry.id.to_string(), v));
    }
    if ctx.json {
        ctx.print_json(&Value::Array(
            rows.iter()
                .map(|(id, v)| {
                    serde_json::json!({
                        "id": id,
                        "status": v.status.as_str(),
                        "principal": v.principals.first(),
                    })
                })
                .collect(),
        ))?;
    } else {
        for (id, v) in &rows {
            match v.principals.first() {
                Some(p) => outln!(ctx, "{id} {} ({p})", v.status)?,
                None => outln!(ctx, "{id} {}", v.status)?,
            }
        }
        if allowed.is_none() {
            errln!(
                "warning: no allowed-signers file (git config gpg.ssh.allowedSignersFile): no entry can be signed-verified"
            );
        }
    }
    if bad {
        let n = rows
            .iter()
            .filter(|(_, v)| v.status == SignatureStatus::Bad)
            .count();
        return Err(CliError::failure(format!(
            "{n} entr{} on {object} signed-bad: the signature does not match the entry",
            if n == 1 { "y is" } else { "ies are" }
        )));
    }
    Ok(0)
}
