//! Stored JSON text judged exactly as ECMAScript's `JSON.parse` reads it, without building it.
//!
//! Reads embed JSON columns verbatim in the document JS parses with one `JSON.parse`
//! (`codec`), so a cell must be accepted here exactly when `JSON.parse` accepts it: then the
//! value JS sees is `JSON.parse`'s own — lone-surrogate escapes (`"\ud83d"`, which JavaScript's
//! `JSON.stringify` writes and serde_json refuses), huge numbers (a lossy double or `Infinity`),
//! duplicate keys (the last wins) and any depth (the scan keeps an explicit stack, no recursion).
//! Refusing less would let a bad cell break the whole document; refusing more would make a row
//! JavaScript reads unreadable here.
//!
//! Besides the verdict, the scan reports what the 3.0 decoders need of the top-level value: its
//! kind, whether an array holds only strings, and whether an object's (last) `code` and `message`
//! members are strings.

/// The kind of a JSON value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Null,
    Bool,
    Number,
    String,
    Array,
    Object,
}

/// What a scanned text's top-level value is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Top {
    pub kind: Kind,
    /// An array whose items are all strings (vacuously true for `[]`; false for non-arrays).
    pub all_strings: bool,
    /// An object whose last `code` member is a string.
    pub code_is_string: bool,
    /// An object whose last `message` member is a string.
    pub message_is_string: bool,
}

/// Why a text is not JSON: what was found, at which byte offset.
#[derive(Debug, PartialEq, Eq)]
pub struct NotJson {
    pub offset: usize,
    pub what: &'static str,
}

impl std::fmt::Display for NotJson {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} at offset {}", self.what, self.offset)
    }
}

#[derive(Clone, Copy)]
enum Frame {
    Array,
    Object,
}

/// The member of the top-level object the next value belongs to.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Member {
    Code,
    Message,
    Other,
}

struct Scanner<'a> {
    b: &'a [u8],
    i: usize,
}

impl Scanner<'_> {
    fn fail<T>(&self, what: &'static str) -> Result<T, NotJson> {
        Err(NotJson {
            offset: self.i,
            what,
        })
    }

    fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }

    /// JSON's four whitespace characters only (no BOM, no other Unicode spaces).
    fn ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.peek() {
            self.i += 1;
        }
    }

    fn expect(&mut self, c: u8, what: &'static str) -> Result<(), NotJson> {
        self.ws();
        if self.peek() == Some(c) {
            self.i += 1;
            Ok(())
        } else {
            self.fail(what)
        }
    }

    fn literal(&mut self, word: &'static [u8]) -> Result<(), NotJson> {
        if self.b[self.i..].starts_with(word) {
            self.i += word.len();
            Ok(())
        } else {
            self.fail("an unknown literal")
        }
    }

    fn digits(&mut self) -> Result<(), NotJson> {
        let start = self.i;
        while let Some(b'0'..=b'9') = self.peek() {
            self.i += 1;
        }
        if self.i == start {
            self.fail("a number without digits")
        } else {
            Ok(())
        }
    }

    /// `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`
    fn number(&mut self) -> Result<(), NotJson> {
        if self.peek() == Some(b'-') {
            self.i += 1;
        }
        match self.peek() {
            Some(b'0') => self.i += 1,
            Some(b'1'..=b'9') => self.digits()?,
            _ => return self.fail("a number without digits"),
        }
        if self.peek() == Some(b'.') {
            self.i += 1;
            self.digits()?;
        }
        if let Some(b'e' | b'E') = self.peek() {
            self.i += 1;
            if let Some(b'+' | b'-') = self.peek() {
                self.i += 1;
            }
            self.digits()?;
        }
        Ok(())
    }

    /// A string (the opening quote is next). With `key`, answers which top-level member it
    /// names, comparing its UTF-16 code units as JavaScript compares property keys.
    fn string(&mut self, key: bool) -> Result<Member, NotJson> {
        self.i += 1;
        // The key's first code units; `long` once it cannot be `code` or `message` any more.
        let mut units: Vec<u16> = Vec::new();
        let mut long = false;
        let push = |u: u16, units: &mut Vec<u16>, long: &mut bool| {
            if units.len() < 8 {
                units.push(u);
            } else {
                *long = true;
            }
        };
        loop {
            let Some(c) = self.peek() else {
                return self.fail("an unterminated string");
            };
            match c {
                b'"' => {
                    self.i += 1;
                    break;
                }
                0x00..=0x1f => return self.fail("a control character in a string"),
                b'\\' => {
                    self.i += 1;
                    let unit = match self.peek() {
                        Some(b'"') => u16::from(b'"'),
                        Some(b'\\') => u16::from(b'\\'),
                        Some(b'/') => u16::from(b'/'),
                        Some(b'b') => 0x08,
                        Some(b'f') => 0x0c,
                        Some(b'n') => u16::from(b'\n'),
                        Some(b'r') => u16::from(b'\r'),
                        Some(b't') => u16::from(b'\t'),
                        Some(b'u') => {
                            let hex = self
                                .b
                                .get(self.i + 1..self.i + 5)
                                .and_then(|h| std::str::from_utf8(h).ok())
                                .filter(|h| h.bytes().all(|d| d.is_ascii_hexdigit()))
                                .and_then(|h| u16::from_str_radix(h, 16).ok());
                            match hex {
                                Some(u) => {
                                    self.i += 4;
                                    u
                                }
                                None => return self.fail("a bad \\u escape"),
                            }
                        }
                        _ => return self.fail("a bad escape"),
                    };
                    self.i += 1;
                    if key {
                        push(unit, &mut units, &mut long);
                    }
                }
                _ if c < 0x80 => {
                    self.i += 1;
                    if key {
                        push(u16::from(c), &mut units, &mut long);
                    }
                }
                _ => {
                    // A multi-byte UTF-8 character (the text is a &str): never part of
                    // `code`/`message`, copied as is.
                    let len = match c {
                        0xc0..=0xdf => 2,
                        0xe0..=0xef => 3,
                        _ => 4,
                    };
                    self.i += len;
                    if key {
                        long = true;
                    }
                }
            }
        }
        if !key || long {
            return Ok(Member::Other);
        }
        Ok(if units == "code".encode_utf16().collect::<Vec<_>>() {
            Member::Code
        } else if units == "message".encode_utf16().collect::<Vec<_>>() {
            Member::Message
        } else {
            Member::Other
        })
    }
}

/// Scans `text` as `JSON.parse` would parse it; `Err` exactly where `JSON.parse` throws.
pub fn scan(text: &str) -> Result<Top, NotJson> {
    let mut p = Scanner {
        b: text.as_bytes(),
        i: 0,
    };
    let mut stack: Vec<Frame> = Vec::new();
    let mut top = Top {
        kind: Kind::Null,
        all_strings: true,
        code_is_string: false,
        message_is_string: false,
    };
    // The top-level member the value being read belongs to (when the top is an object).
    let mut member = Member::Other;
    // Reads an object member's key and colon (the scanner stands before the key's quote).
    let key = |p: &mut Scanner, depth: usize| -> Result<Member, NotJson> {
        p.ws();
        if p.peek() != Some(b'"') {
            return p.fail("a member without a string key");
        }
        let m = p.string(depth == 1)?;
        p.expect(b':', "a member without a colon")?;
        Ok(m)
    };
    loop {
        // One value; a container that is not empty is entered instead.
        p.ws();
        let mut kind = match p.peek() {
            Some(b'{') => {
                p.i += 1;
                p.ws();
                if p.peek() == Some(b'}') {
                    p.i += 1;
                    Kind::Object
                } else {
                    stack.push(Frame::Object);
                    let m = key(&mut p, stack.len())?;
                    if stack.len() == 1 {
                        member = m;
                    }
                    continue;
                }
            }
            Some(b'[') => {
                p.i += 1;
                p.ws();
                if p.peek() == Some(b']') {
                    p.i += 1;
                    Kind::Array
                } else {
                    stack.push(Frame::Array);
                    continue;
                }
            }
            Some(b'"') => {
                p.string(false)?;
                Kind::String
            }
            Some(b'-' | b'0'..=b'9') => {
                p.number()?;
                Kind::Number
            }
            Some(b't') => {
                p.literal(b"true")?;
                Kind::Bool
            }
            Some(b'f') => {
                p.literal(b"false")?;
                Kind::Bool
            }
            Some(b'n') => {
                p.literal(b"null")?;
                Kind::Null
            }
            None => return p.fail("the end of the text where a value belongs"),
            Some(_) => return p.fail("an unexpected character"),
        };
        // A value of `kind` is complete: note it, then close the containers it completes.
        loop {
            match stack.len() {
                0 => {
                    top.kind = kind;
                    if kind != Kind::Array {
                        top.all_strings = false;
                    }
                    p.ws();
                    return if p.i == p.b.len() {
                        Ok(top)
                    } else {
                        p.fail("more text after the value")
                    };
                }
                1 => match stack[0] {
                    Frame::Array => top.all_strings &= kind == Kind::String,
                    Frame::Object => match member {
                        Member::Code => top.code_is_string = kind == Kind::String,
                        Member::Message => top.message_is_string = kind == Kind::String,
                        Member::Other => {}
                    },
                },
                _ => {}
            }
            p.ws();
            let frame = stack[stack.len() - 1];
            match (frame, p.peek()) {
                (_, Some(b',')) => {
                    p.i += 1;
                    if let Frame::Object = frame {
                        let m = key(&mut p, stack.len())?;
                        if stack.len() == 1 {
                            member = m;
                        }
                    }
                    break;
                }
                (Frame::Array, Some(b']')) => kind = Kind::Array,
                (Frame::Object, Some(b'}')) => kind = Kind::Object,
                _ => return p.fail("an array or object not closed properly"),
            }
            p.i += 1;
            stack.pop();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(t: &str) -> Top {
        scan(t).unwrap_or_else(|e| panic!("{t:?} refused: {e}"))
    }

    #[test]
    fn accepts_what_json_parse_accepts() {
        for t in [
            "null",
            " true ",
            "false",
            "0",
            "-0",
            "1.5e+300",
            "1e400",
            "-12.0E-7",
            "123456789012345678901234567890",
            r#""x\ud83d""#,
            r#""\udc00x""#,
            r#""\u00E9\/\b\f\n\r\t\"\\""#,
            "\"raw \u{2028} \u{1F600} é\"",
            "[]",
            "{}",
            " [ 1 , [ ] , { } , \"a\" ] ",
            r#"{"a":1,"a":2}"#,
            r#"{"__proto__":{"x":1}}"#,
            "\t\n\r [null]\n",
        ] {
            ok(t);
        }
        let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
        assert_eq!(ok(&deep).kind, Kind::Array);
        let deep_obj = format!("{}1{}", r#"{"a":"#.repeat(50_000), "}".repeat(50_000));
        assert_eq!(ok(&deep_obj).kind, Kind::Object);
    }

    #[test]
    fn refuses_what_json_parse_refuses() {
        for t in [
            "",
            " ",
            "nul",
            "True",
            "01",
            "-",
            "+1",
            "1.",
            ".5",
            "1e",
            "0x10",
            "NaN",
            "Infinity",
            "'a'",
            "\"a",
            "\"a\u{0001}\"",
            "\"\\x\"",
            "\"\\u12\"",
            "\"\\u12g4\"",
            "[1,]",
            "[,1]",
            "[1 2]",
            "{\"a\":1,}",
            "{\"a\" 1}",
            "{a:1}",
            "{\"a\":1",
            "[",
            "]",
            "[1]]",
            "1 2",
            "\u{feff}1",
            "\u{a0}1",
            "[1}",
            "{\"a\":1]",
            "not json",
        ] {
            assert!(scan(t).is_err(), "{t:?} accepted");
        }
    }

    #[test]
    fn reports_the_top_level_shape() {
        let e = ok(r#"{"code":"E","message":"x\ud83d","stack":[1,{"code":2}]}"#);
        assert_eq!(e.kind, Kind::Object);
        assert!(e.code_is_string && e.message_is_string);
        // duplicate keys: the last one counts, as in JSON.parse
        assert!(!ok(r#"{"code":"E","message":"m","code":1}"#).code_is_string);
        assert!(ok(r#"{"code":1,"message":"m","code":"E"}"#).code_is_string);
        // escaped key names are the same keys
        let esc = ok(r#"{"\u0063ode":"E","m\u0065ssage":"m"}"#);
        assert!(esc.code_is_string && esc.message_is_string);
        // nested members do not count
        assert!(!ok(r#"{"x":{"code":"E","message":"m"}}"#).code_is_string);
        assert!(!ok(r#"{"codes":"E","message ":"m"}"#).code_is_string);
        assert!(ok(r#"["a","\ud800",""]"#).all_strings);
        assert!(ok("[]").all_strings);
        assert!(!ok(r#"["a",1]"#).all_strings);
        assert!(!ok(r#"[["a"]]"#).all_strings);
        assert!(!ok(r#""a""#).all_strings);
        assert_eq!(ok("null").kind, Kind::Null);
    }
}
