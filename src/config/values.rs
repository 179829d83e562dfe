//! Value-representation settings: how column values are written (`decimal.handling.mode`,
//! `time.precision.mode`, `binary.handling.mode`, `interval.handling.mode`,
//! `hstore.handling.mode`, `money.fraction.digits`, `unavailable.value.placeholder`).
//!
//! Plain data: the source side ([`crate::pg`]) reads these when it converts values.

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
            placeholder: b"__debezium_unavailable_value".to_vec(),
            hstore: HstoreMode::Json,
            interval: IntervalMode::Numeric,
            money_fraction_digits: 2,
        }
    }
}
