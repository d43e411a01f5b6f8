//! The JSON Schemas of the tool inputs. They are derived (schemars) from the argument types the
//! CLI parses with clap, so a tool's argument names, types and descriptions are the command's
//! long flags and help texts; this module holds the few pieces a derive cannot see: value types
//! whose names live in a library crate, and the text of a JSON object flag.

use std::borrow::Cow;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::de::Error as _;
use serde_json::{Map, Value};

/// The input schema of a tool taking `T`: draft 2020-12, every subschema inline (no `$ref`,
/// which some clients do not follow), without the Rust type's name and doc.
pub(crate) fn input_schema<T: JsonSchema>() -> Map<String, Value> {
    let mut settings = schemars::generate::SchemaSettings::draft2020_12();
    settings.inline_subschemas = true;
    settings.meta_schema = None;
    let schema = settings.into_generator().into_root_schema_for::<T>();
    let mut object = match schema.to_value() {
        Value::Object(o) => o,
        _ => Map::new(),
    };
    object.remove("title");
    object.remove("description");
    object
        .entry("type")
        .or_insert_with(|| Value::String("object".into()));
    object
        .entry("properties")
        .or_insert_with(|| Value::Object(Map::new()));
    object
}

/// The text of a flag that holds a JSON object (`--fields`). At the command line it is text;
/// a tool call may pass the object itself (or its text).
#[derive(Debug, Clone)]
pub(crate) struct JsonObjectText(pub(crate) String);

impl std::str::FromStr for JsonObjectText {
    type Err = std::convert::Infallible;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Ok(Self(s.to_owned()))
    }
}

impl<'de> serde::Deserialize<'de> for JsonObjectText {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match Value::deserialize(d)? {
            object @ Value::Object(_) => Ok(Self(object.to_string())),
            Value::String(text) => Ok(Self(text)),
            other => Err(D::Error::custom(format!(
                "expected a JSON object, found {}",
                json_kind(&other)
            ))),
        }
    }
}

impl JsonSchema for JsonObjectText {
    fn schema_name() -> Cow<'static, str> {
        "JsonObject".into()
    }
    fn inline_schema() -> bool {
        true
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({"type": "object"})
    }
}

/// What kind of JSON value `v` is, for messages.
pub(crate) fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

fn names(names: impl IntoIterator<Item = &'static str>) -> Schema {
    let names: Vec<&str> = names.into_iter().collect();
    json_schema!({"type": "string", "enum": names})
}

/// A note entry type (`squad_model::NoteType`).
pub(crate) fn note_type(_: &mut SchemaGenerator) -> Schema {
    names(squad_model::NoteType::ALL.map(|t| t.as_str()))
}

/// An approval mode (`squad_notify::Mode`).
pub(crate) fn mode(_: &mut SchemaGenerator) -> Schema {
    names(squad_notify::Mode::ALL.map(|m| m.as_str()))
}

/// A gate trigger (`squad_notify::Trigger`).
pub(crate) fn trigger(_: &mut SchemaGenerator) -> Schema {
    names(squad_notify::Trigger::ALL.map(|t| t.as_str()))
}
