//! Converters: Connect records to Kafka bytes. Pure functions of records and config.

pub mod header;
pub mod json;

use std::borrow::Cow;

use crate::event::ConnectRecord;

/// A record ready for the producer, borrowing the converter's buffers and the Connect record:
/// topic, optional partition, key/value bytes (`None` is a Kafka null), headers and timestamp.
/// The producer copies what it needs, so nothing here is allocated per record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KafkaRecord<'a> {
    /// Topic.
    pub topic: &'a str,
    /// Explicit partition, or `None` to hash the key (murmur2, as the Java client).
    pub partition: Option<i32>,
    /// Key bytes.
    pub key: Option<&'a [u8]>,
    /// Value bytes.
    pub value: Option<&'a [u8]>,
    /// Headers (`None` value is a null header).
    pub headers: Vec<(&'a str, Option<Cow<'a, [u8]>>)>,
    /// Timestamp in ms, or `None` for the producer's clock.
    pub timestamp: Option<i64>,
}

/// Key and value converters (JsonConverter each, with its own `schemas.enable`).
#[derive(Debug)]
pub struct RecordConverter {
    key: json::JsonConverter,
    value: json::JsonConverter,
    key_buf: Vec<u8>,
    value_buf: Vec<u8>,
}

impl RecordConverter {
    /// Converters with `key.converter.schemas.enable` and `value.converter.schemas.enable`.
    pub fn new(key_schemas_enable: bool, value_schemas_enable: bool) -> Self {
        RecordConverter {
            key: json::JsonConverter::new(key_schemas_enable),
            value: json::JsonConverter::new(value_schemas_enable),
            key_buf: Vec::with_capacity(1024),
            value_buf: Vec::with_capacity(8192),
        }
    }

    /// Serialises a record into the converter's buffers and returns a view of it.
    pub fn convert<'a>(&'a mut self, r: &'a ConnectRecord) -> KafkaRecord<'a> {
        let has_key = self
            .key
            .serialize(r.key_schema.as_ref(), r.key.as_ref(), &mut self.key_buf);
        let has_value = self.value.serialize(
            r.value_schema.as_ref(),
            r.value.as_ref(),
            &mut self.value_buf,
        );
        KafkaRecord {
            topic: &r.topic,
            partition: r.partition,
            key: has_key.then_some(self.key_buf.as_slice()),
            value: has_value.then_some(self.value_buf.as_slice()),
            headers: r
                .headers
                .iter()
                .map(|h| (&*h.key, header::render(&h.schema, &h.value)))
                .collect(),
            timestamp: r.timestamp,
        }
    }
}
