//! JSON as front ends print it: snake_case keys.

use serde::Serialize;
use serde_json::Value;

/// `value` as printed JSON: every object key in snake_case (`preApproved` becomes
/// `pre_approved`), except inside a `notify` object, which keeps the spelling the seed gives
/// `state.json`. The files themselves keep their own spelling; this is the view that the
/// `squad` CLI's `--json` and an MCP server print. A value that cannot be encoded is `null`.
///
/// ```
/// let v = squad_notify::output_json(&serde_json::json!({
///     "preApproved": true,
///     "notify": {"approvalChannel": "in-chat"},
///     "runs": [{"approveAll": null}],
/// }));
/// assert_eq!(v, serde_json::json!({
///     "pre_approved": true,
///     "notify": {"approvalChannel": "in-chat"},
///     "runs": [{"approve_all": null}],
/// }));
/// ```
pub fn output_json<T: Serialize + ?Sized>(value: &T) -> Value {
    snake(serde_json::to_value(value).unwrap_or(Value::Null))
}

fn snake(value: Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.into_iter()
                .map(|(k, v)| {
                    let v = if k == "notify" { v } else { snake(v) };
                    let mut key = String::with_capacity(k.len() + 4);
                    for c in k.chars() {
                        if c.is_ascii_uppercase() {
                            key.push('_');
                            key.push(c.to_ascii_lowercase());
                        } else {
                            key.push(c);
                        }
                    }
                    (key, v)
                })
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.into_iter().map(snake).collect()),
        other => other,
    }
}
