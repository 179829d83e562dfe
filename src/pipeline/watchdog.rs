//! The delivery watchdog: says so when Kafka stops acknowledging.
//!
//! The main loop can wait on Kafka for as long as a broker is away (backpressure), and while
//! it waits it logs nothing. This task, running beside it for the whole run, checks the ack
//! tracker every [`CHECK_EVERY`]: records in flight and no delivery report for
//! [`WARN_AFTER`] is logged at WARN (and again every [`WARN_AFTER`] while it lasts), and the
//! first report after that at INFO. It only reads the tracker; it never changes what is
//! confirmed.

use std::sync::Arc;
use std::time::Duration;

use tokio::task::JoinHandle;
use tokio::time::Instant;

use crate::offsets::ack::AckTracker;

/// How often the tracker is looked at.
pub const CHECK_EVERY: Duration = Duration::from_secs(5);
/// How long records may wait for a delivery report before it is logged.
pub const WARN_AFTER: Duration = Duration::from_secs(30);

/// The watchdog of one run; it stops when dropped.
#[derive(Debug)]
pub struct Watchdog(JoinHandle<()>);

impl Drop for Watchdog {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// What the watchdog saw last.
#[derive(Debug)]
struct Seen {
    acked: u64,
    /// Since when records have been waiting with no delivery report.
    waiting_since: Option<Instant>,
    /// When the last warning was logged (while waiting).
    warned: Option<Instant>,
}

impl Seen {
    /// Takes in one look at the tracker: (records in flight, delivery reports ever). Returns
    /// what to log.
    fn look(&mut self, in_flight: u64, acked: u64, now: Instant) -> Option<Log> {
        let progressed = acked != self.acked;
        self.acked = acked;
        if progressed || in_flight == 0 {
            let was = self.waiting_since.take();
            return self
                .warned
                .take()
                .map(|_| Log::Resumed(now - was.unwrap_or(now)));
        }
        let since = *self.waiting_since.get_or_insert(now);
        let due = match self.warned {
            None => now - since >= WARN_AFTER,
            Some(w) => now - w >= WARN_AFTER,
        };
        due.then(|| {
            self.warned = Some(now);
            Log::Waiting(now - since, in_flight)
        })
    }
}

/// A line to log.
#[derive(Debug, PartialEq, Eq)]
enum Log {
    Waiting(Duration, u64),
    Resumed(Duration),
}

/// Starts the watchdog over `tracker`.
pub fn start(tracker: Arc<AckTracker>) -> Watchdog {
    Watchdog(super::spawn(async move {
        let mut seen = Seen {
            acked: tracker.delivery_progress().1,
            waiting_since: None,
            warned: None,
        };
        let mut tick = tokio::time::interval(CHECK_EVERY);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            let (in_flight, acked) = tracker.delivery_progress();
            match seen.look(in_flight, acked, Instant::now()) {
                Some(Log::Waiting(for_, records)) => tracing::warn!(
                    waiting_s = for_.as_secs(),
                    in_flight = records,
                    flushed_lsn = %tracker.flushable(),
                    "Kafka has acknowledged no record for {} s ({records} waiting): a broker is down, stalled or unreachable. pgcdc waits and confirms nothing past them to PostgreSQL; status updates go on",
                    for_.as_secs()
                ),
                Some(Log::Resumed(after)) => tracing::info!(
                    waited_s = after.as_secs(),
                    "Kafka acknowledges records again"
                ),
                None => {}
            }
        }
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stall_is_logged_after_the_delay_then_every_delay_then_its_end() {
        let t0 = Instant::now();
        let at = |s: u64| t0 + Duration::from_secs(s);
        let mut seen = Seen {
            acked: 0,
            waiting_since: None,
            warned: None,
        };
        assert_eq!(seen.look(5, 0, at(0)), None);
        assert_eq!(seen.look(5, 0, at(25)), None);
        assert_eq!(
            seen.look(5, 0, at(30)),
            Some(Log::Waiting(Duration::from_secs(30), 5))
        );
        assert_eq!(seen.look(9, 0, at(45)), None);
        assert_eq!(
            seen.look(9, 0, at(60)),
            Some(Log::Waiting(Duration::from_secs(60), 9))
        );
        assert_eq!(
            seen.look(9, 3, at(65)),
            Some(Log::Resumed(Duration::from_secs(65)))
        );
        assert_eq!(seen.look(9, 3, at(70)), None, "a new wait starts over");
    }

    #[test]
    fn nothing_in_flight_or_steady_acks_log_nothing() {
        let t0 = Instant::now();
        let mut seen = Seen {
            acked: 0,
            waiting_since: None,
            warned: None,
        };
        for s in 0..100 {
            assert_eq!(seen.look(0, 0, t0 + Duration::from_secs(s)), None);
        }
        for s in 0..100 {
            assert_eq!(seen.look(7, s, t0 + Duration::from_secs(100 + s)), None);
        }
    }
}
