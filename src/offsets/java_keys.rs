//! The incremental snapshot's chunk keys as Debezium stores them in its offsets: a Java
//! `Object[]` written by `ObjectOutputStream` (serialization stream version 5), as lowercase
//! hex (`incremental_snapshot_primary_key`, `incremental_snapshot_maximum_key`).
//!
//! Only the element classes that PostgreSQL's JDBC driver returns for the usual key types are
//! written and read: `Integer` (int2, int4), `Long` (int8), `Short`, `String` (text, varchar,
//! char, and every other type as its text), `java.util.UUID` (uuid), and `null`. Anything else
//! in a stored offset (a `BigDecimal` of a numeric key, a `Timestamp`) is an error naming the
//! class, never a guess. Reading never panics on malformed input.

/// One element of a key array.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JavaValue {
    /// `null`.
    Null,
    /// `java.lang.Short`.
    Short(i16),
    /// `java.lang.Integer`.
    Int(i32),
    /// `java.lang.Long`.
    Long(i64),
    /// `java.lang.String`.
    Str(String),
    /// `java.util.UUID` as (most, least) significant bits.
    Uuid(u64, u64),
}

impl JavaValue {
    /// The value as PostgreSQL text (`None` for null).
    pub fn to_text(&self) -> Option<String> {
        match self {
            JavaValue::Null => None,
            JavaValue::Short(v) => Some(v.to_string()),
            JavaValue::Int(v) => Some(v.to_string()),
            JavaValue::Long(v) => Some(v.to_string()),
            JavaValue::Str(s) => Some(s.clone()),
            JavaValue::Uuid(m, l) => Some(uuid::Uuid::from_u64_pair(*m, *l).to_string()),
        }
    }

    /// `Objects.toString(x, "<null>")`, as Debezium's notifications render key elements.
    pub fn display(&self) -> String {
        self.to_text().unwrap_or_else(|| "<null>".to_string())
    }
}

const MAGIC: [u8; 4] = [0xac, 0xed, 0x00, 0x05];
const TC_NULL: u8 = 0x70;
const TC_REFERENCE: u8 = 0x71;
const TC_CLASSDESC: u8 = 0x72;
const TC_OBJECT: u8 = 0x73;
const TC_STRING: u8 = 0x74;
const TC_ARRAY: u8 = 0x75;
const TC_ENDBLOCKDATA: u8 = 0x78;
const TC_LONGSTRING: u8 = 0x7c;
const BASE_HANDLE: u32 = 0x7e0000;
const SC_SERIALIZABLE: u8 = 0x02;

/// A class this module writes: name, serialVersionUID, fields (type code, name), superclass.
struct ClassDef {
    name: &'static str,
    suid: u64,
    fields: &'static [(u8, &'static str)],
    super_class: Option<&'static ClassDef>,
}

const NUMBER: ClassDef = ClassDef {
    name: "java.lang.Number",
    suid: 0x86ac951d0b94e08b,
    fields: &[],
    super_class: None,
};
const INTEGER: ClassDef = ClassDef {
    name: "java.lang.Integer",
    suid: 0x12e2a0a4f7818738,
    fields: &[(b'I', "value")],
    super_class: Some(&NUMBER),
};
const LONG: ClassDef = ClassDef {
    name: "java.lang.Long",
    suid: 0x3b8be490cc8f23df,
    fields: &[(b'J', "value")],
    super_class: Some(&NUMBER),
};
const SHORT: ClassDef = ClassDef {
    name: "java.lang.Short",
    suid: 0x684d37133460da52,
    fields: &[(b'S', "value")],
    super_class: Some(&NUMBER),
};
const UUID: ClassDef = ClassDef {
    name: "java.util.UUID",
    suid: 0xbc9903f7986d852f,
    fields: &[(b'J', "leastSigBits"), (b'J', "mostSigBits")],
    super_class: None,
};
const OBJECT_ARRAY: ClassDef = ClassDef {
    name: "[Ljava.lang.Object;",
    suid: 0x90ce589f1073296c,
    fields: &[],
    super_class: None,
};

/// Writes a serialization stream, tracking the handles of class descriptors already written.
#[derive(Default)]
struct Writer {
    out: Vec<u8>,
    next_handle: u32,
    classes: Vec<(&'static str, u32)>,
}

impl Writer {
    fn utf(&mut self, s: &str) {
        let bytes = modified_utf8(s);
        self.out
            .extend_from_slice(&(bytes.len().min(u16::MAX as usize) as u16).to_be_bytes());
        self.out.extend_from_slice(&bytes);
    }

    fn handle(&mut self) -> u32 {
        let h = self.next_handle;
        self.next_handle += 1;
        h
    }

    fn class_desc(&mut self, class: Option<&'static ClassDef>) {
        let Some(c) = class else {
            self.out.push(TC_NULL);
            return;
        };
        if let Some((_, h)) = self.classes.iter().find(|(n, _)| *n == c.name) {
            let h = *h;
            self.out.push(TC_REFERENCE);
            self.out.extend_from_slice(&(BASE_HANDLE + h).to_be_bytes());
            return;
        }
        self.out.push(TC_CLASSDESC);
        self.utf(c.name);
        self.out.extend_from_slice(&c.suid.to_be_bytes());
        let h = self.handle();
        self.classes.push((c.name, h));
        self.out.push(SC_SERIALIZABLE);
        self.out
            .extend_from_slice(&(c.fields.len() as u16).to_be_bytes());
        for (code, name) in c.fields {
            self.out.push(*code);
            self.utf(name);
        }
        self.out.push(TC_ENDBLOCKDATA);
        self.class_desc(c.super_class);
    }

    fn object(&mut self, class: &'static ClassDef, data: &[u8]) {
        self.out.push(TC_OBJECT);
        self.class_desc(Some(class));
        self.handle();
        self.out.extend_from_slice(data);
    }

    fn value(&mut self, v: &JavaValue) {
        match v {
            JavaValue::Null => self.out.push(TC_NULL),
            JavaValue::Short(x) => self.object(&SHORT, &x.to_be_bytes()),
            JavaValue::Int(x) => self.object(&INTEGER, &x.to_be_bytes()),
            JavaValue::Long(x) => self.object(&LONG, &x.to_be_bytes()),
            JavaValue::Uuid(most, least) => {
                let mut data = least.to_be_bytes().to_vec();
                data.extend_from_slice(&most.to_be_bytes());
                self.object(&UUID, &data)
            }
            JavaValue::Str(s) => {
                let bytes = modified_utf8(s);
                self.handle();
                if bytes.len() <= u16::MAX as usize {
                    self.out.push(TC_STRING);
                    self.out
                        .extend_from_slice(&(bytes.len() as u16).to_be_bytes());
                } else {
                    // Java writes a string over 65,535 bytes as a long string.
                    self.out.push(TC_LONGSTRING);
                    self.out
                        .extend_from_slice(&(bytes.len() as u64).to_be_bytes());
                }
                self.out.extend_from_slice(&bytes);
            }
        }
    }
}

/// Java's modified UTF-8: NUL as two bytes, characters outside the BMP as surrogate pairs.
fn modified_utf8(s: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(s.len());
    for unit in s.encode_utf16() {
        match unit {
            0x0001..=0x007f => out.push(unit as u8),
            0x0000 | 0x0080..=0x07ff => {
                out.push(0xc0 | (unit >> 6) as u8);
                out.push(0x80 | (unit & 0x3f) as u8);
            }
            _ => {
                out.push(0xe0 | (unit >> 12) as u8);
                out.push(0x80 | ((unit >> 6) & 0x3f) as u8);
                out.push(0x80 | (unit & 0x3f) as u8);
            }
        }
    }
    out
}

/// The hex text of `key` (`None`: a null array) as Debezium writes it.
pub fn to_hex(key: Option<&[JavaValue]>) -> String {
    let mut w = Writer::default();
    w.out.extend_from_slice(&MAGIC);
    match key {
        None => w.out.push(TC_NULL),
        Some(values) => {
            w.out.push(TC_ARRAY);
            w.class_desc(Some(&OBJECT_ARRAY));
            w.handle();
            w.out
                .extend_from_slice(&(values.len() as i32).to_be_bytes());
            for v in values {
                w.value(v);
            }
        }
    }
    w.out.iter().map(|b| format!("{b:02x}")).collect()
}

/// Reads a class descriptor's name, fields and superclass while parsing.
#[derive(Clone)]
struct ReadClass {
    name: String,
    fields: Vec<u8>,
    super_class: Option<Box<ReadClass>>,
}

/// Parses a serialization stream of the shapes [`to_hex`] writes.
struct Reader<'a> {
    bytes: &'a [u8],
    pos: usize,
    handles: Vec<Option<ReadHandle>>,
}

#[derive(Clone)]
enum ReadHandle {
    Class(ReadClass),
    Value(JavaValue),
}

impl Reader<'_> {
    fn take(&mut self, n: usize) -> Result<&[u8], String> {
        let end = self.pos.checked_add(n).filter(|&e| e <= self.bytes.len());
        let Some(end) = end else {
            return Err("the serialized key ends early".to_string());
        };
        let s = &self.bytes[self.pos..end];
        self.pos = end;
        Ok(s)
    }

    fn u8(&mut self) -> Result<u8, String> {
        Ok(self.take(1)?[0])
    }

    fn be<const N: usize>(&mut self) -> Result<[u8; N], String> {
        let mut a = [0u8; N];
        a.copy_from_slice(self.take(N)?);
        Ok(a)
    }

    fn utf(&mut self) -> Result<String, String> {
        let n = u16::from_be_bytes(self.be::<2>()?) as usize;
        let raw = self.take(n)?.to_vec();
        Ok(decode_modified_utf8(&raw))
    }

    fn new_handle(&mut self, h: Option<ReadHandle>) -> usize {
        self.handles.push(h);
        self.handles.len() - 1
    }

    fn reference(&mut self) -> Result<ReadHandle, String> {
        let h = u32::from_be_bytes(self.be::<4>()?);
        let index = h.wrapping_sub(BASE_HANDLE) as usize;
        self.handles
            .get(index)
            .cloned()
            .flatten()
            .ok_or_else(|| format!("the serialized key refers to an unknown handle {h:#x}"))
    }

    fn class_desc(&mut self) -> Result<Option<ReadClass>, String> {
        match self.u8()? {
            TC_NULL => Ok(None),
            TC_REFERENCE => match self.reference()? {
                ReadHandle::Class(c) => Ok(Some(c)),
                ReadHandle::Value(_) => {
                    Err("the serialized key refers to a value where a class belongs".into())
                }
            },
            TC_CLASSDESC => {
                let name = self.utf()?;
                self.take(8)?;
                let slot = self.new_handle(None);
                self.u8()?;
                let count = u16::from_be_bytes(self.be::<2>()?);
                let mut fields = Vec::new();
                for _ in 0..count {
                    let code = self.u8()?;
                    self.utf()?;
                    if code == b'L' || code == b'[' {
                        return Err(format!(
                            "the serialized key holds a {name}, which pgcdc does not read"
                        ));
                    }
                    fields.push(code);
                }
                if self.u8()? != TC_ENDBLOCKDATA {
                    return Err(format!(
                        "the serialized key's class {name} has annotations pgcdc does not read"
                    ));
                }
                let super_class = self.class_desc()?.map(Box::new);
                let c = ReadClass {
                    name,
                    fields,
                    super_class,
                };
                self.handles[slot] = Some(ReadHandle::Class(c.clone()));
                Ok(Some(c))
            }
            t => Err(format!("unexpected type code {t:#x} in the serialized key")),
        }
    }

    fn element(&mut self) -> Result<JavaValue, String> {
        match self.u8()? {
            TC_NULL => Ok(JavaValue::Null),
            TC_LONGSTRING => {
                let slot = self.new_handle(None);
                let n = u64::from_be_bytes(self.be::<8>()?);
                let n = usize::try_from(n)
                    .map_err(|_| "the serialized key's string is too long".to_string())?;
                let raw = self.take(n)?.to_vec();
                let s = JavaValue::Str(decode_modified_utf8(&raw));
                self.handles[slot] = Some(ReadHandle::Value(s.clone()));
                Ok(s)
            }
            TC_STRING => {
                let slot = self.new_handle(None);
                let s = JavaValue::Str(self.utf()?);
                self.handles[slot] = Some(ReadHandle::Value(s.clone()));
                Ok(s)
            }
            TC_REFERENCE => match self.reference()? {
                ReadHandle::Value(v) => Ok(v),
                ReadHandle::Class(_) => {
                    Err("the serialized key refers to a class where a value belongs".into())
                }
            },
            TC_OBJECT => {
                let class = self
                    .class_desc()?
                    .ok_or("an object without a class in the serialized key")?;
                let slot = self.new_handle(None);
                let v = self.object_data(&class)?;
                self.handles[slot] = Some(ReadHandle::Value(v.clone()));
                Ok(v)
            }
            t => Err(format!("unexpected type code {t:#x} in the serialized key")),
        }
    }

    fn object_data(&mut self, class: &ReadClass) -> Result<JavaValue, String> {
        let supported = [
            "java.lang.Integer",
            "java.lang.Long",
            "java.lang.Short",
            "java.util.UUID",
        ];
        if !supported.contains(&class.name.as_str()) {
            return Err(format!(
                "the key holds a {} (pgcdc reads Integer, Long, Short, String and UUID keys)",
                class.name
            ));
        }
        if class
            .super_class
            .as_ref()
            .is_some_and(|s| !s.fields.is_empty())
        {
            return Err(format!(
                "the serialized {} has unexpected superclass fields",
                class.name
            ));
        }
        let mut longs = Vec::new();
        let mut value = None;
        for code in &class.fields {
            match code {
                b'I' => value = Some(JavaValue::Int(i32::from_be_bytes(self.be::<4>()?))),
                b'S' => value = Some(JavaValue::Short(i16::from_be_bytes(self.be::<2>()?))),
                b'J' => longs.push(i64::from_be_bytes(self.be::<8>()?)),
                c => {
                    return Err(format!(
                        "unexpected field type {} in the serialized {}",
                        *c as char, class.name
                    ))
                }
            }
        }
        match (class.name.as_str(), value, longs.as_slice()) {
            ("java.util.UUID", None, [least, most]) => {
                Ok(JavaValue::Uuid(*most as u64, *least as u64))
            }
            ("java.lang.Long", None, [v]) => Ok(JavaValue::Long(*v)),
            (_, Some(v), []) => Ok(v),
            _ => Err(format!(
                "the serialized {} has unexpected fields",
                class.name
            )),
        }
    }
}

/// Decodes Java's modified UTF-8 (invalid sequences become U+FFFD).
fn decode_modified_utf8(raw: &[u8]) -> String {
    let mut units = Vec::with_capacity(raw.len());
    let mut i = 0;
    while i < raw.len() {
        let b = raw[i];
        let (unit, len) = if b < 0x80 {
            (b as u16, 1)
        } else if b & 0xe0 == 0xc0 && i + 1 < raw.len() {
            ((((b & 0x1f) as u16) << 6) | (raw[i + 1] & 0x3f) as u16, 2)
        } else if b & 0xf0 == 0xe0 && i + 2 < raw.len() {
            (
                (((b & 0x0f) as u16) << 12)
                    | (((raw[i + 1] & 0x3f) as u16) << 6)
                    | (raw[i + 2] & 0x3f) as u16,
                3,
            )
        } else {
            (0xfffd, 1)
        };
        units.push(unit);
        i += len;
    }
    String::from_utf16_lossy(&units)
}

/// Reads the hex text Debezium stores (`None`: a null array). Errors: a sentence naming what
/// cannot be read.
pub fn from_hex(hex: &str) -> Result<Option<Vec<JavaValue>>, String> {
    let bytes = crate::util::decode_hex(hex.trim())
        .ok_or_else(|| "the serialized key is not hex text".to_string())?;
    let mut r = Reader {
        bytes: &bytes,
        pos: 0,
        handles: Vec::new(),
    };
    if r.take(4)? != MAGIC {
        return Err("the serialized key is not a Java serialization stream".to_string());
    }
    match r.u8()? {
        TC_NULL => Ok(None),
        TC_ARRAY => {
            let class = r
                .class_desc()?
                .ok_or("an array without a class in the serialized key")?;
            if class.name != OBJECT_ARRAY.name {
                return Err(format!(
                    "the serialized key is a {}, not an Object[]",
                    class.name
                ));
            }
            r.new_handle(None);
            let n = i32::from_be_bytes(r.be::<4>()?);
            if n < 0 || n as usize > bytes.len() {
                return Err(format!("the serialized key claims {n} elements"));
            }
            (0..n)
                .map(|_| r.element())
                .collect::<Result<Vec<_>, _>>()
                .map(Some)
        }
        t => Err(format!(
            "unexpected type code {t:#x} at the start of the serialized key"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Written by JDK 17's ObjectOutputStream.
    const INT_1: &str = concat!(
        "aced0005757200135b4c6a6176612e6c616e672e4f626a6563743b90ce589f1073296c02000078700000000173720011",
        "6a6176612e6c616e672e496e746567657212e2a0a4f781873802000149000576616c7565787200106a6176612e6c616e",
        "672e4e756d62657286ac951d0b94e08b020000787000000001",
    );
    const STR_A: &str =
        "aced0005757200135b4c6a6176612e6c616e672e4f626a6563743b90ce589f1073296c02000078700000000174000161";
    const LONG_1: &str = concat!(
        "aced0005757200135b4c6a6176612e6c616e672e4f626a6563743b90ce589f1073296c0200007870000000017372000e",
        "6a6176612e6c616e672e4c6f6e673b8be490cc8f23df0200014a000576616c7565787200106a6176612e6c616e672e4e",
        "756d62657286ac951d0b94e08b02000078700000000000000001",
    );

    #[test]
    fn writes_the_bytes_java_writes() {
        assert_eq!(to_hex(None), "aced000570");
        assert_eq!(to_hex(Some(&[JavaValue::Int(1)])), INT_1);
        assert_eq!(to_hex(Some(&[JavaValue::Str("a".into())])), STR_A);
        assert_eq!(to_hex(Some(&[JavaValue::Long(1)])), LONG_1);
        let two = to_hex(Some(&[JavaValue::Int(1), JavaValue::Int(2)]));
        assert!(two.ends_with("000000017371007e000200000002"), "{two}");
    }

    #[test]
    fn reads_what_it_writes_and_what_java_writes() {
        let keys = vec![
            JavaValue::Int(-7),
            JavaValue::Long(i64::MAX),
            JavaValue::Short(3),
            JavaValue::Str("é\u{0}😀".into()),
            JavaValue::Str("x".repeat(70_000)),
            JavaValue::Null,
            JavaValue::Uuid(0x0123456789abcdef, 0xfedcba9876543210),
            JavaValue::Int(9),
            JavaValue::Long(-1),
        ];
        assert_eq!(from_hex(&to_hex(Some(&keys))).unwrap(), Some(keys));
        assert_eq!(from_hex(INT_1).unwrap(), Some(vec![JavaValue::Int(1)]));
        assert_eq!(from_hex("aced000570").unwrap(), None);
        assert_eq!(
            JavaValue::Uuid(0x0123456789abcdef, 0xfedcba9876543210)
                .to_text()
                .unwrap(),
            "01234567-89ab-cdef-fedc-ba9876543210"
        );
    }

    #[test]
    fn malformed_or_unknown_input_is_an_error_never_a_panic() {
        for bad in [
            "",
            "zz",
            "aced",
            "aced0005",
            "aced000575",
            &INT_1[..INT_1.len() - 2],
            "00000000",
        ] {
            assert!(from_hex(bad).is_err(), "{bad}");
        }
        // A BigDecimal element (class name only; the reader stops at the unknown class).
        let mut w = Writer::default();
        w.out.extend_from_slice(&MAGIC);
        w.out.push(TC_ARRAY);
        w.class_desc(Some(&OBJECT_ARRAY));
        w.out.extend_from_slice(&1i32.to_be_bytes());
        const BIG: ClassDef = ClassDef {
            name: "java.math.BigDecimal",
            suid: 1,
            fields: &[(b'I', "scale")],
            super_class: Some(&NUMBER),
        };
        w.object(&BIG, &2i32.to_be_bytes());
        let hex: String = w.out.iter().map(|b| format!("{b:02x}")).collect();
        let e = from_hex(&hex).unwrap_err();
        assert!(e.contains("java.math.BigDecimal"), "{e}");
        // Every prefix of a valid stream fails cleanly.
        for n in (0..INT_1.len()).step_by(2) {
            let _ = from_hex(&INT_1[..n]);
        }
    }
}
