//! Tokens of the `.eqf` language (docs/language-reference.md "Text").
//!
//! The [`Lexer`] turns program text into [`Token`]s one at a time, so the parser never holds
//! more than two of them; [`tokenize`] collects them all (for tests and tools).
//!
//! - Names: `[A-Za-z_][A-Za-z0-9_']*`; the words of [`crate::ast::KEYWORDS`] are
//!   [`Keyword`]s instead.
//! - Integer literals keep their magnitude as a `u64` ([`Tok::Int`]); the parser decides
//!   whether it fits an `i64` (only `-9223372036854775808` may use the magnitude `2^63`).
//!   A literal above `u64::MAX` is an `E-PARSE` error "integer literal too large".
//! - Float literals: digits with a fraction (`1.5`), an exponent (`1e-3`, `1E5`) or both
//!   (`2.0e8`). A `.` must be followed by a digit to be part of the number, and an `e` only
//!   starts an exponent when digits follow it (optionally after a sign), so `1else` is `1`
//!   followed by `else`. `inf` is a keyword.
//! - `--` starts a comment that runs to the end of the line.
//! - Hexadecimal integer literals: `0x` (or `0X`) and one or more hexadecimal digits
//!   ([`Tok::Hex`]), at most `0xFFFFFFFFFFFFFFFF` (leading zeros are free); above is
//!   "integer literal too large". `0x` alone, `0xFG`, `0x1.5` are `E-PARSE` errors
//!   "malformed hexadecimal literal".
//! - Operators and punctuation: `+ - * / % == != < <= > >= && || & | ^ << >> ! = \ -> ( ) [ ]
//!   , :` (`&&` and `||` are one token each; `&`, `|` are the bitwise operators).
//!
//! Every token records whether whitespace or a comment came before it
//! ([`Token::space_before`]): the parser reads `a[i]` (no space) as indexing and `f [n]`
//! (space) as a function applied to a shape.
//!
//! Any other character is an `E-PARSE` error at its position that names the character.

use crate::ast::BinOp;
use crate::error::{Error, Result, Span};

/// The keywords of docs/language-reference.md.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Keyword {
    /// `input`
    Input,
    /// `output`
    Output,
    /// `let`
    Let,
    /// `in`
    In,
    /// `if`
    If,
    /// `then`
    Then,
    /// `else`
    Else,
    /// `fn`
    Fn,
    /// `true`
    True,
    /// `false`
    False,
    /// `inf`
    Inf,
    /// `loop`
    Loop,
    /// `for`
    For,
    /// `while`
    While,
    /// `do`
    Do,
}

impl Keyword {
    /// Every keyword, in the order of [`crate::ast::KEYWORDS`].
    pub const ALL: [Keyword; 15] = [
        Keyword::Input,
        Keyword::Output,
        Keyword::Let,
        Keyword::In,
        Keyword::If,
        Keyword::Then,
        Keyword::Else,
        Keyword::Fn,
        Keyword::True,
        Keyword::False,
        Keyword::Inf,
        Keyword::Loop,
        Keyword::For,
        Keyword::While,
        Keyword::Do,
    ];

    /// The keyword's spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Keyword::Input => "input",
            Keyword::Output => "output",
            Keyword::Let => "let",
            Keyword::In => "in",
            Keyword::If => "if",
            Keyword::Then => "then",
            Keyword::Else => "else",
            Keyword::Fn => "fn",
            Keyword::True => "true",
            Keyword::False => "false",
            Keyword::Inf => "inf",
            Keyword::Loop => "loop",
            Keyword::For => "for",
            Keyword::While => "while",
            Keyword::Do => "do",
        }
    }

    /// The keyword spelled `word`, if it is one.
    pub fn from_word(word: &str) -> Option<Keyword> {
        Keyword::ALL.iter().copied().find(|k| k.as_str() == word)
    }
}

/// What a token is.
#[derive(Clone, Debug, PartialEq)]
pub enum Tok {
    /// A name (never a keyword).
    Name(String),
    /// A keyword.
    Kw(Keyword),
    /// An integer literal's magnitude (the sign, if any, is a separate `-` token).
    Int(u64),
    /// A hexadecimal integer literal (`0xFF`), kept apart so that it prints back in
    /// hexadecimal.
    Hex(u64),
    /// A float literal (finite or, for a huge exponent, infinite; never negative or NaN).
    Float(f64),
    /// `+`
    Plus,
    /// `-`
    Minus,
    /// `*`
    Star,
    /// `/`
    Slash,
    /// `%`
    Percent,
    /// `==`
    EqEq,
    /// `!=`
    NotEq,
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `>`
    Gt,
    /// `>=`
    Ge,
    /// `&&`
    AndAnd,
    /// `||`
    OrOr,
    /// `!`
    Bang,
    /// `&` (bitwise and)
    Amp,
    /// `|` (bitwise or)
    Pipe,
    /// `^` (bitwise exclusive or)
    Caret,
    /// `<<`
    Shl,
    /// `>>`
    Shr,
    /// `=`
    Assign,
    /// `\`
    Backslash,
    /// `->`
    Arrow,
    /// `(`
    LParen,
    /// `)`
    RParen,
    /// `[`
    LBracket,
    /// `]`
    RBracket,
    /// `,`
    Comma,
    /// `:`
    Colon,
    /// The end of the text.
    Eof,
}

impl Tok {
    /// The binary operator this token spells, if any.
    pub fn binop(&self) -> Option<BinOp> {
        Some(match self {
            Tok::OrOr => BinOp::Or,
            Tok::AndAnd => BinOp::And,
            Tok::EqEq => BinOp::Eq,
            Tok::NotEq => BinOp::Ne,
            Tok::Lt => BinOp::Lt,
            Tok::Le => BinOp::Le,
            Tok::Gt => BinOp::Gt,
            Tok::Ge => BinOp::Ge,
            Tok::Plus => BinOp::Add,
            Tok::Minus => BinOp::Sub,
            Tok::Star => BinOp::Mul,
            Tok::Slash => BinOp::Div,
            Tok::Percent => BinOp::Rem,
            Tok::Pipe => BinOp::BitOr,
            Tok::Caret => BinOp::BitXor,
            Tok::Amp => BinOp::BitAnd,
            Tok::Shl => BinOp::Shl,
            Tok::Shr => BinOp::Shr,
            _ => return None,
        })
    }

    /// Whether the token can begin an atom (a name, a literal, `(`, `[`), and so an
    /// argument of an application. Keywords other than `true`, `false` and `inf` cannot.
    pub fn starts_atom(&self) -> bool {
        matches!(
            self,
            Tok::Name(_)
                | Tok::Int(_)
                | Tok::Hex(_)
                | Tok::Float(_)
                | Tok::Kw(Keyword::True | Keyword::False | Keyword::Inf)
                | Tok::LParen
                | Tok::LBracket
        )
    }
}

/// A token and where it is.
#[derive(Clone, Debug, PartialEq)]
pub struct Token {
    /// What it is.
    pub tok: Tok,
    /// Where it is (for [`Tok::Eof`], an empty span at the end of the text).
    pub span: Span,
    /// Whether whitespace or a comment separates it from the previous token (true for the
    /// first token).
    pub space_before: bool,
}

/// A lexer over program text, producing one [`Token`] per [`Lexer::next_token`] call and
/// [`Tok::Eof`] forever after the end.
#[derive(Clone, Debug)]
pub struct Lexer<'a> {
    src: &'a str,
    /// Byte offset of the next character (always on a character boundary).
    pos: usize,
    /// 1-based line of `pos`.
    line: u32,
    /// 1-based column (in characters) of `pos`.
    col: u32,
}

impl<'a> Lexer<'a> {
    /// A lexer at the start of `src`.
    pub fn new(src: &'a str) -> Lexer<'a> {
        Lexer { src, pos: 0, line: 1, col: 1 }
    }

    /// The character `n` characters ahead of the current position.
    fn peek_at(&self, n: usize) -> Option<char> {
        self.src.get(self.pos..).and_then(|rest| rest.chars().nth(n))
    }

    /// The current character.
    fn peek(&self) -> Option<char> {
        self.peek_at(0)
    }

    /// Moves past the current character, keeping line and column up to date.
    fn bump(&mut self) {
        if let Some(c) = self.peek() {
            self.pos += c.len_utf8();
            if c == '\n' {
                self.line = self.line.saturating_add(1);
                self.col = 1;
            } else {
                self.col = self.col.saturating_add(1);
            }
        }
    }

    /// A span from the saved start position to the current position.
    fn span_from(&self, start: (usize, u32, u32)) -> Span {
        Span { start: start.0, end: self.pos, line: start.1, col: start.2 }
    }

    /// Skips whitespace and comments; returns whether anything was skipped.
    fn skip_trivia(&mut self) -> bool {
        let mut skipped = false;
        loop {
            match self.peek() {
                Some(' ' | '\t' | '\n' | '\r') => {
                    self.bump();
                    skipped = true;
                }
                Some('-') if self.peek_at(1) == Some('-') => {
                    while let Some(c) = self.peek() {
                        if c == '\n' {
                            break;
                        }
                        self.bump();
                    }
                    skipped = true;
                }
                _ => return skipped,
            }
        }
    }

    /// The next token ([`Tok::Eof`] at the end), or an `E-PARSE` error for a character that
    /// cannot start a token or an integer literal too large for a `u64`.
    pub fn next_token(&mut self) -> Result<Token> {
        let space_before = self.skip_trivia() || self.pos == 0;
        let start = (self.pos, self.line, self.col);
        let Some(c) = self.peek() else {
            return Ok(Token { tok: Tok::Eof, span: self.span_from(start), space_before });
        };
        let tok = if c.is_ascii_alphabetic() || c == '_' {
            self.word()
        } else if c.is_ascii_digit() {
            self.number(start)?
        } else {
            self.symbol(c, start)?
        };
        Ok(Token { tok, span: self.span_from(start), space_before })
    }

    /// A name or keyword.
    fn word(&mut self) -> Tok {
        let begin = self.pos;
        while let Some(c) = self.peek() {
            if c.is_ascii_alphanumeric() || c == '_' || c == '\'' {
                self.bump();
            } else {
                break;
            }
        }
        let text = self.src.get(begin..self.pos).unwrap_or_default();
        match Keyword::from_word(text) {
            Some(k) => Tok::Kw(k),
            None => Tok::Name(text.to_string()),
        }
    }

    /// Moves past a run of ASCII digits.
    fn digits(&mut self) {
        while self.peek().is_some_and(|c| c.is_ascii_digit()) {
            self.bump();
        }
    }

    /// An integer or float literal.
    fn number(&mut self, start: (usize, u32, u32)) -> Result<Tok> {
        if self.peek() == Some('0') && matches!(self.peek_at(1), Some('x' | 'X')) {
            return self.hex(start);
        }
        let begin = self.pos;
        self.digits();
        let mut is_float = false;
        if self.peek() == Some('.') && self.peek_at(1).is_some_and(|c| c.is_ascii_digit()) {
            is_float = true;
            self.bump();
            self.digits();
        }
        if matches!(self.peek(), Some('e' | 'E')) {
            let digit_at = |n: usize| self.peek_at(n).is_some_and(|c| c.is_ascii_digit());
            let exponent = digit_at(1) || (matches!(self.peek_at(1), Some('+' | '-')) && digit_at(2));
            if exponent {
                is_float = true;
                self.bump();
                if matches!(self.peek(), Some('+' | '-')) {
                    self.bump();
                }
                self.digits();
            }
        }
        let text = self.src.get(begin..self.pos).unwrap_or_default();
        if is_float {
            return text.parse::<f64>().map(Tok::Float).map_err(|_| {
                Error::parse(self.span_from(start), format!("malformed float literal `{text}`"))
            });
        }
        let mut value: u64 = 0;
        for d in text.bytes() {
            value =
                value.checked_mul(10).and_then(|v| v.checked_add(u64::from(d - b'0'))).ok_or_else(|| {
                    Error::parse(
                        self.span_from(start),
                        format!("integer literal too large: `{text}` does not fit in 64 bits"),
                    )
                })?;
        }
        Ok(Tok::Int(value))
    }

    /// A hexadecimal literal `0x...`: one to sixteen significant hexadecimal digits (leading
    /// zeros are free), not followed by a name character or a fraction.
    fn hex(&mut self, start: (usize, u32, u32)) -> Result<Tok> {
        self.bump();
        self.bump();
        let begin = self.pos;
        while self.peek().is_some_and(|c| c.is_ascii_hexdigit()) {
            self.bump();
        }
        let digits = self.src.get(begin..self.pos).unwrap_or_default();
        let stuck = self.peek().is_some_and(|c| c.is_ascii_alphanumeric() || c == '_' || c == '\'')
            || (self.peek() == Some('.') && self.peek_at(1).is_some_and(|c| c.is_ascii_digit()));
        if digits.is_empty() || stuck {
            // take the whole malformed word, so the message shows it
            while self.peek().is_some_and(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '\'' | '.')) {
                self.bump();
            }
            let text = self.src.get(start.0..self.pos).unwrap_or_default();
            let why = if digits.is_empty() && !stuck {
                "`0x` must be followed by hexadecimal digits (`0-9`, `a-f`), as in `0xFF`".to_string()
            } else {
                "a hexadecimal literal is `0x` followed by the digits `0-9`, `a-f`, `A-F` only \
                 (hexadecimal is for integers: no fraction or exponent)"
                    .to_string()
            };
            return Err(Error::parse(
                self.span_from(start),
                format!("malformed hexadecimal literal `{text}`: {why}"),
            ));
        }
        let significant = digits.trim_start_matches('0');
        if significant.len() > 16 {
            let text = self.src.get(start.0..self.pos).unwrap_or_default();
            return Err(Error::parse(
                self.span_from(start),
                format!("integer literal too large: `{text}` does not fit in 64 bits (at most 0xFFFFFFFFFFFFFFFF)"),
            ));
        }
        let value =
            if significant.is_empty() { 0 } else { u64::from_str_radix(significant, 16).unwrap_or(0) };
        Ok(Tok::Hex(value))
    }

    /// An operator or punctuation token starting with `c`.
    fn symbol(&mut self, c: char, start: (usize, u32, u32)) -> Result<Tok> {
        let next = self.peek_at(1);
        let (tok, len) = match (c, next) {
            ('=', Some('=')) => (Tok::EqEq, 2),
            ('!', Some('=')) => (Tok::NotEq, 2),
            ('<', Some('=')) => (Tok::Le, 2),
            ('>', Some('=')) => (Tok::Ge, 2),
            ('&', Some('&')) => (Tok::AndAnd, 2),
            ('|', Some('|')) => (Tok::OrOr, 2),
            ('<', Some('<')) => (Tok::Shl, 2),
            ('>', Some('>')) => (Tok::Shr, 2),
            ('-', Some('>')) => (Tok::Arrow, 2),
            ('+', _) => (Tok::Plus, 1),
            ('-', _) => (Tok::Minus, 1),
            ('*', _) => (Tok::Star, 1),
            ('/', _) => (Tok::Slash, 1),
            ('%', _) => (Tok::Percent, 1),
            ('&', _) => (Tok::Amp, 1),
            ('|', _) => (Tok::Pipe, 1),
            ('^', _) => (Tok::Caret, 1),
            ('<', _) => (Tok::Lt, 1),
            ('>', _) => (Tok::Gt, 1),
            ('!', _) => (Tok::Bang, 1),
            ('=', _) => (Tok::Assign, 1),
            ('\\', _) => (Tok::Backslash, 1),
            ('(', _) => (Tok::LParen, 1),
            (')', _) => (Tok::RParen, 1),
            ('[', _) => (Tok::LBracket, 1),
            (']', _) => (Tok::RBracket, 1),
            (',', _) => (Tok::Comma, 1),
            (':', _) => (Tok::Colon, 1),
            _ => {
                self.bump();
                let hint = match c {
                    '.' => " (a float literal needs digits on both sides of `.`, as in `1.0`)",
                    _ => "",
                };
                return Err(Error::parse(
                    self.span_from(start),
                    format!("unexpected character `{}`{hint}", c.escape_debug()),
                ));
            }
        };
        for _ in 0..len {
            self.bump();
        }
        Ok(tok)
    }
}

/// All tokens of `src`, ending with one [`Tok::Eof`].
pub fn tokenize(src: &str) -> Result<Vec<Token>> {
    let mut lexer = Lexer::new(src);
    let mut out = Vec::new();
    loop {
        let t = lexer.next_token()?;
        let done = t.tok == Tok::Eof;
        out.push(t);
        if done {
            return Ok(out);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Code;

    fn toks(src: &str) -> Vec<Tok> {
        match tokenize(src) {
            Ok(ts) => ts.into_iter().map(|t| t.tok).collect(),
            Err(e) => panic!("lexing {src:?} failed: {e}"),
        }
    }

    #[test]
    fn keywords_match_ast() {
        let ours: Vec<&str> = Keyword::ALL.iter().map(|k| k.as_str()).collect();
        assert_eq!(ours, crate::ast::KEYWORDS);
    }

    #[test]
    fn names_keywords_numbers() {
        assert_eq!(
            toks("x' _a1 in inf 42 1.5 1e-3 2.0e8 1E5 1else"),
            vec![
                Tok::Name("x'".into()),
                Tok::Name("_a1".into()),
                Tok::Kw(Keyword::In),
                Tok::Kw(Keyword::Inf),
                Tok::Int(42),
                Tok::Float(1.5),
                Tok::Float(1e-3),
                Tok::Float(2.0e8),
                Tok::Float(1e5),
                Tok::Int(1),
                Tok::Kw(Keyword::Else),
                Tok::Eof
            ]
        );
        assert_eq!(toks("18446744073709551615"), vec![Tok::Int(u64::MAX), Tok::Eof]);
        assert_eq!(toks("1e999"), vec![Tok::Float(f64::INFINITY), Tok::Eof]);
    }

    #[test]
    fn operators_and_comments() {
        assert_eq!(
            toks("a->b -- comment -> (\n== != <= >= < > && || ! = \\ ( ) [ ] , : + - * / %"),
            vec![
                Tok::Name("a".into()),
                Tok::Arrow,
                Tok::Name("b".into()),
                Tok::EqEq,
                Tok::NotEq,
                Tok::Le,
                Tok::Ge,
                Tok::Lt,
                Tok::Gt,
                Tok::AndAnd,
                Tok::OrOr,
                Tok::Bang,
                Tok::Assign,
                Tok::Backslash,
                Tok::LParen,
                Tok::RParen,
                Tok::LBracket,
                Tok::RBracket,
                Tok::Comma,
                Tok::Colon,
                Tok::Plus,
                Tok::Minus,
                Tok::Star,
                Tok::Slash,
                Tok::Percent,
                Tok::Eof
            ]
        );
    }

    #[test]
    fn spans_and_spacing() {
        let ts = tokenize("a[i]\n  é_x").err();
        // `é` is not a name character
        let e = ts.as_ref().map(|e| (e.code, e.span.map(|s| (s.line, s.col))));
        assert_eq!(e, Some((Code::Parse, Some((2, 3)))));
        let ts = tokenize("a[i] f [n]").unwrap_or_default();
        let spaced: Vec<bool> = ts.iter().map(|t| t.space_before).collect();
        assert_eq!(spaced, vec![true, false, false, false, true, true, false, false, false]);
        let ts = tokenize("ab\n  cd").unwrap_or_default();
        assert_eq!(ts.get(1).map(|t| t.span), Some(Span { start: 5, end: 7, line: 2, col: 3 }));
    }

    #[test]
    fn errors() {
        let e = tokenize("x # y").err();
        assert_eq!(e.as_ref().map(|e| e.code), Some(Code::Parse));
        assert!(e.as_ref().is_some_and(|e| e.message.contains("`#`")), "{e:?}");
        let e = tokenize("18446744073709551616").err();
        assert!(e.is_some_and(|e| e.message.contains("integer literal too large")));
    }

    #[test]
    fn v2_keywords_and_bitwise_operators() {
        assert_eq!(
            toks("loop for while do loops do_"),
            vec![
                Tok::Kw(Keyword::Loop),
                Tok::Kw(Keyword::For),
                Tok::Kw(Keyword::While),
                Tok::Kw(Keyword::Do),
                Tok::Name("loops".into()),
                Tok::Name("do_".into()),
                Tok::Eof
            ]
        );
        assert_eq!(
            toks("& && | || ^ << >> < > <= >= <<= !x"),
            vec![
                Tok::Amp,
                Tok::AndAnd,
                Tok::Pipe,
                Tok::OrOr,
                Tok::Caret,
                Tok::Shl,
                Tok::Shr,
                Tok::Lt,
                Tok::Gt,
                Tok::Le,
                Tok::Ge,
                Tok::Shl,
                Tok::Assign,
                Tok::Bang,
                Tok::Name("x".into()),
                Tok::Eof
            ]
        );
        assert_eq!(
            toks("a&&&b"),
            vec![Tok::Name("a".into()), Tok::AndAnd, Tok::Amp, Tok::Name("b".into()), Tok::Eof]
        );
        assert_eq!(toks("x>>>1"), vec![Tok::Name("x".into()), Tok::Shr, Tok::Gt, Tok::Int(1), Tok::Eof]);
    }

    #[test]
    fn hexadecimal_literals() {
        assert_eq!(
            toks("0xFF 0xff51afd7ed558ccd 0x0 0X1f 0x0000000000000000000F 0xFFFFFFFFFFFFFFFF 0x10+1"),
            vec![
                Tok::Hex(255),
                Tok::Hex(0xff51_afd7_ed55_8ccd),
                Tok::Hex(0),
                Tok::Hex(31),
                Tok::Hex(15),
                Tok::Hex(u64::MAX),
                Tok::Hex(16),
                Tok::Plus,
                Tok::Int(1),
                Tok::Eof
            ]
        );
        // `0 x0` is a zero and a name
        assert_eq!(toks("0 x0"), vec![Tok::Int(0), Tok::Name("x0".into()), Tok::Eof]);
        assert_eq!(toks("0x1[0]"), vec![Tok::Hex(1), Tok::LBracket, Tok::Int(0), Tok::RBracket, Tok::Eof]);
    }

    #[test]
    fn hexadecimal_errors() {
        let cases: &[(&str, &str, (u32, u32))] = &[
            ("0x10000000000000000", "integer literal too large: `0x10000000000000000`", (1, 1)),
            ("a + 0x", "malformed hexadecimal literal `0x`: `0x` must be followed by", (1, 5)),
            ("0x1.5", "malformed hexadecimal literal `0x1.5`", (1, 1)),
            ("\n 0xFG", "malformed hexadecimal literal `0xFG`", (2, 2)),
            ("0x_1", "malformed hexadecimal literal", (1, 1)),
            ("0x1e5.0", "malformed hexadecimal literal `0x1e5.0`", (1, 1)),
        ];
        for (src, msg, pos) in cases {
            let e = tokenize(src).err();
            let got = e.as_ref().map(|e| (e.code, e.span.map(|s| (s.line, s.col))));
            assert_eq!(got, Some((Code::Parse, Some(*pos))), "{src}: {e:?}");
            assert!(e.as_ref().is_some_and(|e| e.message.contains(msg)), "{src}: {e:?}");
        }
    }
}
