//! Numbers in their text form: `numeric` (Connect `Decimal` when constrained,
//! `VariableScaleDecimal` when not, or a double or plain string per `decimal.handling.mode`),
//! `money` (Debezium's `PostgresMoney` reading), and the float text of `real` and
//! `double precision` (`NaN`, `Infinity`, `-Infinity` included).
//!
//! Invariant: in precise mode a decimal never goes through floating point. Its digits are
//! kept as a digit string and written as the unscaled value's minimal two's-complement bytes,
//! exactly as Java's `BigInteger.toByteArray` does.

use crate::config::values::{DecimalMode, ValueOptions};
use crate::event::{Field, Schema, SchemaType, Value};

/// The Connect schema of `numeric(precision, scale)` (both `None` when unconstrained) in
/// decimal mode `mode`.
pub(super) fn numeric_schema(
    precision: Option<u32>,
    scale: Option<u32>,
    mode: DecimalMode,
) -> Schema {
    use SchemaType as T;
    match mode {
        DecimalMode::Double => Schema::new(T::Float64, false),
        DecimalMode::String => Schema::new(T::String, false),
        DecimalMode::Precise => match (precision, scale) {
            (Some(p), Some(s)) => Schema::new(T::Bytes, false)
                .named("org.apache.kafka.connect.data.Decimal")
                .param("scale", s.to_string())
                .param("connect.decimal.precision", p.to_string()),
            _ => variable_scale_decimal_schema(),
        },
    }
}

/// The Connect schema of `money`: a `Decimal` of scale `money.fraction.digits` in precise
/// mode.
pub(super) fn money_schema(opts: &ValueOptions) -> Schema {
    use SchemaType as T;
    match opts.decimal {
        DecimalMode::Double => Schema::new(T::Float64, false),
        DecimalMode::String => Schema::new(T::String, false),
        DecimalMode::Precise => Schema::new(T::Bytes, false)
            .named("org.apache.kafka.connect.data.Decimal")
            .param("scale", opts.money_fraction_digits.to_string()),
    }
}

fn variable_scale_decimal_schema() -> Schema {
    let mut s = Schema::structure(
        "io.debezium.data.VariableScaleDecimal",
        false,
        vec![
            Field::new("scale", Schema::new(SchemaType::Int32, false)),
            Field::new("value", Schema::new(SchemaType::Bytes, false)),
        ],
    );
    s.version = Some(1);
    s.doc = Some("Variable scaled decimal".into());
    s
}

/// Parses float output text, `NaN` and the infinities included.
pub(super) fn parse_float(text: &str) -> Result<f64, String> {
    match text {
        "NaN" => Ok(f64::NAN),
        "Infinity" => Ok(f64::INFINITY),
        "-Infinity" => Ok(f64::NEG_INFINITY),
        _ => text
            .parse::<f64>()
            .map_err(|_| "not a floating-point number".into()),
    }
}

/// A decimal number split into sign, digits and scale.
struct DecimalParts {
    negative: bool,
    /// All digits, integer part then fraction, without leading zeros (may be empty for 0).
    digits: Vec<u8>,
    /// Number of fraction digits in `digits`.
    scale: u32,
}

fn split_decimal(text: &str) -> Result<DecimalParts, String> {
    let (negative, body) = match text.as_bytes().first() {
        Some(b'-') => (true, &text[1..]),
        Some(b'+') => (false, &text[1..]),
        _ => (false, text),
    };
    let (int, frac) = body.split_once('.').unwrap_or((body, ""));
    if int.is_empty() && frac.is_empty() {
        return Err("not a number".into());
    }
    if !int.bytes().chain(frac.bytes()).all(|b| b.is_ascii_digit()) {
        return Err("not a plain decimal number".into());
    }
    let mut digits: Vec<u8> = int.bytes().chain(frac.bytes()).map(|b| b - b'0').collect();
    let lead = digits.iter().take_while(|d| **d == 0).count();
    digits.drain(..lead);
    Ok(DecimalParts {
        negative,
        digits,
        scale: frac.len() as u32,
    })
}

/// Minimal two's-complement big-endian bytes of a decimal digit string (Java
/// `BigInteger.toByteArray`).
pub fn unscaled_bytes(negative: bool, digits: &[u8]) -> Vec<u8> {
    // Magnitude, big-endian base 256.
    let mut mag: Vec<u8> = Vec::with_capacity(digits.len() / 2 + 1);
    for &d in digits {
        let mut carry = d as u32;
        for b in mag.iter_mut().rev() {
            let v = *b as u32 * 10 + carry;
            *b = (v & 0xFF) as u8;
            carry = v >> 8;
        }
        while carry > 0 {
            mag.insert(0, (carry & 0xFF) as u8);
            carry >>= 8;
        }
    }
    if mag.is_empty() {
        return vec![0];
    }
    if !negative {
        if mag[0] & 0x80 != 0 {
            mag.insert(0, 0);
        }
        return mag;
    }
    // Two's complement: invert and add one, widening when the sign bit would be clear.
    let mut out: Vec<u8> = mag.iter().map(|b| !b).collect();
    for b in out.iter_mut().rev() {
        let (v, overflow) = b.overflowing_add(1);
        *b = v;
        if !overflow {
            break;
        }
    }
    if out[0] & 0x80 == 0 {
        out.insert(0, 0xFF);
    }
    // Drop redundant leading 0xFF bytes (keeping the sign bit set).
    while out.len() > 1 && out[0] == 0xFF && out[1] & 0x80 != 0 {
        out.remove(0);
    }
    out
}

/// Converts `numeric` output text per decimal mode. `NaN` and the infinities have no precise
/// form: they are an error in precise mode.
pub(super) fn parse_numeric(
    text: &str,
    precision: Option<u32>,
    scale: Option<u32>,
    mode: DecimalMode,
) -> Result<Value, String> {
    let special = match text {
        "NaN" => Some((f64::NAN, "NAN")),
        "Infinity" => Some((f64::INFINITY, "POSITIVE_INFINITY")),
        "-Infinity" => Some((f64::NEG_INFINITY, "NEGATIVE_INFINITY")),
        _ => None,
    };
    if let Some((d, s)) = special {
        return match mode {
            DecimalMode::Double => Ok(Value::Float64(d)),
            DecimalMode::String => Ok(Value::String(s.into())),
            DecimalMode::Precise => Err(format!(
                "{text} cannot be represented with decimal.handling.mode=precise; set decimal.handling.mode to double or string"
            )),
        };
    }
    match mode {
        DecimalMode::Double => text
            .parse::<f64>()
            .map(Value::Float64)
            .map_err(|_| "not a number".into()),
        DecimalMode::String => {
            split_decimal(text)?;
            Ok(Value::String(text.to_string()))
        }
        DecimalMode::Precise => precise_numeric(text, precision, scale),
    }
}

/// A finite `numeric` in precise mode: the unscaled bytes at the column scale (constrained),
/// or a `VariableScaleDecimal` struct `{scale, value}` (unconstrained).
fn precise_numeric(
    text: &str,
    precision: Option<u32>,
    scale: Option<u32>,
) -> Result<Value, String> {
    let mut parts = split_decimal(text)?;
    match (precision, scale) {
        (Some(_), Some(s)) => {
            if parts.scale > s {
                return Err(format!(
                    "has {} fraction digits, more than the column scale {s}",
                    parts.scale
                ));
            }
            parts
                .digits
                .extend(std::iter::repeat_n(0, (s - parts.scale) as usize));
            Ok(Value::Bytes(unscaled_bytes(parts.negative, &parts.digits)))
        }
        _ => {
            // VariableScaleDecimal: strip trailing zeros; a negative scale becomes 0,
            // and zero has scale 0 (BigDecimal.stripTrailingZeros).
            while parts.scale > 0 && parts.digits.last() == Some(&0) {
                parts.digits.pop();
                parts.scale -= 1;
            }
            if parts.digits.is_empty() {
                parts.scale = 0;
            }
            Ok(Value::Struct(vec![
                Value::Int(parts.scale as i64),
                Value::Bytes(unscaled_bytes(parts.negative, &parts.digits)),
            ]))
        }
    }
}

/// Parses MONEY text as Debezium does (`PostgresMoney`), more robustly: a leading `-` or
/// parentheses mark a negative amount; currency symbols and spaces are dropped; with both `.`
/// and `,` present the last one is the decimal separator, with one kind only it is the decimal
/// separator when at most two digits follow its last occurrence. Precise mode rounds HALF_UP to
/// `money.fraction.digits`.
pub(super) fn parse_money(text: &str, opts: &ValueOptions) -> Result<Value, String> {
    money_value(money_decimal_text(text)?, opts)
}

/// The value of a MONEY amount given as a plain decimal (`-1234.56`).
pub(super) fn money_value(signed: String, opts: &ValueOptions) -> Result<Value, String> {
    match opts.decimal {
        DecimalMode::Double => signed
            .parse::<f64>()
            .map(Value::Float64)
            .map_err(|_| "not a money amount".into()),
        DecimalMode::String => Ok(Value::String(signed)),
        DecimalMode::Precise => {
            let mut parts = split_decimal(&signed)?;
            rescale_half_up(&mut parts, opts.money_fraction_digits);
            Ok(Value::Bytes(unscaled_bytes(parts.negative, &parts.digits)))
        }
    }
}

/// MONEY text as a plain decimal (`-1234.56`), read as [`parse_money`] describes.
fn money_decimal_text(text: &str) -> Result<String, String> {
    let negative = text.contains('-') || text.contains('(');
    let kept: String = text
        .chars()
        .filter(|c| c.is_ascii_digit() || *c == '.' || *c == ',')
        .collect();
    if !kept.bytes().any(|b| b.is_ascii_digit()) {
        return Err("not a money amount".into());
    }
    let last_dot = kept.rfind('.');
    let last_comma = kept.rfind(',');
    let decimal_at = match (last_dot, last_comma) {
        (Some(d), Some(c)) => Some(d.max(c)),
        (Some(p), None) | (None, Some(p)) => (kept.len() - p - 1 <= 2).then_some(p),
        (None, None) => None,
    };
    let (int_part, frac_part) = match decimal_at {
        Some(p) => (&kept[..p], &kept[p + 1..]),
        None => (kept.as_str(), ""),
    };
    let int_digits: String = int_part.chars().filter(char::is_ascii_digit).collect();
    let plain = if frac_part.is_empty() {
        int_digits
    } else {
        format!("{int_digits}.{frac_part}")
    };
    Ok(if negative { format!("-{plain}") } else { plain })
}

/// Brings `parts` to `scale` fraction digits: pads with zeros, or drops digits rounding
/// HALF_UP on the magnitude (Java `BigDecimal.setScale(scale, HALF_UP)`).
fn rescale_half_up(parts: &mut DecimalParts, scale: u32) {
    if parts.scale > scale {
        let drop = (parts.scale - scale) as usize;
        let cut = parts.digits.len().saturating_sub(drop);
        let round_up = parts.digits.get(cut).is_some_and(|d| *d >= 5);
        parts.digits.truncate(cut);
        if round_up {
            let mut i = parts.digits.len();
            loop {
                if i == 0 {
                    parts.digits.insert(0, 1);
                    break;
                }
                i -= 1;
                if parts.digits[i] == 9 {
                    parts.digits[i] = 0;
                } else {
                    parts.digits[i] += 1;
                    break;
                }
            }
        }
    } else {
        parts
            .digits
            .extend(std::iter::repeat_n(0, (scale - parts.scale) as usize));
    }
    parts.scale = scale;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pg::types::ColumnType;

    fn opts() -> ValueOptions {
        ValueOptions::default()
    }

    #[test]
    fn unscaled_bytes_match_java_big_integer() {
        assert_eq!(unscaled_bytes(false, &[1, 2, 3, 4]), vec![0x04, 0xD2]); // 1234 -> BNI=
        assert_eq!(unscaled_bytes(false, &[1, 1, 0]), vec![0x6E]); // 110 -> bg==
        assert_eq!(unscaled_bytes(false, &[]), vec![0]);
        assert_eq!(unscaled_bytes(false, &[1, 2, 8]), vec![0x00, 0x80]);
        assert_eq!(unscaled_bytes(true, &[1, 2, 8]), vec![0x80]);
        assert_eq!(unscaled_bytes(true, &[1, 2, 9]), vec![0xFF, 0x7F]);
        assert_eq!(unscaled_bytes(true, &[1]), vec![0xFF]);
        assert_eq!(unscaled_bytes(true, &[2, 5, 6]), vec![0xFF, 0x00]);
        assert_eq!(
            unscaled_bytes(false, &[1, 0, 1, 1, 1, 1]),
            vec![0x01, 0x8A, 0xF7]
        ); // AYr3
    }

    #[test]
    fn constrained_numeric_is_rescaled_to_the_column_scale() {
        let t = ColumnType::Numeric {
            precision: Some(10),
            scale: Some(2),
        };
        assert_eq!(
            t.parse("12.34", &opts()).unwrap(),
            Value::Bytes(vec![0x04, 0xD2])
        );
        assert_eq!(t.parse("1.1", &opts()).unwrap(), Value::Bytes(vec![0x6E]));
        let s = ValueOptions {
            decimal: DecimalMode::String,
            ..opts()
        };
        assert_eq!(t.parse("22.22", &s).unwrap(), Value::String("22.22".into()));
    }

    #[test]
    fn unconstrained_numeric_is_a_variable_scale_decimal_without_trailing_zeros() {
        let t = ColumnType::Numeric {
            precision: None,
            scale: None,
        };
        assert_eq!(
            t.parse("10.1111", &opts()).unwrap(),
            Value::Struct(vec![Value::Int(4), Value::Bytes(vec![0x01, 0x8A, 0xF7])])
        );
        assert_eq!(
            t.parse("10.10", &opts()).unwrap(),
            Value::Struct(vec![Value::Int(1), Value::Bytes(vec![101])])
        );
        assert_eq!(
            t.parse("10", &opts()).unwrap(),
            Value::Struct(vec![Value::Int(0), Value::Bytes(vec![10])])
        );
    }

    #[test]
    fn numeric_specials_follow_the_decimal_mode() {
        let t = ColumnType::Numeric {
            precision: None,
            scale: None,
        };
        let s = ValueOptions {
            decimal: DecimalMode::String,
            ..opts()
        };
        assert_eq!(t.parse("NaN", &s).unwrap(), Value::String("NAN".into()));
        assert_eq!(
            t.parse("-Infinity", &s).unwrap(),
            Value::String("NEGATIVE_INFINITY".into())
        );
        let err = t.parse("NaN", &opts()).unwrap_err();
        assert!(err.contains("decimal.handling.mode"), "{err}");
    }

    #[test]
    fn money_follows_the_decimal_mode_and_fraction_digits() {
        let o = opts();
        assert_eq!(
            ColumnType::Money.parse("$1,234.11", &o).unwrap(),
            Value::Bytes(vec![0x01, 0xE2, 0x13])
        );
        assert_eq!(
            ColumnType::Money.parse("-$1,234.11", &o).unwrap(),
            Value::Bytes(vec![0xFE, 0x1D, 0xED])
        );
        assert_eq!(
            ColumnType::Money.parse("($1,234.11)", &o).unwrap(),
            Value::Bytes(vec![0xFE, 0x1D, 0xED])
        );
        assert_eq!(
            ColumnType::Money.parse("€1.234,56", &o).unwrap(),
            parse_money("1234.56", &o).unwrap()
        );
        let s = ValueOptions {
            decimal: DecimalMode::String,
            ..opts()
        };
        assert_eq!(
            ColumnType::Money
                .parse("$92,233,720,368,547,758.07", &s)
                .unwrap(),
            Value::String("92233720368547758.07".into())
        );
        let d = ValueOptions {
            decimal: DecimalMode::Double,
            ..opts()
        };
        assert_eq!(
            ColumnType::Money.parse("-$0.50", &d).unwrap(),
            Value::Float64(-0.5)
        );
        let one_digit = ValueOptions {
            money_fraction_digits: 1,
            ..opts()
        };
        assert_eq!(
            ColumnType::Money.parse("$1.25", &one_digit).unwrap(),
            Value::Bytes(vec![13]),
            "HALF_UP to 1.3"
        );
        assert_eq!(
            ColumnType::Money.schema(&o).parameters,
            vec![("scale".to_string(), "2".to_string())]
        );
    }
}
