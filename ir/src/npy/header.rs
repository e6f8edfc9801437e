//! The header dictionary of a `.npy` file, parsed in one linear pass.
//!
//! A header is a Python dict literal such as
//! `{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }`. This parser accepts
//! exactly what NumPy writes: the three keys (in any order, each once), single- or
//! double-quoted strings without escapes, `True`/`False`, a tuple of non-negative integers
//! (with Python 2's `L` suffix allowed), a trailing comma, and spaces, tabs and newlines
//! between tokens. A list as `descr` (a structured dtype) is skipped over and reported as
//! such. Everything else is an error message (the caller makes it an `E-INPUT`). The pass
//! never backtracks, so any header, however hostile, is parsed in time linear in its length
//! (a general Python-literal parser took minutes on some 250-byte headers).

/// What a header says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Header {
    /// The dtype descriptor (`<f4`), or `None` for a structured dtype (a list).
    pub descr: Option<String>,
    /// Whether the data is in Fortran (column-major) order.
    pub fortran: bool,
    /// The shape.
    pub shape: Vec<usize>,
}

/// Parses the header text (between the length field and the data).
pub(crate) fn parse(text: &str) -> Result<Header, String> {
    let mut p = P { s: text.as_bytes(), i: 0 };
    p.ws();
    p.expect(b'{')?;
    let (mut descr, mut fortran, mut shape) = (None, None, None);
    loop {
        p.ws();
        if p.eat(b'}') {
            break;
        }
        let key = p.string()?;
        p.ws();
        p.expect(b':')?;
        p.ws();
        let fresh = match key.as_str() {
            "descr" => descr.replace(p.descr()?).is_none(),
            "fortran_order" => fortran.replace(p.boolean()?).is_none(),
            "shape" => shape.replace(p.shape()?).is_none(),
            other => return Err(format!("unexpected key '{other}' in the header")),
        };
        if !fresh {
            return Err(format!("the key '{key}' appears twice in the header"));
        }
        p.ws();
        if p.eat(b'}') {
            break;
        }
        p.expect(b',')?;
    }
    p.ws();
    if p.i != p.s.len() {
        return Err("unexpected text after the header dictionary".into());
    }
    match (descr, fortran, shape) {
        (Some(descr), Some(fortran), Some(shape)) => Ok(Header { descr, fortran, shape }),
        _ => Err("the header lacks one of 'descr', 'fortran_order' and 'shape'".into()),
    }
}

/// A cursor over the header bytes.
struct P<'a> {
    s: &'a [u8],
    i: usize,
}

impl P<'_> {
    fn peek(&self) -> Option<u8> {
        self.s.get(self.i).copied()
    }

    fn ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.i += 1;
        }
    }

    fn eat(&mut self, c: u8) -> bool {
        let hit = self.peek() == Some(c);
        if hit {
            self.i += 1;
        }
        hit
    }

    fn expect(&mut self, c: u8) -> Result<(), String> {
        if self.eat(c) {
            Ok(())
        } else {
            Err(format!("expected `{}` at byte {} of the header", char::from(c), self.i))
        }
    }

    /// A quoted string without escapes.
    fn string(&mut self) -> Result<String, String> {
        let q = match self.peek() {
            Some(q @ (b'\'' | b'"')) => q,
            _ => return Err(format!("expected a quoted string at byte {} of the header", self.i)),
        };
        self.i += 1;
        let start = self.i;
        loop {
            match self.peek() {
                Some(c) if c == q => break,
                Some(b'\\') => return Err("escapes in header strings are not supported".into()),
                Some(_) => self.i += 1,
                None => return Err("an unterminated string in the header".into()),
            }
        }
        let s =
            std::str::from_utf8(&self.s[start..self.i]).map_err(|_| "the header is not UTF-8".to_string())?;
        self.i += 1;
        Ok(s.to_string())
    }

    /// A dtype: a string, or a list (a structured dtype, skipped: `None`).
    fn descr(&mut self) -> Result<Option<String>, String> {
        if self.peek() != Some(b'[') {
            return self.string().map(Some);
        }
        // skip the balanced brackets, minding strings
        let mut depth = 0usize;
        loop {
            match self.peek() {
                Some(b'[' | b'(') => {
                    depth += 1;
                    self.i += 1;
                }
                Some(b']' | b')') => {
                    depth = depth.saturating_sub(1);
                    self.i += 1;
                    if depth == 0 {
                        return Ok(None);
                    }
                }
                Some(b'\'' | b'"') => {
                    self.string()?;
                }
                Some(_) => self.i += 1,
                None => return Err("an unterminated structured dtype in the header".into()),
            }
        }
    }

    fn boolean(&mut self) -> Result<bool, String> {
        for (word, v) in [(&b"True"[..], true), (&b"False"[..], false)] {
            if self.s[self.i..].starts_with(word) {
                self.i += word.len();
                return Ok(v);
            }
        }
        Err(format!("expected True or False at byte {} of the header", self.i))
    }

    /// `(d1, d2, ...)`, `(d,)` or `()`.
    fn shape(&mut self) -> Result<Vec<usize>, String> {
        self.expect(b'(')?;
        let mut dims = Vec::new();
        loop {
            self.ws();
            if self.eat(b')') {
                return Ok(dims);
            }
            dims.push(self.uint()?);
            self.ws();
            if self.eat(b')') {
                return Ok(dims);
            }
            self.expect(b',')?;
        }
    }

    /// A non-negative integer that fits in `usize` (`L` suffix allowed).
    fn uint(&mut self) -> Result<usize, String> {
        let start = self.i;
        while matches!(self.peek(), Some(b'0'..=b'9')) {
            self.i += 1;
        }
        if start == self.i {
            return Err(format!("expected a dimension at byte {} of the header", self.i));
        }
        let digits = std::str::from_utf8(&self.s[start..self.i]).map_err(|_| "bad digits".to_string())?;
        let n = digits.parse::<usize>().map_err(|_| format!("the dimension {digits} is too large"))?;
        self.eat(b'L');
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_what_numpy_writes() {
        let h = parse("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }          \n");
        assert_eq!(h, Ok(Header { descr: Some("<f4".into()), fortran: false, shape: vec![2, 3] }));
        let h = parse("{\"shape\": (5L,), \"fortran_order\": True, \"descr\": \"|b1\"}");
        assert_eq!(h, Ok(Header { descr: Some("|b1".into()), fortran: true, shape: vec![5] }));
        let h =
            parse("{'descr': [('a', '<f4'), ('b', [('c', '<i8')])], 'fortran_order': False, 'shape': ()}");
        assert_eq!(h, Ok(Header { descr: None, fortran: false, shape: vec![] }));
    }

    #[test]
    fn refuses_everything_else() {
        for bad in [
            "",
            "{",
            "{'descr': '<f4', 'fortran_order': False}",
            "{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': ()}",
            "{'descr': '<f4', 'fortran_order': 0, 'shape': ()}",
            "{'descr': '<f4', 'fortran_order': False, 'shape': (-1,)}",
            "{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999999,)}",
            "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'extra': 1}",
            "{'descr': '<f\\x34', 'fortran_order': False, 'shape': ()}",
            "{'descr': [('a', '<f4'), 'fortran_order': False, 'shape': ()}",
            "{'descr': '<f4', 'fortran_order': False, 'shape': ()} trailing",
        ] {
            assert!(parse(bad).is_err(), "accepted {bad:?}");
        }
    }

    /// The header the `npy_read` fuzz target found to take minutes under a general
    /// Python-literal parser: now an immediate error.
    #[test]
    fn regression_slow_nested_structured_header() {
        let text = "{'descr': [('param', '<i8' , ('x' , ('x',('<param', '<i8' , ('h',('<f8beta', '<f8'), \
                    ('gamma', '<i 8),('delta',{'descr': [('param', '<i8' , ('x' , ('x',('<param', '<i8' , \
                    ('h',('<f8beta', '<f8'), ('gamma', '<i 8),('delta', '<i                \n";
        let started = std::time::Instant::now();
        assert!(parse(text).is_err());
        assert!(started.elapsed() < std::time::Duration::from_secs(1));
    }
}
