//! One-dimensional arrays in their text form (`{a,"b c",NULL}`, or `[0:2]={a,b,c}` when the
//! lower bound is not 1): split into element texts and converted element by element with the
//! element type. The bounds are not part of the value: the elements are, in order.
//!
//! Invariant: an unquoted `NULL` is SQL NULL, a quoted `"NULL"` is the text. Arrays with
//! several dimensions are errors, never flattened.

use super::ColumnType;
use crate::config::values::ValueOptions;
use crate::event::Value;

/// The value of array output text whose elements are of type `elem`: each element parsed as
/// `elem`, SQL NULL as null.
pub(super) fn array_value(
    elem: &ColumnType,
    text: &str,
    opts: &ValueOptions,
) -> Result<Value, String> {
    // PostGIS types delimit array elements with ':' (their typdelim).
    let delimiter = match elem {
        ColumnType::Geometry | ColumnType::Geography => b':',
        ColumnType::UnknownGeometric { semicolon: true } => b';',
        _ => b',',
    };
    let items = parse_array_delimited(text, delimiter)?;
    let mut out = Vec::with_capacity(items.len());
    for item in items {
        out.push(match item {
            None => Value::Null,
            Some(s) => elem.parse(&s, opts)?,
        });
    }
    Ok(Value::Array(out))
}

/// Splits a one-dimensional array literal (`{a,"b c",NULL}`, `[0:2]={a,b,c}`) into element
/// texts; `None` is SQL NULL. Multi-dimensional arrays are errors.
pub fn parse_array(text: &str) -> Result<Vec<Option<String>>, String> {
    parse_array_delimited(text, b',')
}

/// [`parse_array`] for element types whose `typdelim` is `delimiter`.
pub fn parse_array_delimited(text: &str, delimiter: u8) -> Result<Vec<Option<String>>, String> {
    let (bounds, body) = split_bounds(text)?;
    let inner = body
        .strip_prefix('{')
        .and_then(|t| t.strip_suffix('}'))
        .ok_or("array text is not of the form {...}")?;
    let items = split_elements(inner, delimiter)?;
    if let Some((lower, upper)) = bounds {
        if upper - lower + 1 != items.len() as i64 {
            return Err(format!(
                "array bounds [{lower}:{upper}] do not match its {} element(s)",
                items.len()
            ));
        }
    }
    Ok(items)
}

/// The lower and upper bound of an array's one dimension (`[0:2]`).
type Bounds = (i64, i64);

/// Splits PostgreSQL's bounds decoration off an array's text (`[0:2]={...}`): the bounds of
/// its one dimension, when given, and the `{...}` part. Several dimensions are an error.
fn split_bounds(text: &str) -> Result<(Option<Bounds>, &str), String> {
    let Some(decorated) = text.strip_prefix('[') else {
        return Ok((None, text));
    };
    let (dims, body) = decorated
        .split_once('=')
        .ok_or("array bounds without '=' before the elements")?;
    let dims = dims
        .strip_suffix(']')
        .ok_or("array bounds not closed with ']'")?;
    if dims.contains('[') {
        return Err(MULTI_DIMENSIONAL.into());
    }
    let (lower, upper) = dims
        .split_once(':')
        .ok_or("array bounds not of the form [lower:upper]")?;
    let bound = |b: &str| {
        b.parse::<i64>()
            .map_err(|_| format!("array bound {b:?} is not a number"))
    };
    Ok((Some((bound(lower)?, bound(upper)?)), body))
}

/// The error for an array of more than one dimension.
pub const MULTI_DIMENSIONAL: &str = "multi-dimensional arrays are not supported";

/// The element texts between an array's braces.
fn split_elements(inner: &str, delimiter: u8) -> Result<Vec<Option<String>>, String> {
    let mut out = Vec::new();
    if inner.is_empty() {
        return Ok(out);
    }
    let bytes = inner.as_bytes();
    let mut i = 0;
    loop {
        if bytes.get(i) == Some(&b'{') {
            return Err(MULTI_DIMENSIONAL.into());
        }
        let quoted = bytes.get(i) == Some(&b'"');
        let item = if quoted {
            quoted_element(bytes, &mut i)?
        } else {
            bare_element(bytes, &mut i, delimiter)?
        };
        let s = String::from_utf8(item).map_err(|_| "array element is not UTF-8")?;
        out.push(if !quoted && s == "NULL" {
            None
        } else {
            Some(s)
        });
        match bytes.get(i) {
            None => break,
            Some(&c) if c == delimiter => i += 1,
            Some(_) => return Err("unexpected character after array element".into()),
        }
    }
    Ok(out)
}

/// Reads the double-quoted element whose opening quote is at `bytes[*i]`, with `\` escaping
/// the next byte; leaves `*i` just past the closing quote.
fn quoted_element(bytes: &[u8], i: &mut usize) -> Result<Vec<u8>, String> {
    let mut item = Vec::new();
    *i += 1;
    loop {
        match bytes.get(*i) {
            None => return Err("unterminated quoted array element".into()),
            Some(b'\\') => {
                let c = *bytes
                    .get(*i + 1)
                    .ok_or("dangling escape in array element")?;
                item.push(c);
                *i += 2;
            }
            Some(b'"') => {
                *i += 1;
                return Ok(item);
            }
            Some(&c) => {
                item.push(c);
                *i += 1;
            }
        }
    }
}

/// Reads the unquoted element starting at `bytes[*i]`, with `\` escaping the next byte, up to
/// `delimiter` or the end; leaves `*i` at the delimiter (or the end).
fn bare_element(bytes: &[u8], i: &mut usize, delimiter: u8) -> Result<Vec<u8>, String> {
    let mut item = Vec::new();
    while let Some(&c) = bytes.get(*i) {
        if c == delimiter {
            break;
        }
        if c == b'\\' {
            item.push(
                *bytes
                    .get(*i + 1)
                    .ok_or("dangling escape in array element")?,
            );
            *i += 2;
            continue;
        }
        item.push(c);
        *i += 1;
    }
    Ok(item)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::Value;

    fn opts() -> ValueOptions {
        ValueOptions::default()
    }

    #[test]
    fn arrays_unquote_and_keep_nulls() {
        assert_eq!(
            parse_array(r#"{a,"b c",NULL,"NULL","x\"y"}"#).unwrap(),
            vec![
                Some("a".into()),
                Some("b c".into()),
                None,
                Some("NULL".into()),
                Some("x\"y".into())
            ]
        );
        assert_eq!(parse_array("{}").unwrap(), Vec::<Option<String>>::new());
        assert!(parse_array("{{1,2},{3,4}}").is_err());
        let t = ColumnType::Array(Box::new(ColumnType::Bytea));
        assert_eq!(
            t.parse(r#"{"\\x01ff",NULL}"#, &opts()).unwrap(),
            Value::Array(vec![Value::Bytes(vec![1, 255]), Value::Null])
        );
    }

    #[test]
    fn an_array_with_explicit_bounds_has_its_elements() {
        let some = |v: &[&str]| v.iter().map(|s| Some(s.to_string())).collect::<Vec<_>>();
        assert_eq!(
            parse_array("[0:2]={4,5,6}").unwrap(),
            some(&["4", "5", "6"])
        );
        assert_eq!(parse_array("[-1:-1]={x}").unwrap(), some(&["x"]));
        assert_eq!(parse_array("[5:6]={\"a,b\",NULL}").unwrap()[1], None);
        let t = ColumnType::Array(Box::new(ColumnType::Int32));
        assert_eq!(
            t.parse("[0:1]={7,8}", &opts()).unwrap(),
            Value::Array(vec![Value::Int(7), Value::Int(8)])
        );
    }

    #[test]
    fn several_dimensions_and_malformed_bounds_are_errors() {
        for (text, want) in [
            ("{{1,2},{3,4}}", MULTI_DIMENSIONAL),
            ("[0:1][1:2]={{1,2},{3,4}}", MULTI_DIMENSIONAL),
            ("[0:5]={1,2}", "do not match"),
            ("[0:1]{1,2}", "without '='"),
            ("[a:1]={1}", "is not a number"),
            ("[0]={1}", "[lower:upper]"),
        ] {
            let e = parse_array(text).unwrap_err();
            assert!(e.contains(want), "{text}: {e}");
        }
    }
}
