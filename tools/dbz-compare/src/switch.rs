//! `switch-check`: the verdict of the switch run (scripts/debezium/switch.sh), where Debezium
//! and pgcdc take turns publishing one table's changes to the same topic.
//!
//! The table holds row 0, a counter that every writer transaction increments, and rows 1..N
//! that each writer transaction inserts. The topic has one partition; each turn (a phase)
//! is the offset range from its start to the next phase's start. The checks:
//! - every row was published (created by the snapshot or by an insert), and the counter's
//!   every value 1..C was published: nothing lost across the switches;
//! - snapshot records only in the first phase: no switch took a new snapshot;
//! - within a phase no event twice, and the counter's values strictly increase: order holds;
//! - events a phase publishes again from earlier phases (duplicates) follow the phase's
//!   rule: `none`, `one-tx` (all from one transaction: the one in flight at a graceful stop
//!   that had not completed) or `after-lsn=P` (all after the stored offset's position P: at
//!   least once after a crash, never before the stored offsets).

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use serde_json::Value;

use crate::{consumer, read_all, Res};

/// What a phase may re-publish from the phases before it.
#[derive(Debug, Clone, PartialEq)]
enum Rule {
    First,
    None,
    OneTx,
    AfterLsn(u64),
}

struct Phase {
    name: String,
    start: i64,
    rule: Rule,
}

fn parse_phase(spec: &str) -> Res<Phase> {
    let mut it = spec.splitn(3, ':');
    let (Some(name), Some(start), Some(rule)) = (it.next(), it.next(), it.next()) else {
        return Err(format!("--phase {spec}: expected NAME:START_OFFSET:RULE"));
    };
    let start = start
        .parse()
        .map_err(|_| format!("--phase {spec}: bad start offset"))?;
    let rule = match rule {
        "first" => Rule::First,
        "none" => Rule::None,
        "one-tx" => Rule::OneTx,
        r => match r.strip_prefix("after-lsn=").and_then(|n| n.parse().ok()) {
            Some(n) => Rule::AfterLsn(n),
            None => {
                return Err(format!(
                    "--phase {spec}: rule must be first, none, one-tx or after-lsn=N"
                ))
            }
        },
    };
    Ok(Phase {
        name: name.to_string(),
        start,
        rule,
    })
}

/// One change event, as far as the checks need it.
#[derive(Debug)]
struct Event {
    offset: i64,
    id: i64,
    op: String,
    n: i64,
    lsn: u64,
    tx: i64,
}

impl Event {
    /// What makes two events the same change: the row, the operation and the value of `n`.
    fn identity(&self) -> (i64, String, i64) {
        let op = if self.op == "r" {
            "c".to_string()
        } else {
            self.op.clone()
        };
        (self.id, op, self.n)
    }
}

fn payload(bytes: &[u8]) -> Res<Value> {
    let v: Value = serde_json::from_slice(bytes).map_err(|e| format!("not JSON: {e}"))?;
    Ok(match v.get("payload") {
        Some(p) if v.get("schema").is_some() => p.clone(),
        _ => v,
    })
}

fn event(offset: i64, key: &[u8], value: &[u8]) -> Res<Event> {
    let at = |what: &str| format!("offset {offset}: {what}");
    let key = payload(key).map_err(|e| at(&e))?;
    let value = payload(value).map_err(|e| at(&e))?;
    let id = key["id"].as_i64().ok_or_else(|| at("key has no id"))?;
    let op = value["op"]
        .as_str()
        .ok_or_else(|| at("value has no op"))?
        .to_string();
    let n = value["after"]["n"]
        .as_i64()
        .ok_or_else(|| at("value has no after.n"))?;
    let lsn = value["source"]["lsn"].as_u64().unwrap_or(0);
    let tx = value["source"]["txId"].as_i64().unwrap_or(-1);
    Ok(Event {
        offset,
        id,
        op,
        n,
        lsn,
        tx,
    })
}

/// Arguments of `switch-check`.
#[derive(clap::Args)]
pub struct SwitchArgs {
    #[arg(long)]
    pub brokers: String,
    #[arg(long)]
    pub topic: String,
    /// NAME:START_OFFSET:RULE, in order; RULE is first, none, one-tx or after-lsn=N
    #[arg(long = "phase", required = true)]
    pub phases: Vec<String>,
    /// The highest row id (rows 0..=N must all be published)
    #[arg(long)]
    pub rows: i64,
    /// Snapshot records expected (all in the first phase)
    #[arg(long)]
    pub snapshot_rows: usize,
    /// The counter's final value (updates 1..=C must all be published)
    #[arg(long)]
    pub counter: i64,
    #[arg(long, default_value_t = 120)]
    pub timeout: u64,
}

pub fn switch_check(a: SwitchArgs) -> Res<i32> {
    let phases = a
        .phases
        .iter()
        .map(|p| parse_phase(p))
        .collect::<Res<Vec<_>>>()?;
    if phases.first().map(|p| &p.rule) != Some(&Rule::First)
        || phases[1..].iter().any(|p| p.rule == Rule::First)
    {
        return Err("the first --phase, and only it, has the rule `first`".into());
    }
    let c = consumer(&a.brokers)?;
    let topics = BTreeMap::from([(a.topic.clone(), vec![0])]);
    let records = read_all(&c, &topics, Duration::from_secs(a.timeout))?;
    let mut events = Vec::new();
    for r in records.into_values().flatten() {
        let (Some(k), Some(v)) = (&r.key, &r.value) else {
            return Err(format!(
                "offset {}: a record without key or value",
                r.offset
            ));
        };
        events.push(event(r.offset, k, v)?);
    }
    let mut failures: Vec<String> = Vec::new();
    let mut seen: BTreeSet<(i64, String, i64)> = BTreeSet::new();
    println!("phase        offsets          records  again  rule          verdict");
    for (i, ph) in phases.iter().enumerate() {
        let end = phases.get(i + 1).map_or(i64::MAX, |p| p.start);
        let evs: Vec<&Event> = events
            .iter()
            .filter(|e| e.offset >= ph.start && e.offset < end)
            .collect();
        let mut mine: BTreeSet<(i64, String, i64)> = BTreeSet::new();
        let mut again: Vec<&Event> = Vec::new();
        let mut fail: Vec<String> = Vec::new();
        let mut last_counter = i64::MIN;
        for e in &evs {
            let id = e.identity();
            if !mine.insert(id.clone()) {
                fail.push(format!(
                    "published twice in this phase: row {} op {} n {} (offset {})",
                    e.id, e.op, e.n, e.offset
                ));
            }
            if seen.contains(&id) {
                again.push(e);
            }
            if e.op == "r" && ph.rule != Rule::First {
                fail.push(format!(
                    "a snapshot record after a switch (row {}, offset {})",
                    e.id, e.offset
                ));
            }
            if e.id == 0 && e.op == "u" {
                if e.n <= last_counter {
                    fail.push(format!(
                        "counter went from {last_counter} to {} (offset {}): order broken",
                        e.n, e.offset
                    ));
                }
                last_counter = e.n;
            }
        }
        match &ph.rule {
            Rule::First | Rule::None if !again.is_empty() => fail.push(format!(
                "{} events published again (first: row {} op {} lsn {})",
                again.len(),
                again[0].id,
                again[0].op,
                again[0].lsn
            )),
            Rule::OneTx => {
                let txs: BTreeSet<i64> = again.iter().map(|e| e.tx).collect();
                if txs.len() > 1 {
                    fail.push(format!(
                        "events of {} transactions published again ({txs:?}): more than the one in flight", txs.len()));
                }
            }
            Rule::AfterLsn(p) => {
                if let Some(e) = again.iter().find(|e| e.lsn <= *p) {
                    fail.push(format!(
                        "row {} op {} at LSN {} published again although the stored offsets had passed it (LSN {p})",
                        e.id, e.op, e.lsn
                    ));
                }
            }
            _ => {}
        }
        let rule = match &ph.rule {
            Rule::First => "first".to_string(),
            Rule::None => "none again".to_string(),
            Rule::OneTx => "<= 1 tx again".to_string(),
            Rule::AfterLsn(p) => format!("again > {p}"),
        };
        let range = format!(
            "{}..{}",
            ph.start,
            evs.last().map_or(ph.start, |e| e.offset + 1)
        );
        println!(
            "{:<12} {:<16} {:>7}  {:>5}  {:<13} {}",
            ph.name,
            range,
            evs.len(),
            again.len(),
            rule,
            if fail.is_empty() { "ok" } else { "FAILED" }
        );
        failures.extend(fail.into_iter().map(|f| format!("{}: {f}", ph.name)));
        seen.extend(mine);
    }
    // Nothing lost.
    let created: BTreeSet<i64> = events
        .iter()
        .filter(|e| e.op == "c" || e.op == "r")
        .map(|e| e.id)
        .collect();
    let missing: Vec<i64> = (0..=a.rows).filter(|id| !created.contains(id)).collect();
    if !missing.is_empty() {
        failures.push(format!(
            "{} rows never published (first: {:?})",
            missing.len(),
            &missing[..missing.len().min(10)]
        ));
    }
    let counter: BTreeSet<i64> = events
        .iter()
        .filter(|e| e.id == 0 && e.op == "u")
        .map(|e| e.n)
        .collect();
    let lost: Vec<i64> = (1..=a.counter).filter(|n| !counter.contains(n)).collect();
    if !lost.is_empty() {
        failures.push(format!(
            "{} counter updates never published (first: {:?})",
            lost.len(),
            &lost[..lost.len().min(10)]
        ));
    }
    let snapshot = events.iter().filter(|e| e.op == "r").count();
    if snapshot != a.snapshot_rows {
        failures.push(format!(
            "{snapshot} snapshot records, expected {}",
            a.snapshot_rows
        ));
    }
    println!(
        "rows 0..={}: {} published; counter 1..={}: {} published; snapshot records: {snapshot}",
        a.rows,
        created.len(),
        a.counter,
        counter.len()
    );
    for f in &failures {
        println!("FAILED: {f}");
    }
    Ok(i32::from(!failures.is_empty()))
}
