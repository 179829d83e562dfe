//! Rows of `pg_type` as the relation cache reads them
//! ([`crate::pg::relation::read_pg_types`]): for the types that are not built-in types mapped
//! by OID (extension types such as citext, ltree and isbn, enums, domains and arrays of those),
//! and, for the source-type column features, for built-in types too.
//! [`super::ColumnType::resolve`] maps a column through them, and [`crate::pg::columns`] takes
//! a column's type name, length and scale from them.

/// What the catalog says about a type that is not one of the built-in types mapped by OID:
/// extension types (citext, ltree, isbn, ...), enums, domains and arrays of those.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TypeInfo {
    /// `typname`.
    pub name: String,
    /// `typtype`: `b` base, `d` domain, `e` enum, `c` composite, `r` range, `p` pseudo.
    pub typtype: u8,
    /// `typcategory` (`A` for arrays).
    pub category: u8,
    /// `typbasetype` of a domain (0 otherwise).
    pub base_oid: u32,
    /// `typtypmod` of a domain (its declared length/scale), -1 when none.
    pub base_typmod: i32,
    /// `typelem` of an array type (0 otherwise).
    pub elem_oid: u32,
    /// Enum labels in `enumsortorder`.
    pub enum_labels: Vec<String>,
}

/// Type information by OID, as read from `pg_type`.
pub type TypeCatalog = std::collections::HashMap<u32, TypeInfo>;
