//! The read-only resources of `squad mcp`, with stable URIs:
//!
//! - `squad://memory/<tier>/<name>`: a memory file (`hot`, `cold`, `archive` of an agent, `wiki`
//!   of a topic), read through squad-memory's store on squad-fs (plain names only, no symlink
//!   below the state directory followed, files over the cap refused);
//! - `squad://state/decisions.md`: `decisions.md` on the `squad-state` branch;
//! - `squad://schema/<name>`: the JSON Schemas squad ships (`note-entry`, `notify-state`,
//!   `approval-state`, `trace`).
//!
//! Everything is read afresh on each request.

use rmcp::ErrorData;
use rmcp::model::{Resource, ResourceContents, ResourceTemplate};
use squad_memory::{DocRef, FsStore, MemoryStore, Tier};
use squad_notes::state::{OrphanBranchStore, StateStore};

use crate::ctx::{CliError, Ctx};

/// The scheme and authority of every URI.
const PREFIX: &str = "squad://";
/// The state branch file served.
const DECISIONS: &str = "decisions.md";

fn schemas() -> Vec<(&'static str, &'static str)> {
    crate::schema_cmd::SchemaName::ALL
        .iter()
        .map(|s| (s.name(), s.text()))
        .collect()
}

fn memory_uri(tier: Tier, name: &str) -> String {
    format!("{PREFIX}memory/{tier}/{name}", tier = tier.as_str())
}

fn tier_title(tier: Tier) -> &'static str {
    match tier {
        Tier::Hot => "hot memory (the current session)",
        Tier::Cold => "cold memory (past sessions)",
        Tier::Wiki => "wiki topic (durable reference)",
        Tier::Archive => "archived memory",
    }
}

fn internal(e: &CliError) -> ErrorData {
    ErrorData::internal_error(e.message().to_owned(), None)
}

/// Every resource that exists now.
pub(crate) fn list(ctx: &Ctx) -> Result<Vec<Resource>, ErrorData> {
    let mut out = Vec::new();
    if let Ok(dir) = ctx.existing_state_dir() {
        let store = FsStore::new(dir);
        for tier in Tier::ALL {
            let mut names = store.list(tier).unwrap_or_default();
            names.sort();
            for name in names {
                out.push(
                    Resource::new(memory_uri(tier, &name), format!("{tier}/{name}.md"))
                        .with_title(format!("{name}: {}", tier_title(tier)))
                        .with_mime_type("text/markdown"),
                );
            }
        }
    }
    if let Ok(Some(_)) = decisions(ctx) {
        out.push(
            Resource::new(format!("{PREFIX}state/{DECISIONS}"), DECISIONS)
                .with_title("Promoted decisions (squad-state branch)")
                .with_mime_type("text/markdown"),
        );
    }
    for (name, _) in schemas() {
        out.push(
            Resource::new(
                format!("{PREFIX}schema/{name}"),
                format!("{name}.schema.json"),
            )
            .with_title(format!("JSON Schema: {name}"))
            .with_mime_type("application/schema+json"),
        );
    }
    Ok(out)
}

/// The URI templates of the memory files.
pub(crate) fn templates() -> Vec<ResourceTemplate> {
    Tier::ALL
        .into_iter()
        .map(|tier| {
            let var = if tier == Tier::Wiki { "topic" } else { "agent" };
            ResourceTemplate::new(
                format!("{PREFIX}memory/{}/{{{var}}}", tier.as_str()),
                format!("memory-{}", tier.as_str()),
            )
            .with_title(tier_title(tier))
            .with_mime_type("text/markdown")
        })
        .collect()
}

fn decisions(ctx: &Ctx) -> Result<Option<Vec<u8>>, CliError> {
    let root = ctx.repo_root()?;
    let store = OrphanBranchStore::open(&root).map_err(crate::notes_cmd::lib_err)?;
    store.read(DECISIONS).map_err(crate::notes_cmd::lib_err)
}

fn not_found(uri: &str) -> ErrorData {
    ErrorData::resource_not_found(
        format!("no resource {uri}"),
        Some(serde_json::json!({"uri": uri})),
    )
}

/// The contents of `uri`.
pub(crate) fn read(ctx: &Ctx, uri: &str) -> Result<ResourceContents, ErrorData> {
    let Some(path) = uri.strip_prefix(PREFIX) else {
        return Err(not_found(uri));
    };
    let text = |text: String, mime: &str| {
        ResourceContents::text(text, uri.to_owned()).with_mime_type(mime.to_owned())
    };
    if let Some(rest) = path.strip_prefix("memory/") {
        let (tier, name) = rest.split_once('/').ok_or_else(|| not_found(uri))?;
        let tier = Tier::ALL
            .into_iter()
            .find(|t| t.as_str() == tier)
            .ok_or_else(|| not_found(uri))?;
        let doc = DocRef::new(tier, name).map_err(|e| {
            ErrorData::invalid_params(format!("{uri}: {e}"), Some(serde_json::json!({"uri": uri})))
        })?;
        let dir = ctx.existing_state_dir().map_err(|_| not_found(uri))?;
        let store = FsStore::new(dir);
        return match store.read(&doc) {
            Ok(Some(t)) => Ok(text(t, "text/markdown")),
            Ok(None) => Err(not_found(uri)),
            Err(e) => Err(ErrorData::internal_error(format!("{uri}: {e}"), None)),
        };
    }
    if path == format!("state/{DECISIONS}") {
        return match decisions(ctx).map_err(|e| internal(&e))? {
            Some(bytes) => match String::from_utf8(bytes) {
                Ok(t) => Ok(text(t, "text/markdown")),
                Err(_) => Err(ErrorData::internal_error(
                    format!("{uri}: not valid UTF-8"),
                    None,
                )),
            },
            None => Err(not_found(uri)),
        };
    }
    if let Some(name) = path.strip_prefix("schema/") {
        return schemas()
            .into_iter()
            .find(|(n, _)| *n == name)
            .map(|(_, t)| text(t.to_owned(), "application/schema+json"))
            .ok_or_else(|| not_found(uri));
    }
    Err(not_found(uri))
}
