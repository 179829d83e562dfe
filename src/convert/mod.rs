//! Converters: Connect records to Kafka bytes, pure functions of records and config.
//! `JsonConverter` needs nothing else; the Avro converter also needs each schema's registry
//! id: [`RecordConverter::missing_schema`] says which one it lacks, and the caller obtains it
//! from the registry and hands it over with [`RecordConverter::set_schema_id`] before
//! [`RecordConverter::convert`].

pub mod avro;
pub mod header;
pub mod json;

use std::borrow::Cow;
use std::ops::Range;
use std::sync::Arc;

use crate::config::ConverterConfig;
use crate::error::Result;
use crate::event::{ConnectRecord, Schema, Value};

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

/// Records converted on one task and sent from another (the parallel snapshot's readers
/// convert, the pipeline sends), their bytes in one buffer: one allocation per batch, not
/// several per record.
#[derive(Debug, Default)]
pub struct KafkaBatch {
    /// Keys, values and header names and values, one after another.
    bytes: Vec<u8>,
    records: Vec<BatchRecord>,
    /// Every record's headers: name and value ranges in `bytes`.
    headers: Vec<(Range<usize>, Option<Range<usize>>)>,
}

/// One record of a [`KafkaBatch`]: ranges in its buffer.
#[derive(Debug)]
struct BatchRecord {
    topic: Arc<str>,
    partition: Option<i32>,
    key: Option<Range<usize>>,
    value: Option<Range<usize>>,
    /// Its range in the batch's headers.
    headers: Range<usize>,
    timestamp: Option<i64>,
}

impl KafkaBatch {
    /// Appends a copy of `r`, whose topic is `topic`.
    pub fn push(&mut self, r: &KafkaRecord<'_>, topic: &Arc<str>) {
        let first_header = self.headers.len();
        for (name, value) in &r.headers {
            let name = self.append(name.as_bytes());
            let value = value.as_deref().map(|v| self.append(v));
            self.headers.push((name, value));
        }
        let key = r.key.map(|k| self.append(k));
        let value = r.value.map(|v| self.append(v));
        self.records.push(BatchRecord {
            topic: topic.clone(),
            partition: r.partition,
            key,
            value,
            headers: first_header..self.headers.len(),
            timestamp: r.timestamp,
        });
    }

    /// An empty batch whose buffer takes `bytes` bytes of keys, values and headers before
    /// it grows.
    pub fn with_capacity(bytes: usize) -> Self {
        KafkaBatch {
            bytes: Vec::with_capacity(bytes),
            ..KafkaBatch::default()
        }
    }

    /// Removes every record, keeping the buffers' capacity for the next batch.
    pub fn clear(&mut self) {
        self.bytes.clear();
        self.records.clear();
        self.headers.clear();
    }

    fn append(&mut self, b: &[u8]) -> Range<usize> {
        let start = self.bytes.len();
        self.bytes.extend_from_slice(b);
        start..self.bytes.len()
    }

    /// Records in the batch.
    pub fn len(&self) -> usize {
        self.records.len()
    }

    /// Whether the batch holds no record.
    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
    }

    /// Bytes the buffer of keys, values and headers holds before it grows.
    pub fn capacity(&self) -> usize {
        self.bytes.capacity()
    }

    /// Bytes held (keys, values, headers).
    pub fn bytes(&self) -> usize {
        self.bytes.len()
    }

    /// The records, borrowing the batch's bytes, in the order they were pushed.
    pub fn iter(&self) -> impl Iterator<Item = KafkaRecord<'_>> {
        self.records.iter().map(|r| KafkaRecord {
            topic: &r.topic,
            partition: r.partition,
            key: r.key.clone().map(|k| &self.bytes[k]),
            value: r.value.clone().map(|v| &self.bytes[v]),
            headers: self.headers[r.headers.clone()]
                .iter()
                .map(|(name, value)| {
                    (
                        std::str::from_utf8(&self.bytes[name.clone()]).unwrap_or_default(),
                        value.clone().map(|v| Cow::Borrowed(&self.bytes[v])),
                    )
                })
                .collect(),
            timestamp: r.timestamp,
        })
    }
}

/// The converter of one record part.
#[derive(Debug)]
enum PartConverter {
    Json(json::JsonConverter),
    Avro(Box<avro::AvroConverter>),
}

impl PartConverter {
    fn new(config: &ConverterConfig, is_key: bool) -> Self {
        match config {
            ConverterConfig::Json { schemas_enable } => {
                PartConverter::Json(json::JsonConverter::new(*schemas_enable))
            }
            ConverterConfig::Avro(a) => {
                PartConverter::Avro(Box::new(avro::AvroConverter::new(a.clone(), is_key)))
            }
        }
    }

    fn missing(
        &mut self,
        schema: Option<&Arc<Schema>>,
        topic: &Arc<str>,
    ) -> Result<Option<avro::SchemaRequest>> {
        match (self, schema) {
            (PartConverter::Avro(a), Some(s)) => a.missing(s, topic),
            _ => Ok(None),
        }
    }

    fn serialize(
        &mut self,
        schema: Option<&Arc<Schema>>,
        value: Option<&Value>,
        topic: &Arc<str>,
        out: &mut Vec<u8>,
    ) -> Result<bool> {
        match self {
            PartConverter::Json(j) => Ok(j.serialize(schema, value, out)),
            PartConverter::Avro(a) => a.serialize(schema, value, topic, out),
        }
    }
}

/// Key and value converters (`key.converter`, `value.converter`).
#[derive(Debug)]
pub struct RecordConverter {
    key: PartConverter,
    value: PartConverter,
    key_buf: Vec<u8>,
    value_buf: Vec<u8>,
}

impl RecordConverter {
    /// `JsonConverter`s with `key.converter.schemas.enable` and
    /// `value.converter.schemas.enable`.
    pub fn new(key_schemas_enable: bool, value_schemas_enable: bool) -> Self {
        Self::with(
            &ConverterConfig::Json {
                schemas_enable: key_schemas_enable,
            },
            &ConverterConfig::Json {
                schemas_enable: value_schemas_enable,
            },
        )
    }

    /// The converters `key` and `value` configure.
    pub fn with(key: &ConverterConfig, value: &ConverterConfig) -> Self {
        RecordConverter {
            key: PartConverter::new(key, true),
            value: PartConverter::new(value, false),
            key_buf: Vec::with_capacity(1024),
            value_buf: Vec::with_capacity(8192),
        }
    }

    /// The first schema of `r` (key, then value) that an Avro converter has no registry id
    /// for, or `None` when `r` can be converted (always for JSON). Errors: a schema without an
    /// Avro form, a subject name strategy that does not fit it.
    pub fn missing_schema(&mut self, r: &ConnectRecord) -> Result<Option<avro::SchemaRequest>> {
        if let Some(req) = self.key.missing(r.key_schema.as_ref(), &r.topic)? {
            return Ok(Some(req));
        }
        self.value.missing(r.value_schema.as_ref(), &r.topic)
    }

    /// Checks the latest version's schema `latest` (id `id`) against `request`
    /// ([`avro::AvroConverter::check_latest`]).
    pub fn check_latest(&self, request: &avro::SchemaRequest, id: u32, latest: &str) -> Result<()> {
        let part = if request.is_key {
            &self.key
        } else {
            &self.value
        };
        match part {
            PartConverter::Avro(a) => a.check_latest(request, id, latest),
            _ => Ok(()),
        }
    }

    /// Records the registry's `id` for `request`, which [`Self::missing_schema`] gave for `r`.
    pub fn set_schema_id(&mut self, r: &ConnectRecord, request: avro::SchemaRequest, id: u32) {
        let (part, schema) = if request.is_key {
            (&mut self.key, r.key_schema.as_ref())
        } else {
            (&mut self.value, r.value_schema.as_ref())
        };
        if let (PartConverter::Avro(a), Some(s)) = (part, schema) {
            a.set_id(s, &r.topic, request, id);
        }
    }

    /// Serialises a record into the converter's buffers and returns a view of it. Errors
    /// (Avro only): a value that does not fit its schema, a schema not prepared.
    pub fn convert<'a>(&'a mut self, r: &'a ConnectRecord) -> Result<KafkaRecord<'a>> {
        let has_key = self.key.serialize(
            r.key_schema.as_ref(),
            r.key.as_ref(),
            &r.topic,
            &mut self.key_buf,
        )?;
        let has_value = self.value.serialize(
            r.value_schema.as_ref(),
            r.value.as_ref(),
            &r.topic,
            &mut self.value_buf,
        )?;
        Ok(KafkaRecord {
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
        })
    }
}

#[cfg(test)]
mod batch_tests {
    use super::*;

    #[test]
    fn a_batch_gives_back_the_records_pushed() {
        let topic: Arc<str> = Arc::from("p.public.t");
        let records = [
            KafkaRecord {
                topic: "p.public.t",
                partition: None,
                key: Some(b"k1"),
                value: Some(b"v1"),
                headers: vec![("h1", Some(Cow::Borrowed(b"x".as_slice()))), ("h2", None)],
                timestamp: Some(7),
            },
            KafkaRecord {
                topic: "p.public.t",
                partition: Some(2),
                key: None,
                value: None,
                headers: vec![],
                timestamp: None,
            },
        ];
        let mut batch = KafkaBatch::default();
        for r in &records {
            batch.push(r, &topic);
        }
        assert_eq!(batch.len(), 2);
        assert_eq!(batch.bytes(), 2 + 2 + 2 + 1 + 2);
        assert_eq!(batch.iter().collect::<Vec<_>>(), records);
    }
}
