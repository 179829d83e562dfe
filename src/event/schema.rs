//! The Kafka Connect schema model, as Debezium builds it and `JsonConverter` prints it.
//!
//! A [`Schema`] has a type, optionality, and the optional `name`, `version`, `doc`,
//! `parameters` and `default` attributes. Structs have ordered fields; arrays have an item
//! schema; maps have key and value schemas. Field order is significant: it is the byte order
//! of the JSON output.

use super::value::Value;

/// Kafka Connect schema types. `JsonConverter` spells them in lowercase, with `float` for
/// FLOAT32 and `double` for FLOAT64.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SchemaType {
    /// 8-bit integer.
    Int8,
    /// 16-bit integer.
    Int16,
    /// 32-bit integer.
    Int32,
    /// 64-bit integer.
    Int64,
    /// IEEE-754 single precision.
    Float32,
    /// IEEE-754 double precision.
    Float64,
    /// Boolean.
    Boolean,
    /// UTF-8 string.
    String,
    /// Byte array (base64 in JSON).
    Bytes,
    /// Array of `items`.
    Array,
    /// Map from `keys` to `values`.
    Map,
    /// Struct with ordered `fields`.
    Struct,
}

impl SchemaType {
    /// The name `JsonConverter` writes in the `type` attribute.
    pub fn json_name(self) -> &'static str {
        match self {
            SchemaType::Int8 => "int8",
            SchemaType::Int16 => "int16",
            SchemaType::Int32 => "int32",
            SchemaType::Int64 => "int64",
            SchemaType::Float32 => "float",
            SchemaType::Float64 => "double",
            SchemaType::Boolean => "boolean",
            SchemaType::String => "string",
            SchemaType::Bytes => "bytes",
            SchemaType::Array => "array",
            SchemaType::Map => "map",
            SchemaType::Struct => "struct",
        }
    }
}

/// A named field of a struct schema.
#[derive(Debug, Clone, PartialEq)]
pub struct Field {
    /// Field name, as written in `"field"`.
    pub name: String,
    /// Field schema.
    pub schema: Schema,
}

/// A Kafka Connect schema.
#[derive(Debug, Clone, PartialEq)]
pub struct Schema {
    /// Connect type.
    pub ty: SchemaType,
    /// `optional` attribute (always written).
    pub optional: bool,
    /// Semantic name, such as `io.debezium.time.MicroTimestamp`.
    pub name: Option<String>,
    /// Schema version.
    pub version: Option<i32>,
    /// Documentation string.
    pub doc: Option<String>,
    /// Parameters in insertion order (Decimal: `scale`, then `connect.decimal.precision`).
    pub parameters: Vec<(String, String)>,
    /// Default value; `JsonConverter` also writes it in place of a null value.
    pub default: Option<Value>,
    /// Struct fields in order.
    pub fields: Vec<Field>,
    /// Array item schema, or map value schema.
    pub items: Option<Box<Schema>>,
    /// Map key schema.
    pub keys: Option<Box<Schema>>,
}

impl Schema {
    /// A bare schema of `ty`.
    pub fn new(ty: SchemaType, optional: bool) -> Self {
        Schema {
            ty,
            optional,
            name: None,
            version: None,
            doc: None,
            parameters: Vec::new(),
            default: None,
            fields: Vec::new(),
            items: None,
            keys: None,
        }
    }

    /// A struct schema with `fields`.
    pub fn structure(name: impl Into<String>, optional: bool, fields: Vec<Field>) -> Self {
        let mut s = Schema::new(SchemaType::Struct, optional);
        s.name = Some(name.into());
        s.fields = fields;
        s
    }

    /// An array schema of `items`.
    pub fn array(items: Schema, optional: bool) -> Self {
        let mut s = Schema::new(SchemaType::Array, optional);
        s.items = Some(Box::new(items));
        s
    }

    /// Sets the semantic name and version 1 (every Debezium semantic type is version 1).
    pub fn named(mut self, name: &str) -> Self {
        self.name = Some(name.to_string());
        self.version = Some(1);
        self
    }

    /// Sets the semantic name without a version.
    pub fn named_unversioned(mut self, name: &str) -> Self {
        self.name = Some(name.to_string());
        self
    }

    /// Adds a parameter.
    pub fn param(mut self, key: &str, value: impl Into<String>) -> Self {
        self.parameters.push((key.to_string(), value.into()));
        self
    }

    /// Sets the optional flag.
    pub fn optional(mut self, optional: bool) -> Self {
        self.optional = optional;
        self
    }

    /// Index of the struct field called `name`.
    pub fn field_index(&self, name: &str) -> Option<usize> {
        self.fields.iter().position(|f| f.name == name)
    }
}

impl Field {
    /// A field called `name` with `schema`.
    pub fn new(name: impl Into<String>, schema: Schema) -> Self {
        Field {
            name: name.into(),
            schema,
        }
    }
}
