//! Watches the slot from the server's side while a run streams: how far its confirmed
//! position is behind the server's WAL (lag), how much WAL it holds back (retained), and
//! whether it is stalled: its confirmed position has not moved for a while although WAL was
//! written after it, which is how a slot fills the disk.
//!
//! It runs on its own SQL connection, every [`SLOT_MONITOR_INTERVAL`], and writes what it
//! reads into the run's [`Counters`]. A failed query (a standby, a connection lost) leaves the
//! last values and is retried on the next tick: the monitor never stops a run.

use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::task::JoinHandle;

use crate::config::DatabaseConfig;
use crate::lsn::Lsn;
use crate::pg::setup::{self, SlotPositions};

use super::Counters;

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

/// A running monitor; dropping it stops it (the run ended, or its future was dropped).
#[derive(Debug)]
pub struct Monitor(JoinHandle<()>);

impl Drop for Monitor {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Starts the monitor of `slot`; it runs until the returned [`Monitor`] is dropped.
pub fn spawn(database: DatabaseConfig, slot: String, counters: Arc<Counters>) -> Monitor {
    Monitor(super::spawn(async move {
        let mut client = None;
        let mut clock = StallClock::default();
        let mut tick = tokio::time::interval(SLOT_MONITOR_INTERVAL);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            if client
                .as_ref()
                .is_none_or(tokio_postgres::Client::is_closed)
            {
                client = crate::pg::sql::connect(&database).await.ok();
            }
            let Some(c) = client.as_ref() else { continue };
            match setup::slot_positions(c, &slot).await {
                Ok(Some(p)) => {
                    let stalled = clock.observe(p, Instant::now());
                    counters.set_slot(p, stalled);
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
