//! An interrupted initial snapshot's progress: the tables it read completely, and how far it
//! read the table it was reading, so that the next start reads only the rest (Debezium takes
//! the whole snapshot again).
//!
//! The offsets of an initial snapshot in progress (`snapshot` = `INITIAL`, not completed)
//! carry two fields of pgcdc's own:
//! - `pgcdc_snapshot_completed_tables`: a JSON array, as a string, of the `schema.table` names
//!   of the tables whose every snapshot record Kafka has acknowledged (exactly-once:
//!   committed);
//! - `pgcdc_snapshot_table_progress`, when a table was read in its physical order (TID range
//!   scans, on one connection or several): a JSON object, as a string, `{"table":
//!   "<schema>.<table>", "filenode": <its relfilenode>, "snapshot": "<xmin>:<xmax>:<xip,...>",
//!   "ranges": [["(<page>,<item>)", "(<page>,<item>)" or null], ...]}`: for each range
//!   `[from, to)` (`null`: to the end of the file), every row the snapshot `snapshot` saw in the
//!   file `filenode` with `from <= ctid < to` was acknowledged.
//!
//! Debezium ignores both, so a switch to Debezium in the middle of a snapshot takes the whole
//! snapshot again, as Debezium always does.
//!
//! Why skipping those tables keeps every guarantee: a completed table was read in a snapshot
//! taken at a position of the slot, and the slot still holds every transaction after that
//! position that was not published (the snapshot holds the confirmed position back). The
//! next start takes its snapshot on the existing slot, fenced (`pipeline::fence`): the
//! slot's transactions are published in commit order around the tables it still reads, so
//! each completed table's rows are followed by every later change of them, once.
//!
//! Inside a table, a row version never moves within its file: in the ranges read, the rows
//! the new snapshot sees are those the old one saw (already sent) and those written since,
//! whose `xmin` the old snapshot does not see (counted from its `xmin` on, since a snapshot
//! does not list subtransactions); those are read again (see `pg::snapshot::XidWindow`), and
//! the ranges not read are read whole. A rewrite
//! of the table (`VACUUM FULL`, `CLUSTER`, `TRUNCATE`) gives it a new file, and then the
//! table is read again whole.

use serde_json::{json, Map, Value as Json};

/// The offset field of the completed tables.
pub const COMPLETED_TABLES: &str = "pgcdc_snapshot_completed_tables";
/// The offset field of the table being read.
pub const TABLE_PROGRESS: &str = "pgcdc_snapshot_table_progress";

/// The tables an initial snapshot in progress has completed, and how far it read the next.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct InitialProgress {
    /// `schema.table` of each completed table, in the order they completed.
    pub completed_tables: Vec<String>,
    /// The table being read, when it is read in its physical order.
    pub table: Option<TableProgress>,
}

/// How far a table was read in its physical order.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct TableProgress {
    /// `schema.table`.
    pub table: String,
    /// The table's `relfilenode` when it was read.
    pub filenode: u32,
    /// `pg_current_snapshot()` of the snapshot that read it (`xmin:xmax:xip,...`).
    pub snapshot: String,
    /// Ranges of `ctid`s (`(page,item)`), `[from, to)`, `to` `None` for the end of the file:
    /// every row that snapshot saw in them was acknowledged.
    pub ranges: Vec<(String, Option<String>)>,
}

impl InitialProgress {
    /// Whether `schema.table` was completed.
    pub fn completed(&self, name: &str) -> bool {
        self.completed_tables.iter().any(|t| t == name)
    }

    /// This progress with `names` completed as well (each name once; a table read part way
    /// that is among them is no longer in progress).
    pub fn with(&self, names: impl IntoIterator<Item = String>) -> InitialProgress {
        let mut p = self.clone();
        for n in names {
            if !p.completed(&n) {
                p.completed_tables.push(n);
            }
        }
        if p.table.as_ref().is_some_and(|t| p.completed(&t.table)) {
            p.table = None;
        }
        p
    }

    /// This progress with `table` read as far as it says.
    pub fn reading(&self, table: TableProgress) -> InitialProgress {
        InitialProgress {
            table: Some(table),
            ..self.clone()
        }
    }

    /// How far `schema.table` was read, if it was being read.
    pub fn table_progress(&self, name: &str) -> Option<&TableProgress> {
        self.table.as_ref().filter(|t| t.table == name)
    }

    /// The offset fields, `(name, value)`.
    pub fn fields(&self) -> Vec<(&'static str, Json)> {
        let list = serde_json::to_string(&self.completed_tables).unwrap_or_default();
        let mut fields = vec![(COMPLETED_TABLES, json!(list))];
        if let Some(t) = &self.table {
            fields.push((
                TABLE_PROGRESS,
                json!(serde_json::to_string(t).unwrap_or_default()),
            ));
        }
        fields
    }

    /// Reads the fields from an offset map; `Ok(None)` when they are absent.
    ///
    /// # Errors
    /// A field is not a string holding JSON of its shape (named, with what is wrong).
    pub fn from_offsets(m: &Map<String, Json>) -> Result<Option<InitialProgress>, String> {
        let text = |k: &str| -> Result<Option<String>, String> {
            match m.get(k).filter(|v| !v.is_null()) {
                None => Ok(None),
                Some(Json::String(s)) => Ok(Some(s.clone())),
                Some(v) => Err(format!("{k} is {v}, not a string")),
            }
        };
        let completed = text(COMPLETED_TABLES)?;
        let table = text(TABLE_PROGRESS)?;
        if completed.is_none() && table.is_none() {
            return Ok(None);
        }
        let completed_tables: Vec<String> = match completed {
            None => Vec::new(),
            Some(t) => serde_json::from_str(&t).map_err(|e| {
                format!("{COMPLETED_TABLES} is not a JSON array of table names: {e}")
            })?,
        };
        let table = match table {
            None => None,
            Some(t) => {
                let shape = r#"{"table", "filenode", "snapshot", "ranges"}"#;
                let bad = |e| format!("{TABLE_PROGRESS} is not a table's progress ({shape}): {e}");
                Some(serde_json::from_str(&t).map_err(bad)?)
            }
        };
        Ok(Some(InitialProgress {
            completed_tables,
            table,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_field_round_trips_and_bad_values_are_named() {
        let p = InitialProgress::default()
            .with(["public.a".to_string(), "s.\"odd,name\"".to_string()])
            .with(["public.a".to_string()]);
        assert_eq!(p.completed_tables.len(), 2);
        assert!(p.completed("public.a") && !p.completed("public.b"));
        let fields = p.fields();
        assert_eq!(fields.len(), 1, "no table in progress");
        let (k, v) = fields[0].clone();
        assert_eq!(v, json!("[\"public.a\",\"s.\\\"odd,name\\\"\"]"));
        let m: Map<String, Json> = [(k.to_string(), v)].into_iter().collect();
        assert_eq!(InitialProgress::from_offsets(&m).unwrap(), Some(p.clone()));
        let reading = p.reading(TableProgress {
            table: "public.b".into(),
            filenode: 16384,
            snapshot: "10:12:10".into(),
            ranges: vec![
                ("(0,0)".into(), Some("(52,3)".into())),
                ("(90,0)".into(), None),
            ],
        });
        assert_eq!(reading.table_progress("public.b").unwrap().ranges.len(), 2);
        assert!(reading.table_progress("public.a").is_none());
        let m: Map<String, Json> = reading
            .fields()
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect();
        assert_eq!(
            m[TABLE_PROGRESS],
            json!(
                r#"{"table":"public.b","filenode":16384,"snapshot":"10:12:10","ranges":[["(0,0)","(52,3)"],["(90,0)",null]]}"#
            )
        );
        assert_eq!(
            InitialProgress::from_offsets(&m).unwrap(),
            Some(reading.clone())
        );
        assert_eq!(
            reading.with(["public.b".to_string()]).table,
            None,
            "b completed"
        );
        assert_eq!(InitialProgress::from_offsets(&Map::new()).unwrap(), None);
        let bad: Map<String, Json> = [(k.to_string(), json!(3))].into_iter().collect();
        assert!(InitialProgress::from_offsets(&bad)
            .unwrap_err()
            .contains(COMPLETED_TABLES));
        let bad: Map<String, Json> = [(k.to_string(), json!("[1]"))].into_iter().collect();
        assert!(InitialProgress::from_offsets(&bad).is_err());
    }
}
