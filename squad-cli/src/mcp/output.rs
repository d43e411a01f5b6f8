//! The output schemas of the tools (`outputSchema` in `tools/list`): the shape of each tool's
//! structured result, which is also the JSON document of its single text block.
//!
//! They state what a client may rely on (the keys that are always there and their types) and
//! allow more keys, as the `--json` documents they describe may grow. Every result may carry
//! `messages`: the `note:` and `warning:` lines the command would print on stderr (such as "the
//! human declined"), inside the document so that its text stays one JSON document.

use serde_json::{Map, Value, json};

/// `messages`, allowed in every result.
fn messages() -> Value {
    json!({
        "type": "array",
        "items": { "type": "string" },
        "description": "The note: and warning: lines the command prints on stderr, when there are any."
    })
}

/// An object schema with `properties` (plus `messages`) and `required` keys.
fn object(description: &str, properties: Value, required: &[&str]) -> Map<String, Value> {
    let mut props = match properties {
        Value::Object(p) => p,
        _ => Map::new(),
    };
    props.insert("messages".to_owned(), messages());
    let mut o = Map::new();
    o.insert("type".to_owned(), json!("object"));
    o.insert("description".to_owned(), json!(description));
    o.insert("properties".to_owned(), Value::Object(props));
    o.insert("required".to_owned(), json!(required));
    o
}

/// The note-entry schema squad-model ships, without its `$schema` and `$id` (it is nested).
fn note_entry() -> Value {
    let mut schema: Map<String, Value> =
        serde_json::from_str(squad_model::schema::NOTE_ENTRY_SCHEMA).unwrap_or_default();
    schema.remove("$schema");
    schema.remove("$id");
    Value::Object(schema)
}

const NULLABLE_STRING: &str = "string|null";

fn t(kind: &str) -> Value {
    match kind {
        NULLABLE_STRING => json!({ "type": ["string", "null"] }),
        other => json!({ "type": other }),
    }
}

pub(crate) fn notes_write() -> Map<String, Value> {
    let mut schema = match note_entry() {
        Value::Object(o) => o,
        _ => Map::new(),
    };
    if let Some(Value::Object(props)) = schema.get_mut("properties") {
        props.insert("messages".to_owned(), messages());
    }
    schema
}

pub(crate) fn notes_show() -> Map<String, Value> {
    object(
        "The entries of the namespace on the commit, oldest first (`squad notes show --json`).",
        json!({ "entries": { "type": "array", "items": note_entry() } }),
        &["entries"],
    )
}

pub(crate) fn notes_list() -> Map<String, Value> {
    object(
        "The objects with a note in the namespace (`squad notes list --json`).",
        json!({ "notes": { "type": "array", "items": {
            "type": "object",
            "properties": {
                "commit": t("string"),
                "entries": { "type": "integer", "minimum": 0 },
                "type": { "enum": ["commit", "tag", "tree", "blob", "missing"] }
            },
            "required": ["commit", "entries", "type"]
        } } }),
        &["notes"],
    )
}

pub(crate) fn memory_context() -> Map<String, Value> {
    object(
        "The spawn prompt's memory block and its manifest (`squad memory spawn --json`).",
        json!({
            "prompt": t("string"),
            "manifest": {
                "type": "object",
                "properties": {
                    "situation": t("string"),
                    "tiers": t("object"),
                    "loaded": t("array"),
                    "left_out": t("array"),
                    "skipped": t("array"),
                    "total_bytes": { "type": "integer", "minimum": 0 },
                    "estimated_tokens": { "type": "integer", "minimum": 0 }
                },
                "required": ["tiers", "loaded", "left_out", "total_bytes"]
            }
        }),
        &["prompt", "manifest"],
    )
}

pub(crate) fn memory_search() -> Map<String, Value> {
    object(
        "The ranked hits (`squad memory search --json`).",
        json!({ "hits": { "type": "array", "items": {
            "type": "object",
            "properties": {
                "id": t("string"),
                "tier": { "enum": ["hot", "cold", "wiki", "archive"] },
                "score": t("number"),
                "title": t("string"),
                "path": t("string")
            },
            "required": ["id", "tier", "score", "title", "path"]
        } } }),
        &["hits"],
    )
}

/// A memory entry as `memory add --json` prints it.
fn memory_entry_properties() -> Value {
    json!({
        "id": t("string"),
        "heading": t("string"),
        "title": t("string"),
        "date": t(NULLABLE_STRING),
        "kind": t(NULLABLE_STRING),
        "body": t("string"),
        "superseded_by": t(NULLABLE_STRING),
        "line": { "type": "integer", "minimum": 0 }
    })
}

pub(crate) fn memory_add() -> Map<String, Value> {
    object(
        "The entry added to the hot tier (`squad memory add --json`).",
        memory_entry_properties(),
        &["id", "title"],
    )
}

/// A gate record.
fn gate() -> Value {
    json!({
        "type": "object",
        "properties": {
            "id": t("string"),
            "run": t("string"),
            "mode": t("string"),
            "trigger": t("string"),
            "topic": t("string"),
            "awaiting": t("string"),
            "detail": t("string"),
            "created": t("string"),
            "expires": t("string"),
            "state": t("string"),
            "deliveries": t("array")
        },
        "required": ["id", "run", "trigger", "topic", "state"]
    })
}

pub(crate) fn approval_request() -> Map<String, Value> {
    let mut schema = object(
        "The gate record, or `{\"gate\": null, \"reason\": …}` when the mode does not stop here \
         (`squad approval request --json`).",
        json!({ "gate": { "type": "null" }, "reason": t("string") }),
        &[],
    );
    let Value::Object(gate) = gate() else {
        return schema;
    };
    schema.insert(
        "anyOf".to_owned(),
        json!([
            { "required": gate.get("required").cloned().unwrap_or(json!([])) ,
              "properties": gate.get("properties").cloned().unwrap_or(json!({})) },
            { "required": ["gate", "reason"] }
        ]),
    );
    schema
}

pub(crate) fn approval_status() -> Map<String, Value> {
    object(
        "The pending gate(s), the current run, recent decisions and the state files' health \
         (`squad approval status --json`).",
        json!({
            "pending": { "type": ["object", "array", "null"] },
            "current_run": t(NULLABLE_STRING),
            "runs": t("array"),
            "recent": t("array"),
            "notify": { "type": ["object", "null"] },
            "problems": t("array")
        }),
        &["pending", "recent"],
    )
}

pub(crate) fn approval_wait() -> Map<String, Value> {
    object(
        "The gate's state after the wait (`squad approval wait --json`); `pending` when no \
         decision came in time.",
        json!({
            "gate": t("string"),
            "state": { "enum": ["pending", "approved", "approve-all", "changes-requested", "stopped", "expired"] },
            "note": t(NULLABLE_STRING),
            "decision": { "type": ["object", "null"] }
        }),
        &["gate", "state"],
    )
}

pub(crate) fn route_briefing() -> Map<String, Value> {
    object(
        "The leader briefing of the squad (`squad route briefing --json`).",
        json!({
            "squad_id": t("string"),
            "owns_issue_status": t("boolean"),
            "briefing": t("string")
        }),
        &["squad_id", "owns_issue_status", "briefing"],
    )
}
