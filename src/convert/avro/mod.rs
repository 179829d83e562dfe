//! An Avro converter for a Confluent-compatible schema registry, as Confluent's
//! `AvroConverter` writes records: magic byte 0, the schema id as 4 bytes big-endian, then the
//! Avro binary encoding of the value ([`encode`]) for the Avro schema [`schema`] makes of the
//! Connect schema.
//!
//! The converter is pure: it does not call the registry. [`AvroConverter::missing`] says which
//! schema (subject and Avro text) has no id yet; the pipeline obtains the id
//! (`crate::registry`) and hands it over with [`AvroConverter::set_id`]. Ids are cached by
//! schema object and topic, then by subject and schema text, so that the hot path is one map
//! lookup and the registry sees one call per subject and schema version.

pub mod canonical;
pub mod encode;
pub mod schema;

use std::collections::HashMap;
use std::sync::Arc;

use crate::config::{AvroConverterConfig, RegistryApi, SubjectNameStrategy};
use crate::error::{Error, ErrorKind, Result};
use crate::event::{Schema, Value};

use schema::{avro_schema_json, record_full_name, top_level_record_alone, AvroSchemaOptions};

/// A schema the converter needs an id for: its subject and its Avro JSON text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchemaRequest {
    /// `true` for the key converter's schema.
    pub is_key: bool,
    /// The subject under the configured name strategy.
    pub subject: String,
    /// The Avro schema, as JSON text.
    pub schema: String,
}

/// One record part's Avro converter (the key's or the value's).
#[derive(Debug)]
pub struct AvroConverter {
    config: AvroConverterConfig,
    is_key: bool,
    /// Schema id per (schema object address, topic); the `Arc` kept here keeps the address
    /// valid.
    ids: HashMap<(usize, Arc<str>), (Arc<Schema>, u32)>,
    /// Schema id per (subject, Avro schema text).
    by_content: HashMap<(String, String), u32>,
}

impl AvroConverter {
    /// A converter for the key (`is_key`) or the value.
    pub fn new(config: AvroConverterConfig, is_key: bool) -> Self {
        AvroConverter {
            config,
            is_key,
            ids: HashMap::new(),
            by_content: HashMap::new(),
        }
    }

    /// The schema `schema` needs an id for on `topic`, or `None` when its id is known (found
    /// in the cache by content, the id is recorded at once). Errors: a schema without an Avro
    /// form ([`ErrorKind::Conversion`], naming the name that is invalid), a name strategy
    /// that needs a record when the part is not one ([`ErrorKind::Config`]).
    pub fn missing(
        &mut self,
        schema: &Arc<Schema>,
        topic: &Arc<str>,
    ) -> Result<Option<SchemaRequest>> {
        if self
            .ids
            .contains_key(&(Arc::as_ptr(schema) as usize, topic.clone()))
        {
            return Ok(None);
        }
        // A name Avro refuses is no single value's problem: every record of the schema has it,
        // and only the configuration (or the names) can change that.
        let text = avro_schema_json(schema, self.options()).map_err(|e| {
            Error::config(format!(
                "the {} schema of topic {topic} has no Avro form: {e}",
                self.part()
            ))
        })?;
        let subject = self.subject(schema, topic)?;
        let content_key = (subject, text);
        if let Some(&id) = self.by_content.get(&content_key) {
            self.remember(schema, topic, id);
            return Ok(None);
        }
        Ok(Some(SchemaRequest {
            is_key: self.is_key,
            subject: content_key.0,
            schema: content_key.1,
        }))
    }

    /// Records the registry's id for a schema [`Self::missing`] asked for.
    pub fn set_id(
        &mut self,
        schema: &Arc<Schema>,
        topic: &Arc<str>,
        request: SchemaRequest,
        id: u32,
    ) {
        if self.by_content.len() >= self.config.schemas_cache_size {
            self.by_content.clear();
        }
        self.by_content
            .insert((request.subject, request.schema), id);
        self.remember(schema, topic, id);
    }

    /// Checks that `latest` (the text of the subject's latest version, whose id is `id`) has
    /// the structure of the schema [`Self::missing`] derived in `request`
    /// ([`canonical::structure`]): with `use.latest.version`, records are written with the
    /// derived schema under the latest version's id, so its names, types, field order and
    /// logical types must be the same (docs, defaults and properties may differ). Errors:
    /// [`ErrorKind::Registry`], naming the subject, the id and what to do.
    pub fn check_latest(&self, request: &SchemaRequest, id: u32, latest: &str) -> Result<()> {
        let ours = canonical::structure(&request.schema).map_err(|e| {
            Error::new(
                ErrorKind::Internal,
                format!("the derived schema has no canonical form: {e}"),
            )
        })?;
        let theirs = canonical::structure(latest);
        if theirs.as_deref() == Ok(ours.as_str()) {
            return Ok(());
        }
        let why = match theirs {
            Err(e) => format!("it is not an Avro schema pgcdc can read ({e})"),
            Ok(_) =>
                "its structure (field names, types, their order, logical types) differs from the record's; docs, defaults and connect.* properties may differ, the rest may not".to_string(),
        };
        Err(Error::new(
            ErrorKind::Registry,
            format!(
                "the latest version of subject {} (schema id {id}) cannot be used for the {} of these records: {why}. Register the record's schema as the latest version, or let the converter register it (auto.register.schemas=true; Apicurio: apicurio.registry.auto-register=true)",
                request.subject,
                self.part()
            ),
        ))
    }

    fn remember(&mut self, schema: &Arc<Schema>, topic: &Arc<str>, id: u32) {
        if self.ids.len() >= self.config.schemas_cache_size {
            self.ids.clear();
        }
        self.ids.insert(
            (Arc::as_ptr(schema) as usize, topic.clone()),
            (schema.clone(), id),
        );
    }

    /// Writes the Confluent wire format of `value` with `schema` into `out` (cleared first).
    /// Returns `false` for a Kafka null (no value), leaving `out` empty. The schema must have
    /// been prepared for `topic` ([`Self::prepare`]).
    pub fn serialize(
        &self,
        schema: Option<&Arc<Schema>>,
        value: Option<&Value>,
        topic: &Arc<str>,
        out: &mut Vec<u8>,
    ) -> Result<bool> {
        out.clear();
        let (Some(schema), Some(value)) = (schema, value.filter(|v| !v.is_null())) else {
            return Ok(false);
        };
        let id = self
            .ids
            .get(&(Arc::as_ptr(schema) as usize, topic.clone()))
            .map(|(_, id)| *id)
            .ok_or_else(|| {
                Error::new(
                    ErrorKind::Internal,
                    format!(
                        "the {} schema of topic {topic} has no schema id (it was not prepared)",
                        self.part()
                    ),
                )
            })?;
        out.push(0);
        out.extend_from_slice(&id.to_be_bytes());
        let record_alone = top_level_record_alone(schema, self.options());
        encode::encode(schema, value, out, record_alone).map_err(|path| {
            Error::conversion(format!(
                "the {} of a record for topic {topic} does not fit its schema at {path}",
                self.part()
            ))
        })?;
        Ok(true)
    }

    /// The translation settings: `connect.meta.data`, and Apicurio's converter's choice of
    /// the datum's schema.
    fn options(&self) -> AvroSchemaOptions {
        AvroSchemaOptions {
            connect_meta_data: self.config.connect_meta_data,
            datum_schema: matches!(self.config.api, RegistryApi::ApicurioV2 { .. }),
        }
    }

    fn part(&self) -> &'static str {
        if self.is_key {
            "key"
        } else {
            "value"
        }
    }

    /// The subject of `schema` for `topic` under the configured strategy.
    fn subject(&self, schema: &Schema, topic: &str) -> Result<String> {
        let suffix = self.part();
        let record = || {
            record_full_name(schema).ok_or_else(|| {
                Error::config(format!(
                    "the {suffix} of topic {topic} is not a record, so the {suffix} converter's subject name strategy (RecordNameStrategy or TopicRecordNameStrategy) has no record name for it: use TopicNameStrategy"
                ))
            })
        };
        Ok(match self.config.subject_strategy {
            SubjectNameStrategy::TopicName => format!("{topic}-{suffix}"),
            SubjectNameStrategy::RecordName => record()?,
            SubjectNameStrategy::TopicRecordName => format!("{topic}-{}", record()?),
        })
    }
}
