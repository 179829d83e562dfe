//! Debezium's `io.debezium.transforms.partitions.PartitionRouting`: sets a change event's
//! partition from a hash of some of its fields, as Debezium 3.6.1 does.
//!
//! - `partition.payload.fields` (required): envelope fields, dotted for nesting
//!   (`after.region`, `source.table`); `change.<field>` reads `before` for a delete and `after`
//!   otherwise. A field the record lacks, or a null, is left out; a record with none of them
//!   keeps its partition.
//! - `partition.topic.num` (required, > 0): the partition is the sum of the values' hashes
//!   (Java `hashCode`, or Debezium's MurmurHash3 with `partition.hash.function=murmur`), made
//!   non-negative, modulo this number.
//! - Tombstones, truncates, logical messages and records that are not change events pass
//!   unchanged. A path through a null struct (`after.id` of a delete) stops the connector, as
//!   Debezium's task fails there: use `change.id`.
//!
//! Values hash as the Java objects Kafka Connect holds: integers, floats, booleans, strings,
//! decimals (`BigDecimal`), dates, and arrays of those. Bytes (hashed by identity in Java, so
//! the partition would change on every restart) and structs are refused with an error naming
//! the field.

use super::side::{data_error, field_value, list};
use super::{field, is_envelope, Declared, Options, RecordKind, Transformation};
use crate::error::Result;
use crate::event::{ConnectRecord, Schema, SchemaType, Value};

/// `io.debezium.transforms.partitions.PartitionRouting`.
pub const PARTITION_ROUTING: &str = "io.debezium.transforms.partitions.PartitionRouting";

/// The transform.
#[derive(Debug, Clone)]
pub struct PartitionRouting {
    alias: String,
    fields: Vec<Vec<String>>,
    partitions: i32,
    murmur: bool,
}

impl PartitionRouting {
    /// The value at `path` (`None` when absent or null); an error for a path through a null.
    fn lookup<'a>(
        &self,
        schema: &'a Schema,
        env: &Value,
        path: &[String],
        op: &str,
        topic: &str,
    ) -> Result<Option<(&'a Schema, Value)>> {
        let mut s = schema;
        let mut v = env.clone();
        for (i, step) in path.iter().enumerate() {
            let last = i + 1 == path.len();
            let name = if !last && step == "change" && path.len() > 1 {
                if op == "d" {
                    "before"
                } else {
                    "after"
                }
            } else {
                step.as_str()
            };
            if s.ty != SchemaType::Struct {
                return Ok(None);
            }
            let Some(idx) = s.field_index(name) else {
                return Ok(None);
            };
            let Value::Struct(vs) = &v else {
                return Err(data_error(
                    "PartitionRouting",
                    &self.alias,
                    format!(
                        "field {} (topic {topic}): {} is null in this record (op {op}); use change.<field> to read before for deletes",
                        path.join("."),
                        path[..i].join(".")
                    ),
                ));
            };
            v = field_value(s, vs, idx, true);
            s = &s.fields[idx].schema;
        }
        Ok((!v.is_null()).then_some((s, v)))
    }
}

impl Transformation for PartitionRouting {
    /// Parses the options; `None` when a problem was recorded.
    fn parse(d: &Declared<'_>, o: &mut Options<'_>) -> Option<Self> {
        let alias = d.alias;
        let fields = o.get("partition.payload.fields").map(list);
        let partitions = o.get("partition.topic.num");
        let murmur = o.choice(
            "partition.hash.function",
            false,
            &[("java", false), ("murmur", true)],
        );
        let Some(fields) = fields.filter(|f| !f.is_empty()) else {
            o.problem(
                "partition.payload.fields",
                " is required: the fields to hash",
            );
            return None;
        };
        if fields.iter().any(String::is_empty) {
            o.problem("partition.payload.fields", " has an empty item");
            return None;
        }
        let partitions = match partitions.map(str::parse::<i32>) {
            Some(Ok(n)) if n > 0 => n,
            Some(_) => {
                o.problem("partition.topic.num", " must be a positive integer");
                return None;
            }
            None => {
                o.problem(
                    "partition.topic.num",
                    " is required: the number of partitions of the topics this transform acts on",
                );
                return None;
            }
        };
        Some(PartitionRouting {
            alias: alias.into(),
            fields: fields
                .iter()
                .map(|f| f.split('.').map(|s| s.trim().to_string()).collect())
                .collect(),
            partitions,
            murmur,
        })
    }

    /// Applies the transform.
    fn apply(&mut self, mut r: ConnectRecord) -> Result<Option<ConnectRecord>> {
        if r.value.as_ref().is_none_or(Value::is_null) || !is_envelope(&r) {
            return Ok(Some(r));
        }
        let (Some(schema), Some(env)) = (r.value_schema.clone(), r.value.as_ref()) else {
            return Ok(Some(r));
        };
        let op = field(&schema, env, "op")
            .and_then(|(_, v)| v.as_str())
            .unwrap_or_default();
        if op == "t" || op == "m" {
            return Ok(Some(r));
        }
        let mut total: i32 = 0;
        let mut any = false;
        for path in &self.fields {
            let found = self.lookup(&schema, env, path, op, &r.topic)?;
            if let Some((s, v)) = found {
                let h = java_hash(s, &v).map_err(|e| {
                    data_error(
                        "PartitionRouting",
                        &self.alias,
                        format!("field {} (topic {}): {e}", path.join("."), r.topic),
                    )
                })?;
                let h = match (self.murmur, v.as_str()) {
                    (false, _) => h,
                    // Debezium's MurmurHash3.hash(Object) hashes a string's UTF-8 bytes.
                    (true, Some(text)) => (murmur3_x64_64(text.as_bytes(), 9001) >> 32) as i32,
                    (true, None) => murmur_int(h),
                };
                total = total.wrapping_add(h);
                any = true;
            }
        }
        if any {
            let mut h = total & i32::MAX;
            if h == i32::MAX {
                h = 0;
            }
            r.partition = Some(h % self.partitions);
        }
        Ok(Some(r))
    }

    fn touches(&self) -> &'static [RecordKind] {
        &[RecordKind::ChangeEvent]
    }
}

/// Java's `hashCode` of the object Kafka Connect holds for `v` (shaped by `s`).
fn java_hash(s: &Schema, v: &Value) -> std::result::Result<i32, String> {
    let long = |x: i64| (x ^ ((x as u64) >> 32) as i64) as i32;
    let name = s.name.as_deref().unwrap_or_default();
    Ok(match (s.ty, v) {
        (SchemaType::Int32, Value::Int(d)) if name == "org.apache.kafka.connect.data.Date" => {
            long(d * 86_400_000)
        }
        (SchemaType::Int32 | SchemaType::Int64, Value::Int(x))
            if name == "org.apache.kafka.connect.data.Time"
                || name == "org.apache.kafka.connect.data.Timestamp" =>
        {
            long(*x)
        }
        (SchemaType::Int8 | SchemaType::Int16 | SchemaType::Int32, Value::Int(x)) => *x as i32,
        (SchemaType::Int64, Value::Int(x)) => long(*x),
        (SchemaType::Float32, Value::Float32(f)) => {
            let f = if f.is_nan() { f32::NAN } else { *f };
            f.to_bits() as i32
        }
        (SchemaType::Float64, Value::Float64(f)) => {
            let f = if f.is_nan() { f64::NAN } else { *f };
            long(f.to_bits() as i64)
        }
        (SchemaType::Boolean, Value::Bool(b)) => {
            if *b {
                1231
            } else {
                1237
            }
        }
        (SchemaType::String, v) => crate::util::java_string_hash(v.as_str().unwrap_or_default()),
        (SchemaType::Bytes, Value::Bytes(b)) if name == "org.apache.kafka.connect.data.Decimal" => {
            let scale: i32 = s
                .parameters
                .iter()
                .find(|(k, _)| k == "scale")
                .and_then(|(_, v)| v.parse().ok())
                .unwrap_or(0);
            big_integer_hash(b).wrapping_mul(31).wrapping_add(scale)
        }
        (SchemaType::Array, Value::Array(items)) => {
            let item = s.items.as_deref().ok_or("an array without an item schema")?;
            let mut h: i32 = 1;
            for x in items {
                let e = if x.is_null() { 0 } else { java_hash(item, x)? };
                h = h.wrapping_mul(31).wrapping_add(e);
            }
            h
        }
        (SchemaType::Bytes, _) => {
            return Err(
                "bytes are hashed by identity in Java (a different partition after every restart): pick another field".into())
        }
        (ty, _) => return Err(format!(
            "a {} value cannot be hashed as Debezium does: pick a field of a simple type", ty.json_name())),
    })
}

/// Java's `BigInteger.hashCode` of a two's-complement big-endian number.
fn big_integer_hash(b: &[u8]) -> i32 {
    let negative = b.first().is_some_and(|x| x & 0x80 != 0);
    // Magnitude, big-endian bytes.
    let mut mag: Vec<u8> = b.to_vec();
    if negative {
        // Two's complement negation.
        for x in mag.iter_mut() {
            *x = !*x;
        }
        for x in mag.iter_mut().rev() {
            let (v, carry) = x.overflowing_add(1);
            *x = v;
            if !carry {
                break;
            }
        }
    }
    let start = mag.iter().position(|&x| x != 0).unwrap_or(mag.len());
    let mag = &mag[start..];
    if mag.is_empty() {
        return 0;
    }
    // 32-bit words, most significant first.
    let pad = (4 - mag.len() % 4) % 4;
    let mut padded = vec![0u8; pad];
    padded.extend_from_slice(mag);
    let mut h: i32 = 0;
    for w in padded.chunks(4) {
        let word = u32::from_be_bytes([w[0], w[1], w[2], w[3]]);
        h = h.wrapping_mul(31).wrapping_add(word as i32);
    }
    if negative {
        h.wrapping_neg()
    } else {
        h
    }
}

/// Debezium's `MurmurHash3.hash(int)` of a Java hash code: `MurmurHash3_x64_64` of its four
/// little-endian bytes with seed 9001 (tail bytes sign-extended, as Debezium's Java does), top
/// 32 bits.
fn murmur_int(h: i32) -> i32 {
    (murmur3_x64_64(&h.to_le_bytes(), 9001) >> 32) as i32
}

fn murmur3_x64_64(key: &[u8], seed: i64) -> i64 {
    struct St {
        h1: i64,
        h2: i64,
        k1: i64,
        k2: i64,
        c1: i64,
        c2: i64,
    }
    fn bmix(s: &mut St) {
        s.k1 = s.k1.wrapping_mul(s.c1);
        s.k1 = s.k1.rotate_left(23);
        s.k1 = s.k1.wrapping_mul(s.c2);
        s.h1 ^= s.k1;
        s.h1 = s.h1.wrapping_add(s.h2);
        s.h2 = s.h2.rotate_left(41);
        s.k2 = s.k2.wrapping_mul(s.c2);
        s.k2 = s.k2.rotate_left(23);
        s.k2 = s.k2.wrapping_mul(s.c1);
        s.h2 ^= s.k2;
        s.h2 = s.h2.wrapping_add(s.h1);
        s.h1 = s.h1.wrapping_mul(3).wrapping_add(0x52dce729);
        s.h2 = s.h2.wrapping_mul(3).wrapping_add(0x38495ab5);
        s.c1 = s.c1.wrapping_mul(5).wrapping_add(0x7b7d159c);
        s.c2 = s.c2.wrapping_mul(5).wrapping_add(0x6bce6396);
    }
    fn fmix(mut k: i64) -> i64 {
        k ^= ((k as u64) >> 33) as i64;
        k = k.wrapping_mul(0xff51afd7ed558ccdu64 as i64);
        k ^= ((k as u64) >> 33) as i64;
        k = k.wrapping_mul(0xc4ceb9fe1a85ec53u64 as i64);
        k ^= ((k as u64) >> 33) as i64;
        k
    }
    let mut s = St {
        h1: 0x9368e53c2f6af274u64 as i64 ^ seed,
        h2: 0x586dcd208f7cd3fdu64 as i64 ^ seed,
        k1: 0,
        k2: 0,
        c1: 0x87c37b91114253d5u64 as i64,
        c2: 0x4cf5ad432745937fu64 as i64,
    };
    let block = |i: usize| i64::from_le_bytes(key[i..i + 8].try_into().unwrap_or([0; 8]));
    for i in 0..key.len() / 16 {
        s.k1 = block(i * 16);
        s.k2 = block(i * 16 + 8);
        bmix(&mut s);
    }
    s.k1 = 0;
    s.k2 = 0;
    let tail = (key.len() >> 4) << 4;
    let rest = key.len() & 15;
    // Java's `(long) key[i] << n`: the byte is sign-extended before the shift.
    let byte = |i: usize| key[tail + i] as i8 as i64;
    for i in (8..rest).rev() {
        s.k2 ^= byte(i) << ((i - 8) * 8);
    }
    for i in (0..rest.min(8)).rev() {
        s.k1 ^= byte(i) << (i * 8);
    }
    if rest > 0 {
        bmix(&mut s);
    }
    s.h2 ^= key.len() as i64;
    s.h1 = s.h1.wrapping_add(s.h2);
    s.h2 = s.h2.wrapping_add(s.h1);
    s.h1 = fmix(s.h1);
    s.h2 = fmix(s.h2);
    s.h1 = s.h1.wrapping_add(s.h2);
    s.h1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn java_hash_codes() {
        let s = |ty| Schema::new(ty, true);
        assert_eq!(java_hash(&s(SchemaType::Int32), &Value::Int(7)).unwrap(), 7);
        assert_eq!(
            java_hash(&s(SchemaType::Int64), &Value::Int(-1)).unwrap(),
            0,
            "Long.hashCode(-1L)"
        );
        assert_eq!(
            java_hash(&s(SchemaType::String), &Value::String("abc".into())).unwrap(),
            96354
        );
        assert_eq!(
            java_hash(&s(SchemaType::Boolean), &Value::Bool(true)).unwrap(),
            1231
        );
        assert_eq!(
            java_hash(&s(SchemaType::Float64), &Value::Float64(1.5)).unwrap(),
            1073217536,
            "Double.hashCode(1.5)"
        );
        assert!(java_hash(&s(SchemaType::Bytes), &Value::Bytes(vec![1])).is_err());
    }

    #[test]
    fn big_integer_hash_codes_match_java() {
        // new BigInteger("1234").hashCode() == 1234; negative: -1234.
        assert_eq!(big_integer_hash(&[0x04, 0xd2]), 1234);
        assert_eq!(big_integer_hash(&[0xfb, 0x2e]), -1234);
        assert_eq!(big_integer_hash(&[0]), 0);
        // 2^32 + 5: words [1, 5] → 31 * 1 + 5.
        assert_eq!(big_integer_hash(&[1, 0, 0, 0, 5]), 36);
    }
}
