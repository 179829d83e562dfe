//! Where a run keeps its offsets: a compacted Kafka topic, as Kafka Connect keeps them
//! (`offsets.storage.topic` / `offset.storage.topic`), or the local file
//! (`offset.storage.file.filename`) when no topic is configured; and the saver that writes
//! the newest completed transaction on the offsets timer and at shutdown.
//!
//! The timer's writes run in the background ([`OffsetSaver::save_completed_in_background`]):
//! a synced file write can take 100 ms on a busy disk, and the stream must not stall for it.
//! At most one write is under way, and every other write waits for it first, so writes land
//! in the order they were made; a position becomes confirmable only once its write is done.
//!
//! The offsets record whether the initial snapshot completed and the last confirmed position.
//! The slot decides where the server starts sending; the offsets, what of that was published
//! already ([`super::resume`]).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use crate::config::ConnectorConfig;
use crate::error::{Error, ErrorKind, Result};
use crate::lsn::Lsn;
use crate::offsets::ack::{AckToken, AckTracker, CommitInfo};
use crate::offsets::store::{ClusterIdentity, OffsetStore, Offsets};
use crate::sink::offsets_topic::KafkaOffsetStore;

/// How often a run checks that its offsets topic is still compacted.
pub const VERIFY_EVERY: std::time::Duration = std::time::Duration::from_secs(10);

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
        Self::open_with(config, true).await
    }

    /// The storage `config` names, creating nothing (reading offsets over REST): a missing
    /// topic reads as no offsets.
    pub async fn open_existing(config: &ConnectorConfig) -> Result<OffsetStorage> {
        Self::open_with(config, false).await
    }

    async fn open_with(config: &ConnectorConfig, create: bool) -> Result<OffsetStorage> {
        match &config.offsets_topic {
            Some(topic) => {
                let store = KafkaOffsetStore::open(
                    &config.kafka,
                    topic,
                    &config.name,
                    &config.topic_prefix,
                    create,
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

    /// Stores `offsets` (a topic write waits for the broker's acknowledgement; a file write,
    /// synced, runs on a blocking thread).
    pub async fn save(&self, offsets: &Offsets) -> Result<()> {
        match self {
            OffsetStorage::Topic(t) => t.save(offsets).await,
            OffsetStorage::File(f) => {
                let offsets = offsets.clone();
                write_file(f, move |f| f.save(&offsets)).await
            }
        }
    }

    /// Checks that an offsets topic is still compacted (a file: nothing to check). Errors:
    /// see [`KafkaOffsetStore::verify_compacted`].
    pub async fn verify(&self) -> Result<()> {
        match self {
            OffsetStorage::Topic(t) => t.verify_compacted().await,
            OffsetStorage::File(_) => Ok(()),
        }
    }

    /// The cluster this connector's offsets were written against, if recorded.
    pub async fn load_cluster(&self) -> Result<Option<ClusterIdentity>> {
        match self {
            OffsetStorage::Topic(t) => t.load_cluster().await,
            OffsetStorage::File(f) => f.load_cluster(),
        }
    }

    /// Records the cluster this connector's offsets are written against.
    pub async fn save_cluster(&self, cluster: &ClusterIdentity) -> Result<()> {
        match self {
            OffsetStorage::Topic(t) => t.save_cluster(cluster).await,
            OffsetStorage::File(f) => {
                let cluster = cluster.clone();
                write_file(f, move |f| f.save_cluster(&cluster)).await
            }
        }
    }

    /// Deletes this connector's offsets (and its recorded cluster).
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

/// Runs a (synced) write of the offsets file `f` on a blocking thread.
async fn write_file(
    f: &OffsetStore,
    write: impl FnOnce(&OffsetStore) -> Result<()> + Send + 'static,
) -> Result<()> {
    let f = f.clone();
    tokio::task::spawn_blocking(move || write(&f))
        .await
        .map_err(|e| {
            Error::new(
                ErrorKind::Internal,
                format!("the offsets file write failed: {e}"),
            )
        })?
}

/// The offsets storage and the last commit written to it.
#[derive(Debug)]
pub struct OffsetSaver {
    storage: Arc<OffsetStorage>,
    /// The write under way in the background, if any: it returns the end LSN it stored.
    writing: Option<tokio::task::JoinHandle<Result<Lsn>>>,
    /// The check of the offsets topic's cleanup policy under way in the background, and when
    /// the last one started.
    verifying: Option<tokio::task::JoinHandle<Result<()>>>,
    verified_at: std::time::Instant,
    saved: Option<Lsn>,
    /// The snapshot checkpoint last written (see [`CommitInfo::initial`]): checkpoints share
    /// their position, and differ in the tables they list.
    saved_initial: Option<Arc<crate::offsets::initial::InitialProgress>>,
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
            storage: Arc::new(storage),
            writing: None,
            verifying: None,
            verified_at: std::time::Instant::now(),
            saved: None,
            saved_initial: None,
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

    /// Stores `offsets` after any write under way; once stored, their commit position may be
    /// confirmed.
    pub async fn save(&mut self, offsets: &Offsets) -> Result<()> {
        self.finish_write().await?;
        write(&self.storage, &self.stored, offsets).await?;
        Ok(())
    }

    /// Records the snapshot complete at `position` once unit `marker` has completed (see
    /// [`super::fence`]); until then nothing is written.
    pub fn complete_snapshot_after(&mut self, marker: AckToken, position: Lsn) {
        self.pending_snapshot = Some((marker, position));
    }

    /// Writes the newest completed transaction, when it changed since the last write. While
    /// the tracker is held (a snapshot on an existing slot is not complete yet) only the
    /// transactions its first pass published ahead of it are written (as offsets that say the
    /// snapshot is in progress), and the completion once its marker unit completed, which
    /// ends the hold.
    pub async fn save_completed(&mut self, tracker: &AckTracker) -> Result<()> {
        self.finish_write().await?;
        if let Some(offsets) = self.next_offsets(tracker).await? {
            let end = offsets.lsn.unwrap_or(Lsn::ZERO);
            self.save(&offsets).await?;
            self.saved = Some(end);
        }
        Ok(())
    }

    /// What [`OffsetSaver::save_completed`] does, without waiting for the write: it runs in
    /// the background, and the next call takes its result (an error of it is returned then).
    /// While a write is under way nothing new is started. Recording a completed snapshot is
    /// still waited for (it happens once).
    pub async fn save_completed_in_background(&mut self, tracker: &AckTracker) -> Result<()> {
        if let Some(w) = &self.writing {
            if !w.is_finished() {
                return Ok(());
            }
            self.finish_write().await?;
        }
        let Some(offsets) = self.next_offsets(tracker).await? else {
            return Ok(());
        };
        let storage = self.storage.clone();
        let stored = self.stored.clone();
        self.writing = Some(super::spawn(async move {
            write(&storage, &stored, &offsets).await
        }));
        Ok(())
    }

    /// Every [`VERIFY_EVERY`], checks in the background that the offsets topic is still
    /// compacted (the start checked it): deleted while pgcdc runs, it is created again by the
    /// brokers at the next write, with their default `cleanup.policy=delete`, and the offsets
    /// would expire. The result of the check is taken at a later call. Errors: the last check
    /// found the topic not compacted (a config error with the fix).
    pub async fn verify_in_background(&mut self) -> Result<()> {
        if self.verifying.as_ref().is_some_and(|v| !v.is_finished()) {
            return Ok(());
        }
        if let Some(v) = self.verifying.take() {
            let checked = v.await.map_err(|e| {
                Error::new(
                    ErrorKind::Internal,
                    format!("the offsets topic check failed: {e}"),
                )
            })?;
            match checked {
                Err(e) if e.kind() == ErrorKind::Config => return Err(e),
                Err(e) => {
                    tracing::debug!(error = %e.one_line(),
                        "could not check the offsets topic's cleanup.policy; trying again later")
                }
                Ok(()) => {}
            }
        }
        if self.verified_at.elapsed() >= VERIFY_EVERY {
            self.verified_at = std::time::Instant::now();
            let storage = self.storage.clone();
            self.verifying = Some(super::spawn(async move { storage.verify().await }));
        }
        Ok(())
    }

    /// Waits for the write under way, if any, and takes its result.
    async fn finish_write(&mut self) -> Result<()> {
        let Some(w) = self.writing.take() else {
            return Ok(());
        };
        let end = w.await.map_err(|e| {
            Error::new(
                ErrorKind::Internal,
                format!("the offsets write task failed: {e}"),
            )
        })??;
        self.saved = Some(end);
        Ok(())
    }

    /// The offsets to write next: records a completed snapshot first when its marker unit
    /// has completed (written at once), then the newest completed transaction if it is not
    /// written yet; `None` when there is nothing new. While a snapshot on an existing slot
    /// is incomplete (the tracker is held), only a transaction published before it (see
    /// [`CommitInfo::before_snapshot`]), in offsets that still say the snapshot is in progress.
    /// Exactly-once, the sink writes every offsets record in its Kafka transactions (the one
    /// that holds the marker records the snapshot complete): this only ends the hold.
    async fn next_offsets(&mut self, tracker: &AckTracker) -> Result<Option<Offsets>> {
        if let Some((marker, position)) = self.pending_snapshot {
            if !tracker.is_completed(marker) {
                return Ok(None);
            }
            if !self.transactional {
                self.save(&Offsets::snapshot_completed_at(position)).await?;
                self.saved = Some(position);
            }
            self.pending_snapshot = None;
            tracker.release();
            tracing::info!(lsn = %position,
                "snapshot recorded complete: every transaction before its position is acknowledged");
        }
        if self.transactional {
            return Ok(None);
        }
        let held = tracker.is_held();
        let Some(c) = tracker.last_completed() else {
            return Ok(None);
        };
        if held && !c.before_snapshot {
            return Ok(None);
        }
        let same_checkpoint = match (&self.saved_initial, &c.initial) {
            (_, None) => true,
            (Some(a), Some(b)) => Arc::ptr_eq(a, b),
            (None, Some(_)) => false,
        };
        let written = self.saved == Some(c.end_lsn) && same_checkpoint;
        if written || self.floor.is_some_and(|f| c.end_lsn <= f) {
            return Ok(None);
        }
        self.saved_initial = c.initial.clone();
        Ok(Some(Offsets::after(&CommitInfo {
            completes_snapshot: false,
            before_snapshot: held,
            ..c
        })))
    }
}

/// Writes `offsets` to `storage`; once written, their commit position may be confirmed
/// (`stored`). Returns the end LSN written.
async fn write(storage: &OffsetStorage, stored: &AtomicU64, offsets: &Offsets) -> Result<Lsn> {
    storage.save(offsets).await?;
    if let Some(commit) = offsets.lsn_commit {
        stored.fetch_max(commit.0, Ordering::AcqRel);
    }
    Ok(offsets.lsn.unwrap_or(Lsn::ZERO))
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
                idle: false,
                before_snapshot: false,
                incremental: None,
                initial: None,
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

    #[tokio::test]
    async fn each_snapshot_checkpoint_is_written_though_they_share_a_position() {
        let dir = tempfile::tempdir().unwrap();
        let store = OffsetStore::new(&dir.path().join("o.json"), "c", "p");
        let mut saver = OffsetSaver::new(OffsetStorage::File(store.clone()), Lsn(100), None, false);
        let t = AckTracker::new(Lsn(100));
        let mut progress = crate::offsets::initial::InitialProgress::default();
        for table in ["public.a", "public.b"] {
            progress = progress.with([table.to_string()]);
            let u = t.begin();
            t.commit(
                u,
                CommitInfo {
                    end_lsn: Lsn(100),
                    initial: Some(Arc::new(progress.clone())),
                    ..CommitInfo::default()
                },
            );
            saver.save_completed(&t).await.unwrap();
            let stored = store.load().unwrap().unwrap();
            assert!(!stored.snapshot_done(), "the snapshot is in progress");
            assert_eq!(stored.initial.as_ref(), Some(&progress));
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn background_writes_confirm_only_what_is_written_and_land_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let store = OffsetStore::new(&dir.path().join("o.json"), "c", "p");
        let mut saver = OffsetSaver::new(OffsetStorage::File(store.clone()), Lsn(100), None, false);
        let t = AckTracker::new(Lsn(100));
        commit(&t, 300);
        saver.save_completed_in_background(&t).await.unwrap();
        // The position is confirmable once the write is done, without another call.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while saver.stored().load(Ordering::Acquire) < 300 {
            assert!(
                std::time::Instant::now() < deadline,
                "the write never finished"
            );
            tokio::task::yield_now().await;
        }
        assert_eq!(store.load().unwrap().unwrap().lsn_commit, Some(Lsn(300)));
        // A newer transaction, then the shutdown write: it waits for any write under way and
        // leaves the newest position in the file.
        commit(&t, 400);
        saver.save_completed_in_background(&t).await.unwrap();
        commit(&t, 500);
        saver.save_completed(&t).await.unwrap();
        assert!(saver.writing.is_none());
        assert_eq!(store.load().unwrap().unwrap().lsn_commit, Some(Lsn(500)));
        assert_eq!(saver.stored().load(Ordering::Acquire), 500);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_failed_background_write_is_returned_by_the_next_call_and_confirms_nothing() {
        let dir = tempfile::tempdir().unwrap();
        // A directory where the file should be: every write fails.
        let path = dir.path().join("o.json");
        std::fs::create_dir_all(path.with_extension("tmp")).unwrap();
        let store = OffsetStore::new(&path, "c", "p");
        let mut saver = OffsetSaver::new(OffsetStorage::File(store), Lsn(100), None, false);
        let t = AckTracker::new(Lsn(100));
        commit(&t, 300);
        saver.save_completed_in_background(&t).await.unwrap();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while !saver.writing.as_ref().is_some_and(|w| w.is_finished()) {
            assert!(
                std::time::Instant::now() < deadline,
                "the write never finished"
            );
            tokio::task::yield_now().await;
        }
        let err = saver.save_completed_in_background(&t).await.unwrap_err();
        assert!(err.to_string().contains("offset file"), "{err}");
        assert_eq!(
            saver.stored().load(Ordering::Acquire),
            100,
            "nothing confirmable"
        );
    }
}
