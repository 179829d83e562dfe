//! Kafka Connect values: the data half of a record, shaped by a [`super::schema::Schema`].

use std::sync::Arc;

/// A Connect value. Struct values are positional: element `i` belongs to field `i` of the
/// struct's schema.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// Null.
    Null,
    /// BOOLEAN.
    Bool(bool),
    /// INT8, INT16, INT32 or INT64 (the schema says which).
    Int(i64),
    /// FLOAT32.
    Float32(f32),
    /// FLOAT64.
    Float64(f64),
    /// STRING.
    String(String),
    /// STRING shared between records (names, topic prefix, header values): cloning it does
    /// not allocate. Serialised exactly like [`Value::String`].
    Shared(Arc<str>),
    /// BYTES, including `Decimal` (unscaled two's-complement, big-endian).
    Bytes(Vec<u8>),
    /// ARRAY.
    Array(Vec<Value>),
    /// MAP, as ordered pairs.
    Map(Vec<(Value, Value)>),
    /// STRUCT, one value per schema field.
    Struct(Vec<Value>),
}

impl Value {
    /// `true` for [`Value::Null`].
    pub fn is_null(&self) -> bool {
        matches!(self, Value::Null)
    }

    /// The string content of a STRING value.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::String(s) => Some(s),
            Value::Shared(s) => Some(s),
            _ => None,
        }
    }
}
