//! Value-representation settings: how column values are written (`decimal.handling.mode`,
//! `time.precision.mode`, `binary.handling.mode`, `interval.handling.mode`,
//! `hstore.handling.mode`, `money.fraction.digits`, `unavailable.value.placeholder`), what a
//! value that cannot be converted becomes (`event.converting.failure.handling.mode`,
//! `include.unknown.datatypes`), and `schema.refresh.mode`.
//!
//! The types are plain data: the source side ([`crate::pg`]) reads them when it converts
//! values.

use super::checker::Checker;
use super::keys::{
    BINARY_HANDLING_MODE, DECIMAL_HANDLING_MODE, EVENT_CONVERTING_FAILURE_HANDLING_MODE,
    EVENT_PROCESSING_FAILURE_HANDLING_MODE, HSTORE_HANDLING_MODE, INCLUDE_UNKNOWN_DATATYPES,
    INTERVAL_HANDLING_MODE, MONEY_FRACTION_DIGITS, SCHEMA_REFRESH_MODE, TIME_PRECISION_MODE,
    UNAVAILABLE_VALUE_PLACEHOLDER,
};

/// Debezium's default `unavailable.value.placeholder`.
const DEFAULT_PLACEHOLDER: &str = "__debezium_unavailable_value";

/// `decimal.handling.mode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DecimalMode {
    /// `precise`: Connect `Decimal` (constrained) or `VariableScaleDecimal` (unconstrained).
    Precise,
    /// `double`: FLOAT64.
    Double,
    /// `string`: plain decimal text.
    String,
}

/// `time.precision.mode` (the modes this build implements).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimePrecisionMode {
    /// `adaptive`: precision ≤ 3 in milliseconds, otherwise microseconds.
    Adaptive,
    /// `adaptive_time_microseconds`: like adaptive, but `time` always in microseconds.
    AdaptiveTimeMicroseconds,
    /// `connect`: Kafka Connect's Date, Time (ms) and Timestamp (ms).
    Connect,
    /// `microseconds`: MicroTime and MicroTimestamp at every precision.
    Microseconds,
    /// `nanoseconds`: NanoTime and NanoTimestamp (ns).
    Nanoseconds,
    /// `isostring`: IsoDate, IsoTime and IsoTimestamp strings.
    IsoString,
}

/// `binary.handling.mode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BinaryMode {
    /// `bytes`: BYTES (base64 in JSON).
    Bytes,
    /// `base64`: standard base64 string.
    Base64,
    /// `base64-url-safe`: URL-safe base64 string.
    Base64UrlSafe,
    /// `hex`: lowercase hex string.
    Hex,
}

/// The value-representation settings of a connector.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ValueOptions {
    /// `decimal.handling.mode`.
    pub decimal: DecimalMode,
    /// `time.precision.mode`.
    pub time: TimePrecisionMode,
    /// `binary.handling.mode`.
    pub binary: BinaryMode,
    /// `unavailable.value.placeholder`, already decoded (a `hex:` prefix is hex-decoded).
    pub placeholder: Vec<u8>,
    /// `interval.handling.mode`.
    pub interval: IntervalMode,
    /// `money.fraction.digits`: the scale of MONEY in precise mode.
    pub money_fraction_digits: u32,
    /// `hstore.handling.mode`.
    pub hstore: HstoreMode,
}

/// `hstore.handling.mode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HstoreMode {
    /// `json`: `io.debezium.data.Json` text of an object (keys in `java.util.HashMap` order).
    Json,
    /// `map`: a Connect map of string keys to optional string values.
    Map,
}

/// `interval.handling.mode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IntervalMode {
    /// `numeric`: INT64 `io.debezium.time.MicroDuration` (approximate µs).
    Numeric,
    /// `string`: `io.debezium.time.Interval`, ISO-8601 `P..Y..M..DT..H..M..S`.
    String,
}

impl Default for ValueOptions {
    fn default() -> Self {
        ValueOptions {
            decimal: DecimalMode::Precise,
            time: TimePrecisionMode::Adaptive,
            binary: BinaryMode::Bytes,
            placeholder: DEFAULT_PLACEHOLDER.as_bytes().to_vec(),
            hstore: HstoreMode::Json,
            interval: IntervalMode::Numeric,
            money_fraction_digits: 2,
        }
    }
}

/// `event.converting.failure.handling.mode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConvertingFailureMode {
    /// Stop with an error naming the relation, column and type.
    Fail,
    /// Log a warning naming the relation, column and type, and emit null (Debezium's default),
    /// when set explicitly.
    Warn,
    /// The key is not set: as [`ConvertingFailureMode::Warn`], except that a `numeric` NaN or
    /// ±Infinity in `decimal.handling.mode=precise` (which a Decimal cannot hold) stops the
    /// connector naming the column and the fix, instead of becoming null.
    Default,
}

/// The settings of this area.
pub(super) struct Values {
    pub(super) options: ValueOptions,
    pub(super) converting_failure: ConvertingFailureMode,
    pub(super) include_unknown_datatypes: bool,
    pub(super) processing_failure_skips: bool,
}

/// Reads the value-representation settings.
pub(super) fn parse(c: &mut Checker<'_>) -> Values {
    let options = ValueOptions {
        time: c.choice(
            TIME_PRECISION_MODE,
            TimePrecisionMode::Adaptive,
            &[
                ("adaptive", TimePrecisionMode::Adaptive),
                (
                    "adaptive_time_microseconds",
                    TimePrecisionMode::AdaptiveTimeMicroseconds,
                ),
                ("connect", TimePrecisionMode::Connect),
                ("microseconds", TimePrecisionMode::Microseconds),
                ("nanoseconds", TimePrecisionMode::Nanoseconds),
                ("isostring", TimePrecisionMode::IsoString),
            ],
        ),
        placeholder: placeholder(c),
        decimal: c.choice(
            DECIMAL_HANDLING_MODE,
            DecimalMode::Precise,
            &[
                ("precise", DecimalMode::Precise),
                ("double", DecimalMode::Double),
                ("string", DecimalMode::String),
            ],
        ),
        binary: c.choice(
            BINARY_HANDLING_MODE,
            BinaryMode::Bytes,
            &[
                ("bytes", BinaryMode::Bytes),
                ("base64", BinaryMode::Base64),
                ("base64-url-safe", BinaryMode::Base64UrlSafe),
                ("hex", BinaryMode::Hex),
            ],
        ),
        interval: c.choice(
            INTERVAL_HANDLING_MODE,
            IntervalMode::Numeric,
            &[
                ("numeric", IntervalMode::Numeric),
                ("string", IntervalMode::String),
            ],
        ),
        money_fraction_digits: c.int(MONEY_FRACTION_DIGITS, 2u32, 0u32),
        hstore: c.choice(
            HSTORE_HANDLING_MODE,
            HstoreMode::Json,
            &[("json", HstoreMode::Json), ("map", HstoreMode::Map)],
        ),
    };
    // With pgoutput every schema change arrives as a Relation message, so both refresh modes
    // give the same records; the value is still checked.
    c.choice(
        SCHEMA_REFRESH_MODE,
        (),
        &[
            ("columns_diff", ()),
            ("columns_diff_exclude_unchanged_toast", ()),
        ],
    );
    Values {
        options,
        converting_failure: c.choice(
            EVENT_CONVERTING_FAILURE_HANDLING_MODE,
            ConvertingFailureMode::Default,
            &[
                ("fail", ConvertingFailureMode::Fail),
                ("warn", ConvertingFailureMode::Warn),
            ],
        ),
        include_unknown_datatypes: c.boolean(INCLUDE_UNKNOWN_DATATYPES, false),
        processing_failure_skips: c.choice(
            EVENT_PROCESSING_FAILURE_HANDLING_MODE,
            false,
            &[
                ("fail", false),
                ("warn", true),
                ("skip", true),
                ("ignore", true),
            ],
        ),
    }
}

/// `unavailable.value.placeholder`: text, or bytes after a `hex:` prefix.
fn placeholder(c: &mut Checker<'_>) -> Vec<u8> {
    let text = c.string(UNAVAILABLE_VALUE_PLACEHOLDER, DEFAULT_PLACEHOLDER);
    match text.strip_prefix("hex:") {
        Some(hex) => crate::util::decode_hex(hex).unwrap_or_else(|| {
            c.problem(format!(
                "{UNAVAILABLE_VALUE_PLACEHOLDER}={text} is invalid: after 'hex:' give an even number of hexadecimal digits"));
            Vec::new()
        }),
        None => text.into_bytes(),
    }
}
