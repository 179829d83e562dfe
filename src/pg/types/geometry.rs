//! Geometric values: the built-in `point` (`io.debezium.data.geometry.Point`) and PostGIS
//! `geometry`/`geography` (`io.debezium.data.geometry.Geometry`/`Geography`), whose text
//! form is hex-encoded EWKB.
//!
//! Invariants: EWKB bytes are passed on as PostgreSQL sent them, with the SRID read from
//! them when its flag is set; a `point` gets the 21-byte little-endian WKB Debezium builds
//! and no SRID.

use super::numeric::parse_float;
use crate::event::{Field, Schema, SchemaType, Value};
use crate::util::decode_hex;

/// Whether `type_oid` is a built-in geometric type other than `point` (`box`, `circle`,
/// `line`, `lseg`, `path`, `polygon`), which Debezium 3.6.1 does not map: under
/// `include.unknown.datatypes=true` it emits the text of the JDBC driver's object for them.
pub(super) fn is_jdbc_geometric(type_oid: u32) -> bool {
    use super::oid::*;
    matches!(type_oid, BOX | CIRCLE | LINE | LSEG | PATH | POLYGON)
}

/// The text the JDBC driver's geometric objects (`PGbox`, `PGcircle`, ...) give for a value
/// whose PostgreSQL text output is `text`: the same punctuation, each number written as
/// Java's `Double.toString` (`(3,4),(1,2)` → `(3.0,4.0),(1.0,2.0)`). Errors: a token that is
/// not a number.
pub(super) fn jdbc_geometric_text(text: &str) -> Result<String, String> {
    let mut out = String::with_capacity(text.len() + 8);
    let mut number = String::new();
    let flush = |number: &mut String, out: &mut String| -> Result<(), String> {
        if !number.is_empty() {
            let v = parse_float(number).map_err(|_| format!("{number:?} is not a coordinate"))?;
            out.push_str(&crate::util::java_float_text(v, false));
            number.clear();
        }
        Ok(())
    };
    for c in text.chars() {
        if matches!(c, '(' | ')' | '[' | ']' | '{' | '}' | '<' | '>' | ',') {
            flush(&mut number, &mut out)?;
            out.push(c);
        } else if !c.is_whitespace() {
            number.push(c);
        }
    }
    flush(&mut number, &mut out)?;
    Ok(out)
}

/// The Connect schema of `point`: `{x, y, wkb?, srid?}`.
pub(super) fn point_schema() -> Schema {
    use SchemaType as T;
    let mut p = Schema::structure(
        "io.debezium.data.geometry.Point",
        false,
        vec![
            Field::new("x", Schema::new(T::Float64, false)),
            Field::new("y", Schema::new(T::Float64, false)),
            Field::new("wkb", Schema::new(T::Bytes, true)),
            Field::new("srid", Schema::new(T::Int32, true)),
        ],
    );
    p.version = Some(1);
    p.doc = Some("Geometry (POINT)".into());
    p
}

/// The Connect schema of PostGIS `geometry` (`geography` false) or `geography` (true):
/// `{wkb, srid?}`.
pub(super) fn ewkb_schema(geography: bool) -> Schema {
    use SchemaType as T;
    let (name, doc) = if geography {
        ("io.debezium.data.geometry.Geography", "Geography")
    } else {
        ("io.debezium.data.geometry.Geometry", "Geometry")
    };
    let mut g = Schema::structure(
        name,
        false,
        vec![
            Field::new("wkb", Schema::new(T::Bytes, false)),
            Field::new("srid", Schema::new(T::Int32, true)),
        ],
    );
    g.version = Some(1);
    g.doc = Some(doc.into());
    g
}

/// The value of `point` output text `(x,y)`: `{x, y, wkb, null}`.
pub(super) fn point_value(text: &str) -> Result<Value, String> {
    let (x, y) = parse_point(text)?;
    Ok(point_xy_value(x, y))
}

/// The value of the point `(x, y)`: `{x, y, wkb, null}`.
pub(super) fn point_xy_value(x: f64, y: f64) -> Value {
    let mut wkb = Vec::with_capacity(21);
    wkb.push(1u8);
    wkb.extend_from_slice(&1u32.to_le_bytes());
    wkb.extend_from_slice(&x.to_le_bytes());
    wkb.extend_from_slice(&y.to_le_bytes());
    Value::Struct(vec![
        Value::Float64(x),
        Value::Float64(y),
        Value::Bytes(wkb),
        Value::Null,
    ])
}

/// The value of PostGIS hex EWKB text: `{wkb, srid}`.
pub(super) fn ewkb_value(text: &str) -> Result<Value, String> {
    ewkb_bytes_value(decode_hex(text).ok_or("not hex-encoded EWKB")?)
}

/// The value of PostGIS EWKB bytes: `{wkb, srid}`.
pub(super) fn ewkb_bytes_value(wkb: Vec<u8>) -> Result<Value, String> {
    let srid = ewkb_srid(&wkb)?;
    Ok(Value::Struct(vec![
        Value::Bytes(wkb),
        srid.map_or(Value::Null, |s| Value::Int(s as i64)),
    ]))
}

/// The SRID embedded in PostGIS EWKB (flag 0x20000000 in the type word), if any.
fn ewkb_srid(wkb: &[u8]) -> Result<Option<i32>, String> {
    let word = |at: usize| -> Result<[u8; 4], String> {
        wkb.get(at..at + 4)
            .and_then(|b| b.try_into().ok())
            .ok_or_else(|| "EWKB too short".to_string())
    };
    let little = match wkb.first() {
        Some(1) => true,
        Some(0) => false,
        _ => return Err("EWKB has no byte-order mark".into()),
    };
    let read = |at: usize| -> Result<u32, String> {
        let b = word(at)?;
        Ok(if little {
            u32::from_le_bytes(b)
        } else {
            u32::from_be_bytes(b)
        })
    };
    if read(1)? & 0x2000_0000 != 0 {
        Ok(Some(read(5)? as i32))
    } else {
        Ok(None)
    }
}

/// Parses point output text `(x,y)`.
fn parse_point(text: &str) -> Result<(f64, f64), String> {
    let inner = text
        .trim()
        .strip_prefix('(')
        .and_then(|t| t.strip_suffix(')'))
        .ok_or("not a point")?;
    let (x, y) = inner.split_once(',').ok_or("not a point")?;
    Ok((parse_float(x.trim())?, parse_float(y.trim())?))
}

#[cfg(test)]
mod tests {
    use super::jdbc_geometric_text;
    use crate::config::values::ValueOptions;
    use crate::event::Value;
    use crate::pg::types::ColumnType;

    #[test]
    fn geometric_text_takes_the_jdbc_drivers_java_doubles() {
        for (pg, jdbc) in [
            ("(3,4),(1,2)", "(3.0,4.0),(1.0,2.0)"),
            ("<(1,2),3>", "<(1.0,2.0),3.0>"),
            ("{1,2,3}", "{1.0,2.0,3.0}"),
            ("[(1,2),(3,4)]", "[(1.0,2.0),(3.0,4.0)]"),
            ("((0,0),(0,1),(1,1))", "((0.0,0.0),(0.0,1.0),(1.0,1.0))"),
            ("[(0,0),(1.5,-2.25)]", "[(0.0,0.0),(1.5,-2.25)]"),
            (
                "(1e+20,-1e-05),(NaN,Infinity)",
                "(1.0E20,-1.0E-5),(NaN,Infinity)",
            ),
        ] {
            assert_eq!(jdbc_geometric_text(pg).unwrap(), jdbc, "{pg}");
        }
        assert!(jdbc_geometric_text("(a,1)").is_err());
    }

    fn opts() -> ValueOptions {
        ValueOptions::default()
    }

    #[test]
    fn points_carry_little_endian_wkb() {
        let v = ColumnType::Point.parse("(1,1)", &opts()).unwrap();
        let Value::Struct(f) = v else {
            panic!("struct")
        };
        assert_eq!(f[0], Value::Float64(1.0));
        assert_eq!(
            f[2],
            Value::Bytes(vec![
                1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xf0, 0x3f, 0, 0, 0, 0, 0, 0, 0xf0, 0x3f
            ])
        );
        assert!(ColumnType::Point.parse("(1;1)", &opts()).is_err());
    }
}
