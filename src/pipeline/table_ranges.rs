//! The ranges of `ctid`s in which a snapshot reads a table in its physical order, and how far
//! each range was read: what the snapshot's checkpoints record (see
//! [`crate::offsets::initial`]).
//!
//! A table is read as a list of ranges, each in `ctid` order: first, when an interrupted
//! snapshot recorded ranges of it as read, those ranges again, for the rows written since
//! (whose `xmin` its snapshot did not see); then the ranges it did not read, whole, split at
//! page boundaries into about as many ranges as there are readers.
//!
//! Invariants:
//! - the ranges cover the table's file once, the last one open-ended (pages added since the
//!   plan are read too);
//! - what [`RangeProgress::read_ranges`] returns holds for the new snapshot: every row it sees
//!   in those ranges was sent. A range recorded by the interrupted snapshot holds for the new
//!   one only once its rows written since are read, so until every such range is read,
//!   nothing is returned.

use crate::pg::snapshot::{CursorSource, Tid, TidRange, XidWindow};

/// One range of a table's read plan.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct PlannedRange {
    pub(super) range: TidRange,
    /// Only the rows written since the interrupted snapshot (the range was read by it).
    pub(super) written_since: bool,
}

/// How a table is read: its ranges in the order they are read.
#[derive(Debug, Clone)]
pub(super) struct TablePlan {
    pub(super) ranges: Vec<PlannedRange>,
    /// What the interrupted snapshot saw, when ranges were read by it.
    window: Option<XidWindow>,
}

impl TablePlan {
    /// The plan of a table of `pages` heap pages, of which an interrupted snapshot that saw
    /// `window` read `read_before` (empty: the whole table is read), for `readers`
    /// connections (1: the ranges not read are not split).
    pub(super) fn new(
        read_before: &[TidRange],
        window: Option<XidWindow>,
        pages: u64,
        readers: usize,
    ) -> TablePlan {
        let read_before = match window {
            Some(_) => merge(read_before.to_vec()),
            None => Vec::new(),
        };
        let mut ranges: Vec<PlannedRange> = read_before
            .iter()
            .map(|&range| PlannedRange {
                range,
                written_since: true,
            })
            .collect();
        let rest = split(gaps(&read_before), pages, readers);
        ranges.extend(rest.into_iter().map(|range| PlannedRange {
            range,
            written_since: false,
        }));
        TablePlan { ranges, window }
    }

    /// What the cursor of range `i` reads.
    pub(super) fn source(&self, i: usize) -> CursorSource<'_> {
        let planned = self.ranges[i];
        match (&self.window, planned.written_since) {
            (Some(w), true) => CursorSource::ChangedIn(planned.range, w),
            _ => CursorSource::Range(planned.range),
        }
    }
}

/// How far one range was read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Read {
    NotStarted,
    /// Every row before this place was sent.
    Before(Tid),
    Done,
}

/// How far each range of a [`TablePlan`] was read (sent to the sink).
#[derive(Debug, Clone)]
pub(super) struct RangeProgress {
    ranges: Vec<PlannedRange>,
    read: Vec<Read>,
}

impl RangeProgress {
    /// Nothing of `plan` read yet.
    pub(super) fn new(plan: &TablePlan) -> Self {
        RangeProgress {
            ranges: plan.ranges.clone(),
            read: vec![Read::NotStarted; plan.ranges.len()],
        }
    }

    /// Every row of range `i` before `tid` was sent.
    pub(super) fn sent_before(&mut self, i: usize, tid: Tid) {
        if self.read[i] != Read::Done {
            self.read[i] = Read::Before(tid);
        }
    }

    /// Every row of range `i` was sent.
    pub(super) fn finished(&mut self, i: usize) {
        self.read[i] = Read::Done;
    }

    /// The ranges whose every row was sent, merged and in order; `None` while a range read
    /// by the interrupted snapshot is not read again (see the module's invariants).
    pub(super) fn read_ranges(&self) -> Option<Vec<TidRange>> {
        let mut out = Vec::new();
        for (planned, read) in self.ranges.iter().zip(&self.read) {
            match read {
                Read::Done => out.push(planned.range),
                _ if planned.written_since => return None,
                Read::Before(tid) if *tid > planned.range.from => out.push(TidRange {
                    from: planned.range.from,
                    to: Some(*tid),
                }),
                _ => {}
            }
        }
        Some(merge(out))
    }
}

/// `ranges` as the offsets store them (see [`crate::offsets::initial::TableProgress`]).
pub(super) fn stored(ranges: &[TidRange]) -> Vec<(String, Option<String>)> {
    ranges
        .iter()
        .map(|r| (r.from.to_string(), r.to.map(|t| t.to_string())))
        .collect()
}

/// Ranges as the offsets store them; `None` when one is not a pair of `ctid`s in order.
pub(super) fn parse_stored(stored: &[(String, Option<String>)]) -> Option<Vec<TidRange>> {
    stored
        .iter()
        .map(|(from, to)| {
            let from = Tid::parse(from)?;
            let to = match to {
                Some(t) => Some(Tid::parse(t)?),
                None => None,
            };
            to.is_none_or(|t| t > from).then_some(TidRange { from, to })
        })
        .collect()
}

/// `ranges` sorted, with overlapping and adjacent ones joined.
fn merge(mut ranges: Vec<TidRange>) -> Vec<TidRange> {
    ranges.sort_by_key(|r| r.from);
    let mut out: Vec<TidRange> = Vec::with_capacity(ranges.len());
    for r in ranges {
        match out.last_mut() {
            Some(last) if last.to.is_none_or(|end| r.from <= end) => {
                last.to = match (last.to, r.to) {
                    (Some(a), Some(b)) => Some(a.max(b)),
                    _ => None,
                };
            }
            _ => out.push(r),
        }
    }
    out
}

/// The parts of the file that the merged `read` ranges leave out, in order; the last is
/// open-ended unless a read range is.
fn gaps(read: &[TidRange]) -> Vec<TidRange> {
    let mut out = Vec::new();
    let mut at = Some(Tid::START);
    for r in read {
        let Some(from) = at else { break };
        if r.from > from {
            out.push(TidRange {
                from,
                to: Some(r.from),
            });
        }
        at = r.to;
    }
    if let Some(from) = at {
        out.push(TidRange { from, to: None });
    }
    out
}

/// Splits `gaps` at page boundaries into about `readers` ranges of equal size (a table of
/// `pages` pages; none split when `readers` is 1, never more ranges than pages).
fn split(gaps: Vec<TidRange>, pages: u64, readers: usize) -> Vec<TidRange> {
    if readers <= 1 {
        return gaps;
    }
    let end_page = |g: &TidRange| match g.to {
        Some(t) => t.page + u64::from(t.item > 0),
        None => pages.max(g.from.page),
    };
    let total: u64 = gaps.iter().map(|g| end_page(g) - g.from.page).sum();
    let step = total.div_ceil(readers as u64).max(1);
    let mut out = Vec::new();
    for g in gaps {
        let mut from = g.from;
        let mut cut = g.from.page + step;
        let inside = |cut: u64| match g.to {
            Some(to) => Tid::page(cut) < to,
            None => cut < pages,
        };
        while inside(cut) {
            out.push(TidRange {
                from,
                to: Some(Tid::page(cut)),
            });
            from = Tid::page(cut);
            cut += step;
        }
        out.push(TidRange { from, to: g.to });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tid(page: u64, item: u32) -> Tid {
        Tid { page, item }
    }

    fn range(from: Tid, to: Option<Tid>) -> TidRange {
        TidRange { from, to }
    }

    fn window() -> XidWindow {
        XidWindow { xmin: 10 }
    }

    /// The ranges cover the file once, in order, the last open-ended.
    fn assert_covers(ranges: &[TidRange]) {
        let mut sorted = ranges.to_vec();
        sorted.sort_by_key(|r| r.from);
        assert_eq!(sorted[0].from, Tid::START);
        assert_eq!(sorted.last().unwrap().to, None);
        for w in sorted.windows(2) {
            assert_eq!(w[0].to, Some(w[1].from), "{ranges:?}: contiguous");
            assert!(w[0].to.unwrap() > w[0].from, "{ranges:?}: not empty");
        }
    }

    #[test]
    fn a_fresh_table_is_split_into_page_ranges_that_cover_it_once() {
        for (pages, n) in [(0u64, 4usize), (1, 4), (3, 4), (10, 3), (1000, 8), (7, 1)] {
            let plan = TablePlan::new(&[], None, pages, n);
            let ranges: Vec<TidRange> = plan.ranges.iter().map(|p| p.range).collect();
            assert!(ranges.len() <= n.max(1) && ranges.len() as u64 <= pages.max(1));
            assert_covers(&ranges);
            assert!(plan.ranges.iter().all(|r| !r.written_since));
            assert!(ranges.iter().all(|r| r.from.item == 0));
        }
        let plan = TablePlan::new(&[], None, 1000, 4);
        assert_eq!(plan.ranges.len(), 4);
        assert_eq!(
            plan.ranges[1].range,
            range(Tid::page(250), Some(Tid::page(500)))
        );
        assert_eq!(plan.source(3), CursorSource::Range(plan.ranges[3].range));
    }

    #[test]
    fn a_resumed_table_reads_its_read_ranges_for_rows_written_since_then_the_rest() {
        let read = [
            range(Tid::page(500), Some(tid(620, 7))),
            range(Tid::START, Some(tid(120, 3))),
        ];
        let plan = TablePlan::new(&read, Some(window()), 1000, 4);
        assert!(plan.ranges[..2].iter().all(|r| r.written_since));
        assert_eq!(plan.ranges[0].range, read[1], "read ranges first, in order");
        assert_eq!(plan.ranges[1].range, read[0]);
        let w = window();
        assert_eq!(plan.source(0), CursorSource::ChangedIn(read[1], &w));
        let rest: Vec<TidRange> = plan.ranges[2..].iter().map(|p| p.range).collect();
        assert!(plan.ranges[2..].iter().all(|p| !p.written_since));
        assert_covers(&[read.to_vec(), rest.clone()].concat());
        assert!(
            rest.len() >= 3,
            "the rest is split over the readers: {rest:?}"
        );
        // Serially the rest is not split: the two gaps.
        let serial = TablePlan::new(&read, Some(window()), 1000, 1);
        assert_eq!(serial.ranges.len(), 4);
        assert_eq!(serial.ranges[3].range, range(tid(620, 7), None));
        // Without the old snapshot's visibility nothing counts as read.
        let whole = TablePlan::new(&read, None, 1000, 1);
        assert_eq!(whole.ranges.len(), 1);
        assert_eq!(whole.ranges[0].range, TidRange::ALL);
        // An open-ended read range leaves no open gap.
        let open = TablePlan::new(&[range(Tid::page(9), None)], Some(window()), 20, 1);
        assert_eq!(open.ranges.len(), 2);
        assert_eq!(open.ranges[1].range, range(Tid::START, Some(Tid::page(9))));
    }

    #[test]
    fn stored_ranges_round_trip_and_bad_ones_are_refused() {
        let ranges = vec![
            range(Tid::START, Some(tid(52, 3))),
            range(Tid::page(90), None),
        ];
        let text = stored(&ranges);
        assert_eq!(text[0], ("(0,0)".to_string(), Some("(52,3)".to_string())));
        assert_eq!(parse_stored(&text), Some(ranges));
        assert_eq!(
            parse_stored(&[("(5,0)".into(), Some("(4,0)".into()))]),
            None
        );
        assert_eq!(parse_stored(&[("5,0".into(), None)]), None);
    }

    #[test]
    fn progress_claims_only_what_was_sent_and_nothing_before_rows_written_since_are_read() {
        let plan = TablePlan::new(&[], None, 100, 4);
        let mut p = RangeProgress::new(&plan);
        assert_eq!(p.read_ranges(), Some(vec![]));
        p.sent_before(0, tid(3, 2));
        p.sent_before(2, tid(60, 1));
        assert_eq!(
            p.read_ranges(),
            Some(vec![
                range(Tid::START, Some(tid(3, 2))),
                range(Tid::page(50), Some(tid(60, 1)))
            ])
        );
        p.finished(0);
        p.finished(1);
        p.sent_before(1, tid(30, 1));
        assert_eq!(
            p.read_ranges().unwrap()[0],
            range(Tid::START, Some(tid(60, 1))),
            "finished ranges stay finished and adjacent ones join"
        );
        p.finished(2);
        p.finished(3);
        assert_eq!(p.read_ranges(), Some(vec![TidRange::ALL]));

        let read = [range(Tid::START, Some(tid(40, 1)))];
        let resumed = TablePlan::new(&read, Some(window()), 100, 2);
        let mut p = RangeProgress::new(&resumed);
        p.sent_before(1, tid(50, 1));
        assert_eq!(p.read_ranges(), None, "rows written since not read yet");
        p.sent_before(0, tid(20, 1));
        assert_eq!(p.read_ranges(), None);
        p.finished(0);
        assert_eq!(
            p.read_ranges(),
            Some(vec![range(Tid::START, Some(tid(50, 1)))])
        );
    }
}
