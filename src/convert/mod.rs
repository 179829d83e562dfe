//! Converters: Connect records to Kafka bytes, pure functions of records and config.
//! `JsonConverter` needs nothing else; the Avro converter also needs each schema's registry
//! id: [`RecordConverter::missing_schema`] says which one it lacks, and the caller obtains it
//! from the registry and hands it over with [`RecordConverter::set_schema_id`] before
//! [`RecordConverter::convert`].

pub mod avro;
pub mod header;
pub mod json;

use std::borrow::Cow;
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

/// A [`KafkaRecord`] that owns its bytes: converted on one task, sent from another (the
/// parallel snapshot's readers convert, the pipeline sends).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OwnedKafkaRecord {
    /// Topic.
    pub topic: Arc<str>,
    /// Explicit partition, or `None` to hash the key.
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

impl OwnedKafkaRecord {
    /// A copy of `r` with owned bytes.
    pub fn of(r: &KafkaRecord<'_>) -> Self {
        OwnedKafkaRecord {
            topic: Arc::from(r.topic),
            partition: r.partition,
            key: r.key.map(<[u8]>::to_vec),
            value: r.value.map(<[u8]>::to_vec),
            headers: r
                .headers
                .iter()
                .map(|(k, v)| (k.to_string(), v.as_ref().map(|b| b.to_vec())))
                .collect(),
            timestamp: r.timestamp,
        }
    }

    /// The record, borrowing these bytes.
    pub fn as_record(&self) -> KafkaRecord<'_> {
        KafkaRecord {
            topic: &self.topic,
            partition: self.partition,
            key: self.key.as_deref(),
            value: self.value.as_deref(),
            headers: self
                .headers
                .iter()
                .map(|(k, v)| (k.as_str(), v.as_deref().map(Cow::Borrowed)))
                .collect(),
            timestamp: self.timestamp,
        }
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
