use super::*;

fn limits(memory_bytes: usize, spill_max_bytes: u64) -> StreamingLimits {
    StreamingLimits {
        memory_bytes,
        spill_dir: std::env::temp_dir(),
        spill_max_bytes,
    }
}

/// A payload that names its message, so replays can be compared.
fn payload(name: &str) -> Vec<u8> {
    let mut v = b"I".to_vec();
    v.extend_from_slice(name.as_bytes());
    v
}

/// Holds `names` as one block of `xid` (messages of subtransaction `sub` where the name starts
/// with `s`), LSNs from `lsn` on.
fn block(held: &mut StreamedTransactions, xid: u32, first: bool, lsn: u64, names: &[&str]) {
    held.start(xid, first, Lsn(lsn)).unwrap();
    for (i, n) in names.iter().enumerate() {
        let of = if n.starts_with('s') { xid + 1000 } else { xid };
        held.push(Lsn(lsn + i as u64), of, &payload(n)).unwrap();
    }
    held.stop(Lsn(lsn + 100)).unwrap();
}

fn replayed(mut r: Replay) -> Vec<String> {
    let mut out = Vec::new();
    while let Some((_, b)) = r.next_message().unwrap() {
        out.push(String::from_utf8(b[1..].to_vec()).unwrap());
    }
    out
}

#[test]
fn interleaved_transactions_replay_whole_and_in_order_and_free_their_memory() {
    let mut held = StreamedTransactions::new(limits(1 << 20, 1 << 20));
    block(&mut held, 10, true, 100, &["a1", "a2"]);
    block(&mut held, 20, true, 200, &["b1"]);
    block(&mut held, 10, false, 300, &["a3"]);
    assert_eq!(held.oldest_open_lsn(), Some(Lsn(100)));
    assert!(held.memory_used() > 0);
    let b = held.commit(20, Lsn(400)).unwrap();
    assert_eq!(b.first_lsn(), Lsn(200));
    assert_eq!(replayed(b), ["b1"]);
    let a = held.commit(10, Lsn(500)).unwrap();
    assert_eq!(replayed(a), ["a1", "a2", "a3"]);
    assert_eq!(held.memory_used(), 0);
    assert_eq!(held.oldest_open_lsn(), None);
    assert_eq!(held.stats().committed, 2);
    assert_eq!(held.stats().spilled, 0);
}

#[test]
fn a_transaction_past_the_memory_bound_goes_on_in_a_spill_file_in_order() {
    // Room for two messages in memory.
    let mut held = StreamedTransactions::new(limits(2 * (3 + MESSAGE_OVERHEAD), 1 << 20));
    block(&mut held, 10, true, 100, &["a1", "a2", "a3"]);
    block(&mut held, 10, false, 200, &["a4", "a5"]);
    assert!(held.memory_used() <= 2 * (3 + MESSAGE_OVERHEAD));
    let r = held.commit(10, Lsn(300)).unwrap();
    assert_eq!(replayed(r), ["a1", "a2", "a3", "a4", "a5"]);
    let stats = held.stats();
    assert_eq!(stats.spilled, 1);
    assert_eq!(stats.spill_bytes, 3 * (SPILL_HEADER + 3));
    assert_eq!(held.memory_used(), 0);
    assert_eq!(held.spill_used, 0);
}

#[test]
fn lsns_come_back_with_their_messages_from_memory_and_from_the_spill_file() {
    let mut held = StreamedTransactions::new(limits(3 + MESSAGE_OVERHEAD, 1 << 20));
    block(&mut held, 10, true, 100, &["a1", "a2"]);
    let mut r = held.commit(10, Lsn(300)).unwrap();
    assert_eq!(r.next_message().unwrap().unwrap().0, Lsn(100));
    assert_eq!(r.next_message().unwrap().unwrap().0, Lsn(101));
    assert!(r.next_message().unwrap().is_none());
    assert!(r.next_message().unwrap().is_none());
}

#[test]
fn an_aborted_subtransaction_drops_its_messages_and_those_after_it() {
    for memory in [1 << 20, 2 * (3 + MESSAGE_OVERHEAD), 0] {
        let mut held = StreamedTransactions::new(limits(memory, 1 << 20));
        block(&mut held, 10, true, 100, &["a1", "a2", "s1", "s2"]);
        held.abort(10, 1010).unwrap();
        block(&mut held, 10, false, 200, &["a3"]);
        // A subtransaction with no messages, and one of an unknown transaction.
        held.abort(10, 4242).unwrap();
        held.abort(77, 78).unwrap();
        let r = held.commit(10, Lsn(300)).unwrap();
        assert_eq!(replayed(r), ["a1", "a2", "a3"], "memory bound {memory}");
        assert_eq!(held.spill_used, 0, "memory bound {memory}");
        assert_eq!(held.memory_used(), 0);
    }
}

#[test]
fn a_subtransaction_that_began_in_memory_drops_the_spill_file_too() {
    let mut held = StreamedTransactions::new(limits(2 * (3 + MESSAGE_OVERHEAD), 1 << 20));
    block(&mut held, 10, true, 100, &["a1", "s1", "s2", "s3"]);
    held.abort(10, 1010).unwrap();
    assert_eq!(held.spill_used, 0);
    block(&mut held, 10, false, 200, &["a2"]);
    assert_eq!(replayed(held.commit(10, Lsn(300)).unwrap()), ["a1", "a2"]);
}

#[test]
fn an_aborted_transaction_is_dropped_whole() {
    let mut held = StreamedTransactions::new(limits(3 + MESSAGE_OVERHEAD, 1 << 20));
    block(&mut held, 10, true, 100, &["a1", "a2", "a3"]);
    block(&mut held, 20, true, 200, &["b1"]);
    held.abort(10, 10).unwrap();
    assert_eq!(held.oldest_open_lsn(), Some(Lsn(200)));
    assert_eq!(replayed(held.commit(20, Lsn(300)).unwrap()), ["b1"]);
    assert_eq!((held.memory_used(), held.spill_used), (0, 0));
    assert_eq!(held.stats().aborted, 1);
    let err = held.commit(10, Lsn(400)).err().unwrap().to_string();
    assert!(err.contains("never saw start"), "{err}");
}

#[test]
fn part_of_a_transaction_is_never_taken_for_the_whole() {
    let mut held = StreamedTransactions::new(limits(1 << 20, 1 << 20));
    let err = held.start(10, false, Lsn(1)).unwrap_err().to_string();
    assert!(
        err.contains("first block this session did not receive"),
        "{err}"
    );
    held.start(10, true, Lsn(2)).unwrap();
    let err = held.start(11, true, Lsn(3)).unwrap_err().to_string();
    assert!(err.contains("inside the block"), "{err}");
    let err = held.commit(10, Lsn(4)).err().unwrap().to_string();
    assert!(err.contains("inside a stream block"), "{err}");
    held.stop(Lsn(5)).unwrap();
    let err = held.start(10, true, Lsn(6)).unwrap_err().to_string();
    assert!(err.contains("already open"), "{err}");
    assert!(held.stop(Lsn(7)).is_err());
    let err = held.push(Lsn(8), 10, b"I").unwrap_err().to_string();
    assert!(err.contains("outside a stream block"), "{err}");
}

#[test]
fn a_transaction_past_the_spill_bound_is_a_clear_error() {
    let mut held = StreamedTransactions::new(limits(0, 2 * (SPILL_HEADER + 3)));
    held.start(10, true, Lsn(1)).unwrap();
    held.push(Lsn(2), 10, &payload("a1")).unwrap();
    held.push(Lsn(3), 10, &payload("a2")).unwrap();
    let err = held.push(Lsn(4), 10, &payload("a3")).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Config);
    let msg = err.to_string();
    assert!(
        msg.contains("pgcdc.pgoutput.streaming.spill.max.bytes=30")
            && msg.contains("transaction 10"),
        "{msg}"
    );
}

#[test]
fn a_spill_directory_that_cannot_be_written_is_a_clear_error() {
    let mut l = limits(0, 1 << 20);
    l.spill_dir = std::path::PathBuf::from("/nonexistent/pgcdc-spill");
    let mut held = StreamedTransactions::new(l);
    held.start(10, true, Lsn(1)).unwrap();
    let err = held.push(Lsn(2), 10, &payload("a1")).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Io);
    let msg = err.to_string();
    assert!(
        msg.contains(
            "creating the spill file of streamed transaction 10 in /nonexistent/pgcdc-spill"
        ) && msg.contains("pgcdc.pgoutput.streaming.spill.dir"),
        "{msg}"
    );
}

#[test]
fn the_first_message_held_after_aborts_is_where_the_begin_goes_and_an_origin_is_kept() {
    for memory in [1 << 20, 0] {
        let mut held = StreamedTransactions::new(limits(memory, 1 << 20));
        // The first messages belong to a subtransaction that is rolled back.
        held.start(10, true, Lsn(100)).unwrap();
        held.origin(Lsn(100), b"Oorigin").unwrap();
        held.push(Lsn(101), 1010, &payload("s1")).unwrap();
        held.stop(Lsn(102)).unwrap();
        held.abort(10, 1010).unwrap();
        held.start(10, false, Lsn(300)).unwrap();
        held.origin(Lsn(300), b"Olater").unwrap();
        // A Relation message comes in a block without an LSN of its own.
        held.push(Lsn(0), 10, b"Rrel").unwrap();
        held.push(Lsn(300), 10, &payload("a1")).unwrap();
        held.stop(Lsn(301)).unwrap();
        let mut r = held.commit(10, Lsn(400)).unwrap();
        assert_eq!(r.first_lsn(), Lsn(100), "memory bound {memory}");
        assert_eq!(
            r.first_change_lsn(),
            Some(Lsn(300)),
            "memory bound {memory}"
        );
        assert_eq!(r.take_origin().as_deref(), Some(&b"Oorigin"[..]));
        assert_eq!(replayed(r), ["rel", "a1"]);
    }
    // A transaction whose every message was rolled back publishes nothing.
    let mut held = StreamedTransactions::new(limits(0, 1 << 20));
    block(&mut held, 10, true, 100, &["s1"]);
    held.abort(10, 1010).unwrap();
    let r = held.commit(10, Lsn(200)).unwrap();
    assert_eq!(r.first_change_lsn(), None);
    assert!(
        held.origin(Lsn(300), b"O").is_err(),
        "an origin outside a block"
    );
}
