//! The offset file: Debezium-shaped offsets per connector, so that a restart knows whether
//! the initial snapshot completed and where streaming stood.
//!
//! The file is a JSON object. Each key is Kafka Connect's offset key for the connector,
//! `["<name>",{"server":"<topic.prefix>"}]`; each value is Debezium's offset map (`lsn`,
//! `lsn_proc`, `lsn_commit`, `txId`, `ts_usec`, `messageType`, and while a snapshot runs,
//! `snapshot` = `"INITIAL"` with `snapshot_completed`). Writes go to a temporary file that is
//! then renamed, so a crash never leaves a torn file. The slot decides where
//! the server starts sending; the offsets record snapshot completion and the last published
//! position, which decides what of that was published already (`pipeline::resume`).

use std::path::{Path, PathBuf};

use serde_json::{json, Map, Value as Json};

use crate::error::{Error, ErrorKind, IoContext, Result};
use crate::lsn::Lsn;
use crate::offsets::ack::CommitInfo;
use crate::offsets::incremental::IncrementalProgress;
use crate::offsets::initial::InitialProgress;
use crate::util::{java_hash_map_order, JAVA_HASH_MAP_INITIAL_CAPACITY};

/// Kafka Connect's offset key of a Debezium PostgreSQL connector, as its JsonConverter
/// (schemas off) writes it: `["<connector name>",{"server":"<topic.prefix>"}]`.
pub fn offset_key(name: &str, server: &str) -> String {
    serde_json::to_string(&json!([name, { "server": server }])).unwrap_or_default()
}

/// The offset key under which pgcdc keeps the cluster a connector's offsets were written
/// against, beside them: `["<name>",{"server":"<topic.prefix>","pgcdc":"cluster"}]`. Debezium
/// reads only its own key, so its offsets stay byte for byte its own.
pub fn cluster_key(name: &str, server: &str) -> String {
    serde_json::to_string(&json!([name, { "server": server, "pgcdc": "cluster" }]))
        .unwrap_or_default()
}

/// The PostgreSQL cluster whose WAL the stored LSNs point into: its system identifier
/// (`pg_control_system()`, shared by a primary and its physical standbys, new for a cluster
/// made by `initdb`) and the timeline it was on (a promotion moves to a later one).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterIdentity {
    /// `system_identifier`, as decimal text (a u64).
    pub system_id: String,
    /// The server's timeline (see `pg::setup::cluster_identity`).
    pub timeline: u32,
}

impl ClusterIdentity {
    /// `{"system_identifier":"<id>","timeline":<n>}`.
    pub fn to_json(&self) -> Json {
        json!({"system_identifier": self.system_id, "timeline": self.timeline})
    }

    /// Reads [`ClusterIdentity::to_json`]'s shape. Errors: what is wrong, as text.
    pub fn from_json(v: &Json) -> std::result::Result<ClusterIdentity, String> {
        let id = v.get("system_identifier").and_then(Json::as_str);
        let timeline = v.get("timeline").and_then(Json::as_u64);
        match (id, timeline) {
            (Some(id), Some(t)) if u32::try_from(t).is_ok() => Ok(ClusterIdentity {
                system_id: id.to_string(),
                timeline: t as u32,
            }),
            _ => Err(format!(
                "the cluster entry is {v}, not {{\"system_identifier\":\"<digits>\",\"timeline\":<number>}}"
            )),
        }
    }
}

/// Offsets of one connector.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Offsets {
    /// `lsn`: LSN of the last event (snapshot: the snapshot position).
    pub lsn: Option<Lsn>,
    /// `lsn_proc`: last completely processed LSN.
    pub lsn_proc: Option<Lsn>,
    /// `lsn_commit`: end LSN of the last delivered transaction.
    pub lsn_commit: Option<Lsn>,
    /// `txId`.
    pub tx_id: Option<i64>,
    /// `ts_usec`: commit time of that transaction, µs.
    pub ts_usec: Option<i64>,
    /// `messageType`.
    pub message_type: Option<String>,
    /// `snapshot`: `INITIAL` while an initial snapshot runs or when it is recorded.
    pub snapshot: Option<String>,
    /// `snapshot_completed`.
    pub snapshot_completed: bool,
    /// A running incremental snapshot's progress (`incremental_snapshot_*`).
    pub incremental: Option<IncrementalProgress>,
    /// An initial snapshot in progress: the tables it completed
    /// (`pgcdc_snapshot_completed_tables`, see [`crate::offsets::initial`]).
    pub initial: Option<InitialProgress>,
}

impl Offsets {
    /// The offsets once the unit described by `info` is published: a completed snapshot at
    /// its position, or streaming past the transaction that ended at `info.end_lsn` (with a
    /// snapshot still in progress when the unit came before one, see
    /// [`CommitInfo::before_snapshot`], or is one of its checkpoints, see
    /// [`CommitInfo::initial`]).
    pub fn after(info: &CommitInfo) -> Offsets {
        if info.completes_snapshot {
            return Offsets::snapshot_completed_at(info.end_lsn);
        }
        let in_snapshot = info.before_snapshot || info.initial.is_some();
        let snapshot = in_snapshot.then(|| "INITIAL".to_string());
        Offsets {
            lsn: Some(info.end_lsn),
            lsn_proc: Some(info.end_lsn),
            lsn_commit: Some(info.end_lsn),
            tx_id: Some(i64::from(info.xid)),
            ts_usec: Some(info.commit_time_us),
            message_type: Some("COMMIT".into()),
            snapshot,
            snapshot_completed: false,
            incremental: info.incremental.as_deref().cloned(),
            initial: info.initial.as_deref().cloned(),
        }
    }

    /// The offsets of a snapshot recorded complete at `position`.
    pub fn snapshot_completed_at(position: Lsn) -> Offsets {
        Offsets {
            lsn: Some(position),
            lsn_commit: Some(position),
            snapshot: Some("INITIAL".into()),
            snapshot_completed: true,
            ..Default::default()
        }
    }

    /// `true` when the stored offsets say the snapshot finished (or streaming had begun).
    pub fn snapshot_done(&self) -> bool {
        match &self.snapshot {
            None => self.lsn_proc.is_some() || self.lsn_commit.is_some() || self.lsn.is_some(),
            Some(_) => self.snapshot_completed,
        }
    }

    /// The offset map as Kafka Connect writes Debezium's: the fields Debezium's
    /// `PostgresOffsetContext` puts in its `HashMap`, in the order that map iterates them
    /// (which is the order of Connect's JsonConverter output).
    pub fn to_json(&self) -> Json {
        let mut fields: Vec<(&str, Json)> = Vec::new();
        if let Some(v) = self.ts_usec {
            fields.push(("ts_usec", json!(v)));
        }
        if let Some(v) = self.tx_id {
            fields.push(("txId", json!(v)));
        }
        if let Some(v) = self.lsn {
            fields.push(("lsn", json!(v.0)));
        }
        if let Some(v) = &self.snapshot {
            fields.push(("snapshot", json!(v)));
            fields.push(("last_snapshot_record", json!(self.snapshot_completed)));
            fields.push(("snapshot_completed", json!(self.snapshot_completed)));
        }
        if let Some(v) = self.lsn_proc {
            fields.push(("lsn_proc", json!(v.0)));
        }
        if let Some(v) = self.lsn_commit {
            fields.push(("lsn_commit", json!(v.0)));
        }
        if let Some(v) = &self.message_type {
            fields.push(("messageType", json!(v)));
        }
        if let Some(p) = &self.incremental {
            fields.extend(p.fields());
        }
        if let (Some(p), false) = (&self.initial, self.snapshot_completed) {
            fields.extend(p.fields());
        }
        let order = java_hash_map_order(
            fields.iter().map(|(k, _)| *k),
            JAVA_HASH_MAP_INITIAL_CAPACITY,
        );
        let mut slots: Vec<Option<(&str, Json)>> = fields.into_iter().map(Some).collect();
        let mut m = Map::new();
        for i in order {
            if let Some((k, v)) = slots[i].take() {
                m.insert(k.to_string(), v);
            }
        }
        Json::Object(m)
    }

    /// The offset map's bytes as Connect's JsonConverter (schemas off) writes them.
    pub fn value_bytes(&self) -> Vec<u8> {
        serde_json::to_vec(&self.to_json()).unwrap_or_default()
    }

    /// Reads an offset map (Debezium's, any version from 1.x: see the loading rules in the
    /// module docs). A field of the wrong type is an error naming it: guessing would take the
    /// whole snapshot again, or skip changes.
    ///
    /// # Errors
    /// What is wrong, as text for the caller to put with where the offsets are.
    pub fn from_json(v: &Json) -> std::result::Result<Offsets, String> {
        let Json::Object(map) = v else {
            return Err(format!("the offsets entry is {v}, not a JSON object"));
        };
        let field = |k: &str| map.get(k).filter(|x| !x.is_null());
        let wrong = |k: &str, want: &str| {
            format!(
                "field {k} is {}, not {want}",
                field(k).map_or(Json::Null, Clone::clone)
            )
        };
        let lsn = |k: &str| match field(k) {
            None => Ok(None),
            Some(x) => x
                .as_u64()
                .map(|n| Some(Lsn(n)))
                .ok_or_else(|| wrong(k, "an LSN as a number")),
        };
        let int = |k: &str| match field(k) {
            None => Ok(None),
            Some(x) => x.as_i64().map(Some).ok_or_else(|| wrong(k, "a number")),
        };
        let flag = |k: &str| match field(k) {
            None => Ok(false),
            Some(Json::Bool(b)) => Ok(*b),
            Some(Json::String(s)) if s.eq_ignore_ascii_case("true") => Ok(true),
            Some(Json::String(s)) if s.eq_ignore_ascii_case("false") => Ok(false),
            Some(_) => Err(wrong(k, "true or false")),
        };
        let snapshot = match field("snapshot") {
            None | Some(Json::Bool(false)) => None,
            Some(Json::String(s)) if s.eq_ignore_ascii_case("true") => Some("INITIAL".to_string()),
            // Written while an incremental snapshot's rows are emitted: streaming goes on.
            Some(Json::String(s)) if s == "INCREMENTAL" => None,
            Some(Json::String(s)) => Some(s.clone()),
            Some(Json::Bool(true)) => Some("INITIAL".to_string()),
            Some(_) => return Err(wrong("snapshot", "a snapshot kind or true/false")),
        };
        let message_type = match field("messageType") {
            None => None,
            Some(Json::String(s)) => Some(s.clone()),
            Some(_) => return Err(wrong("messageType", "a string")),
        };
        Ok(Offsets {
            lsn: lsn("lsn")?,
            lsn_proc: lsn("lsn_proc")?,
            lsn_commit: lsn("lsn_commit")?,
            tx_id: int("txId")?,
            ts_usec: int("ts_usec")?,
            message_type,
            snapshot,
            snapshot_completed: flag("snapshot_completed")? || flag("last_snapshot_record")?,
            incremental: IncrementalProgress::from_offsets(map)?,
            initial: InitialProgress::from_offsets(map)?,
        })
    }
}

/// Serialises the read-modify-write of offset files within the process: connectors of one
/// worker may share a file (`offset.storage.file.filename` defaults to one path), and two
/// writers at once would race on its temporary file and undo each other's entries.
fn file_writes() -> std::sync::MutexGuard<'static, ()> {
    static WRITES: std::sync::Mutex<()> = std::sync::Mutex::new(());
    WRITES.lock().unwrap_or_else(|p| p.into_inner())
}

/// The offset file of one connector.
#[derive(Debug, Clone)]
pub struct OffsetStore {
    path: PathBuf,
    key: String,
    cluster_key: String,
}

impl OffsetStore {
    /// The store at `path` for connector `name` with topic prefix `server`.
    pub fn new(path: &Path, name: &str, server: &str) -> Self {
        let key = offset_key(name, server);
        OffsetStore {
            path: path.to_path_buf(),
            key,
            cluster_key: cluster_key(name, server),
        }
    }

    /// The file path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn read_all(&self) -> Result<Map<String, Json>> {
        match std::fs::read_to_string(&self.path) {
            Ok(text) if text.trim().is_empty() => Err(Error::new(
                ErrorKind::Config,
                format!(
                    "offset file {} is empty (offset.storage.file.filename): pgcdc never writes an empty file, so it was truncated or replaced. Restore it, or delete it to start over (with a new snapshot)",
                    self.path.display()
                ),
            )),
            Ok(text) => match serde_json::from_str::<Json>(&text) {
                Ok(Json::Object(m)) => Ok(m),
                _ => Err(Error::new(
                    ErrorKind::Config,
                    format!(
                        "offset file {} is not a JSON object (offset.storage.file.filename): fix or remove it",
                        self.path.display()
                    ),
                )),
            },
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Map::new()),
            Err(e) => {
                let what = format!("cannot read offset file {}", self.path.display());
                Err(Error::io(e, IoContext::File, what))
            }
        }
    }

    /// The stored offsets of this connector, if any.
    pub fn load(&self) -> Result<Option<Offsets>> {
        let fix = "Fix the entry, or remove it to start over (with a new snapshot)";
        self.load_entry(&self.key, Offsets::from_json, fix)
    }

    /// Stores `offsets` for this connector (other connectors' entries are kept: writes from
    /// the connectors of one process are serialised, so none undoes another's).
    pub fn save(&self, offsets: &Offsets) -> Result<()> {
        let _one_writer = file_writes();
        let mut all = self.read_all()?;
        all.insert(self.key.clone(), offsets.to_json());
        self.write_all(all)
    }

    /// Removes this connector's entries (its offsets and its cluster).
    pub fn clear(&self) -> Result<()> {
        let _one_writer = file_writes();
        let mut all = self.read_all()?;
        let removed = all.remove(&self.key).is_some();
        if all.remove(&self.cluster_key).is_some() || removed {
            self.write_all(all)?;
        }
        Ok(())
    }

    /// The cluster this connector's offsets were written against, if recorded.
    pub fn load_cluster(&self) -> Result<Option<ClusterIdentity>> {
        let fix = "Fix the entry, or remove it (pgcdc then records the server it connects to)";
        self.load_entry(&self.cluster_key, ClusterIdentity::from_json, fix)
    }

    /// The entry `key` of the file read by `parse`; `fix` ends the error of an entry that
    /// does not parse (a config error naming the file and the key).
    fn load_entry<T>(
        &self,
        key: &str,
        parse: fn(&Json) -> std::result::Result<T, String>,
        fix: &str,
    ) -> Result<Option<T>> {
        let all = self.read_all()?;
        let Some(entry) = all.get(key) else {
            return Ok(None);
        };
        parse(entry).map(Some).map_err(|problem| {
            Error::new(
                ErrorKind::Config,
                format!(
                    "offset file {}, entry {key}: {problem}. {fix}",
                    self.path.display()
                ),
            )
        })
    }

    /// Records the cluster this connector's offsets are written against.
    pub fn save_cluster(&self, cluster: &ClusterIdentity) -> Result<()> {
        let _one_writer = file_writes();
        let mut all = self.read_all()?;
        all.insert(self.cluster_key.clone(), cluster.to_json());
        self.write_all(all)
    }

    /// Replaces the file with `all`: written to a temporary file, synced, then renamed over it,
    /// so a crash never leaves a torn file.
    fn write_all(&self, all: Map<String, Json>) -> Result<()> {
        let io_err = |e: std::io::Error| {
            let what = format!("cannot write offset file {}", self.path.display());
            Error::io(e, IoContext::File, what)
        };
        if let Some(dir) = self.path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(io_err)?;
        }
        let tmp = self.path.with_extension("tmp");
        let text = serde_json::to_string_pretty(&Json::Object(all)).unwrap_or_default();
        // Synced before the rename and the directory after it: what is confirmed to
        // PostgreSQL must survive a power loss, not only a crash.
        let mut file = std::fs::File::create(&tmp).map_err(io_err)?;
        std::io::Write::write_all(&mut file, text.as_bytes()).map_err(io_err)?;
        file.sync_all().map_err(io_err)?;
        std::fs::rename(&tmp, &self.path).map_err(io_err)?;
        if let Some(dir) = self.path.parent().filter(|d| !d.as_os_str().is_empty()) {
            if let Ok(d) = std::fs::File::open(dir) {
                let _ = d.sync_all();
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_round_trip_and_keep_other_connectors() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("o.json");
        let a = OffsetStore::new(&path, "a", "p");
        let b = OffsetStore::new(&path, "b", "p");
        let off = Offsets {
            lsn_commit: Some(Lsn(42)),
            lsn_proc: Some(Lsn(42)),
            tx_id: Some(7),
            ..Default::default()
        };
        a.save(&off).unwrap();
        b.save(&Offsets {
            snapshot: Some("INITIAL".into()),
            ..Default::default()
        })
        .unwrap();
        assert_eq!(a.load().unwrap(), Some(off));
        assert!(!b.load().unwrap().unwrap().snapshot_done());
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.contains(r#"[\"a\",{\"server\":\"p\"}]"#), "{text}");
    }

    #[test]
    fn values_are_the_bytes_connect_writes_for_debezium() {
        // The streaming example of Debezium's offset map, in its HashMap's order.
        let streaming = Offsets {
            lsn: Some(Lsn(24023128)),
            lsn_proc: Some(Lsn(24023128)),
            lsn_commit: Some(Lsn(24023119)),
            tx_id: Some(771),
            ts_usec: Some(1714558530123456),
            message_type: Some("INSERT".into()),
            ..Default::default()
        };
        assert_eq!(
            String::from_utf8(streaming.value_bytes()).unwrap(),
            r#"{"lsn_proc":24023128,"messageType":"INSERT","lsn_commit":24023119,"lsn":24023128,"txId":771,"ts_usec":1714558530123456}"#
        );
        let snapshot = Offsets {
            lsn: Some(Lsn(5)),
            tx_id: Some(9),
            ts_usec: Some(1),
            snapshot: Some("INITIAL".into()),
            snapshot_completed: true,
            ..Default::default()
        };
        let back =
            Offsets::from_json(&serde_json::from_slice(&snapshot.value_bytes()).unwrap()).unwrap();
        assert_eq!(back, snapshot);
        assert_eq!(offset_key("c", "p"), r#"["c",{"server":"p"}]"#);
    }

    #[test]
    fn legacy_boolean_snapshot_flag_is_read() {
        let o =
            Offsets::from_json(&json!({"lsn": 5, "snapshot": true, "last_snapshot_record": true}))
                .unwrap();
        assert_eq!(o.snapshot.as_deref(), Some("INITIAL"));
        assert!(o.snapshot_done());
    }

    #[test]
    fn an_empty_file_or_a_wrong_typed_field_is_an_error_naming_the_file_and_field() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("offsets.json");
        let store = OffsetStore::new(&path, "c", "p");
        assert_eq!(store.load().unwrap(), None, "a missing file is no offsets");
        std::fs::write(&path, "").unwrap();
        let e = store.load().unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Config);
        assert!(
            e.message().contains("is empty") && e.message().contains("offsets.json"),
            "{}",
            e.message()
        );

        let key = offset_key("c", "p");
        for (entry, field) in [
            (
                json!({"lsn": "0/16B3748", "lsn_commit": 5}),
                "field lsn is \"0/16B3748\"",
            ),
            (json!({"lsn": 5, "txId": "12"}), "field txId"),
            (
                json!({"lsn": 5, "snapshot": "INITIAL", "snapshot_completed": 3}),
                "field snapshot_completed",
            ),
            (json!({"lsn": 5, "messageType": 1}), "field messageType"),
            (json!([1, 2]), "not a JSON object"),
        ] {
            std::fs::write(&path, json!({ key.clone(): entry }).to_string()).unwrap();
            let e = store.load().unwrap_err();
            assert_eq!(e.kind(), ErrorKind::Config);
            assert!(e.message().contains(field), "{field}: {}", e.message());
            assert!(e.message().contains("offsets.json"), "{}", e.message());
        }
        std::fs::write(
            &path,
            json!({ key: {"lsn": 5, "txId": null, "snapshot": false} }).to_string(),
        )
        .unwrap();
        let o = store.load().unwrap().unwrap();
        assert_eq!((o.lsn, o.tx_id, o.snapshot), (Some(Lsn(5)), None, None));
    }
}
