//! A table of a config file read into a serde-derived raw struct, with the
//! field of a wrong-typed value found by `serde_path_to_error` (`args[2]`,
//! `env.HOME`): the config's server entries and the auth tables share it,
//! and each words the message for its own fields.

use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

/// A field of the wrong type: where it is (`args[2]`, `env.HOME`, `lazy`)
/// and the key of the table it is under (`args`, `env`, `lazy`), which
/// decides what it must be.
pub(crate) struct WrongType {
    /// The field's path, as the error names it.
    pub field: String,
    /// The top-level key of that path.
    pub key: String,
    /// Whether the path goes below `key` (an item of a list or table).
    pub nested: bool,
}

/// `T` read from `table`; a value of the wrong type is [`WrongType`].
pub(crate) fn decode<T: DeserializeOwned>(table: &Map<String, Value>) -> Result<T, WrongType> {
    serde_path_to_error::deserialize(Value::Object(table.clone())).map_err(|e| {
        let mut field = String::new();
        let mut key = String::new();
        let mut depth = 0;
        for segment in e.path().iter() {
            match segment {
                serde_path_to_error::Segment::Seq { index } => {
                    field.push_str(&format!("[{index}]"));
                }
                serde_path_to_error::Segment::Map { key: k }
                | serde_path_to_error::Segment::Enum { variant: k } => {
                    if !field.is_empty() {
                        field.push('.');
                    }
                    field.push_str(k);
                }
                serde_path_to_error::Segment::Unknown => field.push('?'),
            }
            if depth == 0 {
                key = field.clone();
            }
            depth += 1;
        }
        WrongType {
            field,
            key,
            nested: depth > 1,
        }
    })
}
