//! One-dimensional arrays in their text form (`{a,"b c",NULL}`): split into element texts and
//! converted element by element with the element type.
//!
//! Invariant: an unquoted `NULL` is SQL NULL, a quoted `"NULL"` is the text. Arrays with
//! several dimensions or explicit bounds are errors, never flattened.

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

/// Splits a one-dimensional array literal (`{a,"b c",NULL}`) into element texts; `None` is
/// SQL NULL. Multi-dimensional arrays and explicit bounds are errors.
pub fn parse_array(text: &str) -> Result<Vec<Option<String>>, String> {
    parse_array_delimited(text, b',')
}

/// [`parse_array`] for element types whose `typdelim` is `delimiter`.
pub fn parse_array_delimited(text: &str, delimiter: u8) -> Result<Vec<Option<String>>, String> {
    let inner = text
        .strip_prefix('{')
        .and_then(|t| t.strip_suffix('}'))
        .ok_or(
            "array text is not of the form {...} (arrays with explicit bounds are not supported)",
        )?;
    let mut out = Vec::new();
    if inner.is_empty() {
        return Ok(out);
    }
    let bytes = inner.as_bytes();
    let mut i = 0;
    loop {
        if bytes.get(i) == Some(&b'{') {
            return Err("multi-dimensional arrays are not supported".into());
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
}
