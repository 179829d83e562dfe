//! Column-level record features: which columns form the key (`message.key.columns`), which
//! go into the value (`column.include.list` / `column.exclude.list`), and what happens to
//! their values and schemas (`column.truncate.to.N.chars`, `column.mask.with.N.chars`,
//! `column.mask.hash.*`, `column.propagate.source.type`, `datatype.propagate.source.type`).
//!
//! Column facts follow what Debezium 3.6.1 sees for a pgoutput stream: the type name is
//! `pg_type.typname` of the column's type (a domain keeps its own name), and length and
//! scale are the JDBC driver's precision and scale for the type and modifier (pgjdbc's
//! `TypeInfoCache`), with the display size when the precision is 0.
//!
//! Names are matched as `schema.table.column`, data types as `schema.table.typname`, with
//! the anchored, case-insensitive regular expressions of the config.

use crate::config::records::{ColumnMapperKind, ColumnRules, HashAlgorithm};

use crate::event::{Schema, Value};
use crate::pg::types::binary::lower_hex;
use crate::pg::types::{oid, TypeCatalog};

/// Lower-case hex of the `algorithm` digest of `salt` followed by `data`.
pub fn hex_digest(algorithm: HashAlgorithm, salt: &[u8], data: &[u8]) -> String {
    fn run<D: sha2::Digest>(salt: &[u8], data: &[u8]) -> Vec<u8> {
        let mut d = D::new();
        d.update(salt);
        d.update(data);
        d.finalize().to_vec()
    }
    let bytes = match algorithm {
        HashAlgorithm::Md5 => run::<md5::Md5>(salt, data),
        HashAlgorithm::Sha1 => {
            let mut ctx = ring::digest::Context::new(&ring::digest::SHA1_FOR_LEGACY_USE_ONLY);
            ctx.update(salt);
            ctx.update(data);
            ctx.finish().as_ref().to_vec()
        }
        HashAlgorithm::Sha224 => run::<sha2::Sha224>(salt, data),
        HashAlgorithm::Sha256 => run::<sha2::Sha256>(salt, data),
        HashAlgorithm::Sha384 => run::<sha2::Sha384>(salt, data),
        HashAlgorithm::Sha512 => run::<sha2::Sha512>(salt, data),
    };
    lower_hex(&bytes)
}

/// pgjdbc's length for unknown or unbounded types (`Integer.MAX_VALUE`).
pub const UNKNOWN_LENGTH: i32 = i32::MAX;

/// `pg_type` rows by OID (built-in types included), as
/// [`crate::pg::relation::read_pg_types`] reads them.
pub type PgTypes = TypeCatalog;

/// pgjdbc's `getPrecision(oid, typmod)` (array OIDs already mapped to their element).
pub fn jdbc_precision(oid: u32, typmod: i32) -> i32 {
    match oid {
        oid::INT2 => 5,
        oid::OID | oid::INT4 => 10,
        oid::INT8 => 19,
        oid::FLOAT4 => 8,
        oid::FLOAT8 => 17,
        oid::NUMERIC if typmod == -1 => 0,
        oid::NUMERIC => (((typmod - 4) as u32 & 0xFFFF_0000) >> 16) as i32,
        oid::CHAR | oid::BOOL => 1,
        oid::BPCHAR | oid::VARCHAR if typmod == -1 => UNKNOWN_LENGTH,
        oid::BPCHAR | oid::VARCHAR => typmod - 4,
        oid::DATE | oid::TIME | oid::TIMETZ | oid::INTERVAL | oid::TIMESTAMP | oid::TIMESTAMPTZ => {
            jdbc_display_size(oid, typmod)
        }
        oid::BIT => typmod,
        oid::VARBIT if typmod == -1 => UNKNOWN_LENGTH,
        oid::VARBIT => typmod,
        _ => UNKNOWN_LENGTH,
    }
}

/// pgjdbc's `getScale(oid, typmod)`.
pub fn jdbc_scale(oid: u32, typmod: i32) -> i32 {
    match oid {
        oid::FLOAT4 => 8,
        oid::FLOAT8 => 17,
        oid::NUMERIC if typmod == -1 => 0,
        oid::NUMERIC => (typmod - 4) & 0xFFFF,
        oid::TIME | oid::TIMETZ | oid::TIMESTAMP | oid::TIMESTAMPTZ if typmod == -1 => 6,
        oid::TIME | oid::TIMETZ | oid::TIMESTAMP | oid::TIMESTAMPTZ => typmod,
        oid::INTERVAL if typmod == -1 => 6,
        oid::INTERVAL => typmod & 0xFFFF,
        _ => 0,
    }
}

/// pgjdbc's `getDisplaySize(oid, typmod)`.
pub fn jdbc_display_size(oid: u32, typmod: i32) -> i32 {
    match oid {
        oid::INT2 => 6,
        oid::INT4 => 11,
        oid::OID => 10,
        oid::INT8 => 20,
        oid::FLOAT4 => 15,
        oid::FLOAT8 => 25,
        oid::CHAR | oid::BOOL => 1,
        oid::DATE => 13,
        oid::TIME | oid::TIMETZ | oid::TIMESTAMP | oid::TIMESTAMPTZ => {
            let seconds = match typmod {
                -1 => 7,
                0 => 0,
                1 => 3,
                n => n + 1,
            };
            match oid {
                oid::TIME => 8 + seconds,
                oid::TIMETZ => 8 + seconds + 6,
                oid::TIMESTAMP => 13 + 1 + 8 + seconds,
                _ => 13 + 1 + 8 + seconds + 6,
            }
        }
        oid::INTERVAL => 49,
        oid::VARCHAR | oid::BPCHAR if typmod == -1 => UNKNOWN_LENGTH,
        oid::VARCHAR | oid::BPCHAR => typmod - 4,
        oid::NUMERIC if typmod == -1 => 131_089,
        oid::NUMERIC => {
            let precision = ((typmod - 4) >> 16) & 0xFFFF;
            let scale = (typmod - 4) & 0xFFFF;
            1 + precision + i32::from(scale != 0)
        }
        oid::BIT => typmod,
        oid::VARBIT if typmod == -1 => UNKNOWN_LENGTH,
        oid::VARBIT => typmod,
        _ => UNKNOWN_LENGTH,
    }
}

/// What Debezium knows about a source column: type name, length, scale, and whether the
/// JDBC type is a character type (the only ones `column.mask.*` changes).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceColumn {
    /// `pg_type.typname` of the column type (`varchar`, `int4`, `_text`, a domain's name).
    pub type_name: String,
    /// Length (`__debezium.source.column.length`).
    pub length: i32,
    /// Scale (`__debezium.source.column.scale`).
    pub scale: i32,
    /// JDBC type CHAR or VARCHAR (text, varchar, bpchar, "char", name, enums, and domains
    /// over them).
    pub char_like: bool,
}

impl SourceColumn {
    /// The facts of a column of type `oid` with modifier `typmod`.
    pub fn new(oid: u32, typmod: i32, types: &PgTypes) -> SourceColumn {
        let type_name = types
            .get(&oid)
            .map(|t| t.name.clone())
            .unwrap_or_else(|| format!("oid{oid}"));
        // Domains: the base type with the domain's modifier when the column has none.
        let (mut root, mut root_typmod) = (oid, typmod);
        for _ in 0..8 {
            match types.get(&root) {
                Some(t) if t.typtype == b'd' && t.base_oid != 0 => {
                    if root_typmod == -1 {
                        root_typmod = t.base_typmod;
                    }
                    root = t.base_oid;
                }
                _ => break,
            }
        }
        let char_like = matches!(
            root,
            oid::TEXT | oid::VARCHAR | oid::BPCHAR | oid::CHAR | oid::NAME
        ) || types.get(&root).is_some_and(|t| t.typtype == b'e');
        // Arrays: precision and scale of the element type.
        let measured = types
            .get(&root)
            .filter(|t| t.elem_oid != 0 && t.name.starts_with('_'))
            .map(|t| t.elem_oid)
            .unwrap_or(root);
        let mut length = jdbc_precision(measured, root_typmod);
        if length == 0 {
            length = jdbc_display_size(measured, root_typmod);
        }
        SourceColumn {
            type_name,
            length,
            scale: jdbc_scale(measured, root_typmod),
            char_like,
        }
    }
}

/// How a value column's values change.
#[derive(Debug, Clone, PartialEq)]
pub enum ValueMapper {
    /// `column.truncate.to.N.chars`: strings to N UTF-16 units, bytes to N bytes.
    Truncate(usize),
    /// `column.mask.with.N.chars`: every value (null included) becomes the mask.
    Mask(String),
    /// `column.mask.hash.*`: hex digest of salt + the value's bytes, cut to `max_chars`.
    Hash {
        /// Digest.
        algorithm: HashAlgorithm,
        /// Salt bytes (UTF-8 of the salt in the key).
        salt: Vec<u8>,
        /// `v2`: the value's UTF-8 bytes; otherwise its Java serialization.
        v2: bool,
        /// Cut of the hex string (the column length when > 0).
        max_chars: Option<usize>,
    },
}

impl ValueMapper {
    /// Applies the mapper to one value.
    pub fn apply(&self, value: Value) -> Value {
        match self {
            ValueMapper::Mask(mask) => Value::String(mask.clone()),
            ValueMapper::Truncate(n) => match value {
                Value::String(s) => Value::String(truncate_utf16(&s, *n).to_string()),
                Value::Shared(s) => Value::String(truncate_utf16(&s, *n).to_string()),
                Value::Bytes(mut b) => {
                    b.truncate(*n);
                    Value::Bytes(b)
                }
                v => v,
            },
            ValueMapper::Hash {
                algorithm,
                salt,
                v2,
                max_chars,
            } => {
                let Some(text) = value.as_str() else {
                    return Value::Null;
                };
                let bytes = if *v2 {
                    text.as_bytes().to_vec()
                } else {
                    java_serialized_string(text)
                };
                let mut hex = hex_digest(*algorithm, salt, &bytes);
                if let Some(max) = max_chars {
                    hex.truncate(*max);
                }
                Value::String(hex)
            }
        }
    }
}

/// The longest prefix of `s` with at most `max` UTF-16 code units (Java `String.length`),
/// never splitting a surrogate pair.
pub fn truncate_utf16(s: &str, max: usize) -> &str {
    let mut units = 0;
    for (i, c) in s.char_indices() {
        units += c.len_utf16();
        if units > max {
            return &s[..i];
        }
    }
    s
}

/// The bytes of `ObjectOutputStream.writeObject(s)` for a `java.lang.String`: stream header,
/// then `TC_STRING` with a 2-byte length (or `TC_LONGSTRING` with 8) and modified UTF-8.
pub fn java_serialized_string(s: &str) -> Vec<u8> {
    let mut body = Vec::with_capacity(s.len() + 8);
    for c in s.chars() {
        let mut units = [0u16; 2];
        for &u in c.encode_utf16(&mut units).iter() {
            match u {
                0x0001..=0x007F => body.push(u as u8),
                0x0000 | 0x0080..=0x07FF => {
                    body.push(0xC0 | ((u >> 6) & 0x1F) as u8);
                    body.push(0x80 | (u & 0x3F) as u8);
                }
                _ => {
                    body.push(0xE0 | ((u >> 12) & 0x0F) as u8);
                    body.push(0x80 | ((u >> 6) & 0x3F) as u8);
                    body.push(0x80 | (u & 0x3F) as u8);
                }
            }
        }
    }
    let mut out = vec![0xAC, 0xED, 0x00, 0x05];
    if body.len() <= 0xFFFF {
        out.push(0x74);
        out.extend_from_slice(&(body.len() as u16).to_be_bytes());
    } else {
        out.push(0x7C);
        out.extend_from_slice(&(body.len() as u64).to_be_bytes());
    }
    out.extend_from_slice(&body);
    out
}

/// The column plan of one table: key columns, value columns and per value column its mapper
/// and extra schema parameters.
#[derive(Debug, Clone, PartialEq)]
pub struct ColumnPlan {
    /// Indices (into the table's columns) of the key, in key order.
    pub key: Vec<usize>,
    /// Indices of the columns in the value, in column order.
    pub value: Vec<usize>,
    /// Per value column: its value mapper, if any.
    pub mappers: Vec<Option<ValueMapper>>,
    /// Per value column: schema parameters to add, in order.
    pub parameters: Vec<Vec<(String, String)>>,
}

impl ColumnPlan {
    /// `true` when the value is the full row unchanged.
    pub fn is_identity(&self, columns: usize) -> bool {
        self.value.len() == columns && self.mappers.iter().all(Option::is_none)
    }
}

/// One column as the planner sees it.
#[derive(Debug, Clone)]
pub struct PlanColumn<'a> {
    /// Column name.
    pub name: &'a str,
    /// Source facts (only needed when a mapper or type rule is configured).
    pub source: Option<SourceColumn>,
}

/// Plans the columns of `schema.table`. `default_key` are the primary-key (or unique index)
/// column indices.
pub fn plan(
    rules: &ColumnRules,
    schema: &str,
    table: &str,
    columns: &[PlanColumn<'_>],
    default_key: &[usize],
) -> ColumnPlan {
    let full = |c: &str| format!("{schema}.{table}.{c}");
    // Key: every column matched by each message.key.columns pattern, pattern by pattern.
    let mut key: Vec<usize> = Vec::new();
    for pattern in &rules.key_columns {
        for (i, c) in columns.iter().enumerate() {
            if pattern.is_match(&full(c.name)) && !key.contains(&i) {
                key.push(i);
            }
        }
    }
    if key.is_empty() {
        key = default_key.to_vec();
    }
    let value: Vec<usize> = (0..columns.len())
        .filter(|&i| rules.includes_column(&full(columns[i].name)))
        .collect();
    let mut mappers = Vec::with_capacity(value.len());
    let mut parameters = Vec::with_capacity(value.len());
    for &i in &value {
        let c = &columns[i];
        let name = full(c.name);
        let rule = c.source.as_ref().and_then(|src| {
            let datatype = format!("{schema}.{table}.{}", src.type_name);
            rules
                .mappers
                .iter()
                .find(|r| r.matches(&name, &datatype))
                .map(|r| (r, src))
        });
        let (mapper, params) = match rule {
            None => (None, Vec::new()),
            Some((rule, src)) => mapper_for(&rule.kind, c.name, src),
        };
        mappers.push(mapper);
        parameters.push(params);
    }
    ColumnPlan {
        key,
        value,
        mappers,
        parameters,
    }
}

fn mapper_for(
    kind: &ColumnMapperKind,
    column: &str,
    src: &SourceColumn,
) -> (Option<ValueMapper>, Vec<(String, String)>) {
    let p = |k: &str, v: String| (k.to_string(), v);
    match kind {
        ColumnMapperKind::Truncate(n) => {
            if src.length < 0 || src.length as i64 > *n as i64 {
                (
                    Some(ValueMapper::Truncate(*n)),
                    vec![p("truncateLength", n.to_string())],
                )
            } else {
                (None, Vec::new())
            }
        }
        ColumnMapperKind::Mask(n) => (
            src.char_like.then(|| ValueMapper::Mask("*".repeat(*n))),
            vec![p("masked", "true".into())],
        ),
        ColumnMapperKind::Hash {
            algorithm,
            salt,
            v2,
        } => (
            src.char_like.then(|| ValueMapper::Hash {
                algorithm: *algorithm,
                salt: salt.as_bytes().to_vec(),
                v2: *v2,
                max_chars: (src.length > 0).then_some(src.length as usize),
            }),
            vec![p("masked", "true".into())],
        ),
        ColumnMapperKind::PropagateType => {
            let mut params = vec![p(
                "__debezium.source.column.type",
                src.type_name.to_uppercase(),
            )];
            if src.length != -1 {
                params.push(p("__debezium.source.column.length", src.length.to_string()));
            }
            params.push(p("__debezium.source.column.scale", src.scale.to_string()));
            params.push(p("__debezium.source.column.name", column.to_string()));
            (None, params)
        }
    }
}

/// Adds `params` to a value field schema, after the type's own parameters.
pub fn with_parameters(mut schema: Schema, params: &[(String, String)]) -> Schema {
    for (k, v) in params {
        schema.parameters.push((k.clone(), v.clone()));
    }
    schema
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pg::types::TypeInfo;

    fn types() -> PgTypes {
        let t = |name: &str, typtype: u8, elem: u32, base: u32, base_typmod: i32| TypeInfo {
            name: name.into(),
            typtype,
            category: if elem != 0 { b'A' } else { b'U' },
            base_oid: base,
            base_typmod,
            elem_oid: elem,
            enum_labels: Vec::new(),
        };
        [
            (1043, t("varchar", b'b', 0, 0, -1)),
            (700, t("float4", b'b', 0, 0, -1)),
            (1700, t("numeric", b'b', 0, 0, -1)),
            (23, t("int4", b'b', 0, 0, -1)),
            (25, t("text", b'b', 0, 0, -1)),
            (1007, t("_int4", b'b', 23, 0, -1)),
            (1114, t("timestamp", b'b', 0, 0, -1)),
            (90000, t("short_text", b'd', 0, 1043, 14)),
            (90001, t("mood", b'e', 0, 0, -1)),
        ]
        .into_iter()
        .collect()
    }

    #[test]
    fn source_facts_are_those_of_the_jdbc_driver() {
        let t = types();
        let f = |oid, typmod| {
            let s = SourceColumn::new(oid, typmod, &t);
            (s.type_name, s.length, s.scale, s.char_like)
        };
        assert_eq!(f(1043, 6), ("varchar".into(), 2, 0, true));
        assert_eq!(f(700, -1), ("float4".into(), 8, 8, false));
        assert_eq!(f(1700, (5 << 16) + 2 + 4), ("numeric".into(), 5, 2, false));
        assert_eq!(f(1700, -1), ("numeric".into(), 131_089, 0, false));
        assert_eq!(f(23, -1), ("int4".into(), 10, 0, false));
        assert_eq!(f(25, -1), ("text".into(), i32::MAX, 0, true));
        assert_eq!(f(1007, -1), ("_int4".into(), 10, 0, false));
        assert_eq!(f(1114, -1), ("timestamp".into(), 29, 6, false));
        assert_eq!(f(1114, 3), ("timestamp".into(), 26, 3, false));
        assert_eq!(f(90000, -1), ("short_text".into(), 10, 0, true));
        assert_eq!(f(90001, -1), ("mood".into(), i32::MAX, 0, true));
    }

    #[test]
    fn hashes_match_debeziums_for_the_conformance_salt() {
        // DBZ-T-137: SHA-256, salt CzQMA0cB5K, V1 (Java serialization of the string).
        let h = |v: &str, max| {
            ValueMapper::Hash {
                algorithm: HashAlgorithm::Sha256,
                salt: b"CzQMA0cB5K".to_vec(),
                v2: false,
                max_chars: max,
            }
            .apply(Value::String(v.into()))
        };
        assert_eq!(
            h("test", Some(20)),
            Value::String("8e68c68edbbac316dfe2".into())
        );
        assert_eq!(
            h("hello", Some(255)),
            Value::String(
                "b4d39ab0d198fb4cac8b2f023da74f670bcaf192dcc79b5d6361b7ae6b2fafdf".into()
            )
        );
        let null = ValueMapper::Hash {
            algorithm: HashAlgorithm::Sha256,
            salt: vec![],
            v2: false,
            max_chars: None,
        }
        .apply(Value::Null);
        assert_eq!(null, Value::Null);
    }

    #[test]
    fn java_serialization_uses_modified_utf8() {
        assert_eq!(
            java_serialized_string("a\u{0}é😀"),
            vec![
                0xAC, 0xED, 0, 5, 0x74, 0, 11, b'a', 0xC0, 0x80, 0xC3, 0xA9, 0xED, 0xA0, 0xBD,
                0xED, 0xB8, 0x80
            ]
        );
    }

    #[test]
    fn truncation_counts_utf16_units_and_bytes() {
        let t = ValueMapper::Truncate(3);
        assert_eq!(
            t.apply(Value::String("žšabc".into())),
            Value::String("žša".into())
        );
        assert_eq!(
            t.apply(Value::String("a😀b".into())),
            Value::String("a😀".into())
        );
        assert_eq!(
            t.apply(Value::String("ab😀".into())),
            Value::String("ab".into())
        );
        assert_eq!(
            t.apply(Value::Bytes(vec![1, 2, 3, 4])),
            Value::Bytes(vec![1, 2, 3])
        );
        assert_eq!(t.apply(Value::Int(123456)), Value::Int(123456));
        assert_eq!(
            ValueMapper::Mask("***".into()).apply(Value::Null),
            Value::String("***".into())
        );
    }
}
