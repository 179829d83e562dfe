//! Where a run keeps its offsets: a compacted Kafka topic, as Kafka Connect keeps them
//! (`offsets.storage.topic` / `offset.storage.topic`), or the local file
//! (`offset.storage.file.filename`) when no topic is configured; and the saver that writes
//! the newest completed transaction on the offsets timer and at shutdown.
//!
//! The offsets record whether the initial snapshot completed and the last confirmed position.
//! The slot decides where the server starts sending; the offsets, what of that was published
//! already ([`super::resume`]).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use crate::config::ConnectorConfig;
use crate::error::Result;
use crate::lsn::Lsn;
use crate::offsets::ack::{AckToken, AckTracker, CommitInfo};
use crate::offsets::store::{OffsetStore, Offsets};
use crate::sink::offsets_topic::KafkaOffsetStore;

/// One connector's offsets, in a topic or in a file.
#[derive(Debug)]
pub enum OffsetStorage {
    /// A compacted Kafka topic.
    Topic(KafkaOffsetStore),
    /// The local offsets file.
    File(OffsetStore),
}

impl OffsetStorage {
    /// The storage `config` asks for (the topic is created when missing).
    pub async fn open(config: &ConnectorConfig) -> Result<OffsetStorage> {
        match &config.offsets_topic {
            Some(topic) => {
                let store = KafkaOffsetStore::open(
                    &config.kafka,
                    topic,
                    &config.name,
                    &config.topic_prefix,
                )
                .await?;
                Ok(OffsetStorage::Topic(store))
            }
            None => Ok(OffsetStorage::File(OffsetStore::new(
                &config.offset_file,
                &config.name,
                &config.topic_prefix,
            ))),
        }
    }

    /// This connector's stored offsets, if any.
    pub async fn load(&self) -> Result<Option<Offsets>> {
        match self {
            OffsetStorage::Topic(t) => t.load().await,
            OffsetStorage::File(f) => f.load(),
        }
    }

    /// Stores `offsets` (a topic write waits for the broker's acknowledgement).
    pub async fn save(&self, offsets: &Offsets) -> Result<()> {
        match self {
            OffsetStorage::Topic(t) => t.save(offsets).await,
            OffsetStorage::File(f) => f.save(offsets),
        }
    }

    /// Deletes this connector's offsets.
    pub async fn clear(&self) -> Result<()> {
        match self {
            OffsetStorage::Topic(t) => t.clear().await,
            OffsetStorage::File(f) => f.clear(),
        }
    }

    /// Where the offsets are, for messages.
    pub fn describe(&self) -> String {
        match self {
            OffsetStorage::Topic(t) => t.describe(),
            OffsetStorage::File(f) => format!("the offsets file {}", f.path().display()),
        }
    }
}

/// The offsets storage and the last commit written to it.
#[derive(Debug)]
pub struct OffsetSaver {
    storage: OffsetStorage,
    saved: Option<Lsn>,
    /// The end of the newest transaction the store holds (at first, the slot's position):
    /// what may be confirmed to PostgreSQL (see [`AckTracker::confirmable`]).
    stored: Arc<AtomicU64>,
    /// The commit position of the offsets loaded at start: a transaction the slot re-sends
    /// from before it (the slot lagged the offsets) is not written over them, which would move
    /// them back and drop Debezium's partial-transaction fields.
    floor: Option<Lsn>,
    /// A snapshot on an existing slot waiting to be recorded complete: its marker unit and
    /// position (see [`super::fence`]).
    pending_snapshot: Option<(AckToken, Lsn)>,
    /// Exactly-once: the sink writes the offsets of each Kafka transaction in it, so the
    /// timer writes nothing of its own (a later write of an older position would move the
    /// offsets back).
    transactional: bool,
}

impl OffsetSaver {
    /// A saver writing to `storage`; the slot's confirmed position is `start`, and `floor`
    /// the commit position of the loaded offsets, if any. `transactional`: the sink writes
    /// the offsets in its Kafka transactions (exactly-once).
    pub fn new(
        storage: OffsetStorage,
        start: Lsn,
        floor: Option<Lsn>,
        transactional: bool,
    ) -> Self {
        OffsetSaver {
            storage,
            saved: None,
            floor,
            stored: Arc::new(AtomicU64::new(start.0.max(floor.map_or(0, |f| f.0)))),
            pending_snapshot: None,
            transactional,
        }
    }

    /// The storage.
    pub fn storage(&self) -> &OffsetStorage {
        &self.storage
    }

    /// The end of the newest transaction stored, shared with the replication reader.
    pub fn stored(&self) -> Arc<AtomicU64> {
        self.stored.clone()
    }

    /// Stores `offsets`; once stored, their commit position may be confirmed.
    pub async fn save(&mut self, offsets: &Offsets) -> Result<()> {
        self.storage.save(offsets).await?;
        if let Some(commit) = offsets.lsn_commit {
            self.stored.fetch_max(commit.0, Ordering::AcqRel);
        }
        Ok(())
    }

    /// Records the snapshot complete at `position` once unit `marker` has completed (see
    /// [`super::fence`]); until then nothing is written.
    pub fn complete_snapshot_after(&mut self, marker: AckToken, position: Lsn) {
        self.pending_snapshot = Some((marker, position));
    }

    /// Writes the newest completed transaction, when it changed since the last write. While
    /// the tracker is held (a snapshot on an existing slot is not complete yet) nothing is
    /// written, except the completion once its marker unit completed, which ends the hold.
    pub async fn save_completed(&mut self, tracker: &AckTracker) -> Result<()> {
        if let Some((marker, position)) = self.pending_snapshot {
            if !tracker.is_completed(marker) {
                return Ok(());
            }
            self.save(&Offsets::snapshot_completed_at(position)).await?;
            self.saved = Some(position);
            self.pending_snapshot = None;
            tracker.release();
            tracing::info!(lsn = %position, "snapshot recorded complete: every transaction before its position is acknowledged");
        }
        if tracker.is_held() || self.transactional {
            return Ok(());
        }
        let Some(c) = tracker.last_completed() else {
            return Ok(());
        };
        if self.saved == Some(c.end_lsn) || self.floor.is_some_and(|f| c.end_lsn <= f) {
            return Ok(());
        }
        self.save(&Offsets::after(&CommitInfo {
            completes_snapshot: false,
            ..c
        }))
        .await?;
        self.saved = Some(c.end_lsn);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn commit(t: &AckTracker, end: u64) {
        let u = t.begin();
        t.commit(
            u,
            CommitInfo {
                end_lsn: Lsn(end),
                xid: 7,
                commit_time_us: 1,
                completes_snapshot: false,
            },
        );
    }

    #[tokio::test]
    async fn offsets_never_move_back_below_the_loaded_ones_and_only_stored_is_confirmable() {
        let dir = tempfile::tempdir().unwrap();
        let store = OffsetStore::new(&dir.path().join("o.json"), "c", "p");
        let loaded = Offsets {
            lsn: Some(Lsn(500)),
            lsn_proc: Some(Lsn(520)),
            lsn_commit: Some(Lsn(500)),
            tx_id: Some(9),
            message_type: Some("INSERT".into()),
            ..Default::default()
        };
        store.save(&loaded).unwrap();
        // The slot lags the offsets (at 100): what it re-sends up to 500 was published.
        let mut saver = OffsetSaver::new(
            OffsetStorage::File(store.clone()),
            Lsn(100),
            Some(Lsn(500)),
            false,
        );
        let t = AckTracker::new(Lsn(100));
        commit(&t, 300);
        saver.save_completed(&t).await.unwrap();
        assert_eq!(
            store.load().unwrap().unwrap(),
            loaded,
            "not moved back to 300"
        );
        let stored = Lsn(saver.stored().load(Ordering::Acquire));
        assert_eq!(stored, Lsn(500));
        assert_eq!(t.confirmable(stored), Lsn(300));
        commit(&t, 700);
        assert_eq!(t.confirmable(stored), Lsn(500), "700 is not stored yet");
        saver.save_completed(&t).await.unwrap();
        assert_eq!(store.load().unwrap().unwrap().lsn_commit, Some(Lsn(700)));
        let stored = Lsn(saver.stored().load(Ordering::Acquire));
        assert_eq!(t.confirmable(stored), Lsn(700));
    }
}
