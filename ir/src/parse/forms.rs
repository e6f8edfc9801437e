//! The forms of version 2: tuple patterns (`let (a, b) = ...`), loops (`loop pat = init for
//! i < n do body`, `loop pat = init while cond do body`) and lambda tuple parameters
//! (`\(a, i) (b, j) -> body`, desugared here into plain parameters and `let` patterns).

use std::collections::HashSet;

use super::{PResult, Parser, P};
use crate::ast::{ExprKind, LoopForm};
use crate::error::{Error, Span};
use crate::lexer::{Keyword, Tok};

/// A lambda parameter as written: a name, or a tuple pattern to destructure.
pub(super) enum Param {
    /// `x`
    Name(String),
    /// `(a, i)`, with the pattern's span.
    Tuple(Vec<String>, Span),
}

/// A `loop`'s state pattern: its names and whether it was written as a tuple.
type Pat = (Vec<String>, bool);

impl Parser<'_> {
    /// `(a, b, ...)` at the current `(`: two or more distinct names. `what` says where the
    /// pattern is ("after `let`"), for messages.
    #[inline(never)]
    pub(super) fn tuple_pattern(&mut self, what: &str) -> PResult<(Vec<String>, Span)> {
        let open = self.cur.span;
        self.advance()?;
        let mut names: Vec<String> = Vec::new();
        loop {
            let at = self.cur.span;
            let name = self.name(&format!("a name in the tuple pattern {what}"))?;
            if names.contains(&name) {
                return Err(Box::new(Error::parse(
                    at,
                    format!(
                        "`{name}` appears twice in the tuple pattern {what}: each name may be bound once"
                    ),
                )));
            }
            names.push(name);
            match self.cur.tok {
                Tok::Comma => self.advance()?,
                Tok::RParen => {
                    self.advance()?;
                    break;
                }
                Tok::Eof => {
                    return Err(Box::new(Error::parse(
                        open,
                        "unclosed `(`: expected `)` before the end of the program".to_string(),
                    )))
                }
                _ => {
                    return Err(self.expected(&format!(
                    "`,` or `)` after a name of the tuple pattern (to close the `(` at line {}, column {})",
                    open.line, open.col
                )))
                }
            }
        }
        let span = self.span_since(open);
        if names.len() < 2 {
            let one = names.first().map(String::as_str).unwrap_or("x");
            return Err(Box::new(Error::parse(
                span,
                format!(
                    "a tuple pattern needs two or more names, found `({one})`: write `{one}` without \
                     parentheses to bind one value"
                ),
            )));
        }
        Ok((names, span))
    }

    /// `let (a, b) = value in body`, after `let` with the current token `(`.
    #[inline(never)]
    pub(super) fn open_let_tuple(&mut self, start: Span) -> PResult<P> {
        let (names, _) = self.tuple_pattern("after `let`")?;
        let shown = names.join(", ");
        if self.cur.tok != Tok::Assign {
            return Err(self.expected_after("`=`", &format!("after `let ({shown})`")));
        }
        self.advance()?;
        let value = self.expr()?;
        if self.cur.tok != Tok::Kw(Keyword::In) {
            return Err(self.expected_after(
                "`in`",
                &format!("after the value of `let ({shown})` (a `let` inside an expression needs `in`)"),
            ));
        }
        self.advance()?;
        let body = self.expr()?;
        let span = start.to(body.span);
        self.node(ExprKind::LetTuple { names, value, body }, span)
    }

    /// The state pattern of a `loop`: a name, or a tuple pattern.
    #[inline(never)]
    fn loop_pattern(&mut self) -> PResult<Pat> {
        if self.cur.tok == Tok::LParen {
            let (names, _) = self.tuple_pattern("after `loop`")?;
            return Ok((names, true));
        }
        let name = self.name("a name or a tuple pattern `(a, b)` after `loop`")?;
        Ok((vec![name], false))
    }

    /// `loop pat = init for i < count do body` or `loop pat = init while cond do body`.
    pub(super) fn open_loop(&mut self) -> PResult<P> {
        let start = self.cur.span;
        self.advance()?;
        let (pat, tuple) = self.loop_pattern()?;
        self.expect(&Tok::Assign, "`=`", "after the loop's state (`loop x = init ...`)")?;
        let init = self.expr()?;
        let form = match self.cur.tok {
            Tok::Kw(Keyword::For) => self.loop_for()?,
            Tok::Kw(Keyword::While) => {
                self.advance()?;
                let cond = self.expr()?;
                self.expect(
                    &Tok::Kw(Keyword::Do),
                    "`do`",
                    "after the loop's condition (`while cond do body`)",
                )?;
                LoopForm::While { cond }
            }
            _ => return Err(self.loop_without_form()),
        };
        let body = self.expr()?;
        self.mk_loop(start, (pat, tuple), init, form, body)
    }

    /// `for i < count do`, at `for`.
    #[inline(never)]
    fn loop_for(&mut self) -> PResult<LoopForm> {
        self.advance()?;
        let var = self.name("the loop variable after `for` (`for i < count`)")?;
        self.expect(
            &Tok::Lt,
            "`<`",
            &format!("after `for {var}` (a loop is written `for {var} < count do ...`)"),
        )?;
        let count = self.expr()?;
        self.expect(&Tok::Kw(Keyword::Do), "`do`", "after the loop's count (`for i < count do body`)")?;
        Ok(LoopForm::For { var, count })
    }

    #[cold]
    #[inline(never)]
    fn loop_without_form(&self) -> Box<Error> {
        self.expected(
            "`for` or `while` after the loop's initial state (`loop x = init for i < n do ...` or \
             `loop x = init while cond do ...`)",
        )
    }

    #[inline(never)]
    fn mk_loop(&self, start: Span, pat: Pat, init: P, form: LoopForm, body: P) -> PResult<P> {
        let span = start.to(body.span);
        self.node(ExprKind::Loop { pat: pat.0, tuple: pat.1, init, form, body }, span)
    }

    /// One lambda parameter at a name or `(`; `None` at anything else.
    #[inline(never)]
    pub(super) fn lambda_param(&mut self) -> PResult<Option<Param>> {
        match &self.cur.tok {
            Tok::Name(n) => {
                let p = Param::Name(n.clone());
                self.advance()?;
                Ok(Some(p))
            }
            Tok::LParen => {
                let (names, span) = self.tuple_pattern("of a lambda parameter")?;
                Ok(Some(Param::Tuple(names, span)))
            }
            _ => Ok(None),
        }
    }

    /// Records the current token's offset when it is a name `arg'K`.
    pub(super) fn note_arg_name(&mut self) {
        if let Tok::Name(n) = &self.cur.tok {
            if let Some(k) = arg_index(n) {
                self.arg_names.entry(k).or_default().push(self.cur.span.start);
            }
        }
    }

    /// Whether the name `arg'K` occurs in the text from byte `from` to the end of the
    /// previous token.
    fn arg_name_in_text(&self, k: u32, from: usize) -> bool {
        let to = self.prev.map_or(from, |p| p.end);
        self.arg_names.get(&k).is_some_and(|offsets| {
            let i = offsets.partition_point(|&o| o < from);
            offsets.get(i).is_some_and(|&o| o < to)
        })
    }

    /// A lambda with the parameters `params` (some of them tuple patterns) and `body` (whose
    /// text starts at byte `body_start`): each tuple parameter becomes a plain parameter
    /// `arg'K` destructured by a `let` in front of the body, so that `\(a, i) (b, j) -> e` is
    /// `\arg'0 arg'1 -> let (a, i) = arg'0 in let (b, j) = arg'1 in e`.
    ///
    /// `K` counts from 0 for each lambda, skipping every name the lambda already uses: the
    /// names of its parameters, the `arg'K` written in its body's text, and those made for
    /// the lambdas inside its body (all below [`Parser::gen_high`], which this raises).
    /// Nothing is walked, so nested lambdas cost constant time each.
    #[inline(never)]
    pub(super) fn mk_lambda_with(
        &mut self,
        start: Span,
        params: Vec<Param>,
        body_start: usize,
        body: P,
    ) -> PResult<P> {
        check_distinct(&params)?;
        let own: HashSet<u32> = params
            .iter()
            .flat_map(|p| match p {
                Param::Name(n) => std::slice::from_ref(n),
                Param::Tuple(names, _) => names.as_slice(),
            })
            .filter_map(|n| arg_index(n))
            .collect();
        let mut next = self.gen_high;
        let mut plain = Vec::with_capacity(params.len());
        let mut lets = Vec::new();
        for p in params {
            match p {
                Param::Name(n) => plain.push(n),
                Param::Tuple(names, span) => {
                    while own.contains(&next) || self.arg_name_in_text(next, body_start) {
                        next = next.saturating_add(1);
                    }
                    let fresh = format!("arg'{next}");
                    next = next.saturating_add(1);
                    plain.push(fresh.clone());
                    lets.push((names, fresh, span));
                }
            }
        }
        self.gen_high = next;
        let mut body = body;
        for (names, fresh, span) in lets.into_iter().rev() {
            let value = self.node(ExprKind::Var(fresh), span)?;
            let s = span.to(body.span);
            body = self.node(ExprKind::LetTuple { names, value, body }, s)?;
        }
        self.mk_lambda(start, plain, body)
    }
}

/// `K` when `name` is `arg'K` as the parser writes it (decimal, no leading zero).
fn arg_index(name: &str) -> Option<u32> {
    let digits = name.strip_prefix("arg'")?;
    if digits.is_empty()
        || (digits.len() > 1 && digits.starts_with('0'))
        || !digits.bytes().all(|b| b.is_ascii_digit())
    {
        return None;
    }
    digits.parse().ok()
}

/// Refuses a name that a tuple parameter binds twice across the parameters of one lambda
/// (duplicates among plain parameters are left to the checker, which names them).
fn check_distinct(params: &[Param]) -> PResult<()> {
    let mut seen: HashSet<&str> = HashSet::new();
    let mut plain: HashSet<&str> = HashSet::new();
    for p in params {
        if let Param::Name(n) = p {
            plain.insert(n);
        }
    }
    for p in params {
        if let Param::Tuple(names, span) = p {
            for n in names {
                if plain.contains(n.as_str()) || !seen.insert(n) {
                    return Err(Box::new(Error::parse(
                        *span,
                        format!("the parameter `{n}` appears twice in the lambda's parameters"),
                    )));
                }
            }
        }
    }
    Ok(())
}
