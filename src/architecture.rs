//! Checks of the crate's own structure, run with the unit tests (and so by CI):
//!
//! - **dependencies point one way**: each top-level module may import only the modules
//!   [`ALLOWED`] lists for it (see `docs/architecture.md` for why);
//! - **the pipeline stays readable**: no function in `src/pipeline/` is longer than
//!   [`MAX_PIPELINE_FN_LINES`] lines;
//! - **one error classifier**: no SQLSTATE code is written outside `src/error.rs`;
//! - **code lines fit**: no code line in `src/` or `tests/` is over [`MAX_CODE_LINE`]
//!   characters; a line that is the text of a string literal (an error message rustfmt
//!   cannot wrap) or a comment is exempt;
//! - **a key name is written once**: a string literal that is exactly a configuration key
//!   appears only in the registry (`src/config/keys.rs`); parsers, messages and other layers
//!   use its constants, so renaming or retiring a key is one edit there.
//!
//! Test code (files named `tests.rs`, `*_tests.rs`, `testutil.rs` and `fixture.rs`, files
//! under a `tests/` directory of a module,
//! `#[cfg(test)]` modules, this file and `docs_links.rs`) is not checked: tests may reach across layers to
//! build their inputs.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// For each top-level module (file or directory under `src/`), the top-level modules it may
/// import. A module may always import itself; modules not listed may import nothing.
pub const ALLOWED: &[(&str, &[&str])] = &[
    ("error", &[]),
    ("lsn", &[]),
    ("util", &[]),
    ("config", &["error", "lsn", "util"]),
    ("event", &["error", "lsn", "util"]),
    ("offsets", &["error", "lsn", "util"]),
    // The source side knows nothing of Kafka, converters or transforms.
    ("pg", &["error", "lsn", "util", "config", "event"]),
    ("convert", &["error", "lsn", "util", "config", "event"]),
    // The schema registry client speaks HTTP; it knows configs and errors, not records.
    ("registry", &["error", "util", "config"]),
    // Transforms may render JSON text with the converter's writer (both are pure).
    (
        "transform",
        &["error", "lsn", "util", "config", "event", "convert"],
    ),
    // The sink sees records and ack tokens, never PostgreSQL types or the event model.
    (
        "sink",
        &["error", "lsn", "util", "config", "convert", "offsets"],
    ),
    (
        "pipeline",
        &[
            "error",
            "lsn",
            "util",
            "config",
            "event",
            "offsets",
            "pg",
            "convert",
            "transform",
            "sink",
            "registry",
        ],
    ),
    // The worker keeps connectors by name and runs them through the pipeline; its config
    // store may be a Kafka topic, which the sink's clients read and write.
    (
        "worker",
        &[
            "error", "lsn", "util", "config", "offsets", "sink", "pipeline",
        ],
    ),
    // The REST API shows the worker (and the counters its connectors' handles give).
    (
        "rest",
        &[
            "error", "lsn", "util", "config", "offsets", "pipeline", "worker",
        ],
    ),
    ("lib", &["error"]),
    // The CLI names the library as `pgcdc::`, not `crate::`.
    ("main", &[]),
];

/// The longest a function in `src/pipeline/` may be, in lines (signature to closing brace).
pub const MAX_PIPELINE_FN_LINES: usize = 100;

/// The longest code line allowed, in characters (rustfmt wraps at 100; this catches what
/// it cannot).
pub const MAX_CODE_LINE: usize = 120;

fn src_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// Every `.rs` file under `dir`, recursively.
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The non-test source of the crate: (path relative to `src/`, top-level module, text without
/// its test modules; line numbers are kept).
fn library_sources() -> Vec<(String, String, String)> {
    let src = src_dir();
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    files.sort();
    let mut out = Vec::new();
    for path in files {
        let rel = path
            .strip_prefix(&src)
            .unwrap_or(&path)
            .to_string_lossy()
            .replace('\\', "/");
        let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or("");
        let test_only = stem.ends_with("tests")
            || matches!(stem, "testutil" | "fixture")
            || rel.contains("/tests/");
        if test_only || stem == "architecture" || stem == "docs_links" {
            continue;
        }
        let top = rel
            .split('/')
            .next()
            .unwrap_or("")
            .trim_end_matches(".rs")
            .to_string();
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        out.push((rel, top, without_tests(&text)));
    }
    out
}

/// `text` with every `#[cfg(test)]` item blanked out (line numbers are kept): a one-line
/// item (`mod tests;`), or an item from its first line to the closing brace at the same
/// indentation.
fn without_tests(text: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let mut keep = vec![true; lines.len()];
    let mut i = 0;
    while i < lines.len() {
        if lines[i].trim() != "#[cfg(test)]" {
            i += 1;
            continue;
        }
        let item = i + 1;
        let end = match lines.get(item) {
            Some(l) if l.trim_end().ends_with(';') => item,
            Some(l) => {
                let close = format!("{}}}", &l[..l.len() - l.trim_start().len()]);
                lines[item..]
                    .iter()
                    .position(|x| x.trim_end() == close)
                    .map_or(lines.len() - 1, |n| item + n)
            }
            None => i,
        };
        keep[i..=end.min(lines.len() - 1)]
            .iter_mut()
            .for_each(|k| *k = false);
        i = end + 1;
    }
    lines
        .iter()
        .zip(keep)
        .map(|(l, k)| {
            if k {
                format!("{l}\n")
            } else {
                "\n".to_string()
            }
        })
        .collect()
}

/// `text` without `//` comments (doc comments included). Good enough for this crate's code:
/// a `//` inside a string literal ends the line early, which only hides text from the checks.
fn strip_comments(text: &str) -> String {
    text.lines()
        .map(|l| match l.find("//") {
            Some(i) if !l[..i].contains('"') => &l[..i],
            _ => l,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The top-level modules `code` names as `crate::<module>`.
fn imported_modules(code: &str) -> Vec<String> {
    let ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let mut found = Vec::new();
    for (i, _) in code.match_indices("crate::") {
        if i > 0 {
            let prev = code.as_bytes()[i - 1];
            if prev.is_ascii_alphanumeric() || matches!(prev, b'_' | b'$' | b':') {
                continue;
            }
        }
        let rest = &code[i + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            // `crate::{a, b::c, d::{e}}`: the first name of each top-level item.
            let mut depth = 0;
            let mut item_start = true;
            for (j, c) in group.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => break,
                    '}' => depth -= 1,
                    ',' if depth == 0 => item_start = true,
                    c if item_start && ident(c) => {
                        item_start = false;
                        found.push(group[j..].chars().take_while(|&c| ident(c)).collect());
                    }
                    c if !c.is_whitespace() => item_start = false,
                    _ => {}
                }
            }
            continue;
        }
        let name: String = rest.chars().take_while(|&c| ident(c)).collect();
        if !name.is_empty() {
            found.push(name);
        }
    }
    found.sort();
    found.dedup();
    found
}

/// External crates a module must not use, by top-level module: the source side never talks
/// to Kafka; the model, the converters and the transforms are pure (no runtime, no
/// sockets); the sink never sees PostgreSQL's client.
pub const FORBIDDEN_CRATES: &[(&str, &[&str])] = &[
    ("pg", &["rdkafka"]),
    ("event", &["tokio", "tokio_postgres", "rdkafka", "socket2"]),
    ("config", &["tokio", "tokio_postgres", "rdkafka", "socket2"]),
    (
        "convert",
        &["tokio", "tokio_postgres", "rdkafka", "socket2", "ureq"],
    ),
    (
        "transform",
        &["tokio", "tokio_postgres", "rdkafka", "socket2"],
    ),
    (
        "offsets",
        &["tokio", "tokio_postgres", "rdkafka", "socket2"],
    ),
    ("sink", &["tokio_postgres", "postgres_protocol"]),
    ("util", &["tokio", "tokio_postgres", "rdkafka"]),
    ("lsn", &["tokio", "tokio_postgres", "rdkafka"]),
];

#[test]
fn pure_layers_use_no_runtime_sockets_or_foreign_clients() {
    let mut violations = Vec::new();
    for (rel, top, code) in library_sources() {
        let Some((_, forbidden)) = FORBIDDEN_CRATES.iter().find(|(m, _)| *m == top) else {
            continue;
        };
        let code = strip_comments(&code);
        for krate in *forbidden {
            let path = format!("{krate}::");
            let used = code.match_indices(&path).any(|(i, _)| {
                i == 0 || {
                    let prev = code.as_bytes()[i - 1];
                    !(prev.is_ascii_alphanumeric() || matches!(prev, b'_' | b':'))
                }
            });
            if used {
                violations.push(format!("src/{rel} uses {krate}"));
            }
        }
    }
    assert!(
        violations.is_empty(),
        "crates used against the layer rules (docs/architecture.md):\n{}",
        violations.join("\n")
    );
}

#[test]
fn every_module_imports_only_the_layers_below_it() {
    let allowed: BTreeMap<&str, &[&str]> = ALLOWED.iter().copied().collect();
    let mut violations = Vec::new();
    for (rel, top, code) in library_sources() {
        let Some(ok) = allowed.get(top.as_str()) else {
            violations.push(format!(
                "src/{rel}: module {top} is not in architecture::ALLOWED"
            ));
            continue;
        };
        for m in imported_modules(&strip_comments(&code)) {
            if m != top && !ok.contains(&m.as_str()) {
                violations.push(format!("src/{rel} imports crate::{m}"));
            }
        }
    }
    assert!(
        violations.is_empty(),
        "imports against the dependency rules (docs/architecture.md):\n{}",
        violations.join("\n")
    );
}

/// Each `fn` in `code` with its first line (1-based) and length in lines: from the line of
/// `fn` to the first later line holding only the closing brace at the same indentation.
fn functions(code: &str) -> Vec<(String, usize, usize)> {
    let lines: Vec<&str> = code.lines().collect();
    let mut out = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let t = line.trim_start();
        let is_fn = ["fn ", "pub fn ", "async fn ", "pub async fn "]
            .iter()
            .chain(&["pub(crate) fn ", "pub(super) fn ", "pub(crate) async fn "])
            .chain(&["pub(super) async fn "])
            .any(|p| t.starts_with(p));
        if !is_fn {
            continue;
        }
        let indent = &line[..line.len() - t.len()];
        let close = format!("{indent}}}");
        if let Some(end) = lines[i + 1..].iter().position(|l| l.trim_end() == close) {
            let name: String = t
                .split("fn ")
                .nth(1)
                .unwrap_or("")
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            out.push((name, i + 1, end + 2));
        }
    }
    out
}

#[test]
fn no_pipeline_function_is_longer_than_the_limit() {
    let mut long = Vec::new();
    let mut count = 0;
    for (rel, top, code) in library_sources() {
        if top != "pipeline" {
            continue;
        }
        for (name, line, len) in functions(&strip_comments(&code)) {
            count += 1;
            if len > MAX_PIPELINE_FN_LINES {
                long.push(format!("src/{rel}:{line} fn {name}: {len} lines"));
            }
        }
    }
    assert!(count > 20, "the check found only {count} functions");
    assert!(
        long.is_empty(),
        "pipeline functions over {MAX_PIPELINE_FN_LINES} lines:\n{}",
        long.join("\n")
    );
}

/// SQLSTATE classes (PostgreSQL's Appendix A): a 5-character literal starting with one of
/// these is taken for an error code.
const SQLSTATE_CLASSES: &[&str] = &[
    "00", "01", "02", "03", "08", "09", "0A", "0B", "0F", "0L", "0P", "0Z", "20", "21", "22", "23",
    "24", "25", "26", "27", "28", "2B", "2D", "2F", "34", "38", "39", "3B", "3D", "3F", "40", "42",
    "44", "53", "54", "55", "57", "58", "72", "F0", "HV", "P0", "XX",
];

#[test]
fn sqlstate_codes_are_written_only_in_the_error_classifier() {
    let mut found = Vec::new();
    for (rel, _, code) in library_sources() {
        if rel == "error.rs" {
            continue;
        }
        for (line, piece) in string_literals(&code) {
            let is_code = piece.len() == 5
                && piece
                    .chars()
                    .all(|c| c.is_ascii_digit() || c.is_ascii_uppercase())
                && SQLSTATE_CLASSES.contains(&&piece[..2]);
            // librdkafka's default queue bound (20,000 messages) is a number, not a code.
            let not_code = rel == "sink/kafka.rs" && piece == "20000";
            if is_code && !not_code {
                found.push(format!("src/{rel}:{line}: \"{piece}\""));
            }
        }
    }
    assert!(
        found.is_empty(),
        "SQLSTATE literals outside src/error.rs (classify them there):\n{}",
        found.join("\n")
    );
}

#[test]
fn key_names_are_written_only_in_the_registry() {
    use crate::config::keys::{KEYS, PREFIXES};
    let names: Vec<&str> = KEYS.iter().chain(PREFIXES).map(|(k, _)| *k).collect();
    let mut found = Vec::new();
    let mut literals = 0;
    for (rel, _, code) in library_sources() {
        if rel == "config/keys.rs" {
            continue;
        }
        for (line, literal) in string_literals(&code) {
            literals += 1;
            let path = format!("src/{rel}");
            if names.contains(&literal.as_str())
                && !NOT_KEYS.contains(&(path.as_str(), literal.as_str()))
            {
                found.push(format!("{path}:{line}: {literal:?}"));
            }
        }
    }
    assert!(
        literals > 1000,
        "the scanner found only {literals} literals"
    );
    assert!(
        found.is_empty(),
        "key names written outside src/config/keys.rs (use the constants of config::keys):\n{}",
        found.join("\n")
    );
}

/// Literals that are a registered name by coincidence, not a use of the key: (file under
/// the crate root, literal).
const NOT_KEYS: &[(&str, &str)] = &[
    // The `name` field of the envelope's `source` block.
    ("src/event/envelope.rs", "name"),
    // The `name` field of a schema change record's columns, and PostgreSQL's `name` type.
    ("src/event/schema_change.rs", "name"),
    // The `name` attribute of Avro's named types and fields, read back from a registry.
    ("src/registry/evolution.rs", "name"),
    // The `name` option of the HasHeaderKey predicate (`predicates.<alias>.name`).
    ("src/transform/predicate.rs", "name"),
    // The `name` attribute of Avro's named types and fields.
    ("src/convert/avro/canonical.rs", "name"),
    // The `name` label Debezium's JMX exporter rules give its metrics (and that a
    // custom.metric.tags key may not take).
    ("src/rest/metrics.rs", "name"),
    ("src/config/runtime.rs", "name"),
    // librdkafka's own property of that name, set on the clients.
    ("src/sink/kafka.rs", "bootstrap.servers"),
    ("src/sink/kafka_admin.rs", "bootstrap.servers"),
];

/// The string literals of Rust source `code` with their line numbers; comments, character
/// literals and lifetimes are skipped. Escapes are kept as written.
fn string_literals(code: &str) -> Vec<(usize, String)> {
    let b: Vec<char> = code.chars().collect();
    let mut out = Vec::new();
    let (mut i, mut line) = (0, 1);
    let is_ident = |c: char| c.is_alphanumeric() || c == '_';
    while i < b.len() {
        let c = b[i];
        if c == '\n' {
            line += 1;
            i += 1;
        } else if c == '/' && b.get(i + 1) == Some(&'/') {
            while i < b.len() && b[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && b.get(i + 1) == Some(&'*') {
            i += 2;
            while i < b.len() && !(b[i] == '*' && b.get(i + 1) == Some(&'/')) {
                line += usize::from(b[i] == '\n');
                i += 1;
            }
            i += 2;
        } else if c == '\'' {
            // 'x', '\n', '\'' or a lifetime.
            if b.get(i + 1) == Some(&'\\') {
                i += 3;
                while i < b.len() && b[i] != '\'' {
                    i += 1;
                }
                i += 1;
            } else if b.get(i + 2) == Some(&'\'') {
                i += 3;
            } else {
                i += 1;
            }
        } else if c == '"' {
            let (start, first_line) = (i + 1, line);
            i += 1;
            while i < b.len() && b[i] != '"' {
                let escaped = b[i] == '\\';
                line += usize::from(b[i] == '\n' || (escaped && b.get(i + 1) == Some(&'\n')));
                i += if escaped { 2 } else { 1 };
            }
            out.push((first_line, b[start..i.min(b.len())].iter().collect()));
            i += 1;
        } else if is_ident(c) {
            let start = i;
            while i < b.len() && is_ident(b[i]) {
                i += 1;
            }
            let word: String = b[start..i].iter().collect();
            let hashes = b[i..].iter().take_while(|&&h| h == '#').count();
            if (word == "r" || word == "br") && b.get(i + hashes) == Some(&'"') {
                // A raw string: ends at '"' followed by as many '#'.
                i += hashes + 1;
                let (start, first_line) = (i, line);
                let closes = |i: usize| {
                    b[i] == '"'
                        && i + hashes < b.len()
                        && b[i + 1..=i + hashes].iter().all(|&h| h == '#')
                };
                while i < b.len() && !closes(i) {
                    line += usize::from(b[i] == '\n');
                    i += 1;
                }
                out.push((first_line, b[start..i.min(b.len())].iter().collect()));
                i += 1 + hashes;
            }
        } else {
            i += 1;
        }
    }
    out
}

/// The 1-based numbers of the lines of `code` that are over [`MAX_CODE_LINE`] characters
/// and are code: they neither start inside a string literal nor begin with a string
/// literal or a comment.
fn long_code_lines(code: &str) -> Vec<usize> {
    let mut inside = std::collections::BTreeSet::new();
    for (first, text) in string_literals(code) {
        inside.extend(first + 1..=first + text.matches('\n').count());
    }
    code.lines()
        .enumerate()
        .map(|(i, l)| (i + 1, l))
        .filter(|&(n, l)| l.chars().count() > MAX_CODE_LINE && !inside.contains(&n))
        .filter(|(_, l)| !is_text(l.trim_start()))
        .map(|(n, _)| n)
        .collect()
}

/// Whether a (trimmed) line is text, not code: a comment, or string literals (each maybe
/// followed by `.into()`, `.to_string()` or `.to_owned()`) separated by nothing but `,` `;`
/// `=>` and closing brackets, the last of which may go on to the next line.
fn is_text(line: &str) -> bool {
    let mut rest = line;
    loop {
        if rest.is_empty() || rest.starts_with("//") {
            return true;
        }
        let Some(after) = after_literal(rest) else {
            return false;
        };
        let Some(mut after) = after else {
            return true;
        };
        for suffix in [".into()", ".to_string()", ".to_owned()"] {
            after = after.strip_prefix(suffix).unwrap_or(after);
        }
        rest = after.trim_start_matches(|c: char| c.is_whitespace() || ",;)]}=>".contains(c));
    }
}

/// The text after the string literal that `line` starts with: `None` when it starts with
/// something else, `Some(None)` when the literal goes on to the next line.
fn after_literal(line: &str) -> Option<Option<&str>> {
    let rest = line.strip_prefix('b').unwrap_or(line);
    if let Some(raw) = rest.strip_prefix('r') {
        let hashes = raw.chars().take_while(|&c| c == '#').count();
        let body = raw[hashes..].strip_prefix('"')?;
        let close = format!("\"{}", "#".repeat(hashes));
        return Some(body.find(&close).map(|i| &body[i + close.len()..]));
    }
    let body = rest.strip_prefix('"')?;
    let mut chars = body.char_indices();
    while let Some((i, c)) = chars.next() {
        match c {
            '\\' => {
                chars.next();
            }
            '"' => return Some(Some(&body[i + 1..])),
            _ => {}
        }
    }
    Some(None)
}

#[test]
fn no_code_line_is_longer_than_the_limit() {
    let mut files = Vec::new();
    rust_files(&src_dir(), &mut files);
    rust_files(&src_dir().with_file_name("tests"), &mut files);
    let mut long = Vec::new();
    for path in files {
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        for n in long_code_lines(&text) {
            long.push(format!("{}:{n}", path.display()));
        }
    }
    assert!(
        long.is_empty(),
        "code lines over {MAX_CODE_LINE} characters (break them before the string, or split \
         the expression): {long:?}"
    );
}

#[test]
fn the_scanner_finds_string_literals_and_skips_comments_and_chars() {
    let code = "let a = \"x.y\"; // \"in.comment\"\nlet c = '\"'; let d = '\\''; fn f<'a>() {}\n\
                let r = r#\"raw \"q\" s\"#; /* \"block\" */ let e = \"es\\\"c\";";
    let found: Vec<(usize, String)> = string_literals(code);
    let want: Vec<(usize, String)> = vec![
        (1, "x.y".into()),
        (3, "raw \"q\" s".into()),
        (3, "es\\\"c".into()),
    ];
    assert_eq!(found, want);
}

#[test]
fn the_checks_see_what_they_check() {
    assert_eq!(
        imported_modules("use crate::pg::x; a::crate::no; crate::sink::Y"),
        ["pg", "sink"]
    );
    assert_eq!(
        imported_modules("use crate::{\n    event::{A, B},\n    lsn, offsets::x };"),
        ["event", "lsn", "offsets"]
    );
    assert!(is_text("\"a \\\" b\"),") && is_text("r#\"x\"#;") && is_text("\"goes on"));
    assert!(!is_text("\"k\" => out.push(x),") && !is_text("call(\"x\")"));
    assert!(is_text("\"a\", \"b\".into()),") && is_text("\"k\" => \"v\","));
    assert!(!is_text("\"a\".into(), x)") && !is_text("return \"a\";") && !is_text("br"));
    let long = format!("    call({});\n", "x".repeat(MAX_CODE_LINE));
    let text = format!("    \"{}\",\n", "x".repeat(MAX_CODE_LINE));
    let code = format!("{long}{text}let s = \"a\n{text}\";\n{long}");
    assert_eq!(
        long_code_lines(&code),
        [1, 6],
        "string text and its continuation are exempt"
    );
    let f = functions("fn a() {\n    x\n}\n    pub async fn b(\n    ) {\n    }\n");
    assert_eq!(f, [("a".to_string(), 1, 3), ("b".to_string(), 4, 3)]);
    assert_eq!(
        without_tests("a\n#[cfg(test)]\nmod t;\nb\n#[cfg(test)]\nfn x() {\n    y\n}\nc\n"),
        "a\n\n\nb\n\n\n\n\nc\n",
        "test items are blanked, the code after them kept, line numbers unchanged"
    );
}
