//! Converters: Connect records to Kafka bytes. Pure functions of records and config.

pub mod header;
pub mod json;

use crate::event::ConnectRecord;

/// A record ready for the producer: topic, optional partition, key/value bytes (`None` is a
/// Kafka null), headers and timestamp.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KafkaRecord {
    /// Topic.
    pub topic: String,
    /// Explicit partition, or `None` to hash the key (murmur2, as the Java client).
    pub partition: Option<i32>,
    /// Key bytes.
    pub key: Option<Vec<u8>>,
    /// Value bytes.
    pub value: Option<Vec<u8>>,
    /// Headers (`None` value is a null header).
    pub headers: Vec<(String, Option<Vec<u8>>)>,
    /// Timestamp in ms, or `None` for the producer's clock.
    pub timestamp: Option<i64>,
}

/// Key and value converters (JsonConverter each, with its own `schemas.enable`).
#[derive(Debug)]
pub struct RecordConverter {
    key: json::JsonConverter,
    value: json::JsonConverter,
    scratch: Vec<u8>,
}

impl RecordConverter {
    /// Converters with `key.converter.schemas.enable` and `value.converter.schemas.enable`.
    pub fn new(key_schemas_enable: bool, value_schemas_enable: bool) -> Self {
        RecordConverter {
            key: json::JsonConverter::new(key_schemas_enable),
            value: json::JsonConverter::new(value_schemas_enable),
            scratch: Vec::with_capacity(4096),
        }
    }

    /// Serialises a record.
    pub fn convert(&mut self, r: &ConnectRecord) -> KafkaRecord {
        let key = if self
            .key
            .serialize(r.key_schema.as_ref(), r.key.as_ref(), &mut self.scratch)
        {
            Some(self.scratch.clone())
        } else {
            None
        };
        let value =
            if self
                .value
                .serialize(r.value_schema.as_ref(), r.value.as_ref(), &mut self.scratch)
            {
                Some(self.scratch.clone())
            } else {
                None
            };
        KafkaRecord {
            topic: r.topic.clone(),
            partition: r.partition,
            key,
            value,
            headers: r
                .headers
                .iter()
                .map(|h| (h.key.clone(), header::render(&h.schema, &h.value)))
                .collect(),
            timestamp: r.timestamp,
        }
    }
}
