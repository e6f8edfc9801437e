//! Symbolic sizes: a dimension as a linear form over names (`n + 1`, `2 * n`, `la + lb`), so
//! that sizes computed in the program can be compared where they are a size plus or minus a
//! constant.

use crate::types::Dim;
use std::collections::BTreeMap;

/// `sum of coef * name + constant`.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub(crate) struct Linear {
    terms: BTreeMap<String, i64>,
    constant: i64,
}

impl Linear {
    fn add(mut self, other: &Linear, sign: i64) -> Option<Linear> {
        for (n, c) in &other.terms {
            let e = self.terms.entry(n.clone()).or_insert(0);
            *e = e.checked_add(c.checked_mul(sign)?)?;
        }
        self.terms.retain(|_, c| *c != 0);
        self.constant = self.constant.checked_add(other.constant.checked_mul(sign)?)?;
        Some(self)
    }

    fn scale(mut self, k: i64) -> Option<Linear> {
        for c in self.terms.values_mut() {
            *c = c.checked_mul(k)?;
        }
        self.terms.retain(|_, c| *c != 0);
        self.constant = self.constant.checked_mul(k)?;
        Some(self)
    }

    /// The form as a dimension: a known size, a size name, or an expression.
    pub(crate) fn to_dim(&self) -> Dim {
        if self.terms.is_empty() {
            return if self.constant >= 0 { Dim::Known(self.constant) } else { Dim::Dynamic };
        }
        if self.constant == 0 && self.terms.len() == 1 {
            if let Some((n, 1)) = self.terms.iter().next() {
                return Dim::Size(n.clone());
            }
        }
        let mut text = String::new();
        for (n, c) in &self.terms {
            let (sign, mag) = if *c < 0 { (" - ", c.unsigned_abs()) } else { (" + ", c.unsigned_abs()) };
            if text.is_empty() {
                if *c < 0 {
                    text.push('-');
                }
            } else {
                text.push_str(sign);
            }
            if mag != 1 {
                text.push_str(&format!("{mag} * "));
            }
            text.push_str(n);
        }
        match self.constant.cmp(&0) {
            std::cmp::Ordering::Greater => text.push_str(&format!(" + {}", self.constant)),
            std::cmp::Ordering::Less => text.push_str(&format!(" - {}", self.constant.unsigned_abs())),
            std::cmp::Ordering::Equal => {}
        }
        Dim::Expr(text)
    }
}

/// The linear form of a dimension, when it has one.
pub(crate) fn linear(d: &Dim) -> Option<Linear> {
    match d {
        Dim::Known(k) => Some(Linear { terms: BTreeMap::new(), constant: *k }),
        Dim::Size(n) => Some(Linear { terms: BTreeMap::from([(n.clone(), 1)]), constant: 0 }),
        Dim::Affine { name, mul, add } => {
            Some(Linear { terms: BTreeMap::from([(name.clone(), *mul)]), constant: *add })
        }
        Dim::Expr(text) => parse(text),
        Dim::Dynamic => None,
    }
}

/// `a + sign * b` as a dimension (`Dim::Dynamic` when either has no linear form).
pub(crate) fn combine(a: &Dim, b: &Dim, sign: i64) -> Dim {
    match (linear(a), linear(b)) {
        (Some(x), Some(y)) => x.add(&y, sign).map_or(Dim::Dynamic, |l| l.to_dim()),
        _ => Dim::Dynamic,
    }
}

/// Whether two dimensions are certainly equal (`Some(true)`), certainly different
/// (`Some(false)`: they differ by a non-zero constant), or unknown until run time.
pub(crate) fn same(a: &Dim, b: &Dim) -> Option<bool> {
    if let Some(r) = a.agrees(b) {
        return Some(r);
    }
    let d = linear(a)?.add(&linear(b)?, -1)?;
    if d.terms.is_empty() {
        Some(d.constant == 0)
    } else {
        None
    }
}

#[derive(Clone, Debug, PartialEq)]
enum Tok {
    Name(String),
    Int(i64),
    Sym(char),
}

fn tokens(text: &str) -> Option<Vec<Tok>> {
    let cs: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < cs.len() {
        let c = cs[i];
        if c.is_whitespace() {
            i += 1;
        } else if c.is_ascii_digit() {
            let s = i;
            while i < cs.len() && cs[i].is_ascii_digit() {
                i += 1;
            }
            out.push(Tok::Int(cs[s..i].iter().collect::<String>().parse().ok()?));
        } else if c.is_ascii_alphabetic() || c == '_' {
            let s = i;
            while i < cs.len() && (cs[i].is_ascii_alphanumeric() || cs[i] == '_' || cs[i] == '\'') {
                i += 1;
            }
            out.push(Tok::Name(cs[s..i].iter().collect()));
        } else if "+-*()".contains(c) {
            out.push(Tok::Sym(c));
            i += 1;
        } else {
            return None;
        }
    }
    Some(out)
}

/// Parses `sum := term (('+'|'-') term)*`, `term := factor ('*' factor)*` (one side a
/// constant), `factor := INT | NAME | '(' sum ')' | '-' factor`.
fn parse(text: &str) -> Option<Linear> {
    let toks = tokens(text)?;
    let mut pos = 0;
    let l = sum(&toks, &mut pos, 0)?;
    (pos == toks.len()).then_some(l)
}

fn sum(t: &[Tok], pos: &mut usize, depth: u32) -> Option<Linear> {
    if depth > 32 {
        return None;
    }
    let mut acc = term(t, pos, depth)?;
    while let Some(Tok::Sym(c @ ('+' | '-'))) = t.get(*pos) {
        *pos += 1;
        let r = term(t, pos, depth)?;
        acc = acc.add(&r, if *c == '+' { 1 } else { -1 })?;
    }
    Some(acc)
}

fn term(t: &[Tok], pos: &mut usize, depth: u32) -> Option<Linear> {
    let mut acc = factor(t, pos, depth)?;
    while let Some(Tok::Sym('*')) = t.get(*pos) {
        *pos += 1;
        let r = factor(t, pos, depth)?;
        acc = if acc.terms.is_empty() {
            r.scale(acc.constant)?
        } else if r.terms.is_empty() {
            acc.scale(r.constant)?
        } else {
            return None;
        };
    }
    Some(acc)
}

fn factor(t: &[Tok], pos: &mut usize, depth: u32) -> Option<Linear> {
    let tok = t.get(*pos)?.clone();
    *pos += 1;
    match tok {
        Tok::Int(k) => Some(Linear { terms: BTreeMap::new(), constant: k }),
        Tok::Name(n) => Some(Linear { terms: BTreeMap::from([(n, 1)]), constant: 0 }),
        Tok::Sym('-') => factor(t, pos, depth)?.scale(-1),
        Tok::Sym('(') => {
            let l = sum(t, pos, depth + 1)?;
            (t.get(*pos) == Some(&Tok::Sym(')'))).then(|| *pos += 1)?;
            Some(l)
        }
        Tok::Sym(_) => None,
    }
}
