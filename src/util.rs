//! Small helpers shared across layers, with no knowledge of any of them: SQL quoting,
//! Java-style whole-name regular expressions, comma lists, "did you mean" suggestions, hex
//! decoding, Java's float and double text, the iteration order of a Java `HashMap` (which
//! Debezium's JSON follows), and Debezium's name adjustment (`field.name.adjustment.mode`,
//! `schema.name.adjustment.mode`).
//!
//! This module sits at the bottom of the dependency order, next to [`crate::error`] and
//! [`crate::lsn`]: it imports nothing from the crate.

use regex::{Regex, RegexBuilder};

/// Debezium's `*.name.adjustment.mode`: how names are made valid Avro names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NameAdjustment {
    /// Names are kept as they are.
    None,
    /// Every character outside `[A-Za-z0-9_]` (schema names: also `.`) becomes `_`; a name
    /// that starts with a digit gets `_` in front.
    Avro,
    /// Every character outside `[A-Za-z0-9]` (schema names: also `.`), and a leading digit,
    /// becomes `_u` and its UTF-16 code in lower-case hex (`00` in front of one or two digits).
    AvroUnicode,
}

/// `topic.naming.strategy`, Debezium's built-in strategies for data change topics:
/// `<prefix><delimiter><schema><delimiter><table>` (`SchemaTopicNamingStrategy`, the default)
/// or `<prefix><delimiter><table>` (`DefaultTopicNamingStrategy`: a PostgreSQL table id has no
/// catalog, so the schema is left out); characters Kafka refuses become `_`, or, in the
/// `…Unicode…` strategies (where `_` is escaped too), `_u` and the UTF-16 code in hex.
///
/// The `…RegexTopicNamingStrategy` classes add [`RegexNaming`]: the sanitised name is
/// rewritten by `topic.regex` / `topic.replacement`, and the key gains a field naming the
/// physical table.
#[derive(Debug, Clone, Default)]
pub struct TopicNaming {
    /// The topic leaves out the schema (`DefaultTopicNamingStrategy`).
    pub without_schema: bool,
    /// Invalid characters become `_uXXXX` (the Unicode strategies).
    pub unicode: bool,
    /// The regex strategies' rewrite and key field.
    pub regex: Option<std::sync::Arc<RegexNaming>>,
}

/// What Debezium's `DefaultRegexTopicNamingStrategy` and `SchemaRegexTopicNamingStrategy`
/// add to the plain strategies.
#[derive(Debug, Clone)]
pub struct RegexNaming {
    /// `topic.regex` and `topic.replacement`: applied to the sanitised topic when the regex
    /// matches all of it (an empty result keeps the topic).
    pub topic: TopicRewrite,
    /// `topic.key.field.name` when `topic.key.enforce.uniqueness` (the default): a string
    /// field appended to every key (a keyless table gets a key of it alone).
    pub key_field: Option<String>,
    /// `topic.key.field.regex` and `topic.key.field.replacement`: the field's value from
    /// the table's original topic name (the name itself when absent or not matching).
    pub key_rewrite: Option<TopicRewrite>,
}

impl TopicNaming {
    /// The data change topic of table `schema`.`table`, sanitised (never cut: a name over
    /// Kafka's limit is refused where topics are checked), then rewritten by the regex
    /// strategies.
    pub fn data_topic(&self, prefix: &str, delimiter: &str, schema: &str, table: &str) -> String {
        let topic = self.sanitize(&self.origin_topic(prefix, delimiter, schema, table));
        match self.regex.as_ref().and_then(|r| r.topic.rewrite(&topic)) {
            Some(t) if !t.is_empty() => t,
            _ => topic,
        }
    }

    /// The table's topic name before sanitising and rewriting.
    fn origin_topic(&self, prefix: &str, delimiter: &str, schema: &str, table: &str) -> String {
        let parts: Vec<&str> = if self.without_schema {
            vec![prefix, table]
        } else {
            vec![prefix, schema, table]
        };
        parts
            .into_iter()
            .filter(|p| !p.trim().is_empty())
            .collect::<Vec<_>>()
            .join(delimiter)
    }

    /// The regex strategies' key field of table `schema`.`table`: its name and its value
    /// (the physical table's original topic name, or its `topic.key.field.regex` rewrite).
    pub fn key_field(
        &self,
        prefix: &str,
        delimiter: &str,
        schema: &str,
        table: &str,
    ) -> Option<(String, String)> {
        let regex = self.regex.as_ref()?;
        let name = regex.key_field.clone()?;
        let origin = self.origin_topic(prefix, delimiter, schema, table);
        let value = regex
            .key_rewrite
            .as_ref()
            .and_then(|r| r.rewrite(&origin))
            .unwrap_or(origin);
        Some((name, value))
    }

    /// Replaces the characters a topic name may not hold, as the strategy does.
    pub fn sanitize(&self, name: &str) -> String {
        let valid = |c: u16| {
            let ok = c == b'.' as u16
                || c == b'-' as u16
                || (c < 128 && (c as u8).is_ascii_alphanumeric());
            ok || (!self.unicode && c == b'_' as u16)
        };
        let replace = |c: u16| {
            if self.unicode {
                let hex = format!("{c:x}");
                if hex.len() <= 2 {
                    format!("_u00{hex}")
                } else {
                    format!("_u{hex}")
                }
            } else {
                "_".to_string()
            }
        };
        let mut out = String::with_capacity(name.len());
        for unit in name.encode_utf16() {
            if valid(unit) {
                out.push(unit as u8 as char);
            } else {
                out.push_str(&replace(unit));
            }
        }
        match out.as_str() {
            "." => replace(b'.' as u16),
            ".." => replace(b'.' as u16).repeat(2),
            _ => out,
        }
    }
}

impl NameAdjustment {
    /// The adjusted field name (a struct field: `.` is not kept).
    pub fn field(self, name: &str) -> String {
        self.adjust(name, false)
    }

    /// The adjusted schema name (a full name: `.` is kept).
    pub fn schema(self, name: &str) -> String {
        self.adjust(name, true)
    }

    fn adjust(self, name: &str, keep_dots: bool) -> String {
        if name.is_empty() {
            return String::new();
        }
        let mut out = String::with_capacity(name.len());
        for (i, unit) in name.encode_utf16().enumerate() {
            let c = char::from_u32(unit as u32).filter(|c| c.is_ascii());
            let letter = c.is_some_and(|c| c.is_ascii_alphabetic());
            let digit = c.is_some_and(|c| c.is_ascii_digit());
            let underscore = c == Some('_');
            let dot = c == Some('.');
            match self {
                NameAdjustment::None => return name.to_string(),
                NameAdjustment::Avro => {
                    let valid = letter || underscore || (i > 0 && (digit || (keep_dots && dot)));
                    if i == 0 && digit {
                        out.push('_');
                        out.push(c.unwrap_or('_'));
                    } else if valid {
                        out.push(c.unwrap_or('_'));
                    } else {
                        out.push('_');
                    }
                }
                NameAdjustment::AvroUnicode => {
                    let valid = letter || (i > 0 && (digit || (keep_dots && dot)));
                    if valid {
                        out.push(c.unwrap_or('_'));
                    } else {
                        // Debezium pads a code of one or two hex digits with "00" and no other.
                        let hex = format!("{unit:x}");
                        out.push_str("_u");
                        if hex.len() <= 2 {
                            out.push_str("00");
                        }
                        out.push_str(&hex);
                    }
                }
            }
        }
        out
    }
}

/// Quotes an SQL identifier: `a"b` becomes `"a""b"`.
pub fn quote_ident(s: &str) -> String {
    format!("\"{}\"", s.replace('"', "\"\""))
}

/// Quotes an SQL string literal: `it's` becomes `'it''s'`.
pub fn quote_literal(s: &str) -> String {
    format!("'{}'", s.replace('\'', "''"))
}

/// Compiles `pattern` to match a whole name (`^(?:pattern)$`), as Java's `Matcher.matches`
/// does. The error is one line describing `pattern` as the user wrote it (the pattern alone is
/// compiled first, so the message does not show the anchoring wrapper).
pub fn full_match_regex(
    pattern: &str,
    case_insensitive: bool,
) -> std::result::Result<Regex, String> {
    let build = |p: &str| {
        RegexBuilder::new(p)
            .case_insensitive(case_insensitive)
            .build()
            .map_err(|e| regex_error_line(&e.to_string()))
    };
    build(pattern)?;
    build(&format!("^(?:{pattern})$"))
}

/// The regex crate's multi-line syntax error (pattern, caret line, `error: ...`) as one line:
/// `unclosed group (at character 8)`.
fn regex_error_line(text: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let what = lines
        .iter()
        .rev()
        .find_map(|l| l.trim().strip_prefix("error: "))
        .unwrap_or_else(|| text.trim());
    match lines
        .iter()
        .position(|l| l.trim() == "^" || l.trim().starts_with('^'))
    {
        Some(i) if i > 0 => {
            let indent = lines[i - 1].len() - lines[i - 1].trim_start().len();
            let at = lines[i].find('^').unwrap_or(indent).saturating_sub(indent) + 1;
            format!("{what} (at character {at})")
        }
        _ => what.lines().collect::<Vec<_>>().join(" "),
    }
}

/// Splits a comma-separated list of regular expressions, honouring `\,` as a literal comma;
/// items are trimmed and empty items dropped.
pub fn split_regex_list(v: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut chars = v.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if chars.peek() == Some(&',') => {
                cur.push(',');
                chars.next();
            }
            ',' => {
                if !cur.trim().is_empty() {
                    out.push(cur.trim().to_string());
                }
                cur.clear();
            }
            _ => cur.push(c),
        }
    }
    if !cur.trim().is_empty() {
        out.push(cur.trim().to_string());
    }
    out
}

/// The candidate closest to `word` by edit distance, if close enough to be a likely typo
/// (at most half the longer length, and at least 3 edits allowed).
pub fn closest_of<'a>(word: &str, candidates: impl Iterator<Item = &'a str>) -> Option<&'a str> {
    candidates
        .map(|k| (k, levenshtein(word, k)))
        .min_by_key(|(_, d)| *d)
        .filter(|(k, d)| *d <= (k.len().max(word.len()) / 2).max(3))
        .map(|(k, _)| k)
}

/// Wall-clock time in µs since the Unix epoch (0 if the clock is before it).
pub fn unix_micros() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as i64)
}

/// Runs `future` to completion on the calling thread, parking it while the future waits:
/// for a future driven by another thread (such as a Kafka delivery report, which the
/// producer's own thread completes) where the caller cannot `.await`. Blocks the thread.
pub fn block_on<F: std::future::Future>(future: F) -> F::Output {
    struct Unpark(std::thread::Thread);
    impl std::task::Wake for Unpark {
        fn wake(self: std::sync::Arc<Self>) {
            self.0.unpark();
        }
    }
    let waker = std::task::Waker::from(std::sync::Arc::new(Unpark(std::thread::current())));
    let mut cx = std::task::Context::from_waker(&waker);
    let mut future = std::pin::pin!(future);
    loop {
        if let std::task::Poll::Ready(v) = future.as_mut().poll(&mut cx) {
            return v;
        }
        std::thread::park();
    }
}

/// Levenshtein edit distance between `a` and `b`, in characters.
pub fn levenshtein(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            cur[j + 1] = (prev[j] + usize::from(ca != *cb))
                .min(prev[j + 1] + 1)
                .min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

/// Decodes hexadecimal text (either case, an even number of digits) into bytes; `None` for
/// anything else.
pub fn decode_hex(text: &str) -> Option<Vec<u8>> {
    let b = text.as_bytes();
    if b.len() % 2 != 0 {
        return None;
    }
    let digit = |c: u8| (c as char).to_digit(16).map(|d| d as u8);
    b.chunks(2)
        .map(|p| Some((digit(p[0])? << 4) | digit(p[1])?))
        .collect()
}

/// The initial table size of a `java.util.HashMap`.
pub const JAVA_HASH_MAP_INITIAL_CAPACITY: usize = 16;

/// Java's `String.hashCode()`: `s[0]*31^(n-1) + ... + s[n-1]` over UTF-16 code units, with
/// 32-bit wrap-around.
pub fn java_string_hash(s: &str) -> i32 {
    s.encode_utf16()
        .fold(0i32, |h, c| h.wrapping_mul(31).wrapping_add(c as i32))
}

/// The iteration order of a `java.util.HashMap<String, _>` filled with `keys` in this order
/// (indices into `keys`): by bucket (`(h ^ h >>> 16) & (capacity - 1)`), then by insertion
/// order within a bucket. The table size is `min_capacity`, doubled while the entries fill
/// more than 3/4 of it.
///
/// The one implementation of this order: transaction metadata lists its data collections in
/// it, hstore values (`pg::types::hstore`) list their pairs in it, and the offsets' JSON
/// (`offsets::store`) lists its fields in it, as Kafka Connect writes Debezium's offset map.
pub fn java_hash_map_order<'a>(
    keys: impl Iterator<Item = &'a str>,
    min_capacity: usize,
) -> Vec<usize> {
    java_hash_map_order_from(keys, min_capacity.max(JAVA_HASH_MAP_INITIAL_CAPACITY))
}

/// [`java_hash_map_order`] for a map whose table starts at `capacity` (a power of two, any
/// size: `new HashMap<>(otherMap)` sizes it for the other map's entries) and doubles while the
/// entries exceed its threshold (`capacity * 3 / 4`, rounded down).
pub fn java_hash_map_order_from<'a>(
    keys: impl Iterator<Item = &'a str>,
    capacity: usize,
) -> Vec<usize> {
    let hashes: Vec<u32> = keys
        .map(|k| {
            let h = java_string_hash(k) as u32;
            h ^ (h >> 16)
        })
        .collect();
    let mut capacity = capacity.max(1);
    while hashes.len() > capacity * 3 / 4 {
        capacity *= 2;
    }
    let mask = (capacity - 1) as u32;
    let mut order: Vec<usize> = (0..hashes.len()).collect();
    order.sort_by_key(|&i| hashes[i] & mask);
    order
}

/// A float or double as Java's `Float.toString`/`Double.toString` writes it (shortest
/// round-tripping digits, at least one fraction digit, `E` notation outside 10^-3..10^7;
/// `NaN`, `Infinity`, `-Infinity`). `single`: the value is a `float`.
pub fn java_float_text(v: f64, single: bool) -> String {
    if v.is_nan() {
        return "NaN".into();
    }
    if v.is_infinite() {
        return if v > 0.0 {
            "Infinity".into()
        } else {
            "-Infinity".into()
        };
    }
    if v == 0.0 {
        return if v.is_sign_negative() {
            "-0.0".into()
        } else {
            "0.0".into()
        };
    }
    let mut sci = if single {
        format!("{:e}", (v as f32).abs())
    } else {
        format!("{:e}", v.abs())
    };
    // Java prints at least two significant digits: when the shortest form has one, it takes
    // the two-digit decimal closest to the value (4.9E-324, not 5.0E-324).
    if !sci
        .split_once('e')
        .map_or(sci.as_str(), |(m, _)| m)
        .contains('.')
    {
        sci = if single {
            format!("{:.1e}", (v as f32).abs())
        } else {
            format!("{:.1e}", v.abs())
        };
    }
    let (mant, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let mut digits: String = mant.chars().filter(|c| *c != '.').collect();
    while digits.len() > 1 && digits.ends_with('0') {
        digits.pop();
    }
    let mut s = String::new();
    if v < 0.0 {
        s.push('-');
    }
    let abs = v.abs();
    if (1e-3..1e7).contains(&abs) {
        if exp >= 0 {
            let int_len = exp as usize + 1;
            if digits.len() <= int_len {
                s.push_str(&digits);
                s.extend(std::iter::repeat_n('0', int_len - digits.len()));
                s.push_str(".0");
            } else {
                s.push_str(&digits[..int_len]);
                s.push('.');
                s.push_str(&digits[int_len..]);
            }
        } else {
            s.push_str("0.");
            s.extend(std::iter::repeat_n('0', (-exp - 1) as usize));
            s.push_str(&digits);
        }
    } else {
        s.push_str(&digits[..1]);
        s.push('.');
        if digits.len() > 1 {
            s.push_str(&digits[1..]);
        } else {
            s.push('0');
        }
        s.push('E');
        s.push_str(&exp.to_string());
    }
    s
}

/// Days from 1970-01-01 to the proleptic Gregorian date (astronomical year numbering).
pub fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let m = m as i64;
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + d as i64 - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146097 + doe - 719468
}

/// The date of a day number since 1970-01-01: (astronomical year, month, day).
pub fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719468;
    let era = z.div_euclid(146097);
    let doe = z - era * 146097;
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

/// A compiled replacement: literal text and group references.
#[derive(Debug, Clone, PartialEq)]
enum Piece {
    Lit(String),
    Group(usize),
}

/// A regex with a Java replacement, applied as `matches()` then `replaceFirst()` (Kafka's
/// RegexRouter, the outbox EventRouter's route, ByLogicalTableRouter and the regex topic
/// naming strategies).
#[derive(Debug, Clone)]
pub struct TopicRewrite {
    full: Regex,
    find: Regex,
    pieces: Vec<Piece>,
}

impl TopicRewrite {
    /// Compiles `regex` and `replacement`; the error says what is wrong (without the key).
    pub fn new(regex: &str, replacement: &str) -> Result<Self, String> {
        let find = Regex::new(regex).map_err(|e| {
            format!(
                "is not a regular expression pgcdc can compile (Java look-around and back-references are not supported): {e}")
        })?;
        let full = crate::util::full_match_regex(regex, false)
            .map_err(|e| format!("is not a regular expression pgcdc can compile: {e}"))?;
        let pieces = parse_replacement(&find, replacement)?;
        Ok(TopicRewrite { full, find, pieces })
    }

    /// The rewritten `input`, or `None` when the regex does not match all of it.
    pub fn rewrite(&self, input: &str) -> Option<String> {
        if !self.full.is_match(input) {
            return None;
        }
        let caps = self.find.captures(input)?;
        let m = caps.get(0)?;
        let mut out = String::with_capacity(input.len() + 16);
        out.push_str(&input[..m.start()]);
        for p in &self.pieces {
            match p {
                Piece::Lit(s) => out.push_str(s),
                Piece::Group(i) => {
                    if let Some(g) = caps.get(*i) {
                        out.push_str(g.as_str());
                    }
                }
            }
        }
        out.push_str(&input[m.end()..]);
        Some(out)
    }
}

/// Parses a Java `Matcher` replacement string against the groups of `re`.
fn parse_replacement(re: &Regex, s: &str) -> Result<Vec<Piece>, String> {
    let groups = re.captures_len() - 1;
    let chars: Vec<char> = s.chars().collect();
    let mut out = Vec::new();
    let mut lit = String::new();
    let mut i = 0;
    while i < chars.len() {
        match chars[i] {
            '\\' => {
                i += 1;
                let Some(c) = chars.get(i) else {
                    return Err("ends with '\\': the character to be escaped is missing".into());
                };
                lit.push(*c);
                i += 1;
            }
            '$' => {
                i += 1;
                let Some(&c) = chars.get(i) else {
                    return Err("ends with '$': the group reference is missing".into());
                };
                let group = if c == '{' {
                    i += 1;
                    let start = i;
                    while chars.get(i).is_some_and(|c| c.is_ascii_alphanumeric()) {
                        i += 1;
                    }
                    let name: String = chars[start..i].iter().collect();
                    if name.is_empty() {
                        return Err("has a '${}' group reference with an empty name".into());
                    }
                    if chars.get(i) != Some(&'}') {
                        return Err(format!(
                            "has a '${{{name}' group reference without its '}}'"
                        ));
                    }
                    i += 1;
                    if name.starts_with(|c: char| c.is_ascii_digit()) {
                        return Err(format!("names group {{{name}}}, which starts with a digit"));
                    }
                    re.capture_names()
                        .position(|n| n == Some(name.as_str()))
                        .ok_or_else(|| {
                            format!("refers to group {{{name}}}, which the regex does not define")
                        })?
                } else {
                    let Some(d) = c.to_digit(10) else {
                        return Err(format!(
                            "has an illegal group reference '${c}' (write \\$ for a literal $)"
                        ));
                    };
                    let mut n = d as usize;
                    i += 1;
                    while let Some(d) = chars.get(i).and_then(|c| c.to_digit(10)) {
                        let next = n * 10 + d as usize;
                        if next > groups {
                            break;
                        }
                        n = next;
                        i += 1;
                    }
                    if n > groups {
                        return Err(format!(
                            "refers to group {n}, but the regex has {groups} group(s)"
                        ));
                    }
                    n
                };
                if !lit.is_empty() {
                    out.push(Piece::Lit(std::mem::take(&mut lit)));
                }
                out.push(Piece::Group(group));
            }
            c => {
                lit.push(c);
                i += 1;
            }
        }
    }
    if !lit.is_empty() {
        out.push(Piece::Lit(lit));
    }
    Ok(out)
}

/// Kafka's longest topic name, in characters.
pub const MAX_TOPIC_LENGTH: usize = 249;

/// Why Kafka would refuse `topic` as a topic name (empty, `.` or `..`, over
/// [`MAX_TOPIC_LENGTH`] characters, or a character outside `[A-Za-z0-9._-]`), or `None`.
pub fn topic_name_problem(topic: &str) -> Option<String> {
    if topic.is_empty() || topic == "." || topic == ".." {
        return Some(format!("\"{topic}\" is not a valid topic name"));
    }
    if topic.len() > MAX_TOPIC_LENGTH {
        return Some(format!(
            "topic name {topic} has {} characters, over Kafka's limit of {MAX_TOPIC_LENGTH}",
            topic.len()
        ));
    }
    let bad = topic
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-')))?;
    Some(format!(
        "topic name {topic:?} has the character {bad:?}, which Kafka does not allow (only letters, digits, '.', '_' and '-')"
    ))
}

#[cfg(test)]
mod tests {
    #[test]
    fn avro_name_adjustment_follows_debezium() {
        use super::NameAdjustment::*;
        assert_eq!(Avro.schema("test-server.db.t.Key"), "test_server.db.t.Key");
        assert_eq!(Avro.field("my.col-1"), "my_col_1");
        assert_eq!(Avro.field("24ColumnName"), "_24ColumnName");
        assert_eq!(Avro.field("été"), "_t_");
        assert_eq!(Avro.field("ok_name"), "ok_name");
        assert_eq!(
            AvroUnicode.schema("_hello_语言."),
            "_u005fhello_u005f_u8bed_u8a00."
        );
        assert_eq!(AvroUnicode.field("a.b"), "a_u002eb");
        assert_eq!(AvroUnicode.field("1a"), "_u0031a");
        assert_eq!(None.field("a-b"), "a-b");
        assert_eq!(AvroUnicode.field("xāи"), "x_u101_u438");
        assert_eq!(AvroUnicode.field("a\tb"), "a_u009b");
    }

    use super::*;

    #[test]
    fn identifiers_and_literals_are_quoted_with_doubled_quotes() {
        assert_eq!(quote_ident("a\"b"), "\"a\"\"b\"");
        assert_eq!(quote_literal("it's"), "'it''s'");
    }

    #[test]
    fn regexes_match_whole_names_and_errors_are_one_line() {
        let r = full_match_regex("public\\.t.*", true).unwrap();
        assert!(r.is_match("PUBLIC.tab"));
        assert!(!r.is_match("xpublic.tab"));
        let e = full_match_regex("(a", false).unwrap_err();
        assert!(!e.contains('\n') && e.contains("at character"), "{e}");
    }

    #[test]
    fn regex_lists_split_on_unescaped_commas() {
        assert_eq!(split_regex_list(r"a\,b, c ,,d"), vec!["a,b", "c", "d"]);
    }

    #[test]
    fn closest_of_suggests_near_words_only() {
        let words = ["tombstones.on.delete", "database.hostname"];
        assert_eq!(
            closest_of("tombstone.on.delete", words.iter().copied()),
            Some("tombstones.on.delete")
        );
        assert_eq!(
            closest_of("completely.unrelated.thing.here", words.iter().copied()),
            None
        );
    }

    #[test]
    fn hex_decodes_pairs_and_refuses_odd_or_non_hex_text() {
        assert_eq!(decode_hex("00fF10"), Some(vec![0, 255, 16]));
        assert_eq!(decode_hex("abc"), None);
        assert_eq!(decode_hex("zz"), None);
    }

    #[test]
    fn topic_naming_strategies_name_and_escape_as_debezium() {
        let n = |without_schema, unicode| TopicNaming {
            without_schema,
            unicode,
            regex: None,
        };
        assert_eq!(
            n(false, false).data_topic("db", ".", "public", "t x"),
            "db.public.t_x"
        );
        assert_eq!(
            n(true, false).data_topic("db", ".", "public", "t_x"),
            "db.t_x"
        );
        assert_eq!(
            n(true, true).data_topic("db", ".", "public", "t_x é"),
            "db.t_u005fx_u0020_u00e9"
        );
        assert_eq!(n(false, true).data_topic("db", "-", "s", "Ā"), "db-s-_u100");
        assert_eq!(n(false, true).sanitize(".."), "_u002e_u002e");
    }

    #[test]
    fn the_regex_strategies_rewrite_the_sanitised_topic_and_name_the_physical_table() {
        let naming = |key_rewrite: Option<TopicRewrite>| TopicNaming {
            without_schema: false,
            unicode: false,
            regex: Some(std::sync::Arc::new(RegexNaming {
                topic: TopicRewrite::new(r"(.*)\.shard_\d+", "$1.shards").unwrap(),
                key_field: Some("__dbz__physicalTableIdentifier".into()),
                key_rewrite,
            })),
        };
        let n = naming(None);
        assert_eq!(
            n.data_topic("db", ".", "public", "shard_1"),
            "db.public.shards"
        );
        assert_eq!(n.data_topic("db", ".", "public", "t x"), "db.public.t_x");
        assert_eq!(
            n.key_field("db", ".", "public", "t x"),
            Some((
                "__dbz__physicalTableIdentifier".into(),
                "db.public.t x".into()
            )),
            "the key names the physical table, unsanitised"
        );
        let n = naming(Some(TopicRewrite::new(r".*\.(shard_\d+)", "$1").unwrap()));
        assert_eq!(
            n.key_field("db", ".", "public", "shard_7").unwrap().1,
            "shard_7"
        );
        assert_eq!(
            n.key_field("db", ".", "other", "t").unwrap().1,
            "db.other.t"
        );
    }
}
