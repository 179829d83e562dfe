//! Where `pgcdc serve` keeps connector configs: by default one JSON file per connector in a
//! directory, `{"name": ..., "config": {...}, "state": "RUNNING"}` (Connect's request body
//! plus the target state), written to a temporary file and renamed, so a crash leaves the old
//! file or the new one, never half of one; or, with `config.storage.topic`, a compacted Kafka
//! topic in Kafka Connect's records ([`crate::sink::config_topic`]).
//!
//! Values are kept as given, `${provider:...}` placeholders unresolved: the secrets they
//! name stay where they are.

use std::path::{Path, PathBuf};

use crate::config::{keys, RawConfig, WorkerConfig};
use crate::error::{Error, ErrorKind, Result};
use crate::sink::config_topic::{KafkaConfigStore, StoredTarget};

use super::TargetState;

/// Where connector configs are kept. Writes are serialised (one at a time in the process);
/// each returns once the config is stored (synced to disk, or acknowledged by the brokers),
/// blocking the calling thread meanwhile.
#[derive(Debug)]
pub enum ConfigStore {
    /// `pgcdc.config.storage.dir`.
    Dir(DirStore),
    /// `config.storage.topic`.
    Topic(TopicStore),
}

/// The config topic, its writes serialised.
#[derive(Debug)]
pub struct TopicStore {
    topic: KafkaConfigStore,
    writes: std::sync::Mutex<()>,
}

impl ConfigStore {
    /// The store the worker config names: its config topic (created if missing) or its
    /// directory (created if missing). Errors: as [`DirStore::open`] and
    /// [`KafkaConfigStore::open`].
    pub async fn open(config: &WorkerConfig) -> Result<ConfigStore> {
        Ok(match &config.config_topic {
            Some(t) => ConfigStore::Topic(TopicStore {
                topic: KafkaConfigStore::open(t).await?,
                writes: std::sync::Mutex::new(()),
            }),
            None => ConfigStore::Dir(DirStore::open(&config.storage_dir)?),
        })
    }

    /// Where the configs are, for the start-up log.
    pub fn describe(&self) -> String {
        match self {
            ConfigStore::Dir(d) => format!("the directory {}", d.dir.display()),
            ConfigStore::Topic(t) => t.topic.describe(),
        }
    }

    /// Stores `name`'s config and target state. Errors: it cannot be written.
    pub fn save(&self, name: &str, raw: &RawConfig, target: TargetState) -> Result<()> {
        match self {
            ConfigStore::Dir(d) => d.save(name, raw, target),
            ConfigStore::Topic(t) => {
                let _one_writer = t.writes.lock().unwrap_or_else(|p| p.into_inner());
                let stored = match target {
                    TargetState::Started => StoredTarget::Started,
                    TargetState::Paused => StoredTarget::Paused,
                    TargetState::Stopped => StoredTarget::Stopped,
                };
                t.topic.save(name, raw, stored)
            }
        }
    }

    /// Forgets `name`. Errors: it cannot be removed.
    pub fn remove(&self, name: &str) -> Result<()> {
        match self {
            ConfigStore::Dir(d) => d.remove(name),
            ConfigStore::Topic(t) => {
                let _one_writer = t.writes.lock().unwrap_or_else(|p| p.into_inner());
                t.topic.remove(name)
            }
        }
    }

    /// Every stored connector: (name, config, target state), sorted by name. Errors: the
    /// store cannot be read or holds something it did not write.
    pub fn load(&self) -> Result<Vec<(String, RawConfig, TargetState)>> {
        match self {
            ConfigStore::Dir(d) => d.load(),
            ConfigStore::Topic(t) => Ok(t
                .topic
                .load()?
                .into_iter()
                .map(|(name, raw, target)| {
                    let target = match target {
                        StoredTarget::Started => TargetState::Started,
                        StoredTarget::Paused => TargetState::Paused,
                        StoredTarget::Stopped => TargetState::Stopped,
                    };
                    (name, raw, target)
                })
                .collect()),
        }
    }
}

/// A directory of connector configs, each written through its own temporary file.
#[derive(Debug)]
pub struct DirStore {
    dir: PathBuf,
    writes: std::sync::Mutex<u64>,
}

impl DirStore {
    /// Opens (creating it if needed) the directory. Errors: it cannot be created.
    pub fn open(dir: &Path) -> Result<DirStore> {
        std::fs::create_dir_all(dir).map_err(|e| {
            Error::config(format!(
                "cannot create the connector config directory {}: {e}",
                dir.display()
            ))
        })?;
        Ok(DirStore {
            dir: dir.to_path_buf(),
            writes: std::sync::Mutex::new(0),
        })
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.join(format!("{}.json", file_stem(name)))
    }

    /// Writes `name`'s config and target state. Errors: the file cannot be written.
    pub fn save(&self, name: &str, raw: &RawConfig, target: TargetState) -> Result<()> {
        let body = serde_json::json!({
            keys::NAME: name,
            "config": raw,
            "state": target.connect_name(),
        });
        let path = self.path(name);
        let mut writes = self.writes.lock().unwrap_or_else(|p| p.into_inner());
        *writes += 1;
        let tmp = path.with_extension(format!("json.{}.{}.tmp", std::process::id(), *writes));
        let text = serde_json::to_string_pretty(&body).unwrap_or_default();
        write_private(&tmp, text.as_bytes())
            .and_then(|()| std::fs::rename(&tmp, &path))
            .map_err(|e| io_error(&path, e))
    }

    /// Removes `name`'s file. Errors: it exists and cannot be removed.
    pub fn remove(&self, name: &str) -> Result<()> {
        let _one_writer = self.writes.lock().unwrap_or_else(|p| p.into_inner());
        match std::fs::remove_file(self.path(name)) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                Err(io_error(&self.path(name), e))
            }
            _ => Ok(()),
        }
    }

    /// Every stored connector: (name, config, target state), sorted by file name. Errors: the
    /// directory or a file cannot be read, or a file is not what [`DirStore::save`] writes.
    pub fn load(&self) -> Result<Vec<(String, RawConfig, TargetState)>> {
        let mut files: Vec<PathBuf> = std::fs::read_dir(&self.dir)
            .map_err(|e| io_error(&self.dir, e))?
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "json"))
            .collect();
        files.sort();
        files.iter().map(|p| read_one(p)).collect()
    }
}

/// Writes a file only its owner can read (configs hold passwords), synced.
fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let mut f = options.open(path)?;
    f.write_all(bytes)?;
    f.sync_all()
}

fn read_one(path: &Path) -> Result<(String, RawConfig, TargetState)> {
    let bad = |why: &str| {
        Error::config(format!(
            "connector config file {}: {why}; fix or remove it",
            path.display()
        ))
    };
    let text = std::fs::read_to_string(path).map_err(|e| io_error(path, e))?;
    let v: serde_json::Value = serde_json::from_str(&text).map_err(|e| bad(&e.to_string()))?;
    let name = v[keys::NAME].as_str().ok_or_else(|| bad("no \"name\""))?;
    let config = v["config"]
        .as_object()
        .ok_or_else(|| bad("no \"config\" object"))?;
    let mut raw = RawConfig::new();
    for (k, val) in config {
        let s = val
            .as_str()
            .ok_or_else(|| bad(&format!("{k} is not a string")))?;
        raw.insert(k.clone(), s.to_string());
    }
    let target = match v["state"]
        .as_str()
        .map(|s| (s, TargetState::from_connect_name(s)))
    {
        Some((_, Some(t))) => t,
        None => TargetState::Started,
        Some((s, None)) => {
            return Err(bad(&format!(
                "state {s:?} is not RUNNING, PAUSED or STOPPED"
            )))
        }
    };
    Ok((name.to_string(), raw, target))
}

/// The longest encoded connector name: its file name, with the temporary suffix, must fit a
/// file system's 255 bytes.
pub const MAX_STEM_BYTES: usize = 200;

/// `true` when `name`'s file name fits ([`MAX_STEM_BYTES`]).
pub fn name_fits(name: &str) -> bool {
    file_stem(name).len() <= MAX_STEM_BYTES
}

/// A file name for a connector name: letters, digits, `-` and `_` kept, every other byte
/// as `%XX`, so two names never share a file.
fn file_stem(name: &str) -> String {
    let mut out = String::new();
    for b in name.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

fn io_error(path: &Path, e: std::io::Error) -> Error {
    Error::new(
        ErrorKind::Config,
        format!("connector config store {}: {e}", path.display()),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn configs_and_target_states_survive_a_reload() {
        let dir = tempfile::tempdir().unwrap();
        let store = DirStore::open(&dir.path().join("c")).unwrap();
        let raw: RawConfig = [("name".to_string(), "a/b".to_string())].into();
        store.save("a/b", &raw, TargetState::Paused).unwrap();
        store.save("x", &raw, TargetState::Started).unwrap();
        let loaded = store.load().unwrap();
        assert_eq!(loaded.len(), 2);
        assert_eq!(loaded[0], ("a/b".into(), raw.clone(), TargetState::Paused));
        store.remove("a/b").unwrap();
        store.remove("a/b").unwrap();
        assert_eq!(store.load().unwrap().len(), 1);
        assert_eq!(file_stem("../x y"), "%2E%2E%2Fx%20y");
    }

    #[test]
    fn concurrent_saves_of_one_connector_leave_a_whole_file() {
        let dir = tempfile::tempdir().unwrap();
        let store = std::sync::Arc::new(DirStore::open(dir.path()).unwrap());
        let raw: RawConfig = [("big".to_string(), "x".repeat(200_000))].into();
        let threads: Vec<_> = (0..4)
            .map(|i| {
                let (store, raw) = (store.clone(), raw.clone());
                std::thread::spawn(move || {
                    for n in 0..20 {
                        let t = if (i + n) % 2 == 0 {
                            TargetState::Paused
                        } else {
                            TargetState::Stopped
                        };
                        store.save("c", &raw, t).expect("every save succeeds");
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        let loaded = store.load().expect("the file is whole");
        assert_eq!(loaded.len(), 1);
        assert_eq!(loaded[0].1, raw);
    }
}
