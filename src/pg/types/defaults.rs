//! Column default expressions (`pg_get_expr` text of `pg_attrdef`) turned into the schema
//! default Debezium derives for a column: a literal is parsed with the column's converter, a
//! function call or `CURRENT_*`/`LOCAL*` keyword gives the type's zero value, anything else
//! gives no default.
//!
//! Invariant: an expression that cannot be read never fails the table; it gives no default.

use super::ColumnType;
use crate::config::values::ValueOptions;
use crate::event::Value;

/// Converts a column default expression (`pg_get_expr` text) into the schema default
/// Debezium derives: literals parsed with the column's converter, function calls and
/// `CURRENT_*`/`LOCAL*` keywords as the type's zero value, `NULL` and anything else as none.
pub fn parse_default(expr: &str, ty: &ColumnType, opts: &ValueOptions) -> Option<Value> {
    if !has_derived_default(ty) {
        return None;
    }
    let e = expr.trim();
    let upper = e.to_ascii_uppercase();
    if upper.starts_with("NULL") {
        return None;
    }
    const KEYWORDS: [&str; 5] = [
        "CURRENT_TIMESTAMP",
        "CURRENT_TIME",
        "CURRENT_DATE",
        "LOCALTIME",
        "LOCALTIMESTAMP",
    ];
    if KEYWORDS.iter().any(|k| upper.starts_with(k)) {
        return Some(ty.zero(opts));
    }
    // A quoted literal with an optional cast: 'text'::type
    if let Some(rest) = e.strip_prefix('\'') {
        return quoted_literal(rest).and_then(|lit| ty.parse(&lit, opts).ok());
    }
    if is_function_call(e) {
        return Some(ty.zero(opts));
    }
    // A bare number or boolean, possibly parenthesised and cast: (-1), 1.5, true
    let bare = e
        .split("::")
        .next()
        .unwrap_or(e)
        .trim()
        .trim_start_matches('(')
        .trim_end_matches(')');
    match (ty, bare) {
        (ColumnType::Bool, "true") => Some(Value::Bool(true)),
        (ColumnType::Bool, "false") => Some(Value::Bool(false)),
        _ => ty.parse(bare, opts).ok(),
    }
}

/// Whether `expr` starts with a function call, as Debezium recognises one: `name(...)`, also
/// after one opening parenthesis, so casts and arithmetic on a call count
/// (`(now())::date`, `(now() + '1 day'::interval)`, `date_trunc('hour'::text, now())`).
/// Debezium gives such defaults the type's zero value.
fn is_function_call(expr: &str) -> bool {
    let e = expr.strip_prefix('(').unwrap_or(expr);
    let ident_end = e
        .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == '.' || c == '"'))
        .unwrap_or(e.len());
    ident_end > 0 && e[ident_end..].starts_with('(') && e.contains(')')
}

/// Whether Debezium derives defaults for columns of `ty` (not for bytea, unconstrained
/// numeric, money, arrays, ...).
fn has_derived_default(ty: &ColumnType) -> bool {
    match ty {
        ColumnType::Numeric { scale, .. } => scale.is_some(),
        ColumnType::Bool
        | ColumnType::Int16
        | ColumnType::Int32
        | ColumnType::Int64
        | ColumnType::Float32
        | ColumnType::Float64
        | ColumnType::Text
        | ColumnType::Json
        | ColumnType::Xml
        | ColumnType::Uuid
        | ColumnType::Date
        | ColumnType::Time(_)
        | ColumnType::Timestamp(_)
        | ColumnType::TimestampTz(_)
        | ColumnType::Interval
        | ColumnType::Bit
        | ColumnType::Bits(_)
        | ColumnType::Enum(_) => true,
        _ => false,
    }
}

/// The text of a quoted literal (`rest` follows the opening quote; `''` is a quote), when it
/// is closed and followed by nothing or a cast (`::type`).
fn quoted_literal(rest: &str) -> Option<String> {
    let mut lit = String::new();
    let mut chars = rest.chars().peekable();
    let mut closed = false;
    while let Some(c) = chars.next() {
        if c == '\'' {
            if chars.peek() == Some(&'\'') {
                lit.push('\'');
                chars.next();
                continue;
            }
            closed = true;
            break;
        }
        lit.push(c);
    }
    if !closed {
        return None;
    }
    let tail: String = chars.collect();
    if !(tail.is_empty() || tail.starts_with("::")) {
        return None;
    }
    Some(lit)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts() -> ValueOptions {
        ValueOptions::default()
    }

    #[test]
    fn defaults_become_literals_or_zero_values() {
        let o = opts();
        assert_eq!(
            parse_default("nextval('t_id_seq'::regclass)", &ColumnType::Int32, &o),
            Some(Value::Int(0))
        );
        assert_eq!(
            parse_default("now()", &ColumnType::TimestampTz(6), &o),
            Some(Value::String("1970-01-01T00:00:00.000000Z".into()))
        );
        assert_eq!(
            parse_default("'abc'::character varying", &ColumnType::Text, &o),
            Some(Value::String("abc".into()))
        );
        assert_eq!(
            parse_default("'it''s'::text", &ColumnType::Text, &o),
            Some(Value::String("it's".into()))
        );
        assert_eq!(
            parse_default("(-1)", &ColumnType::Int32, &o),
            Some(Value::Int(-1))
        );
        assert_eq!(parse_default("NULL::text", &ColumnType::Text, &o), None);
        assert_eq!(
            parse_default("true", &ColumnType::Bool, &o),
            Some(Value::Bool(true))
        );
        assert_eq!(
            parse_default("CURRENT_TIMESTAMP", &ColumnType::Timestamp(6), &o),
            Some(Value::Int(0))
        );
        // Casts of and arithmetic on a call: the zero value too, as Debezium gives them.
        for (expr, ty) in [
            ("(now())::date", ColumnType::Date),
            ("(now())::time without time zone", ColumnType::Time(6)),
            (
                "(now())::timestamp without time zone",
                ColumnType::Timestamp(6),
            ),
            ("(now() + '1 day'::interval)", ColumnType::TimestampTz(6)),
            ("date_trunc('hour'::text, now())", ColumnType::Timestamp(6)),
        ] {
            assert_eq!(parse_default(expr, &ty, &o), Some(ty.zero(&o)), "{expr}");
        }
        // Not a call: parentheses around a keyword or a sum give no default.
        assert_eq!(
            parse_default("(CURRENT_DATE + 1)", &ColumnType::Date, &o),
            None
        );
    }
}
