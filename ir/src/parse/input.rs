//! `input name : type`: an element type (any of the eleven), and for an array its
//! dimensions: an integer, a size name, or an affine size `NAME + k`, `NAME - k`, `k * NAME`
//! (and `k * NAME + c`), which the input's shape binds.

use super::{Close, PResult, Parser};
use crate::ast::Item;
use crate::error::Error;
use crate::lexer::Tok;
use crate::types::{Dim, ElemType, Type};

/// The element type names, for messages.
const ELEM_NAMES: &str = "bool, i8, i16, i32, i64, u8, u16, u32, u64, f32 or f64";

impl Parser<'_> {
    pub(super) fn input_item(&mut self) -> PResult<Item> {
        let start = self.cur.span;
        self.advance()?;
        let name = self.name("an input name after `input`")?;
        self.expect(&Tok::Colon, "`:`", &format!("after the input name `{name}`"))?;
        let elem = match &self.cur.tok {
            Tok::Name(t) => match ElemType::from_name(t) {
                Some(e) => e,
                None => {
                    return Err(self.error_here(format!("unknown element type `{t}` (expected {ELEM_NAMES})")))
                }
            },
            _ => return Err(self.expected(&format!("an element type ({ELEM_NAMES}) after `:`"))),
        };
        self.advance()?;
        let ty = if self.cur.tok == Tok::LBracket {
            let open = self.cur.span;
            self.advance()?;
            let mut shape = Vec::new();
            loop {
                shape.push(self.dim(&name)?);
                match self.cur.tok {
                    Tok::Comma => self.advance()?,
                    Tok::RBracket => {
                        self.advance()?;
                        break;
                    }
                    _ => return Err(self.unclosed(open, Close::Bracket, "a dimension")),
                }
            }
            Type::Array { elem, shape }
        } else {
            Type::Scalar(elem)
        };
        let span = self.span_since(start);
        if !self.at_item_boundary() {
            return Err(
                self.expected(&format!("a new item (`input`, `let`, `output`) after the type of `{name}`"))
            );
        }
        Ok(Item::Input { name, ty, span })
    }

    /// One dimension of an input type.
    fn dim(&mut self, input: &str) -> PResult<Dim> {
        let start = self.cur.span;
        let mul = match &self.cur.tok {
            Tok::Int(_) | Tok::Hex(_) => {
                let k = self.dim_int(false)?;
                if self.cur.tok != Tok::Star {
                    return Ok(Dim::Known(k));
                }
                self.advance()?;
                if k < 1 {
                    return Err(Box::new(Error::parse(
                        self.span_since(start),
                        format!("the factor of a size must be 1 or more, found `{k}`"),
                    )));
                }
                Some(k)
            }
            Tok::Name(_) => None,
            Tok::Kw(_) => return Err(self.keyword_as_name("a size name or an integer")),
            _ => {
                return Err(self.expected(&format!(
                "a dimension (a size name, an integer, `n + 1`, `n - 1` or `2 * n`) in the type of `{input}`"
            )))
            }
        };
        let name = self.name("a size name after `*` (a dimension `k * n`)")?;
        if self.cur.tok == Tok::Star {
            return Err(
                self.error_here(format!("a size's factor comes first: write `k * {name}`, not `{name} * k`"))
            );
        }
        let add = match self.cur.tok {
            Tok::Plus => {
                self.advance()?;
                self.dim_int(false)?
            }
            Tok::Minus => {
                self.advance()?;
                self.dim_int(true)?
            }
            _ => 0,
        };
        let mul = mul.unwrap_or(1);
        if mul == 1 && add == 0 {
            return Ok(Dim::Size(name));
        }
        Ok(Dim::Affine { name, mul, add })
    }

    /// An integer literal in a dimension, negated when `negate` (so that `n - 9223372036854775808`
    /// reaches `i64::MIN`).
    fn dim_int(&mut self, negate: bool) -> PResult<i64> {
        let span = self.cur.span;
        let m = match self.cur.tok {
            Tok::Int(m) | Tok::Hex(m) => m,
            _ => return Err(self.expected("an integer (a dimension is `n + k`, `n - k` or `k * n`)")),
        };
        let v = if negate { 0i128 - i128::from(m) } else { i128::from(m) };
        let v = i64::try_from(v).map_err(|_| self.out_of_range(span))?;
        self.advance()?;
        Ok(v)
    }
}
