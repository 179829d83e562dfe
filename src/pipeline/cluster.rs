//! Slot continuity: the PostgreSQL cluster and timeline a connector's offsets were written
//! against.
//!
//! An LSN means something only in the WAL of one cluster. Offsets carried to another cluster
//! (a new `initdb`, a logical dump restored, the wrong host), or to an older copy of the same
//! one (a standby left behind on an earlier timeline), point at positions that hold other
//! changes or none, and resuming from them would skip or repeat changes without a word. So
//! pgcdc records, beside the offsets (their own entry, which Debezium never reads: see
//! [`crate::offsets::store::cluster_key`]), the server's system identifier and timeline, and at
//! each start compares them with the server's:
//! - same cluster, same timeline: nothing to do;
//! - same cluster, later timeline: a promotion (a failover); logged and recorded;
//! - another cluster, or an earlier timeline: refused with the way out
//!   (`offset.mismatch.strategy=trust_slot` to follow this server's slot, or the offsets
//!   deleted to start over with a snapshot), unless `offset.mismatch.strategy=trust_slot`
//!   already says to follow the slot;
//! - nothing recorded (offsets from Debezium or an older pgcdc), or no offsets: recorded.

use tokio_postgres::Client;

use super::offsets::OffsetStorage;
use crate::config::keys::OFFSET_MISMATCH_STRATEGY;
use crate::config::{ConnectorConfig, OffsetMismatchStrategy};
use crate::error::{Error, Result};
use crate::offsets::store::{ClusterIdentity, Offsets};
use crate::pg::setup;

/// What start-up does about the recorded cluster.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Verdict {
    /// The same cluster and timeline: nothing.
    Same,
    /// Nothing to compare with: record this server.
    Record,
    /// The timeline moved forward from the recorded one (a promotion): record it.
    Promoted(u32),
    /// A mismatch that `trust_slot` accepts: record this server, with a warning.
    Trusted(String),
    /// A mismatch: refuse, saying what it is.
    Refuse(String),
}

/// The verdict for `stored` against this server's `now` (pure).
fn verdict(
    stored: Option<&ClusterIdentity>,
    now: &ClusterIdentity,
    has_offsets: bool,
    strategy: OffsetMismatchStrategy,
) -> Verdict {
    let Some(stored) = stored.filter(|_| has_offsets) else {
        return Verdict::Record;
    };
    let problem = if stored.system_id != now.system_id {
        format!(
            "were written against PostgreSQL cluster {} (its system identifier), but this server is cluster {}: another cluster (made by initdb, or restored from a logical dump), whose LSNs mean other changes",
            stored.system_id, now.system_id
        )
    } else if now.timeline < stored.timeline {
        format!(
            "were written on timeline {} of this cluster, but this server is on timeline {}: an older copy of the cluster (a standby left behind, or a restored backup), which lacks changes the offsets count as published",
            stored.timeline, now.timeline
        )
    } else if now.timeline > stored.timeline {
        return Verdict::Promoted(stored.timeline);
    } else {
        return Verdict::Same;
    };
    if strategy == OffsetMismatchStrategy::TrustSlot {
        Verdict::Trusted(problem)
    } else {
        Verdict::Refuse(problem)
    }
}

/// Compares the cluster recorded with the offsets with this server's, and records this
/// server's when they may be used (see the module docs). Errors: a refused mismatch (a server
/// error naming both clusters and the ways out), or the offsets storage failing.
pub async fn check_cluster(
    config: &ConnectorConfig,
    store: &OffsetStorage,
    sql: &Client,
    offsets: Option<&Offsets>,
) -> Result<()> {
    let (system_id, timeline) = setup::cluster_identity(sql).await?;
    let now = ClusterIdentity {
        system_id,
        timeline,
    };
    let stored = store.load_cluster().await?;
    let (host, port) = (&config.database.hostname, config.database.port);
    match verdict(stored.as_ref(), &now, offsets.is_some(), config.offset_mismatch) {
        Verdict::Same => return Ok(()),
        Verdict::Record => {}
        Verdict::Promoted(from) => tracing::info!(
            from_timeline = from,
            timeline = now.timeline,
            "the server moved to a later timeline since the offsets were written (a promotion): continuing from its slot"
        ),
        Verdict::Trusted(problem) => tracing::warn!(
            "the stored offsets of connector {} {problem}; {OFFSET_MISMATCH_STRATEGY}=trust_slot: following the slot on {host}:{port}",
            config.name
        ),
        Verdict::Refuse(problem) => {
            return Err(Error::server(format!(
                "the stored offsets of connector {} ({}) {problem}. Resuming would skip or repeat changes silently, so pgcdc stops. If this server's slot is the one to follow (a cluster upgraded with pg_upgrade, which carries slots over), set {OFFSET_MISMATCH_STRATEGY}=trust_slot; otherwise delete the connector's offsets (DELETE /connectors/{}/offsets, or its entries in the offsets file) to start over with a new snapshot",
                config.name,
                store.describe(),
                config.name
            )))
        }
    }
    store.save_cluster(&now).await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(system_id: &str, timeline: u32) -> ClusterIdentity {
        ClusterIdentity {
            system_id: system_id.into(),
            timeline,
        }
    }

    #[test]
    fn the_recorded_cluster_decides_whether_offsets_may_be_used() {
        use OffsetMismatchStrategy::*;
        let now = id("7", 2);
        assert_eq!(verdict(None, &now, true, NoValidation), Verdict::Record);
        assert_eq!(
            verdict(Some(&id("8", 1)), &now, false, NoValidation),
            Verdict::Record
        );
        assert_eq!(
            verdict(Some(&id("7", 2)), &now, true, NoValidation),
            Verdict::Same
        );
        assert_eq!(
            verdict(Some(&id("7", 1)), &now, true, TrustOffset),
            Verdict::Promoted(1)
        );
        for strategy in [NoValidation, TrustOffset, TrustGreaterLsn] {
            let Verdict::Refuse(why) = verdict(Some(&id("8", 2)), &now, true, strategy) else {
                panic!("another cluster is refused under {strategy:?}");
            };
            assert!(
                why.contains("cluster 8") && why.contains("cluster 7"),
                "{why}"
            );
            let Verdict::Refuse(why) = verdict(Some(&id("7", 3)), &now, true, strategy) else {
                panic!("an earlier timeline is refused under {strategy:?}");
            };
            assert!(
                why.contains("timeline 3") && why.contains("timeline 2"),
                "{why}"
            );
        }
        assert!(matches!(
            verdict(Some(&id("8", 2)), &now, true, TrustSlot),
            Verdict::Trusted(_)
        ));
        assert!(matches!(
            verdict(Some(&id("7", 3)), &now, true, TrustSlot),
            Verdict::Trusted(_)
        ));
    }
}
