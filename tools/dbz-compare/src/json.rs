//! A small JSON parser that keeps the byte span of every value, so records can be compared
//! on their exact bytes (number spelling, string escaping, member order) while volatile
//! fields are skipped.

#[derive(Debug)]
pub enum Kind {
    /// Members in document order: (decoded name, value).
    Obj(Vec<(String, Node)>),
    Arr(Vec<Node>),
    Str,
    Num,
    Bool,
    Null,
}

#[derive(Debug)]
pub struct Node {
    pub start: usize,
    pub end: usize,
    pub kind: Kind,
}

impl Node {
    pub fn raw<'a>(&self, doc: &'a [u8]) -> &'a [u8] {
        &doc[self.start..self.end]
    }

    pub fn get(&self, name: &str) -> Option<&Node> {
        match &self.kind {
            Kind::Obj(m) => m.iter().find(|(k, _)| k == name).map(|(_, v)| v),
            _ => None,
        }
    }

    /// The decoded text of a string node.
    pub fn as_str(&self, doc: &[u8]) -> Option<String> {
        match self.kind {
            Kind::Str => decode_string(&doc[self.start..self.end]),
            _ => None,
        }
    }
}

/// Decodes a JSON string literal including its quotes.
pub fn decode_string(lit: &[u8]) -> Option<String> {
    if lit.len() < 2 || lit[0] != b'"' || lit[lit.len() - 1] != b'"' {
        return None;
    }
    let body = &lit[1..lit.len() - 1];
    let mut out: Vec<u8> = Vec::with_capacity(body.len());
    let mut i = 0;
    while i < body.len() {
        let c = body[i];
        if c != b'\\' {
            out.push(c);
            i += 1;
            continue;
        }
        let e = *body.get(i + 1)?;
        i += 2;
        match e {
            b'"' => out.push(b'"'),
            b'\\' => out.push(b'\\'),
            b'/' => out.push(b'/'),
            b'b' => out.push(8),
            b'f' => out.push(12),
            b'n' => out.push(b'\n'),
            b'r' => out.push(b'\r'),
            b't' => out.push(b'\t'),
            b'u' => {
                let hex = std::str::from_utf8(body.get(i..i + 4)?).ok()?;
                let mut cp = u32::from_str_radix(hex, 16).ok()?;
                i += 4;
                if (0xD800..0xDC00).contains(&cp)
                    && body.get(i) == Some(&b'\\')
                    && body.get(i + 1) == Some(&b'u')
                {
                    let hex2 = std::str::from_utf8(body.get(i + 2..i + 6)?).ok()?;
                    let lo = u32::from_str_radix(hex2, 16).ok()?;
                    if (0xDC00..0xE000).contains(&lo) {
                        cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                        i += 6;
                    }
                }
                let ch = char::from_u32(cp).unwrap_or('\u{FFFD}');
                let mut buf = [0u8; 4];
                out.extend_from_slice(ch.encode_utf8(&mut buf).as_bytes());
            }
            _ => return None,
        }
    }
    String::from_utf8(out).ok()
}

pub fn parse(doc: &[u8]) -> Result<Node, String> {
    let mut p = Parser {
        b: doc,
        i: 0,
        depth: 0,
    };
    p.ws();
    let n = p.value()?;
    p.ws();
    if p.i != doc.len() {
        return Err(format!("trailing bytes at {}", p.i));
    }
    Ok(n)
}

struct Parser<'a> {
    b: &'a [u8],
    i: usize,
    depth: usize,
}

impl Parser<'_> {
    fn ws(&mut self) {
        while self.i < self.b.len() && matches!(self.b[self.i], b' ' | b'\t' | b'\n' | b'\r') {
            self.i += 1;
        }
    }

    fn err<T>(&self, what: &str) -> Result<T, String> {
        Err(format!("{what} at byte {}", self.i))
    }

    fn value(&mut self) -> Result<Node, String> {
        let start = self.i;
        let Some(&c) = self.b.get(self.i) else {
            return self.err("unexpected end");
        };
        let kind = match c {
            b'{' => {
                self.depth += 1;
                if self.depth > 512 {
                    return self.err("nesting too deep");
                }
                self.i += 1;
                let mut members = Vec::new();
                self.ws();
                if self.b.get(self.i) == Some(&b'}') {
                    self.i += 1;
                } else {
                    loop {
                        self.ws();
                        let ks = self.i;
                        self.string()?;
                        let name = decode_string(&self.b[ks..self.i]).ok_or("bad member name")?;
                        self.ws();
                        if self.b.get(self.i) != Some(&b':') {
                            return self.err("expected ':'");
                        }
                        self.i += 1;
                        self.ws();
                        let v = self.value()?;
                        members.push((name, v));
                        self.ws();
                        match self.b.get(self.i) {
                            Some(b',') => self.i += 1,
                            Some(b'}') => {
                                self.i += 1;
                                break;
                            }
                            _ => return self.err("expected ',' or '}'"),
                        }
                    }
                }
                self.depth -= 1;
                Kind::Obj(members)
            }
            b'[' => {
                self.depth += 1;
                if self.depth > 512 {
                    return self.err("nesting too deep");
                }
                self.i += 1;
                let mut items = Vec::new();
                self.ws();
                if self.b.get(self.i) == Some(&b']') {
                    self.i += 1;
                } else {
                    loop {
                        self.ws();
                        items.push(self.value()?);
                        self.ws();
                        match self.b.get(self.i) {
                            Some(b',') => self.i += 1,
                            Some(b']') => {
                                self.i += 1;
                                break;
                            }
                            _ => return self.err("expected ',' or ']'"),
                        }
                    }
                }
                self.depth -= 1;
                Kind::Arr(items)
            }
            b'"' => {
                self.string()?;
                Kind::Str
            }
            b't' => {
                self.lit(b"true")?;
                Kind::Bool
            }
            b'f' => {
                self.lit(b"false")?;
                Kind::Bool
            }
            b'n' => {
                self.lit(b"null")?;
                Kind::Null
            }
            b'-' | b'0'..=b'9' => {
                self.i += 1;
                while self.i < self.b.len()
                    && matches!(
                        self.b[self.i],
                        b'0'..=b'9' | b'.' | b'e' | b'E' | b'+' | b'-'
                    )
                {
                    self.i += 1;
                }
                Kind::Num
            }
            // Jackson can be configured to write NaN/Infinity bare; accept them as numbers.
            b'N' => {
                self.lit(b"NaN")?;
                Kind::Num
            }
            b'I' => {
                self.lit(b"Infinity")?;
                Kind::Num
            }
            _ => return self.err("unexpected byte"),
        };
        Ok(Node {
            start,
            end: self.i,
            kind,
        })
    }

    fn lit(&mut self, w: &[u8]) -> Result<(), String> {
        if self.b[self.i..].starts_with(w) {
            self.i += w.len();
            Ok(())
        } else {
            self.err("bad literal")
        }
    }

    fn string(&mut self) -> Result<(), String> {
        if self.b.get(self.i) != Some(&b'"') {
            return self.err("expected string");
        }
        self.i += 1;
        while self.i < self.b.len() {
            match self.b[self.i] {
                b'\\' => self.i += 2,
                b'"' => {
                    self.i += 1;
                    return Ok(());
                }
                _ => self.i += 1,
            }
        }
        self.err("unterminated string")
    }
}
