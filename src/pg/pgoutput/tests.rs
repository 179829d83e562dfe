//! Tests of the pgoutput decoder against real messages captured from PostgreSQL 15 by
//! `scripts/capture-pgoutput.sh` (see the header of that script for the workload), plus
//! truncation, corruption and garbage inputs.
//!
//! The fixture holds OIDs, LSNs, xids and timestamps of one capture: the tests take relation
//! and type OIDs from the Relation/Type messages of the stream and check LSNs and times by
//! their relations, so that re-running the capture script keeps them green.

use super::*;

use super::fixture::{decoded, frames};

/// Built-in type OIDs (stable across PostgreSQL versions).
const INT4: u32 = 23;
const TEXT: u32 = 25;
const NUMERIC: u32 = 1700;
const BYTEA: u32 = 17;
const JSONB: u32 = 3802;
const INT4_ARRAY: u32 = 1007;
const TEXT_ARRAY: u32 = 1009;
const VARCHAR: u32 = 1043;
/// First OID assigned to user objects.
const FIRST_NORMAL_OBJECT_ID: u32 = 16384;

fn messages() -> Vec<Message> {
    decoded().into_iter().map(|(_, m)| m).collect()
}

fn relation<'a>(msgs: &'a [Message], name: &str) -> &'a Relation {
    msgs.iter()
        .find_map(|m| match m {
            Message::Relation(r) if r.name == name => Some(r),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no Relation message for {name}"))
}

fn enum_type_oid(msgs: &[Message]) -> u32 {
    msgs.iter()
        .find_map(|m| match m {
            Message::Type { id, name, .. } if name == "mood" => Some(*id),
            _ => None,
        })
        .expect("no Type message for mood")
}

fn inserts_into(msgs: &[Message], rel: u32) -> Vec<Tuple> {
    msgs.iter()
        .filter_map(|m| match m {
            Message::Insert { relation_id, new } if *relation_id == rel => Some(new.clone()),
            _ => None,
        })
        .collect()
}

fn updates_of(msgs: &[Message], rel: u32) -> Vec<(Option<OldTuple>, Tuple)> {
    msgs.iter()
        .filter_map(|m| match m {
            Message::Update {
                relation_id,
                old,
                new,
            } if *relation_id == rel => Some((old.clone(), new.clone())),
            _ => None,
        })
        .collect()
}

fn deletes_from(msgs: &[Message], rel: u32) -> Vec<OldTuple> {
    msgs.iter()
        .filter_map(|m| match m {
            Message::Delete { relation_id, old } if *relation_id == rel => Some(old.clone()),
            _ => None,
        })
        .collect()
}

fn t(s: &str) -> TupleValue {
    TupleValue::Text(Bytes::copy_from_slice(s.as_bytes()))
}

fn col(is_key: bool, name: &str, type_oid: u32, type_modifier: i32) -> RelationColumn {
    RelationColumn {
        is_key,
        name: name.to_string(),
        type_oid,
        type_modifier,
    }
}

/// `kinds` row 1 as inserted, with `txt` given.
fn kinds_row_1(txt: &str) -> Tuple {
    vec![
        t("1"),
        t(txt),
        t("12.50"),
        TupleValue::Null,
        t("\\x00ff10"),
        t(r#"{"a": 1, "b": [true, null]}"#),
        t("{1,2,3}"),
        t(r#"{"x y",z}"#),
        t("ABC-1"),
        t("happy"),
    ]
}

/// `kinds` row 2 as inserted, with `id` given.
fn kinds_row_2(id: &str) -> Tuple {
    vec![
        t(id),
        t("two"),
        t("-0.01"),
        t("7"),
        t("\\x"),
        t("[]"),
        t("{}"),
        t("{NULL}"),
        t(""),
        t("sad"),
    ]
}

/// A key-only old tuple of `kinds`: the id, and Null for the nine other columns.
fn kinds_key(id: &str) -> Tuple {
    let mut v = vec![t(id)];
    v.resize(10, TupleValue::Null);
    v
}

// ---------------------------------------------------------------------------------------------
// The captured stream, message by message
// ---------------------------------------------------------------------------------------------

#[test]
fn the_captured_stream_holds_the_workload_messages_in_order() {
    let kinds: Vec<&str> = messages().iter().map(Message::kind_name).collect();
    #[rustfmt::skip]
    let expected = [
        // 1. inserts into kinds and full_rows
        "BEGIN", "TYPE", "RELATION", "INSERT", "INSERT", "INSERT", "RELATION", "INSERT", "COMMIT",
        // 2. update, default identity; 3. primary key change; 4. identity full
        "BEGIN", "UPDATE", "COMMIT",
        "BEGIN", "UPDATE", "COMMIT",
        "BEGIN", "UPDATE", "COMMIT",
        // 5. update leaving a TOASTed value unchanged
        "BEGIN", "RELATION", "UPDATE", "COMMIT",
        // 6. delete, default identity; 7. delete, identity full
        "BEGIN", "DELETE", "COMMIT",
        "BEGIN", "DELETE", "COMMIT",
        // 8. truncate of two tables
        "BEGIN", "RELATION", "RELATION", "TRUNCATE", "COMMIT",
        // 9. transactional message; 10. non-transactional message
        "BEGIN", "MESSAGE", "COMMIT",
        "MESSAGE",
        // 11. insert from a session with a replication origin
        "BEGIN", "ORIGIN", "INSERT", "COMMIT",
    ];
    assert_eq!(kinds, expected);
}

#[test]
fn begin_is_decoded_with_its_final_lsn_commit_time_and_xid() {
    let (frame, msg) = decoded().into_iter().next().unwrap();
    assert_eq!(frame.bytes.len(), 21, "B + 8 + 8 + 4");
    let Message::Begin {
        final_lsn,
        commit_time,
        xid,
    } = msg
    else {
        panic!("{msg:?}")
    };
    assert_eq!(
        final_lsn,
        Lsn(u64::from_be_bytes(frame.bytes[1..9].try_into().unwrap()))
    );
    assert_eq!(
        commit_time,
        i64::from_be_bytes(frame.bytes[9..17].try_into().unwrap())
    );
    assert_eq!(
        xid,
        u32::from_be_bytes(frame.bytes[17..21].try_into().unwrap())
    );
    assert!(xid >= 3, "normal xids start at 3, got {xid}");
    assert!(
        final_lsn >= frame.lsn,
        "the commit record follows the first record of the transaction"
    );
}

#[test]
fn every_transaction_is_a_begin_and_commit_pair_with_matching_lsn_and_time() {
    let d = decoded();
    let mut open: Option<(Lsn, i64, u32)> = None;
    let mut transactions = 0;
    for (frame, msg) in &d {
        match msg {
            Message::Begin {
                final_lsn,
                commit_time,
                xid,
            } => {
                assert!(
                    open.is_none(),
                    "line {}: Begin inside a transaction",
                    frame.line
                );
                open = Some((*final_lsn, *commit_time, *xid));
            }
            Message::Commit {
                flags,
                commit_lsn,
                end_lsn,
                commit_time,
            } => {
                let (final_lsn, begin_time, _) = open
                    .take()
                    .unwrap_or_else(|| panic!("line {}: Commit without Begin", frame.line));
                assert_eq!(*flags, 0);
                assert_eq!(
                    *commit_lsn, final_lsn,
                    "line {}: Begin.final_lsn is the commit LSN",
                    frame.line
                );
                assert_eq!(*commit_time, begin_time, "line {}", frame.line);
                assert!(
                    end_lsn > commit_lsn,
                    "line {}: end_lsn {end_lsn} <= commit_lsn {commit_lsn}",
                    frame.line
                );
                assert_eq!(
                    *end_lsn, frame.lsn,
                    "line {}: the peek reports a commit at its end LSN",
                    frame.line
                );
                transactions += 1;
            }
            Message::LogicalMessage {
                transactional: false,
                ..
            } => {
                assert!(
                    open.is_none(),
                    "line {}: non-transactional message inside a transaction",
                    frame.line
                );
            }
            other => {
                assert!(
                    open.is_some(),
                    "line {}: {} outside a transaction",
                    frame.line,
                    other.kind_name()
                );
            }
        }
    }
    assert!(open.is_none(), "the last transaction is not committed");
    assert_eq!(transactions, 10);
}

#[test]
fn transaction_ids_and_commit_lsns_increase_from_one_transaction_to_the_next() {
    // Protocol version 1 carries the xid on Begin only: each change belongs to the Begin that
    // precedes it. (The capture script checks that the peek's xid column of every row between
    // a Begin and its Commit equals that Begin's xid.)
    let begins: Vec<(u32, Lsn, i64)> = messages()
        .iter()
        .filter_map(|m| match m {
            Message::Begin {
                final_lsn,
                commit_time,
                xid,
            } => Some((*xid, *final_lsn, *commit_time)),
            _ => None,
        })
        .collect();
    assert_eq!(begins.len(), 10);
    for w in begins.windows(2) {
        assert!(w[1].0 > w[0].0, "xid {} then {}", w[0].0, w[1].0);
        assert!(w[1].1 > w[0].1, "commit LSN {} then {}", w[0].1, w[1].1);
        assert!(w[1].2 >= w[0].2, "commit time went back");
    }
}

#[test]
fn commit_times_are_microseconds_since_the_postgres_epoch() {
    for m in messages() {
        if let Message::Commit { commit_time, .. } | Message::Begin { commit_time, .. } = m {
            let unix_secs = (commit_time + crate::pg::PG_EPOCH_OFFSET_MICROS) / 1_000_000;
            // 2020-01-01 .. 2100-01-01
            assert!(
                (1_577_836_800..4_102_444_800).contains(&unix_secs),
                "{commit_time}"
            );
        }
    }
}

#[test]
fn type_message_announces_the_enum_before_the_relation_that_uses_it() {
    let msgs = messages();
    let ty = msgs
        .iter()
        .position(|m| matches!(m, Message::Type { .. }))
        .unwrap();
    let Message::Type {
        id,
        namespace,
        name,
    } = &msgs[ty]
    else {
        unreachable!()
    };
    assert_eq!((namespace.as_str(), name.as_str()), ("public", "mood"));
    assert!(*id >= FIRST_NORMAL_OBJECT_ID, "user type OID {id}");
    let Message::Relation(r) = &msgs[ty + 1] else {
        panic!("{:?}", msgs[ty + 1])
    };
    assert_eq!(r.name, "kinds");
    assert_eq!(r.columns.last().unwrap().type_oid, *id);
    assert_eq!(
        msgs.iter()
            .filter(|m| matches!(m, Message::Type { .. }))
            .count(),
        1
    );
}

#[test]
fn relation_message_lists_columns_with_type_oids_typmods_and_key_flags() {
    let msgs = messages();
    let mood = enum_type_oid(&msgs);
    let r = relation(&msgs, "kinds");
    assert!(r.id >= FIRST_NORMAL_OBJECT_ID);
    assert_eq!(r.namespace, "public");
    assert_eq!(r.replica_identity, b'd');
    assert_eq!(
        r.columns,
        vec![
            col(true, "id", INT4, -1),
            col(false, "txt", TEXT, -1),
            col(false, "amount", NUMERIC, (10 << 16 | 2) + 4), // numeric(10,2)
            col(false, "maybe", INT4, -1),
            col(false, "blob", BYTEA, -1),
            col(false, "doc", JSONB, -1),
            col(false, "ints", INT4_ARRAY, -1),
            col(false, "tags", TEXT_ARRAY, -1),
            col(false, "code", VARCHAR, 20 + 4), // varchar(20)
            col(false, "feel", mood, -1),
        ]
    );
}

#[test]
fn relation_under_replica_identity_full_marks_every_column_as_key() {
    let msgs = messages();
    let r = relation(&msgs, "full_rows");
    assert_eq!(r.replica_identity, b'f');
    assert_eq!(
        r.columns,
        vec![
            col(true, "id", INT4, -1),
            col(true, "label", TEXT, -1),
            col(true, "qty", INT4, -1)
        ]
    );
}

#[test]
fn relations_get_distinct_ids_and_the_default_identity_keys_only_the_primary_key() {
    let msgs = messages();
    let docs = relation(&msgs, "docs");
    assert_eq!(docs.replica_identity, b'd');
    assert_eq!(
        docs.columns,
        vec![
            col(true, "id", INT4, -1),
            col(false, "body", TEXT, -1),
            col(false, "note", TEXT, -1)
        ]
    );
    let parent = relation(&msgs, "parent");
    assert_eq!(
        parent.columns,
        vec![col(true, "id", INT4, -1), col(false, "name", TEXT, -1)]
    );
    let child = relation(&msgs, "child");
    assert_eq!(
        child.columns,
        vec![col(true, "id", INT4, -1), col(false, "parent_id", INT4, -1)]
    );
    let mut ids: Vec<u32> = ["kinds", "full_rows", "docs", "parent", "child"]
        .iter()
        .map(|n| relation(&msgs, n).id)
        .collect();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), 5);
}

#[test]
fn every_change_refers_to_a_relation_sent_earlier_in_the_stream() {
    let mut known = std::collections::HashMap::new();
    for (frame, msg) in decoded() {
        let (ids, width): (Vec<u32>, Option<usize>) = match &msg {
            Message::Relation(r) => {
                known.insert(r.id, r.columns.len());
                continue;
            }
            Message::Insert { relation_id, new } => (vec![*relation_id], Some(new.len())),
            Message::Update {
                relation_id,
                new,
                old,
            } => {
                if let Some(OldTuple::Key(o) | OldTuple::Full(o)) = old {
                    assert_eq!(o.len(), new.len(), "line {}", frame.line);
                }
                (vec![*relation_id], Some(new.len()))
            }
            Message::Delete {
                relation_id,
                old: OldTuple::Key(o) | OldTuple::Full(o),
            } => (vec![*relation_id], Some(o.len())),
            Message::Truncate { relation_ids, .. } => (relation_ids.clone(), None),
            _ => continue,
        };
        for id in ids {
            let n = known
                .get(&id)
                .unwrap_or_else(|| panic!("line {}: relation {id} not announced", frame.line));
            if let Some(w) = width {
                assert_eq!(
                    w, *n,
                    "line {}: tuple width vs Relation columns",
                    frame.line
                );
            }
        }
    }
}

#[test]
fn insert_carries_the_text_form_of_every_column_type() {
    let msgs = messages();
    let kinds = relation(&msgs, "kinds").id;
    let rows = inserts_into(&msgs, kinds);
    assert_eq!(rows[0], kinds_row_1("hello"));
}

#[test]
fn insert_keeps_empty_text_and_empty_bytea_distinct_from_null() {
    let msgs = messages();
    let rows = inserts_into(&msgs, relation(&msgs, "kinds").id);
    assert_eq!(rows[1], kinds_row_2("2"));
    assert_eq!(rows[1][8], TupleValue::Text(Bytes::new()));
}

#[test]
fn insert_sends_sql_nulls_as_null_values() {
    let msgs = messages();
    let rows = inserts_into(&msgs, relation(&msgs, "kinds").id);
    assert_eq!(rows[2], kinds_key("3"));
    assert_eq!(rows.len(), 4);
    let full = relation(&msgs, "full_rows").id;
    assert_eq!(
        inserts_into(&msgs, full),
        vec![vec![t("1"), t("widget"), t("5")]]
    );
}

#[test]
fn update_under_default_replica_identity_has_no_old_tuple() {
    let msgs = messages();
    let updates = updates_of(&msgs, relation(&msgs, "kinds").id);
    assert_eq!(updates[0], (None, kinds_row_1("changed")));
}

#[test]
fn update_with_changed_primary_key_carries_the_old_key_tuple() {
    let msgs = messages();
    let updates = updates_of(&msgs, relation(&msgs, "kinds").id);
    assert_eq!(updates.len(), 2);
    assert_eq!(
        updates[1],
        (Some(OldTuple::Key(kinds_key("2"))), kinds_row_2("20"))
    );
}

#[test]
fn update_under_replica_identity_full_carries_the_whole_old_row() {
    let msgs = messages();
    let updates = updates_of(&msgs, relation(&msgs, "full_rows").id);
    assert_eq!(
        updates,
        vec![(
            Some(OldTuple::Full(vec![t("1"), t("widget"), t("5")])),
            vec![t("1"), t("widget"), t("6")]
        )]
    );
}

#[test]
fn update_leaving_a_toasted_column_unchanged_sends_it_as_unchanged_toast() {
    let msgs = messages();
    let updates = updates_of(&msgs, relation(&msgs, "docs").id);
    assert_eq!(
        updates,
        vec![(None, vec![t("1"), TupleValue::UnchangedToast, t("edited")])]
    );
}

#[test]
fn delete_under_default_replica_identity_carries_the_key_only() {
    let msgs = messages();
    let deletes = deletes_from(&msgs, relation(&msgs, "kinds").id);
    assert_eq!(deletes, vec![OldTuple::Key(kinds_key("3"))]);
}

#[test]
fn delete_under_replica_identity_full_carries_the_whole_old_row() {
    let msgs = messages();
    let deletes = deletes_from(&msgs, relation(&msgs, "full_rows").id);
    assert_eq!(
        deletes,
        vec![OldTuple::Full(vec![t("1"), t("widget"), t("6")])]
    );
}

#[test]
fn truncate_of_two_tables_lists_both_relations_with_cascade_and_restart_identity_bits() {
    let msgs = messages();
    let parent = relation(&msgs, "parent").id;
    let child = relation(&msgs, "child").id;
    let truncates: Vec<&Message> = msgs
        .iter()
        .filter(|m| matches!(m, Message::Truncate { .. }))
        .collect();
    assert_eq!(
        truncates,
        vec![&Message::Truncate {
            options: 1 | 2,
            relation_ids: vec![parent, child]
        }]
    );
}

#[test]
fn transactional_logical_message_is_decoded_inside_its_transaction() {
    let d = decoded();
    let i = d
        .iter()
        .position(|(_, m)| {
            matches!(
                m,
                Message::LogicalMessage {
                    transactional: true,
                    ..
                }
            )
        })
        .unwrap();
    let (frame, msg) = &d[i];
    assert_eq!(
        *msg,
        Message::LogicalMessage {
            transactional: true,
            lsn: frame.lsn,
            prefix: "pgcdc.test".into(),
            content: Bytes::from_static(b"inside a transaction"),
        }
    );
    assert!(matches!(d[i - 1].1, Message::Begin { .. }));
    // A logical message's LSN is the end of its WAL record: here, where the commit record
    // starts.
    let Message::Commit { commit_lsn, .. } = d[i + 1].1 else {
        panic!("{:?}", d[i + 1].1)
    };
    assert!(commit_lsn >= frame.lsn);
}

#[test]
fn non_transactional_logical_message_stands_alone_with_binary_content() {
    let d = decoded();
    let i = d
        .iter()
        .position(|(_, m)| {
            matches!(
                m,
                Message::LogicalMessage {
                    transactional: false,
                    ..
                }
            )
        })
        .unwrap();
    let (frame, msg) = &d[i];
    assert_eq!(
        *msg,
        Message::LogicalMessage {
            transactional: false,
            lsn: frame.lsn,
            prefix: "pgcdc.raw".into(),
            content: Bytes::from_static(&[0x00, 0xff, 0x7f, 0x80]),
        }
    );
    assert!(matches!(d[i - 1].1, Message::Commit { .. }));
    assert!(matches!(d[i + 1].1, Message::Begin { .. }));
}

#[test]
fn origin_message_follows_begin_and_names_the_replication_origin() {
    let msgs = messages();
    let i = msgs
        .iter()
        .position(|m| matches!(m, Message::Origin { .. }))
        .unwrap();
    assert_eq!(
        msgs[i],
        Message::Origin {
            commit_lsn: Lsn(0x5A5_A5A5),
            name: "pgcdc_capture_origin".into()
        }
    );
    assert!(matches!(msgs[i - 1], Message::Begin { .. }));
    let kinds = relation(&msgs, "kinds").id;
    let mut row = vec![t("4"), t("from origin")];
    row.resize(10, TupleValue::Null);
    assert_eq!(
        msgs[i + 1],
        Message::Insert {
            relation_id: kinds,
            new: row
        }
    );
}

#[test]
fn column_values_are_slices_of_the_input_buffer() {
    let (frame, msg) = decoded()
        .into_iter()
        .find(|(_, m)| matches!(m, Message::Insert { .. }))
        .unwrap();
    let Message::Insert { new, .. } = msg else {
        unreachable!()
    };
    let base = frame.bytes.as_ptr() as usize..frame.bytes.as_ptr() as usize + frame.bytes.len();
    for v in new {
        if let TupleValue::Text(b) = v {
            assert!(
                b.is_empty() || base.contains(&(b.as_ptr() as usize)),
                "value was copied"
            );
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Truncated, extended and corrupted frames
// ---------------------------------------------------------------------------------------------

#[test]
fn every_strict_prefix_of_a_captured_frame_is_incomplete() {
    let mut failures = Vec::new();
    let mut checked = 0;
    for f in frames() {
        for n in 0..f.bytes.len() {
            let prefix = f.bytes.slice(..n);
            let got = std::panic::catch_unwind(|| decode(&prefix));
            checked += 1;
            match got {
                Ok(Err(DecodeError::Incomplete {
                    tag,
                    offset,
                    needed,
                })) => {
                    // The decoder reports where the failing read started, and the missing
                    // byte count never goes past the end of the full frame.
                    let ok = offset <= n
                        && needed >= 1
                        && n + needed <= f.bytes.len()
                        && (n == 0 || tag == f.bytes[0] as char);
                    if !ok {
                        failures.push(format!(
                            "line {} prefix {n}/{}: Incomplete {{ tag: {tag:?}, offset: {offset}, needed: {needed} }}",
                            f.line,
                            f.bytes.len()
                        ));
                    }
                }
                Ok(other) => failures.push(format!(
                    "line {} prefix {n}/{}: {other:?} (input {:02x?})",
                    f.line,
                    f.bytes.len(),
                    &prefix[..]
                )),
                Err(_) => failures.push(format!("line {} prefix {n}: panic", f.line)),
            }
        }
    }
    assert!(checked > 1000, "only {checked} prefixes");
    assert!(
        failures.is_empty(),
        "{} failure(s):\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn a_captured_frame_with_one_trailing_byte_is_malformed() {
    for f in frames() {
        for extra in [0x00u8, b'N', 0xff] {
            let mut v = f.bytes.to_vec();
            v.push(extra);
            match decode(&Bytes::from(v)) {
                Err(DecodeError::Malformed { tag, reason }) => {
                    assert_eq!(tag, f.bytes[0] as char);
                    assert!(reason.contains("trailing"), "line {}: {reason}", f.line);
                }
                other => panic!("line {} + {extra:#04x}: {other:?}", f.line),
            }
        }
    }
}

#[test]
fn empty_input_is_incomplete() {
    assert_eq!(
        decode(&Bytes::new()),
        Err(DecodeError::Incomplete {
            tag: '?',
            offset: 0,
            needed: 1
        })
    );
}

#[test]
fn unknown_message_tags_are_malformed() {
    let known = b"BCORYIUDTM";
    for tag in 0..=255u8 {
        if known.contains(&tag) {
            continue;
        }
        for len in [1usize, 2, 21, 64] {
            let mut v = vec![0u8; len];
            v[0] = tag;
            match decode(&Bytes::from(v)) {
                Err(DecodeError::Malformed { tag: got, .. }) => assert_eq!(got, tag as char),
                other => panic!("tag {tag:#04x} len {len}: {other:?}"),
            }
        }
    }
}

#[test]
fn protocol_version_2_streaming_and_two_phase_messages_are_malformed() {
    for tag in *b"SEcAbPKrp" {
        let e = decode(&Bytes::from(vec![tag, 0, 0, 0, 1])).unwrap_err();
        let DecodeError::Malformed { reason, .. } = e else {
            panic!("{tag}: {e:?}")
        };
        assert!(reason.contains("version 2"), "{reason}");
    }
}

/// The first captured frame of the given kind, as a mutable byte vector.
fn first_frame(kind: &str, pred: impl Fn(&Message) -> bool) -> Vec<u8> {
    decoded()
        .into_iter()
        .find(|(_, m)| m.kind_name() == kind && pred(m))
        .map(|(f, _)| f.bytes.to_vec())
        .unwrap_or_else(|| panic!("no {kind} frame"))
}

fn assert_malformed(v: Vec<u8>, what: &str) {
    match decode(&Bytes::from(v.clone())) {
        Err(DecodeError::Malformed { .. }) => {}
        other => panic!("{what}: {other:?} for {v:02x?}"),
    }
}

#[test]
fn bad_tuple_column_kinds_are_malformed() {
    // Insert of kinds row 3: I, relid(4), 'N', ncols(2), 't' len(4) "3", then nine 'n'.
    let insert = first_frame(
        "INSERT",
        |m| matches!(m, Message::Insert { new, .. } if new.len() == 10 && new[1] == TupleValue::Null),
    );
    assert_eq!(&insert[5..8], &[b'N', 0, 10]);
    let first_null = insert.iter().rposition(|&b| b != b'n').unwrap() + 1;
    for bad in [b'x', b'N', b'U', b'T', 0, 0xff] {
        let mut v = insert.clone();
        v[first_null] = bad;
        assert_malformed(v.clone(), "bad kind in the middle");
        let mut v = insert.clone();
        v[8] = bad; // kind of the first column
        assert_malformed(v, "bad kind of the first column");
    }
    // The same in the old key tuple of an Update and of a Delete.
    let update = first_frame("UPDATE", |m| {
        matches!(
            m,
            Message::Update {
                old: Some(OldTuple::Key(_)),
                ..
            }
        )
    });
    assert_eq!(update[5], b'K');
    let mut v = update.clone();
    v[8] = b'?';
    assert_malformed(v, "bad kind in the old key tuple");
    let delete = first_frame("DELETE", |_| true);
    let mut v = delete.clone();
    let last = v.len() - 1;
    v[last] = b'z';
    assert_malformed(v, "bad kind in a delete tuple");
}

#[test]
fn bad_tuple_markers_are_malformed() {
    let insert = first_frame("INSERT", |_| true);
    for bad in [b'K', b'O', b'n', 0] {
        let mut v = insert.clone();
        v[5] = bad;
        assert_malformed(v, "insert without 'N'");
    }
    let delete = first_frame("DELETE", |_| true);
    for bad in [b'N', b'k', 0] {
        let mut v = delete.clone();
        v[5] = bad;
        assert_malformed(v, "delete without 'K'/'O'");
    }
    // Update with an old tuple whose following marker is not 'N'.
    let update = first_frame("UPDATE", |m| {
        matches!(
            m,
            Message::Update {
                old: Some(OldTuple::Full(_)),
                ..
            }
        )
    });
    let n_at = 5 + 1 + 2 + (1 + 4 + 1) + (1 + 4 + 6) + (1 + 4 + 1);
    assert_eq!(update[n_at], b'N');
    for bad in [b'K', b'O', 0] {
        let mut v = update.clone();
        v[n_at] = bad;
        assert_malformed(v, "update with a bad second marker");
    }
    let mut v = update.clone();
    v[5] = b'X';
    assert_malformed(v, "update with a bad first marker");
}

#[test]
fn negative_lengths_are_malformed() {
    let insert = first_frame("INSERT", |_| true);
    let mut v = insert.clone();
    v[9..13].copy_from_slice(&(-1i32).to_be_bytes());
    assert_malformed(v, "negative column length");
    let msg = first_frame("MESSAGE", |_| true);
    let len_at = msg.len() - 20 - 4; // "inside a transaction" is 20 bytes
    assert_eq!(&msg[len_at..len_at + 4], &20i32.to_be_bytes());
    let mut v = msg.clone();
    v[len_at..len_at + 4].copy_from_slice(&i32::MIN.to_be_bytes());
    assert_malformed(v, "negative content length");
}

#[test]
fn names_that_are_not_utf8_are_malformed() {
    let origin = first_frame("ORIGIN", |_| true);
    let mut v = origin.clone();
    v[9] = 0xff;
    assert_malformed(v, "origin name");
    let rel = first_frame("RELATION", |_| true);
    let mut v = rel.clone();
    v[5] = 0xc3; // starts "public": a lone UTF-8 lead byte
    assert_malformed(v, "relation namespace");
}

#[test]
fn huge_counts_that_the_input_cannot_hold_are_incomplete_not_allocated() {
    // Truncate claiming u32::MAX relations, Relation claiming 65535 columns, Insert claiming
    // 65535 values: each is refused before allocating.
    let truncate = [b'T', 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0, 1];
    assert!(matches!(
        decode(&Bytes::copy_from_slice(&truncate)),
        Err(DecodeError::Incomplete { .. })
    ));
    let relation = [
        b'R', 0, 0, 0, 1, b'a', 0, b'b', 0, b'd', 0xff, 0xff, 1, b'c', 0,
    ];
    assert!(matches!(
        decode(&Bytes::copy_from_slice(&relation)),
        Err(DecodeError::Incomplete { .. })
    ));
    let insert = [b'I', 0, 0, 0, 1, b'N', 0xff, 0xff, b'n'];
    assert!(matches!(
        decode(&Bytes::copy_from_slice(&insert)),
        Err(DecodeError::Incomplete { .. })
    ));
    let text = [b'I', 0, 0, 0, 1, b'N', 0, 1, b't', 0x7f, 0xff, 0xff, 0xff];
    assert_eq!(
        decode(&Bytes::copy_from_slice(&text)),
        Err(DecodeError::Incomplete {
            tag: 'I',
            offset: 13,
            needed: i32::MAX as usize
        })
    );
}

// ---------------------------------------------------------------------------------------------
// Garbage
// ---------------------------------------------------------------------------------------------

/// xorshift64*: deterministic, no dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// Decodes `buf` and checks the result is consistent: no panic, and an `Ok` message's strict
/// prefixes are all Incomplete.
fn decode_checked(buf: &Bytes) -> Result<Message, DecodeError> {
    let res = std::panic::catch_unwind(|| decode(buf))
        .unwrap_or_else(|_| panic!("decode panicked on {:02x?}", &buf[..]));
    if res.is_ok() {
        for n in 0..buf.len() {
            let r = decode(&buf.slice(..n));
            assert!(
                matches!(r, Err(DecodeError::Incomplete { .. })),
                "prefix {n} of decodable {:02x?}: {r:?}",
                &buf[..]
            );
        }
    }
    res
}

#[test]
fn decoding_pseudo_random_garbage_never_panics() {
    let tags = b"BCORYIUDTMSEcAbPKrp";
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut ok = 0;
    for i in 0..10_000 {
        let len = rng.below(80);
        let mut v: Vec<u8> = (0..len).map(|_| rng.next() as u8).collect();
        if !v.is_empty() && i % 2 == 0 {
            v[0] = tags[rng.below(tags.len())];
        }
        // Bias towards the bytes the format cares about, so that more inputs get deep.
        for b in v.iter_mut().skip(1) {
            match rng.below(8) {
                0 => *b = 0,
                1 => *b = b"ntubNKO"[rng.below(7)],
                _ => {}
            }
        }
        if decode_checked(&Bytes::from(v)).is_ok() {
            ok += 1;
        }
    }
    assert!(
        ok > 0,
        "no garbage input decoded: the generator does not reach deep paths"
    );
}

#[test]
fn decoding_randomly_mutated_captured_frames_never_panics() {
    let frames = frames();
    let mut rng = Rng(0xdead_beef_cafe_f00d);
    let mut outcomes = [0usize; 3]; // ok, incomplete, malformed
    for _ in 0..10_000 {
        let f = &frames[rng.below(frames.len())];
        let mut v = f.bytes.to_vec();
        for _ in 0..1 + rng.below(3) {
            match rng.below(4) {
                0 if !v.is_empty() => {
                    let i = rng.below(v.len());
                    v[i] = rng.next() as u8;
                }
                1 if !v.is_empty() => {
                    let i = rng.below(v.len());
                    v[i] ^= 1 << rng.below(8);
                }
                2 => {
                    let i = rng.below(v.len() + 1);
                    v.insert(i, rng.next() as u8);
                }
                _ if !v.is_empty() => {
                    let i = rng.below(v.len());
                    v.remove(i);
                }
                _ => {}
            }
        }
        match decode_checked(&Bytes::from(v)) {
            Ok(_) => outcomes[0] += 1,
            Err(DecodeError::Incomplete { .. }) => outcomes[1] += 1,
            Err(DecodeError::Malformed { .. }) => outcomes[2] += 1,
        }
    }
    assert!(
        outcomes.iter().all(|&n| n > 0),
        "ok/incomplete/malformed = {outcomes:?}"
    );
}

// Protocol version 2 with `streaming` on.

/// `frame` (a protocol 1 data message) as it comes inside a stream block: `xid` after the tag.
fn in_block(frame: &[u8], xid: u32) -> Bytes {
    let mut v = vec![frame[0]];
    v.extend_from_slice(&xid.to_be_bytes());
    v.extend_from_slice(&frame[1..]);
    Bytes::from(v)
}

#[test]
fn stream_control_messages_are_decoded_with_their_transaction_ids_and_positions() {
    let start = Bytes::from_static(&[b'S', 0, 0, 2, 0, 1]);
    assert_eq!(
        decode_streaming(&start, false),
        Ok(StreamingMessage::StreamStart {
            xid: 512,
            first_segment: true
        })
    );
    assert_eq!(
        decode_streaming(&Bytes::from_static(b"E"), true),
        Ok(StreamingMessage::StreamStop)
    );
    let mut commit = vec![b'c', 0, 0, 2, 0, 0];
    commit.extend_from_slice(&0x10_0000_0040u64.to_be_bytes());
    commit.extend_from_slice(&0x10_0000_0080u64.to_be_bytes());
    commit.extend_from_slice(&777i64.to_be_bytes());
    assert_eq!(
        decode_streaming(&Bytes::from(commit.clone()), false),
        Ok(StreamingMessage::StreamCommit {
            xid: 512,
            commit_lsn: Lsn(0x10_0000_0040),
            end_lsn: Lsn(0x10_0000_0080),
            commit_time: 777
        })
    );
    for n in 0..commit.len() {
        assert!(matches!(
            decode_streaming(&Bytes::from(commit[..n].to_vec()), false),
            Err(DecodeError::Incomplete { .. })
        ));
    }
    let abort = Bytes::from_static(&[b'A', 0, 0, 2, 0, 0, 0, 2, 1]);
    assert_eq!(
        decode_streaming(&abort, false),
        Ok(StreamingMessage::StreamAbort {
            xid: 512,
            subxid: 513
        })
    );
    // Protocol 4's abort LSN and time are accepted and ignored.
    let mut abort4 = abort.to_vec();
    abort4.extend_from_slice(&[0; 16]);
    assert_eq!(
        decode_streaming(&Bytes::from(abort4), false),
        Ok(StreamingMessage::StreamAbort {
            xid: 512,
            subxid: 513
        })
    );
}

#[test]
fn data_messages_inside_a_block_carry_an_xid_and_decode_as_in_protocol_1() {
    let mut checked = 0;
    for f in frames() {
        let Ok(plain) = decode(&f.bytes) else {
            continue;
        };
        let tag = f.bytes[0];
        if !b"RYIUDTM".contains(&tag)
            || matches!(
                plain,
                Message::LogicalMessage {
                    transactional: false,
                    ..
                }
            )
        {
            // Outside a block, every protocol 1 message is read as in protocol 1.
            assert_eq!(
                decode_streaming(&f.bytes, false),
                Ok(StreamingMessage::Plain(plain))
            );
            continue;
        }
        let held = in_block(&f.bytes, 0x0102_0304);
        assert_eq!(
            decode_streaming(&held, true),
            Ok(StreamingMessage::InBlock { xid: 0x0102_0304 })
        );
        assert_eq!(decode_in_block(&held), Ok((0x0102_0304, plain)));
        for n in 0..held.len() {
            assert!(
                matches!(
                    decode_in_block(&held.slice(..n)),
                    Err(DecodeError::Incomplete { .. })
                ),
                "prefix {n} of {:02x?}",
                &held[..]
            );
        }
        checked += 1;
    }
    assert!(checked >= 15, "only {checked} data frames in the capture");
}

#[test]
fn messages_out_of_place_in_a_stream_are_malformed_not_guessed() {
    let begin = frames()
        .into_iter()
        .find(|f| f.bytes[0] == b'B')
        .expect("a BEGIN in the capture");
    assert!(matches!(
        decode_streaming(&begin.bytes, true),
        Err(DecodeError::Malformed { .. })
    ));
    assert!(matches!(
        decode_in_block(&begin.bytes),
        Err(DecodeError::Malformed { .. })
    ));
    // Two-phase messages were not requested either.
    assert!(matches!(
        decode_streaming(&Bytes::from_static(b"P"), false),
        Err(DecodeError::Malformed { .. })
    ));
    // Protocol 1 still refuses every streaming message.
    assert!(matches!(
        decode(&Bytes::from_static(&[b'S', 0, 0, 2, 0, 1])),
        Err(DecodeError::Malformed { .. })
    ));
}

#[test]
fn decoding_mutated_streamed_frames_never_panics() {
    let mut frames: Vec<Bytes> = frames()
        .into_iter()
        .filter(|f| b"RYIUDTM".contains(&f.bytes[0]))
        .map(|f| in_block(&f.bytes, 99))
        .collect();
    frames.push(Bytes::from_static(&[b'S', 0, 0, 2, 0, 1]));
    frames.push(Bytes::from_static(&[b'A', 0, 0, 2, 0, 0, 0, 2, 1]));
    let mut rng = Rng(0x0bad_5eed_1234_5678);
    let mut outcomes = [0usize; 3];
    for i in 0..10_000 {
        let mut v = frames[rng.below(frames.len())].to_vec();
        for _ in 0..1 + rng.below(3) {
            let at = rng.below(v.len() + 1);
            match rng.below(3) {
                0 if at < v.len() => v[at] = rng.next() as u8,
                1 if at < v.len() => {
                    v.remove(at);
                }
                _ => v.insert(at, rng.next() as u8),
            }
        }
        let buf = Bytes::from(v);
        let r = std::panic::catch_unwind(|| {
            let _ = decode_streaming(&buf, i % 2 == 0);
            decode_in_block(&buf)
        })
        .unwrap_or_else(|_| panic!("a streaming decoder panicked on {:02x?}", &buf[..]));
        match r {
            Ok(_) => outcomes[0] += 1,
            Err(DecodeError::Incomplete { .. }) => outcomes[1] += 1,
            Err(DecodeError::Malformed { .. }) => outcomes[2] += 1,
        }
    }
    assert!(
        outcomes.iter().all(|&n| n > 0),
        "ok/incomplete/malformed = {outcomes:?}"
    );
}

#[test]
fn an_origin_inside_a_stream_block_carries_no_transaction_id() {
    let mut origin = vec![b'O'];
    origin.extend_from_slice(&0u64.to_be_bytes());
    origin.extend_from_slice(b"sub\0");
    let buf = Bytes::from(origin);
    assert_eq!(
        decode_streaming(&buf, true),
        Ok(StreamingMessage::InBlockOrigin)
    );
    assert!(matches!(
        decode_streaming(&buf, false),
        Ok(StreamingMessage::Plain(Message::Origin { .. }))
    ));
    assert!(matches!(
        decode_streaming(&buf.slice(..5), true),
        Err(DecodeError::Incomplete { .. })
    ));
}
