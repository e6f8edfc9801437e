//! The parser: `.eqf` text to a [`Program`] (docs/language-reference.md "Programs" and "Expressions").
//!
//! A hand-written recursive-descent parser with precedence climbing for the binary
//! operators. Precedence, loosest first: `let`/`if`/`loop`/lambda (they extend as far right
//! as possible); then the binary operators by [`BinOp::precedence`], Python's order: `||`;
//! `&&`; `== != < <= > >=`; `|`; `^`; `&`; `<< >>`; `+ -`; `* / %`; then unary `-` and `!`;
//! application (`f a b`); indexing (`a[i, j]`). All binary operators are left-associative,
//! comparisons included (`a < b < c` parses; the checker rejects it), and `x & 1 == 0` is
//! `(x & 1) == 0`.
//!
//! Decisions worth knowing:
//!
//! - **Indexing vs. shapes.** A `[` written directly after an atom (no space or comment in
//!   between) indexes it: `a[i]`, `(f x)[i]`, `a[i][j]`. A `[` after a space starts a shape:
//!   `generate [n] f`, `fill [16] 0`.
//! - **Application arguments** are atoms with their indexing: names, literals, `true`,
//!   `false`, `inf`, parenthesised expressions, tuples, sections and shapes. A keyword never
//!   starts an argument, so `let x = f a` followed by the next line's `let` ends the item. A
//!   lambda as an argument must be parenthesised: `f \x -> x` is an `E-PARSE` error that
//!   says so; `let`/`if` after an application are errors too (`f (if c then a else b)`).
//! - **`let`, `if` and lambdas** may appear wherever an operand may (`1 + if c then 2 else 3`,
//!   `-if c then 1 else 2`) and extend as far right as possible.
//! - **Negative literals.** A unary `-` whose operand is a numeric literal node that is not
//!   negative is folded into it: `-5` is `Lit::Int(-5)`, `-(2)` is `Lit::Int(-2)`, `-inf` and
//!   `-0.0` are negative floats. An integer literal holds any `u64` (`Lit::Int` is an
//!   `i128`): whether it fits the type its context gives it is the checker's question
//!   (`E-TYPE`), so `-9223372036854775808` is `i64::MIN` and `18446744073709551615` a
//!   `u64`. A `-` before an already negative literal is kept as
//!   `UnOp::Neg` (`-(-5)`), so that the printer's output always reads back to the same tree.
//!   Unary minus binds looser than application (`-f x` is `-(f x)`) and tighter than `*`
//!   (`- 2 * 3` is `(-2) * 3`); `-2[0]` is `-(2[0])`, an unfolded negation of an index.
//! - **Tuples**: `()` is the empty tuple, `(a, b, ...)` a tuple, and `(a,)` a one-element
//!   tuple (so that every tuple the builder can make prints and reads back). The checker
//!   decides which tuples are meaningful.
//! - **Sections**: `(op)` for every binary operator, `(-)` included.
//! - **Shapes** have at least one dimension: `[]` is an `E-PARSE` error.
//! - **Limits**: a text longer than [`Limits::max_program_bytes`] is an `E-LIMIT` error; a node
//!   whose depth exceeds [`Limits::max_depth`] is an `E-LIMIT` error "expression nested deeper
//!   than N levels", and so is parser recursion deeper than the same bound (deeply nested
//!   parentheses or unary operators), so no input overflows the stack.
//! - Parenthesised expressions keep the span of the expression inside.
//! - **Version 2 forms** (in the submodules `forms` and `input`): `let (a, b) = e` (an item,
//!   [`Item::LetTuple`]) and `let (a, b) = e in body` ([`ExprKind::LetTuple`]); `loop pat =
//!   init for i < count do body` and `loop pat = init while cond do body`
//!   ([`ExprKind::Loop`]; the initial state, count and condition end at the keywords `for`,
//!   `while`, `do`; the body extends as far as possible). A tuple pattern has two or more
//!   distinct names. A lambda's tuple parameters (`\(a, i) (b, j) -> e`) are desugared into
//!   plain parameters `arg'0`, `arg'1`, ... (numbered per lambda, skipping names the lambda
//!   already uses) and a chain of `let` patterns in front of the body. Hexadecimal literals are
//!   [`Lit::Hex`]; `-0xFF` folds to `Lit::Int(-255)`. Input dimensions may be `n + k`, `n - k`,
//!   `k * n` or `k * n + c` ([`crate::types::Dim::Affine`]; `n + 0` and `1 * n` are `n`).
//! - Builtin names are not reserved: any name that is not a keyword may be bound.

//!
//! Implementation note: the functions on the recursive path (`expr`, `binary`, `unary`,
//! `open_*`, `app`, `postfix`, `list`, `atom`, `paren`, ...) pass boxed nodes and boxed errors
//! and leave node building and message formatting to small helper functions, so that each
//! level of nesting costs little stack even in unoptimised builds: the deepest accepted
//! program parses on a 2 MiB thread stack.

mod forms;
mod input;

use crate::ast::{BinOp, Expr, ExprKind, Item, Limits, Lit, Program, UnOp};
use crate::error::{Code, Error, Result, Span};
use crate::lexer::{Keyword, Lexer, Tok, Token};
use forms::Param;

/// Parses a program with the default [`Limits`].
pub fn parse(src: &str) -> Result<Program> {
    parse_with(src, &Limits::default())
}

/// Parses a program under `limits`.
pub fn parse_with(src: &str, limits: &Limits) -> Result<Program> {
    let run = || -> PResult<Program> {
        let mut p = Parser::new(src, limits)?;
        p.program()
    };
    on_parse_stack(src, limits, || run().map_err(|e| *e))
}

/// Texts shorter than this cannot nest deep enough to need a stack of their own: a level
/// takes at least one character, and the parser runs 500 levels on a 2 MiB stack.
const SHORT_TEXT: usize = 512;

/// Stack bytes reserved per level of nesting the parser may reach (generous: debug builds
/// take a few kilobytes per level).
const PARSE_STACK_PER_LEVEL: usize = 16 << 10;

/// Runs `f`, the parse of `src`, on a thread whose stack is sized for `limits.max_depth`
/// levels, unless the text is too short to nest that deep: the parser recurses once per
/// level, and no caller's stack (a 2 MiB test thread, say) should decide whether a legal
/// program parses.
fn on_parse_stack<T: Send>(src: &str, limits: &Limits, f: impl Fn() -> Result<T> + Sync) -> Result<T> {
    if src.len() < SHORT_TEXT {
        return f();
    }
    // a level of nesting takes at least one character of the text
    let levels = usize::try_from(limits.max_depth).unwrap_or(usize::MAX).min(src.len());
    let stack = levels.saturating_mul(PARSE_STACK_PER_LEVEL).saturating_add(8 << 20).min(1 << 30);
    crate::stack::with_stack("eqfuse-parse", stack, f)
}

/// Parses one expression (the whole text) with the default [`Limits`].
pub fn parse_expr(src: &str) -> Result<Expr> {
    parse_expr_with(src, &Limits::default())
}

/// Parses one expression (the whole text) under `limits`.
pub fn parse_expr_with(src: &str, limits: &Limits) -> Result<Expr> {
    let run = || -> PResult<Expr> {
        let mut p = Parser::new(src, limits)?;
        let e = p.expr()?;
        if p.cur.tok != Tok::Eof {
            return Err(p.error_here(format!(
                "expected an operator or the end of the expression, found {}",
                p.found()
            )));
        }
        Ok(*e)
    };
    on_parse_stack(src, limits, || run().map_err(|e| *e))
}

/// Internal results: boxed errors and (below) boxed nodes keep stack frames small.
type PResult<T> = std::result::Result<T, Box<Error>>;

/// A boxed node.
type P = Box<Expr>;

/// The closing delimiter of a list.
#[derive(Clone, Copy)]
enum Close {
    Paren,
    Bracket,
}

impl Close {
    fn tok(self) -> Tok {
        match self {
            Close::Paren => Tok::RParen,
            Close::Bracket => Tok::RBracket,
        }
    }
    fn open_str(self) -> &'static str {
        match self {
            Close::Paren => "(",
            Close::Bracket => "[",
        }
    }
    fn close_str(self) -> &'static str {
        match self {
            Close::Paren => ")",
            Close::Bracket => "]",
        }
    }
}

/// Moves a boxed node into a list (kept out of line: the move needs a node-sized slot).
#[inline(never)]
#[allow(clippy::boxed_local)] // the parser's nodes are boxed; this is where one is unboxed
fn push_unboxed(v: &mut Vec<Expr>, e: P) {
    v.push(*e);
}

/// Recursive-descent parser state.
struct Parser<'a> {
    src: &'a str,
    lexer: Lexer<'a>,
    limits: &'a Limits,
    /// The current token.
    cur: Token,
    /// The token after `cur`, once something has looked at it.
    peeked: Option<Token>,
    /// The span of the token before `cur` (for "after `+`" in messages).
    prev: Option<Span>,
    /// Current recursion depth of the expression parser.
    level: u32,
    /// Where the names `arg'K` occur in the text: `K` to the byte offsets, in order (the
    /// names a lambda's tuple parameters must not take; see [`forms`]).
    arg_names: std::collections::HashMap<u32, Vec<usize>>,
    /// One more than the largest `K` of an `arg'K` made for a tuple parameter since the
    /// innermost enclosing lambda's body began (0 when none).
    gen_high: u32,
}

impl<'a> Parser<'a> {
    fn new(src: &'a str, limits: &'a Limits) -> PResult<Parser<'a>> {
        if src.len() > limits.max_program_bytes {
            return Err(Box::new(Error::limit(format!(
                "program text is {} bytes, more than the limit of {} bytes",
                src.len(),
                limits.max_program_bytes
            ))));
        }
        let mut lexer = Lexer::new(src);
        let cur = lexer.next_token()?;
        let mut p = Parser {
            src,
            lexer,
            limits,
            cur,
            peeked: None,
            prev: None,
            level: 0,
            arg_names: Default::default(),
            gen_high: 0,
        };
        p.note_arg_name();
        Ok(p)
    }

    // ----- tokens -----

    /// Moves to the next token.
    #[inline(never)]
    fn advance(&mut self) -> PResult<()> {
        let next = match self.peeked.take() {
            Some(t) => t,
            None => self.lexer.next_token()?,
        };
        self.prev = Some(self.cur.span);
        self.cur = next;
        self.note_arg_name();
        Ok(())
    }

    /// Whether the token after the current one is `)`.
    #[inline(never)]
    fn next_is_rparen(&mut self) -> PResult<bool> {
        if self.peeked.is_none() {
            self.peeked = Some(self.lexer.next_token()?);
        }
        Ok(self.peeked.as_ref().is_some_and(|t| t.tok == Tok::RParen))
    }

    /// The source text of a span.
    fn text(&self, span: Span) -> &'a str {
        self.src.get(span.start..span.end).unwrap_or("?")
    }

    /// The current token as messages name it.
    fn found(&self) -> String {
        match self.cur.tok {
            Tok::Eof => "the end of the program".to_string(),
            _ => format!("`{}`", self.text(self.cur.span)),
        }
    }

    /// An `E-PARSE` error at the current token.
    #[cold]
    #[inline(never)]
    fn error_here(&self, message: String) -> Box<Error> {
        Box::new(Error::parse(self.cur.span, message))
    }

    /// "expected {what}, found ..." at the current token.
    #[cold]
    #[inline(never)]
    fn expected(&self, what: &str) -> Box<Error> {
        self.error_here(format!("expected {what}, found {}", self.found()))
    }

    /// Consumes `tok`, or fails with "expected `{tok}` {context}, found ...".
    #[inline(never)]
    fn expect(&mut self, tok: &Tok, what: &str, context: &str) -> PResult<()> {
        if &self.cur.tok == tok {
            self.advance()
        } else {
            Err(self.expected_after(what, context))
        }
    }

    #[cold]
    #[inline(never)]
    fn expected_after(&self, what: &str, context: &str) -> Box<Error> {
        self.expected(&format!("{what} {context}"))
    }

    /// Consumes a name; `what` describes the name expected ("a parameter name").
    #[inline(never)]
    fn name(&mut self, what: &str) -> PResult<String> {
        match &self.cur.tok {
            Tok::Name(n) => {
                let out = n.clone();
                self.advance()?;
                Ok(out)
            }
            Tok::Kw(_) => Err(self.keyword_as_name(what)),
            _ => Err(self.expected(what)),
        }
    }

    #[cold]
    #[inline(never)]
    fn keyword_as_name(&self, what: &str) -> Box<Error> {
        let k = self.text(self.cur.span);
        self.error_here(format!("expected {what}, found `{k}`: `{k}` is a keyword"))
    }

    /// The span from `start` to the end of the previous token.
    fn span_since(&self, start: Span) -> Span {
        match self.prev {
            Some(p) => start.to(p),
            None => start,
        }
    }

    // ----- limits and node building -----

    /// Makes a node, refusing one nested deeper than the limit.
    #[inline(never)]
    fn node(&self, kind: ExprKind, span: Span) -> PResult<P> {
        let e = Expr::new(kind, span);
        if e.depth > self.limits.max_depth {
            return Err(self.too_deep(span));
        }
        Ok(Box::new(e))
    }

    #[cold]
    #[inline(never)]
    fn too_deep(&self, span: Span) -> Box<Error> {
        Box::new(Error::at(
            Code::Limit,
            span,
            format!("expression nested deeper than {} levels", self.limits.max_depth),
        ))
    }

    /// Goes one recursion level deeper, refusing to go past the depth limit. The caller
    /// decrements `level` when the nested parse returns.
    #[inline(never)]
    fn enter(&mut self) -> PResult<()> {
        if self.level >= self.limits.max_depth {
            return Err(self.too_deep(self.cur.span));
        }
        self.level += 1;
        Ok(())
    }

    #[cold]
    #[inline(never)]
    fn out_of_range(&self, span: Span) -> Box<Error> {
        Box::new(Error::parse(
            span,
            format!(
                "integer literal out of range: `{}` is larger than the largest i64, {}",
                self.text(span),
                i64::MAX
            ),
        ))
    }

    #[inline(never)]
    fn mk_binary(&self, op: BinOp, lhs: P, rhs: P) -> PResult<P> {
        let span = lhs.span.to(rhs.span);
        self.node(ExprKind::Binary { op, lhs, rhs }, span)
    }

    /// `op operand`, folding `-` into a non-negative numeric literal.
    #[inline(never)]
    fn mk_unary(&mut self, op: UnOp, start: Span, operand: P) -> PResult<P> {
        let span = start.to(operand.span);
        if op == UnOp::Neg {
            if let Some(lit) = self.fold_neg(&operand) {
                return self.node(ExprKind::Lit(lit), span);
            }
        }
        self.node(ExprKind::Unary { op, operand }, span)
    }

    /// The negative literal that `-operand` folds to, if `operand` is a non-negative numeric
    /// literal (or the pending magnitude `2^63`).
    fn fold_neg(&mut self, operand: &Expr) -> Option<Lit> {
        match operand.kind {
            ExprKind::Lit(Lit::Int(v)) if v >= 0 => Some(Lit::Int(-v)),
            ExprKind::Lit(Lit::Hex(h)) => Some(Lit::Int(-i128::from(h))),
            ExprKind::Lit(Lit::Float(f)) if !f.is_sign_negative() => Some(Lit::Float(-f)),
            _ => None,
        }
    }

    #[inline(never)]
    fn mk_let(&self, start: Span, name: String, value: P, body: P) -> PResult<P> {
        let span = start.to(body.span);
        self.node(ExprKind::Let { name, value, body }, span)
    }

    #[inline(never)]
    fn mk_if(&self, start: Span, cond: P, then_: P, else_: P) -> PResult<P> {
        let span = start.to(else_.span);
        self.node(ExprKind::If { cond, then_, else_ }, span)
    }

    #[inline(never)]
    fn mk_lambda(&self, start: Span, params: Vec<String>, body: P) -> PResult<P> {
        let span = start.to(body.span);
        self.node(ExprKind::Lambda { params, body }, span)
    }

    #[inline(never)]
    fn mk_apply(&self, func: P, args: Vec<Expr>) -> PResult<P> {
        let span = self.span_since(func.span);
        self.node(ExprKind::Apply { func, args }, span)
    }

    #[inline(never)]
    fn mk_index(&self, array: P, indices: Vec<Expr>) -> PResult<P> {
        let span = self.span_since(array.span);
        self.node(ExprKind::Index { array, indices }, span)
    }

    #[inline(never)]
    fn mk_list(&self, open: Span, close: Close, elems: Vec<Expr>) -> PResult<P> {
        let kind = match close {
            Close::Paren => ExprKind::Tuple(elems),
            Close::Bracket => ExprKind::Shape(elems),
        };
        self.node(kind, self.span_since(open))
    }

    // ----- items -----

    fn program(&mut self) -> PResult<Program> {
        let mut items = Vec::new();
        loop {
            let item = match self.cur.tok {
                Tok::Eof => return Ok(Program { items }),
                Tok::Kw(Keyword::Input) => self.input_item()?,
                Tok::Kw(Keyword::Let) => self.let_item()?,
                Tok::Kw(Keyword::Output) => self.output_item()?,
                _ => return Err(self.expected("an item (`input`, `let` or `output`)")),
            };
            items.push(item);
        }
    }

    /// Whether the current token starts an item or ends the program.
    fn at_item_boundary(&self) -> bool {
        matches!(self.cur.tok, Tok::Eof | Tok::Kw(Keyword::Input | Keyword::Let | Keyword::Output))
    }

    /// After an item's expression: the next token must start an item or end the program.
    fn end_of_item(&self, name: &str) -> PResult<()> {
        if self.at_item_boundary() {
            Ok(())
        } else {
            Err(self.expected(&format!(
                "an operator or a new item (`input`, `let`, `output`) after the value of `{name}`"
            )))
        }
    }

    fn let_item(&mut self) -> PResult<Item> {
        let start = self.cur.span;
        self.advance()?;
        if self.cur.tok == Tok::LParen {
            let (names, _) = self.tuple_pattern("after `let`")?;
            let shown = format!("({})", names.join(", "));
            self.expect(&Tok::Assign, "`=`", &format!("after `let {shown}`"))?;
            let value = *self.expr()?;
            self.end_of_item(&shown)?;
            return Ok(Item::LetTuple { names, value, span: self.span_since(start) });
        }
        let name = self.name("a name or a tuple pattern `(a, b)` after `let`")?;
        self.expect(&Tok::Assign, "`=`", &format!("after `let {name}`"))?;
        let value = *self.expr()?;
        self.end_of_item(&name)?;
        Ok(Item::Let { name, value, span: self.span_since(start) })
    }

    fn output_item(&mut self) -> PResult<Item> {
        let start = self.cur.span;
        self.advance()?;
        let name = self.name("an output name after `output`")?;
        let value = if self.cur.tok == Tok::Assign {
            self.advance()?;
            let e = *self.expr()?;
            Some(e)
        } else {
            None
        };
        self.end_of_item(&name)?;
        Ok(Item::Output { name, value, span: self.span_since(start) })
    }

    // ----- expressions (the recursive path: keep frames small) -----

    /// A whole expression (loosest precedence), one recursion level deeper.
    fn expr(&mut self) -> PResult<P> {
        self.enter()?;
        let e = self.binary(1);
        self.level -= 1;
        e
    }

    /// Binary operators of precedence `min_prec` or tighter (precedence climbing).
    fn binary(&mut self, min_prec: u8) -> PResult<P> {
        let mut lhs = self.unary()?;
        while let Some(op) = self.cur.tok.binop() {
            let prec = op.precedence();
            if prec < min_prec {
                break;
            }
            self.advance()?;
            self.enter()?;
            let rhs = self.binary(prec + 1);
            self.level -= 1;
            lhs = self.mk_binary(op, lhs, rhs?)?;
        }
        Ok(lhs)
    }

    /// Unary `-`/`!`, the open forms (`let`, `if`, lambdas), or an application.
    fn unary(&mut self) -> PResult<P> {
        let op = match self.cur.tok {
            Tok::Minus => UnOp::Neg,
            Tok::Bang => UnOp::Not,
            Tok::Kw(Keyword::Let) => return self.open_let(),
            Tok::Kw(Keyword::If) => return self.open_if(),
            Tok::Kw(Keyword::Loop) => return self.open_loop(),
            Tok::Kw(Keyword::Fn) | Tok::Backslash => return self.open_lambda(),
            _ => return self.app(),
        };
        let start = self.cur.span;
        self.advance()?;
        self.enter()?;
        let operand = self.unary();
        self.level -= 1;
        self.mk_unary(op, start, operand?)
    }

    /// `let x = e in e`
    fn open_let(&mut self) -> PResult<P> {
        let start = self.cur.span;
        self.advance()?;
        if self.cur.tok == Tok::LParen {
            return self.open_let_tuple(start);
        }
        let name = self.name("a name or a tuple pattern `(a, b)` after `let`")?;
        if self.cur.tok != Tok::Assign {
            return Err(self.expected_after("`=`", &format!("after `let {name}`")));
        }
        self.advance()?;
        let value = self.expr()?;
        if self.cur.tok != Tok::Kw(Keyword::In) {
            return Err(self.expected_after(
                "`in`",
                &format!("after the value of `let {name}` (a `let` inside an expression needs `in`)"),
            ));
        }
        self.advance()?;
        let body = self.expr()?;
        self.mk_let(start, name, value, body)
    }

    /// `if c then a else b`
    fn open_if(&mut self) -> PResult<P> {
        let start = self.cur.span;
        self.advance()?;
        let cond = self.expr()?;
        self.expect(&Tok::Kw(Keyword::Then), "`then`", "after the condition of `if`")?;
        let then_ = self.expr()?;
        self.expect(&Tok::Kw(Keyword::Else), "`else`", "after the `then` branch of `if`")?;
        let else_ = self.expr()?;
        self.mk_if(start, cond, then_, else_)
    }

    /// `\x y -> e` or `fn x y -> e`
    fn open_lambda(&mut self) -> PResult<P> {
        let start = self.cur.span;
        let params = self.lambda_params()?;
        let outer_high = std::mem::replace(&mut self.gen_high, 0);
        let body_start = self.cur.span.start;
        let body = self.expr()?;
        let e = if params.iter().all(|p| matches!(p, Param::Name(_))) {
            let names =
                params.into_iter().filter_map(|p| if let Param::Name(n) = p { Some(n) } else { None });
            self.mk_lambda(start, names.collect(), body)
        } else {
            self.mk_lambda_with(start, params, body_start, body)
        };
        self.gen_high = self.gen_high.max(outer_high);
        e
    }

    /// From `\` or `fn` through `->`: the parameters (names and tuple patterns).
    #[inline(never)]
    fn lambda_params(&mut self) -> PResult<Vec<Param>> {
        let intro = self.text(self.cur.span);
        self.advance()?;
        let mut params = Vec::new();
        while let Some(p) = self.lambda_param()? {
            params.push(p);
        }
        if let Tok::Kw(_) = self.cur.tok {
            return Err(self.keyword_as_name("a parameter name"));
        }
        if params.is_empty() {
            return Err(self.expected(&format!("a parameter name after `{intro}`")));
        }
        self.expect(&Tok::Arrow, "`->`", "after lambda parameters")?;
        Ok(params)
    }

    /// `f a b ...`: a postfix expression applied to zero or more postfix arguments.
    fn app(&mut self) -> PResult<P> {
        let func = self.postfix()?;
        let mut args = Vec::new();
        while self.cur.tok.starts_atom() {
            let a = self.postfix()?;
            push_unboxed(&mut args, a);
        }
        if matches!(self.cur.tok, Tok::Backslash | Tok::Kw(Keyword::Fn | Keyword::Loop | Keyword::If)) {
            return Err(self.lambda_argument());
        }
        if args.is_empty() {
            return Ok(func);
        }
        self.mk_apply(func, args)
    }

    #[cold]
    #[inline(never)]
    fn lambda_argument(&self) -> Box<Error> {
        let what = match self.cur.tok {
            Tok::Kw(Keyword::Loop) => "a loop",
            Tok::Kw(Keyword::If) => "an `if`",
            _ => "a lambda",
        };
        self.error_here(format!(
            "{what} used as an argument must be in parentheses: write `({} ...)`",
            self.text(self.cur.span)
        ))
    }

    /// An atom followed by any number of `[i, ...]` written without a space before `[`.
    fn postfix(&mut self) -> PResult<P> {
        let mut e = self.atom()?;
        while matches!(self.cur.tok, Tok::LBracket) && !self.cur.space_before {
            let open = self.cur.span;
            self.advance()?;
            let indices = match self.list(open, Close::Bracket, "an index") {
                Err(error) if self.cur.tok == Tok::Colon => return Err(self.numpy_slice(&e, open, error)),
                other => other?,
            };
            e = self.mk_index(e, indices)?;
        }
        Ok(e)
    }

    /// `error` (a `:` inside `a[...]`, at the current token) with the help for NumPy's
    /// `a[start:stop]` on a rank-1 array: `slice a start (stop - start)`, worded as
    /// `check::hints::HintKind::NumpySlice` reads it. No help where the bracket holds a
    /// `,` before the `:` or the stop does not parse up to `]`.
    #[cold]
    #[inline(never)]
    fn numpy_slice(&mut self, array: &Expr, open: Span, error: Box<Error>) -> Box<Error> {
        let start = self.src.get(open.end..self.cur.span.start).unwrap_or(",").trim().to_string();
        if start.contains(',') || self.advance().is_err() {
            return error;
        }
        let stop = if self.cur.tok == Tok::RBracket {
            None
        } else {
            match self.expr() {
                Ok(s) if self.cur.tok == Tok::RBracket => Some(self.text(s.span).trim().to_string()),
                _ => return error,
            }
        };
        let a = self.text(array.span).to_string();
        let a = if matches!(array.kind, ExprKind::Var(_)) { a } else { format!("({a})") };
        let simple = |t: &str| t.chars().all(|c| c.is_alphanumeric() || c == '_' || c == '\'');
        let paren = |t: &str| if simple(t) { t.to_string() } else { format!("({t})") };
        let stop = stop.unwrap_or_else(|| format!("length {a}"));
        let (start, len) = match (start.parse::<i64>(), stop.parse::<i64>()) {
            (Ok(s), Ok(t)) if s <= t => (s.to_string(), (t - s).to_string()),
            _ if start.is_empty() || start == "0" => ("0".to_string(), paren(&stop)),
            _ => (paren(&start), format!("({} - {})", stop, paren(&start))),
        };
        let mut error = error;
        error.notes.push(format!(
            "help: NumPy slices are written with `slice` (rank 1: start and length): `slice {a} {start} {len}`"
        ));
        error
    }

    /// Comma-separated expressions after an opening delimiter, through the closing one;
    /// `out` may already hold the first elements.
    fn list_into(&mut self, open: Span, close: Close, what: &str, out: &mut Vec<Expr>) -> PResult<()> {
        loop {
            let e = self.expr()?;
            push_unboxed(out, e);
            if matches!(self.cur.tok, Tok::Comma) {
                self.advance()?;
            } else if self.cur.tok == close.tok() {
                return self.advance();
            } else {
                return Err(self.unclosed(open, close, what));
            }
        }
    }

    /// Comma-separated expressions after an opening delimiter, through the closing one.
    fn list(&mut self, open: Span, close: Close, what: &str) -> PResult<Vec<Expr>> {
        let mut out = Vec::new();
        self.list_into(open, close, what, &mut out)?;
        Ok(out)
    }

    /// The error for a list that neither continues with `,` nor closes.
    #[cold]
    #[inline(never)]
    fn unclosed(&self, open: Span, close: Close, what: &str) -> Box<Error> {
        let (o, c) = (close.open_str(), close.close_str());
        if self.cur.tok == Tok::Eof {
            Box::new(Error::parse(
                open,
                format!("unclosed `{o}`: expected `{c}` before the end of the program"),
            ))
        } else {
            self.expected(&format!(
                "`,` or `{c}` after {what} (to close the `{o}` at line {}, column {})",
                open.line, open.col
            ))
        }
    }

    /// A name, literal, parenthesised expression, tuple, section or shape.
    fn atom(&mut self) -> PResult<P> {
        match self.cur.tok {
            Tok::LParen => self.paren(),
            Tok::LBracket => self.shape(),
            _ => self.leaf(),
        }
    }

    /// `[d1, ..., dr]`
    fn shape(&mut self) -> PResult<P> {
        let open = self.cur.span;
        self.advance()?;
        if self.cur.tok == Tok::RBracket {
            return Err(self.empty_shape(open));
        }
        let dims = self.list(open, Close::Bracket, "a dimension")?;
        self.mk_list(open, Close::Bracket, dims)
    }

    #[cold]
    #[inline(never)]
    fn empty_shape(&self, open: Span) -> Box<Error> {
        Box::new(Error::parse(open.to(self.cur.span), "empty shape `[]`: a shape has at least one dimension"))
    }

    /// A name or literal (no recursion).
    #[inline(never)]
    fn leaf(&mut self) -> PResult<P> {
        let span = self.cur.span;
        let kind = match &self.cur.tok {
            Tok::Name(n) => ExprKind::Var(n.clone()),
            // any u64: the checker decides whether it fits the type its context gives it
            Tok::Int(m) => ExprKind::Lit(Lit::Int(i128::from(*m))),
            Tok::Hex(h) => ExprKind::Lit(Lit::Hex(*h)),
            Tok::Float(f) => ExprKind::Lit(Lit::Float(*f)),
            Tok::Kw(Keyword::True) => ExprKind::Lit(Lit::Bool(true)),
            Tok::Kw(Keyword::False) => ExprKind::Lit(Lit::Bool(false)),
            Tok::Kw(Keyword::Inf) => ExprKind::Lit(Lit::Float(f64::INFINITY)),
            _ => return Err(self.expected_expression()),
        };
        self.advance()?;
        self.node(kind, span)
    }

    #[cold]
    #[inline(never)]
    fn expected_expression(&self) -> Box<Error> {
        match self.prev {
            // `x ** 2`, NumPy's power
            Some(p) if self.text(p) == "*" && self.cur.tok == Tok::Star && p.end == self.cur.span.start => {
                Box::new(
                    Error::parse(
                        p.to(self.cur.span),
                        "`**` is not an operator: eqfuse has no power operator",
                    )
                    .with_note(
                        "help: write `pow x 2.0` for a float power (both arguments are floats), or `x * x`",
                    ),
                )
            }
            Some(p) => self.expected(&format!("an expression after `{}`", self.text(p))),
            None => self.expected("an expression"),
        }
    }

    /// After `(`: a section `(+)`, the empty tuple `()`, a parenthesised expression, or a tuple.
    fn paren(&mut self) -> PResult<P> {
        let open = self.cur.span;
        self.advance()?;
        if let Some(e) = self.section_or_unit(open)? {
            return Ok(e);
        }
        let first = self.expr()?;
        match self.cur.tok {
            Tok::RParen => {
                self.advance()?;
                Ok(first)
            }
            Tok::Comma => self.tuple_rest(open, first),
            _ => Err(self.unclosed(open, Close::Paren, "the expression")),
        }
    }

    /// `(op)` or `()` right after `(`, if that is what follows.
    #[inline(never)]
    fn section_or_unit(&mut self, open: Span) -> PResult<Option<P>> {
        if let Some(op) = self.cur.tok.binop() {
            if self.next_is_rparen()? {
                self.advance()?;
                self.advance()?;
                return self.node(ExprKind::Section(op), self.span_since(open)).map(Some);
            }
        }
        if self.cur.tok == Tok::RParen {
            self.advance()?;
            return self.mk_list(open, Close::Paren, Vec::new()).map(Some);
        }
        Ok(None)
    }

    /// After `(first,`: the rest of a tuple. `(a,)` is a one-element tuple.
    fn tuple_rest(&mut self, open: Span, first: P) -> PResult<P> {
        self.advance()?;
        let mut elems = Vec::new();
        push_unboxed(&mut elems, first);
        if self.cur.tok == Tok::RParen {
            self.advance()?;
        } else {
            self.list_into(open, Close::Paren, "a tuple element", &mut elems)?;
        }
        self.mk_list(open, Close::Paren, elems)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_program() {
        let p = parse("input xs : f32[n, 4]\ninput a : i64\nlet y = xs\noutput y\noutput z = 1");
        let p = match p {
            Ok(p) => p,
            Err(e) => panic!("{e}"),
        };
        assert_eq!(p.items.len(), 5);
        let tys: Vec<String> = p.inputs().map(|(n, t)| format!("{n}:{t}")).collect();
        assert_eq!(tys, vec!["xs:f32[n, 4]", "a:i64"]);
        assert_eq!(p.output_names().collect::<Vec<_>>(), vec!["y", "z"]);
    }

    #[test]
    fn empty_program() {
        assert_eq!(parse("-- nothing\n").ok(), Some(Program::default()));
    }

    #[test]
    fn integer_literals_hold_every_u64_and_fold_under_minus() {
        // whether a literal fits its type is the checker's question (`E-TYPE`)
        for (text, want) in [
            ("-9223372036854775808", -(1i128 << 63)),
            ("-(9223372036854775808)", -(1i128 << 63)),
            ("9223372036854775808", 1i128 << 63),
            ("18446744073709551615", i128::from(u64::MAX)),
            ("-18446744073709551615", -i128::from(u64::MAX)),
        ] {
            let e = parse_expr(text).unwrap_or_else(|e| panic!("{text}: {e}"));
            assert_eq!(e.kind, ExprKind::Lit(Lit::Int(want)), "{text}");
        }
        assert!(parse_expr("18446744073709551616").is_err());
    }
}
