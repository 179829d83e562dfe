//! Watches the slot from the server's side: how far its confirmed position is behind the
//! server's WAL (lag), how much WAL it holds back (retained), and whether it is stalled: its
//! confirmed position has not moved for a while although WAL was written after it, which is
//! how a slot fills the disk.
//!
//! A connector's [`SlotWatch`] starts its monitor when a run first streams (the slot exists
//! and the credentials work), or when a worker restarts with the connector paused or stopped,
//! and keeps it through later runs, pauses, stops and restarts, since a paused or stopped
//! connector's slot still holds WAL; it ends with the connector. The monitor reads on its own
//! SQL connection, every [`SLOT_MONITOR_INTERVAL`]. A failed query (a standby, a connection
//! lost) leaves the last values and is retried on the next tick; failed connections are
//! retried less and less often, up to once a minute. A slot that does not exist gives no
//! values. The monitor never stops a run.

use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use tokio::task::JoinHandle;

use crate::config::DatabaseConfig;
use crate::lsn::Lsn;
use crate::pg::setup::{self, SlotPositions};

use super::counters::SlotGauges;

/// How often the slot is read.
pub const SLOT_MONITOR_INTERVAL: Duration = Duration::from_secs(5);

/// Tracks how long the confirmed position has stood still while WAL grew past it.
#[derive(Debug, Default)]
pub struct StallClock {
    last: Option<(Lsn, Instant)>,
}

impl StallClock {
    /// Seconds the slot has been stalled as of `now`, given its positions then.
    pub fn observe(&mut self, p: SlotPositions, now: Instant) -> u64 {
        match self.last {
            Some((confirmed, since)) if confirmed == p.confirmed_flush => {
                if p.current > p.confirmed_flush {
                    now.saturating_duration_since(since).as_secs()
                } else {
                    // Nothing written since: idle, not stalled.
                    self.last = Some((confirmed, now));
                    0
                }
            }
            _ => {
                self.last = Some((p.confirmed_flush, now));
                0
            }
        }
    }
}

/// How many ticks the monitor lets pass between connection attempts: 0 after a success, then
/// 1, 3, 7, … up to [`MAX_SKIPPED_TICKS`] after failures, so a server that refuses the
/// credentials (a connector that comes back stopped with a stale password) sees one attempt a
/// minute, not one every tick.
#[derive(Debug, Default)]
struct ConnectBackoff {
    failures: u32,
    skip: u32,
}

/// At most one connection attempt per this many ticks (a minute at 5 s).
const MAX_SKIPPED_TICKS: u32 = 11;

impl ConnectBackoff {
    /// `true` when this tick may try to connect.
    fn due(&mut self) -> bool {
        if self.skip == 0 {
            return true;
        }
        self.skip -= 1;
        false
    }

    /// Notes the attempt's outcome.
    fn result(&mut self, connected: bool) {
        if connected {
            self.failures = 0;
            self.skip = 0;
        } else {
            self.failures = (self.failures + 1).min(8);
            self.skip = ((1u32 << self.failures) - 1).min(MAX_SKIPPED_TICKS);
        }
    }
}

/// A running monitor; dropping it stops it.
#[derive(Debug)]
struct Monitor(JoinHandle<()>);

impl Drop for Monitor {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// A connector's slot gauges, for its whole life, and the monitor that refreshes them.
#[derive(Debug, Default)]
pub struct SlotWatch {
    gauges: Mutex<Option<SlotGauges>>,
    monitor: Mutex<Option<Monitor>>,
}

impl SlotWatch {
    /// Starts the monitor of `slot` unless it runs already.
    pub fn ensure(self: &Arc<Self>, database: &DatabaseConfig, slot: &str) {
        let mut monitor = self.monitor.lock().unwrap_or_else(|p| p.into_inner());
        if monitor.as_ref().is_none_or(|m| m.0.is_finished()) {
            *monitor = Some(spawn(
                database.clone(),
                slot.to_string(),
                Arc::downgrade(self),
            ));
        }
    }

    /// Stops the monitor (the connector is gone); the last values stay readable.
    pub fn stop(&self) {
        self.monitor
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take();
    }

    /// The slot as the server saw it at the last check, if it was read.
    pub fn gauges(&self) -> Option<SlotGauges> {
        *self.gauges.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn set(&self, p: SlotPositions, stalled_seconds: u64) {
        let gauges = SlotGauges {
            current_wal: p.current,
            lag_bytes: p.current.0.saturating_sub(p.confirmed_flush.0),
            retained_bytes: p.current.0.saturating_sub(p.restart.0),
            stalled_seconds,
        };
        *self.gauges.lock().unwrap_or_else(|p| p.into_inner()) = Some(gauges);
    }
}

/// The monitor of `slot`: it runs until aborted or until `watch` is gone.
fn spawn(database: DatabaseConfig, slot: String, watch: Weak<SlotWatch>) -> Monitor {
    Monitor(super::spawn(async move {
        let mut client = None;
        let mut clock = StallClock::default();
        let mut tick = tokio::time::interval(SLOT_MONITOR_INTERVAL);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut retry = ConnectBackoff::default();
        loop {
            tick.tick().await;
            if watch.strong_count() == 0 {
                return;
            }
            if client
                .as_ref()
                .is_none_or(tokio_postgres::Client::is_closed)
            {
                if !retry.due() {
                    continue;
                }
                client = crate::pg::sql::connect(&database).await.ok();
                retry.result(client.is_some());
            }
            let Some(c) = client.as_ref() else { continue };
            match setup::slot_positions(c, &slot).await {
                Ok(Some(p)) => {
                    let stalled = clock.observe(p, Instant::now());
                    let Some(watch) = watch.upgrade() else { return };
                    watch.set(p, stalled);
                }
                Ok(None) => {}
                Err(e) => {
                    tracing::debug!(slot = %slot, error = %e.one_line(), "slot monitor query failed")
                }
            }
        }
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(current: u64, confirmed: u64) -> SlotPositions {
        SlotPositions {
            current: Lsn(current),
            confirmed_flush: Lsn(confirmed),
            restart: Lsn(confirmed),
        }
    }

    #[test]
    fn failed_connections_are_retried_less_and_less_often_up_to_once_a_minute() {
        let mut b = ConnectBackoff::default();
        let mut attempts = Vec::new();
        for tick in 0..60 {
            if b.due() {
                attempts.push(tick);
                b.result(false);
            }
        }
        assert_eq!(attempts, [0, 2, 6, 14, 26, 38, 50]);
        b.result(true);
        assert!(b.due(), "a success resets the wait");
    }

    #[test]
    fn a_slot_is_stalled_only_while_wal_grows_past_a_confirmed_position_that_stands_still() {
        let t0 = Instant::now();
        let s = |secs| t0 + Duration::from_secs(secs);
        let mut clock = StallClock::default();
        assert_eq!(clock.observe(at(100, 100), s(0)), 0);
        assert_eq!(
            clock.observe(at(100, 100), s(30)),
            0,
            "idle: nothing written"
        );
        assert_eq!(
            clock.observe(at(200, 100), s(40)),
            10,
            "WAL grew, confirmed stood"
        );
        assert_eq!(clock.observe(at(300, 100), s(70)), 40);
        assert_eq!(clock.observe(at(300, 300), s(75)), 0, "it moved");
        assert_eq!(clock.observe(at(400, 300), s(80)), 5);
    }
}
