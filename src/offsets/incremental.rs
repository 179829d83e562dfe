//! A running incremental snapshot's progress, as Debezium keeps it in the offsets while the
//! snapshot runs (the keys disappear once it completes):
//! - `incremental_snapshot_collections`: a JSON array, in queue order (the first is the table
//!   being read), of `{"incremental_snapshot_collections_id": "<schema>.<table>",
//!   "incremental_snapshot_collections_additional_condition": "(<filter>)" | null,
//!   "incremental_snapshot_collections_surrogate_key": "<column>" | null}`;
//! - `incremental_snapshot_primary_key`: the key the next chunk starts after (a serialized Java
//!   `Object[]` as hex, see [`super::java_keys`]; a null array: from the table's start);
//! - `incremental_snapshot_maximum_key`: the table's largest key when its reading began;
//! - `incremental_snapshot_correlation_id`: the id of the `execute-snapshot` signal (or null).

use serde_json::{json, Map, Value as Json};

use super::java_keys::{self, JavaValue};

/// Offset key names.
pub const COLLECTIONS: &str = "incremental_snapshot_collections";
/// `incremental_snapshot_primary_key`.
pub const PRIMARY_KEY: &str = "incremental_snapshot_primary_key";
/// `incremental_snapshot_maximum_key`.
pub const MAXIMUM_KEY: &str = "incremental_snapshot_maximum_key";
/// `incremental_snapshot_correlation_id`.
pub const CORRELATION_ID: &str = "incremental_snapshot_correlation_id";

const ID: &str = "incremental_snapshot_collections_id";
const CONDITION: &str = "incremental_snapshot_collections_additional_condition";
const SURROGATE: &str = "incremental_snapshot_collections_surrogate_key";

/// One table queued for the incremental snapshot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueuedTable {
    /// `schema.table`.
    pub id: String,
    /// The `additional-conditions` filter, wrapped in parentheses as Debezium stores it.
    pub condition: Option<String>,
    /// The `surrogate-key` column.
    pub surrogate_key: Option<String>,
}

/// The progress of a running incremental snapshot.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct IncrementalProgress {
    /// Tables still to read; the first is being read.
    pub tables: Vec<QueuedTable>,
    /// The key the next chunk of the first table starts after (`None`: its start).
    pub chunk_end: Option<Vec<JavaValue>>,
    /// The first table's largest key when its reading began (`None`: not read yet).
    pub maximum_key: Option<Vec<JavaValue>>,
    /// The `execute-snapshot` signal's id.
    pub correlation_id: Option<String>,
}

impl IncrementalProgress {
    /// The four offset fields, `(name, value)`.
    pub fn fields(&self) -> Vec<(&'static str, Json)> {
        let tables: Vec<Json> = self
            .tables
            .iter()
            .map(|t| {
                let mut m = Map::new();
                m.insert(ID.into(), json!(t.id));
                m.insert(CONDITION.into(), json!(t.condition));
                m.insert(SURROGATE.into(), json!(t.surrogate_key));
                Json::Object(m)
            })
            .collect();
        vec![
            (
                PRIMARY_KEY,
                json!(java_keys::to_hex(self.chunk_end.as_deref())),
            ),
            (
                MAXIMUM_KEY,
                json!(java_keys::to_hex(self.maximum_key.as_deref())),
            ),
            (
                COLLECTIONS,
                json!(serde_json::to_string(&tables).unwrap_or_default()),
            ),
            (CORRELATION_ID, json!(self.correlation_id)),
        ]
    }

    /// Reads the fields from an offset map; `Ok(None)` when no incremental snapshot runs.
    /// Errors: a field that cannot be read, named.
    pub fn from_offsets(m: &Map<String, Json>) -> Result<Option<IncrementalProgress>, String> {
        let Some(collections) = m.get(COLLECTIONS).filter(|v| !v.is_null()) else {
            return Ok(None);
        };
        let text = collections
            .as_str()
            .ok_or_else(|| format!("{COLLECTIONS} is not a string"))?;
        let items: Vec<Map<String, Json>> = serde_json::from_str(text)
            .map_err(|e| format!("{COLLECTIONS} is not a JSON array of objects: {e}"))?;
        let string = |o: &Map<String, Json>, k: &str| {
            o.get(k)
                .and_then(Json::as_str)
                .filter(|s| !s.is_empty())
                .map(str::to_string)
        };
        let mut tables = Vec::new();
        for o in &items {
            let id =
                string(o, ID).ok_or_else(|| format!("an entry of {COLLECTIONS} has no {ID}"))?;
            tables.push(QueuedTable {
                id,
                condition: string(o, CONDITION),
                surrogate_key: string(o, SURROGATE),
            });
        }
        if tables.is_empty() {
            return Ok(None);
        }
        let key = |k: &str| -> Result<Option<Vec<JavaValue>>, String> {
            match m.get(k) {
                None | Some(Json::Null) => Ok(None),
                Some(Json::String(hex)) => {
                    java_keys::from_hex(hex).map_err(|e| format!("{k}: {e}"))
                }
                Some(_) => Err(format!("{k} is not a string")),
            }
        };
        Ok(Some(IncrementalProgress {
            tables,
            chunk_end: key(PRIMARY_KEY)?,
            maximum_key: key(MAXIMUM_KEY)?,
            correlation_id: m
                .get(CORRELATION_ID)
                .and_then(Json::as_str)
                .map(str::to_string),
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fields_round_trip_in_debeziums_shape() {
        let p = IncrementalProgress {
            tables: vec![
                QueuedTable {
                    id: "public.a".into(),
                    condition: Some("(x > 1)".into()),
                    surrogate_key: None,
                },
                QueuedTable {
                    id: "public.b".into(),
                    condition: None,
                    surrogate_key: Some("code".into()),
                },
            ],
            chunk_end: Some(vec![JavaValue::Int(1)]),
            maximum_key: Some(vec![JavaValue::Int(9)]),
            correlation_id: Some("sig-1".into()),
        };
        let m: Map<String, Json> = p
            .fields()
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect();
        assert_eq!(
            m[COLLECTIONS],
            json!(concat!(
                "[{\"incremental_snapshot_collections_id\":\"public.a\",",
                "\"incremental_snapshot_collections_additional_condition\":\"(x > 1)\",",
                "\"incremental_snapshot_collections_surrogate_key\":null},",
                "{\"incremental_snapshot_collections_id\":\"public.b\",",
                "\"incremental_snapshot_collections_additional_condition\":null,",
                "\"incremental_snapshot_collections_surrogate_key\":\"code\"}]"
            ))
        );
        assert_eq!(IncrementalProgress::from_offsets(&m).unwrap(), Some(p));
        assert_eq!(
            IncrementalProgress::from_offsets(&Map::new()).unwrap(),
            None
        );
        let mut bad = m.clone();
        bad.insert(PRIMARY_KEY.into(), json!("00"));
        assert!(IncrementalProgress::from_offsets(&bad)
            .unwrap_err()
            .contains(PRIMARY_KEY));
    }
}
