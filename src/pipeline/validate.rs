//! Configuration validation across layers: the connector config ([`crate::config`]), the
//! transform options ([`crate::transform`]) and the producer settings ([`crate::sink`]),
//! reported together, every problem at once, before anything connects.

use crate::config::{ConfigWarning, ConnectorConfig, RawConfig};
use crate::error::Result;

/// Validates `raw` completely and builds the typed config. Returns the config and the
/// warnings, or a [`crate::error::ErrorKind::Config`] error listing every problem, one per
/// line.
pub fn validate_config(raw: &RawConfig) -> Result<(ConnectorConfig, Vec<ConfigWarning>)> {
    ConnectorConfig::from_map(raw)
}
