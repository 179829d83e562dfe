//! Checks, with the unit tests, that the documentation's relative links resolve: every link in
//! `README.md` and `docs/*.md` to a path of the repository names a file or directory that
//! exists, and a `#anchor` names a heading of the target page, by GitHub's rule for heading
//! anchors (see [`slug`]). External links (anything with a scheme: `https:`, `mailto:`, ...)
//! are not checked. Links inside code blocks and code spans are not links.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;

/// What the checker needs of the repository; paths are relative to its root, `/`-separated.
trait Repo {
    /// Whether a file or directory exists at `path`.
    fn exists(&self, path: &str) -> bool;
    /// The text of the file at `path`, if it is one.
    fn text(&self, path: &str) -> Option<String>;
}

/// The repository on disk, at the crate root.
struct Disk(PathBuf);

impl Repo for Disk {
    fn exists(&self, path: &str) -> bool {
        self.0.join(path).exists()
    }
    fn text(&self, path: &str) -> Option<String> {
        std::fs::read_to_string(self.0.join(path)).ok()
    }
}

/// An in-memory repository for the tests: file path → text.
impl Repo for BTreeMap<&str, &str> {
    fn exists(&self, path: &str) -> bool {
        let dir = format!("{}/", path.trim_end_matches('/'));
        path.is_empty() || self.contains_key(path) || self.keys().any(|k| k.starts_with(&dir))
    }
    fn text(&self, path: &str) -> Option<String> {
        self.get(path).map(|t| t.to_string())
    }
}

/// The pages checked: `README.md` and every `docs/*.md`, sorted.
fn pages(root: &std::path::Path) -> Vec<String> {
    let mut out = vec!["README.md".to_string()];
    let entries = std::fs::read_dir(root.join("docs")).expect("docs/ is readable");
    let mut docs: Vec<String> = entries
        .flatten()
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|n| n.ends_with(".md"))
        .map(|n| format!("docs/{n}"))
        .collect();
    docs.sort();
    out.extend(docs);
    out
}

/// GitHub's anchor for a heading's text: the text as rendered (a link's target left out),
/// lower case, with every character that is not a letter, a digit, `-`, `_` or a space
/// removed, and each space turned into `-`.
fn slug(heading: &str) -> String {
    let chars: Vec<char> = heading.trim().chars().collect();
    let mut rendered = String::new();
    let mut i = 0;
    while i < chars.len() {
        if chars[i] == ']' && chars.get(i + 1) == Some(&'(') {
            i = closing_paren(&chars, i + 2);
        } else {
            rendered.push(chars[i]);
        }
        i += 1;
    }
    rendered
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

/// The index of the `)` that closes a parenthesis opened just before `start` (or the last
/// index when none does).
fn closing_paren(chars: &[char], start: usize) -> usize {
    let mut depth = 1;
    for (j, &c) in chars.iter().enumerate().skip(start) {
        match c {
            '(' => depth += 1,
            ')' => {
                depth -= 1;
                if depth == 0 {
                    return j;
                }
            }
            _ => {}
        }
    }
    chars.len().saturating_sub(1)
}

/// The lines of `markdown` with their 1-based numbers, each with whether it lies in a fenced
/// code block (the fences included).
fn lines_with_fences(markdown: &str) -> Vec<(usize, &str, bool)> {
    let mut fence: Option<char> = None;
    let mut out = Vec::new();
    for (i, line) in markdown.lines().enumerate() {
        let t = line.trim_start();
        let marker = ['`', '~']
            .into_iter()
            .find(|&c| t.starts_with(&c.to_string().repeat(3)));
        match (fence, marker) {
            (None, Some(c)) => {
                fence = Some(c);
                out.push((i + 1, line, true));
            }
            (Some(open), Some(c)) if c == open => {
                fence = None;
                out.push((i + 1, line, true));
            }
            (f, _) => out.push((i + 1, line, f.is_some())),
        }
    }
    out
}

/// The anchors of the headings of `markdown` (ATX headings outside code blocks), in order;
/// a repeated one gets `-1`, `-2`, ... as on GitHub.
fn anchors(markdown: &str) -> Vec<String> {
    let mut seen: HashMap<String, usize> = HashMap::new();
    let mut out = Vec::new();
    for (_, line, in_code) in lines_with_fences(markdown) {
        let Some(text) = heading_text(line).filter(|_| !in_code) else {
            continue;
        };
        let base = slug(text);
        let n = seen.entry(base.clone()).or_insert(0);
        out.push(if *n == 0 {
            base.clone()
        } else {
            format!("{base}-{n}")
        });
        *n += 1;
    }
    out
}

/// The text of an ATX heading line (`## Text ##`), or `None` for any other line.
fn heading_text(line: &str) -> Option<&str> {
    let t = line.trim_start_matches(' ');
    if line.len() - t.len() > 3 {
        return None;
    }
    let level = t.chars().take_while(|&c| c == '#').count();
    let rest = &t[level..];
    if !(1..=6).contains(&level) || !(rest.is_empty() || rest.starts_with([' ', '\t'])) {
        return None;
    }
    let rest = rest.trim();
    let closed = rest.trim_end_matches('#');
    Some(if closed.is_empty() || closed.ends_with(' ') {
        closed.trim_end()
    } else {
        rest
    })
}

/// The targets of the links and images of `markdown` (`[text](target)`, `![alt](target)` and
/// reference definitions `[name]: target`), each with the line its target starts on; code
/// blocks and code spans are skipped.
fn links(markdown: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut paragraph: Vec<(usize, &str)> = Vec::new();
    for (n, line, in_code) in lines_with_fences(markdown) {
        if in_code || line.trim().is_empty() {
            out.extend(paragraph_links(&paragraph));
            paragraph.clear();
        } else {
            paragraph.push((n, line));
        }
    }
    out.extend(paragraph_links(&paragraph));
    out
}

/// The link targets of one paragraph (its lines with their numbers).
fn paragraph_links(lines: &[(usize, &str)]) -> Vec<(usize, String)> {
    let Some(&(first, _)) = lines.first() else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for &(n, line) in lines {
        let t = line.trim_start();
        let definition = t
            .find(']')
            .filter(|&e| t.starts_with('[') && t[e..].starts_with("]:"));
        if let Some(target) = definition.and_then(|e| t[e + 2..].split_whitespace().next()) {
            out.push((n, target.to_string()));
        }
    }
    let text: Vec<&str> = lines.iter().map(|(_, l)| *l).collect();
    let chars = without_code_spans(&text.join("\n"));
    let line_of = |i: usize| first + chars[..i].iter().filter(|&&c| c == '\n').count();
    let mut i = 0;
    while i + 1 < chars.len() {
        if chars[i] == ']' && chars[i + 1] == '(' {
            let end = closing_paren(&chars, i + 2);
            let inside: String = chars[i + 2..end.max(i + 2)].iter().collect();
            let inside = inside.trim();
            let target = match inside.strip_prefix('<') {
                Some(rest) => rest.split('>').next().unwrap_or(""),
                None => inside.split_whitespace().next().unwrap_or(""),
            };
            out.push((line_of(i), target.to_string()));
            i = end;
        }
        i += 1;
    }
    out
}

/// The characters of `text` with each code span (a run of backticks up to the next run of
/// the same length) blanked to spaces; line breaks are kept.
fn without_code_spans(text: &str) -> Vec<char> {
    let mut chars: Vec<char> = text.chars().collect();
    let run_at = |c: &[char], i: usize| c[i..].iter().take_while(|&&x| x == '`').count();
    let mut i = 0;
    while i < chars.len() {
        let n = run_at(&chars, i);
        if n == 0 {
            i += 1;
            continue;
        }
        let mut j = i + n;
        let close = loop {
            if j >= chars.len() {
                break None;
            }
            let m = run_at(&chars, j);
            if m == n {
                break Some(j);
            }
            j += m.max(1);
        };
        match close {
            Some(j) => {
                for c in &mut chars[i..j + n] {
                    if *c != '\n' {
                        *c = ' ';
                    }
                }
                i = j + n;
            }
            None => i += n,
        }
    }
    chars
}

/// Whether `target` has a URI scheme (`https:`, `mailto:`, ...): an external link.
fn is_external(target: &str) -> bool {
    let scheme = target.split(':').next().unwrap_or("");
    target.contains(':')
        && scheme.starts_with(|c: char| c.is_ascii_alphabetic())
        && scheme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "+.-".contains(c))
}

/// `%XX` escapes of a link path decoded.
fn percent_decoded(path: &str) -> String {
    let bytes = path.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok());
        match hex.and_then(|h| u8::from_str_radix(h, 16).ok()) {
            Some(b) if bytes[i] == b'%' => {
                out.push(b);
                i += 3;
            }
            _ => {
                out.push(bytes[i]);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The repository path a link path of `page` points at (`/`-rooted paths from the root, the
/// others from the page's directory), or `None` when it climbs out of the repository.
fn resolve(page: &str, path: &str) -> Option<String> {
    if path.is_empty() {
        return Some(page.to_string());
    }
    let mut parts: Vec<&str> = page.split('/').collect();
    parts.pop();
    if path.starts_with('/') {
        parts.clear();
    }
    for part in path.trim_start_matches('/').split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop()?;
            }
            p => parts.push(p),
        }
    }
    Some(parts.join("/"))
}

/// The broken relative links of `page` (`page:line: target: reason`), and how many relative
/// links it has.
fn broken_links(repo: &impl Repo, page: &str) -> (usize, Vec<String>) {
    let text = repo.text(page).unwrap_or_default();
    let mut checked = 0;
    let mut broken = Vec::new();
    for (line, target) in links(&text) {
        if target.is_empty() || is_external(&target) {
            continue;
        }
        checked += 1;
        let (path, anchor) = match target.split_once('#') {
            Some((p, a)) => (p, Some(a)),
            None => (target.as_str(), None),
        };
        let mut report = |why: String| broken.push(format!("{page}:{line}: {target}: {why}"));
        let Some(file) = resolve(page, &percent_decoded(path)) else {
            report("leaves the repository".to_string());
            continue;
        };
        if !repo.exists(&file) {
            report(format!("{file} does not exist"));
            continue;
        }
        let Some(anchor) = anchor else {
            continue;
        };
        let anchor = percent_decoded(anchor);
        if file.ends_with(".md") {
            let found = anchors(&repo.text(&file).unwrap_or_default());
            if !found.contains(&anchor) {
                report(format!("{file} has no heading with the anchor #{anchor}"));
            }
        } else if !is_line_anchor(&anchor) {
            report(format!(
                "{file} is not a markdown page: only #L<n> anchors resolve"
            ));
        }
    }
    (checked, broken)
}

/// Whether `anchor` is GitHub's anchor of a line or line range of a file (`L12`, `L12-L20`).
fn is_line_anchor(anchor: &str) -> bool {
    let line = |s: &str| {
        s.strip_prefix('L')
            .is_some_and(|n| !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()))
    };
    match anchor.split_once('-') {
        Some((a, b)) => line(a) && line(b),
        None => line(anchor),
    }
}

#[test]
fn every_relative_link_in_the_readme_and_docs_resolves() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let repo = Disk(root.clone());
    let pages = pages(&root);
    assert!(pages.len() > 5, "found only the pages {pages:?}");
    let mut checked = 0;
    let mut broken = Vec::new();
    for page in &pages {
        let (n, b) = broken_links(&repo, page);
        checked += n;
        broken.extend(b);
    }
    assert!(
        checked > 30,
        "only {checked} relative links found in {pages:?}"
    );
    assert!(
        broken.is_empty(),
        "broken links in the documentation:\n{}",
        broken.join("\n")
    );
}

#[test]
fn slugs_are_githubs() {
    assert_eq!(
        slug("Preflight: `pgcdc validate`"),
        "preflight-pgcdc-validate"
    );
    assert_eq!(
        slug("Faults, each with a test (`tests/faults.rs` unless named)"),
        "faults-each-with-a-test-testsfaultsrs-unless-named"
    );
    assert_eq!(
        slug("Switching from Debezium, and back"),
        "switching-from-debezium-and-back"
    );
    assert_eq!(slug("How to add…"), "how-to-add");
    assert_eq!(slug("The `snake_case` key"), "the-snake_case-key");
    assert_eq!(slug("Über  A--B"), "über--a--b");
    assert_eq!(slug("See [the page](other.md#x) now"), "see-the-page-now");
    let page = "# Tests\n\n## Setup ##\n```sh\n# not a heading\n```\n### Setup\n#tag\n## Tests\n";
    assert_eq!(anchors(page), ["tests", "setup", "setup-1", "tests-1"]);
}

#[test]
fn links_are_found_outside_code() {
    let page = "Intro [a](a.md), ![img](img/x.png \"title\") and [ext](https://example.org).\n\
                A `[code](span.md)` and ``a ` [tick](t.md) `` are code; [b](<b c.md>)\n\
                spans [two\nlines](two.md#x).\n\n```md\n[fenced](fenced.md)\n```\n\
                [ref]: ref.md\n";
    let found: Vec<(usize, String)> = links(page);
    let expected = [
        (1, "a.md"),
        (1, "img/x.png"),
        (1, "https://example.org"),
        (2, "b c.md"),
        (4, "two.md#x"),
        (9, "ref.md"),
    ];
    let expected: Vec<(usize, String)> =
        expected.iter().map(|(n, t)| (*n, t.to_string())).collect();
    assert_eq!(found, expected);
    assert!(is_external("https://example.org") && is_external("mailto:a@b.c"));
    assert!(!is_external("docs/a.md#x") && !is_external("#x"));
    assert_eq!(
        resolve("docs/a.md", "../README.md").as_deref(),
        Some("README.md")
    );
    assert_eq!(
        resolve("docs/a.md", "/src/lib.rs").as_deref(),
        Some("src/lib.rs")
    );
    assert_eq!(resolve("docs/a.md", "").as_deref(), Some("docs/a.md"));
    assert_eq!(resolve("README.md", "../x.md"), None);
}

#[test]
fn a_broken_link_in_a_sample_is_reported() {
    let readme = "See [a](docs/a.md#second-part), [gone](docs/gone.md),\n\
                  [bad anchor](docs/a.md#third), [dir](src/), [line](src/lib.rs#L3),\n\
                  [own](#top), [web](https://example.org/missing.md) and [out](../x.md).\n\
                  \n# Top\n";
    let a = "# First\n\n## Second part\n\nBack to [the readme](../README.md#top), \
             [self](#first), [nowhere](#none).\n";
    let repo: BTreeMap<&str, &str> = [
        ("README.md", readme),
        ("docs/a.md", a),
        ("src/lib.rs", "//! crate\n"),
    ]
    .into_iter()
    .collect();
    let (checked, broken) = broken_links(&repo, "README.md");
    assert_eq!(checked, 7);
    assert_eq!(
        broken,
        [
            "README.md:1: docs/gone.md: docs/gone.md does not exist",
            "README.md:2: docs/a.md#third: docs/a.md has no heading with the anchor #third",
            "README.md:3: ../x.md: leaves the repository",
        ]
    );
    let (checked, broken) = broken_links(&repo, "docs/a.md");
    assert_eq!(checked, 3);
    assert_eq!(
        broken,
        ["docs/a.md:5: #none: docs/a.md has no heading with the anchor #none"]
    );
}
