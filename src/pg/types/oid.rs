//! The table of built-in type OIDs (from PostgreSQL's `pg_type.dat`) that the crate refers to
//! by number: [`super::ColumnType::from_oid`] maps them, and [`crate::pg::columns`] derives
//! the JDBC driver's length and scale from them.
//!
//! Built-in OIDs are fixed across PostgreSQL versions. This is the only table of them: add a
//! missing one here rather than writing its number elsewhere.

#![allow(missing_docs)]

pub const BOOL: u32 = 16;
pub const BYTEA: u32 = 17;
pub const CHAR: u32 = 18;
pub const NAME: u32 = 19;
pub const INT8: u32 = 20;
pub const INT2: u32 = 21;
pub const INT4: u32 = 23;
pub const TEXT: u32 = 25;
pub const OID: u32 = 26;
pub const JSON: u32 = 114;
pub const XML: u32 = 142;
pub const JSON_ARRAY: u32 = 199;
pub const POINT: u32 = 600;
pub const TSVECTOR: u32 = 3614;
pub const LSEG: u32 = 601;
pub const PATH: u32 = 602;
pub const BOX: u32 = 603;
pub const POLYGON: u32 = 604;
pub const LINE: u32 = 628;
pub const CIRCLE: u32 = 718;
pub const CIDR: u32 = 650;
pub const CIDR_ARRAY: u32 = 651;
pub const FLOAT4: u32 = 700;
pub const FLOAT8: u32 = 701;
pub const MACADDR8: u32 = 774;
pub const MACADDR8_ARRAY: u32 = 775;
pub const MONEY: u32 = 790;
pub const MACADDR: u32 = 829;
pub const INET: u32 = 869;
pub const BOOL_ARRAY: u32 = 1000;
pub const BYTEA_ARRAY: u32 = 1001;
pub const INT2_ARRAY: u32 = 1005;
pub const INT4_ARRAY: u32 = 1007;
pub const TEXT_ARRAY: u32 = 1009;
pub const BPCHAR_ARRAY: u32 = 1014;
pub const VARCHAR_ARRAY: u32 = 1015;
pub const INT8_ARRAY: u32 = 1016;
pub const FLOAT4_ARRAY: u32 = 1021;
pub const FLOAT8_ARRAY: u32 = 1022;
pub const OID_ARRAY: u32 = 1028;
pub const MACADDR_ARRAY: u32 = 1040;
pub const INET_ARRAY: u32 = 1041;
pub const BPCHAR: u32 = 1042;
pub const VARCHAR: u32 = 1043;
pub const DATE: u32 = 1082;
pub const TIME: u32 = 1083;
pub const TIMESTAMP: u32 = 1114;
pub const TIMESTAMP_ARRAY: u32 = 1115;
pub const DATE_ARRAY: u32 = 1182;
pub const TIME_ARRAY: u32 = 1183;
pub const TIMESTAMPTZ: u32 = 1184;
pub const TIMESTAMPTZ_ARRAY: u32 = 1185;
pub const INTERVAL: u32 = 1186;
pub const NUMERIC_ARRAY: u32 = 1231;
pub const TIMETZ: u32 = 1266;
pub const TIMETZ_ARRAY: u32 = 1270;
pub const BIT: u32 = 1560;
pub const VARBIT: u32 = 1562;
pub const NUMERIC: u32 = 1700;
pub const UUID: u32 = 2950;
pub const UUID_ARRAY: u32 = 2951;
pub const JSONB: u32 = 3802;
pub const JSONB_ARRAY: u32 = 3807;
pub const INT4RANGE: u32 = 3904;
pub const INT4RANGE_ARRAY: u32 = 3905;
pub const NUMRANGE: u32 = 3906;
pub const NUMRANGE_ARRAY: u32 = 3907;
pub const TSRANGE: u32 = 3908;
pub const TSRANGE_ARRAY: u32 = 3909;
pub const TSTZRANGE: u32 = 3910;
pub const TSTZRANGE_ARRAY: u32 = 3911;
pub const DATERANGE: u32 = 3912;
pub const DATERANGE_ARRAY: u32 = 3913;
pub const INT8RANGE: u32 = 3926;
pub const INT8RANGE_ARRAY: u32 = 3927;
