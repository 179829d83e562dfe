//! Single message transforms, applied in `transforms` order to each record. Pure functions
//! of records and config: no I/O.

pub mod outbox;

use crate::config::TransformConfig;
use crate::error::Result;
use crate::event::ConnectRecord;

/// A configured transform.
#[derive(Debug)]
pub enum Transform {
    /// Debezium's outbox EventRouter.
    EventRouter(outbox::EventRouter),
}

impl Transform {
    /// Builds the transform from its config.
    pub fn from_config(c: &TransformConfig) -> Self {
        match c {
            TransformConfig::EventRouter { alias } => {
                Transform::EventRouter(outbox::EventRouter::new(alias))
            }
        }
    }

    /// Applies the transform; `Ok(None)` drops the record.
    pub fn apply(&self, r: ConnectRecord) -> Result<Option<ConnectRecord>> {
        match self {
            Transform::EventRouter(t) => t.apply(r),
        }
    }
}

/// Applies `chain` in order; stops at the first transform that drops the record.
pub fn apply_chain(chain: &[Transform], mut r: ConnectRecord) -> Result<Option<ConnectRecord>> {
    for t in chain {
        match t.apply(r)? {
            Some(next) => r = next,
            None => return Ok(None),
        }
    }
    Ok(Some(r))
}
