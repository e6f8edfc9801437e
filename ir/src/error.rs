//! Errors with stable codes (`E-PARSE`, `E-TYPE`, ...), as docs/language-reference.md "Errors" lists them.
//!
//! Every failure of parsing, checking or running is an [`Error`]: a [`Code`], a message that
//! names what is wrong, and (for errors found in the program text) the [`Span`] it points at.
//! `Display` prints `error[E-CODE]: message (line L, column C)`; [`Error::render`] draws the
//! source snippet with codespan-reporting for the command line.

use std::fmt;

/// A region of the program text: byte offsets plus the 1-based line and column of `start`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Span {
    /// Byte offset of the first character.
    pub start: usize,
    /// Byte offset one past the last character.
    pub end: usize,
    /// 1-based line of `start`.
    pub line: u32,
    /// 1-based column (in characters) of `start`.
    pub col: u32,
}

impl Span {
    /// The smallest span covering both `self` and `other`.
    pub fn to(self, other: Span) -> Span {
        if other.end <= self.start && other.start < self.start {
            return Span { end: self.end, ..other };
        }
        Span { end: self.end.max(other.end), ..self }
    }

    /// `true` for the placeholder span of nodes that did not come from text (builder API).
    pub fn is_dummy(&self) -> bool {
        self.line == 0
    }
}

/// The stable error codes of the language (docs/language-reference.md).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Code {
    /// The text is not a program.
    Parse,
    /// Wrong type, unbound name, bad builtin arguments.
    Type,
    /// Shapes that must agree do not.
    Shape,
    /// An input is missing, unknown, unreadable, or of the wrong element type or rank.
    Input,
    /// An index, slice or permute target out of bounds.
    Index,
    /// Integer division or remainder by zero.
    DivZero,
    /// A resource limit was hit.
    Limit,
    /// The GPU (or a requested backend) failed or is absent.
    Device,
    /// An output could not be written (its directory or file cannot be created, the disk is
    /// full); the outputs already there are left as they were.
    Output,
    /// A bug in eqfuse (an internal invariant broken): never the program's fault. Made only
    /// by [`internal`].
    Internal,
}

impl Code {
    /// The code as printed: `E-PARSE`, `E-TYPE`, ...
    pub fn as_str(self) -> &'static str {
        match self {
            Code::Parse => "E-PARSE",
            Code::Type => "E-TYPE",
            Code::Shape => "E-SHAPE",
            Code::Input => "E-INPUT",
            Code::Index => "E-INDEX",
            Code::DivZero => "E-DIV-ZERO",
            Code::Limit => "E-LIMIT",
            Code::Device => "E-DEVICE",
            Code::Output => "E-OUTPUT",
            Code::Internal => "E-INTERNAL",
        }
    }

    /// Parses `E-PARSE` etc. back into a code.
    pub fn from_str_code(s: &str) -> Option<Code> {
        ALL_CODES.iter().copied().find(|c| c.as_str() == s)
    }
}

/// Every code, in the order of the table of docs/language-reference.md.
pub const ALL_CODES: [Code; 10] = [
    Code::Parse,
    Code::Type,
    Code::Shape,
    Code::Input,
    Code::Index,
    Code::DivZero,
    Code::Limit,
    Code::Device,
    Code::Output,
    Code::Internal,
];

/// The one constructor of internal errors (`E-INTERNAL`): a broken invariant of eqfuse
/// itself, never the program's fault, and the message says to report it.
///
/// ```
/// let e = eqfuse_ir::error::internal("a kernel without a result");
/// assert_eq!(e.code, eqfuse_ir::Code::Internal);
/// assert!(e.message.starts_with("internal error: a kernel without a result"));
/// ```
pub fn internal(what: impl fmt::Display) -> Error {
    Error::new(
        Code::Internal,
        format!(
            "internal error: {what} (a bug in eqfuse, not in the program: please report it with the program)"
        ),
    )
}

impl fmt::Display for Code {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An eqfuse error: a stable [`Code`], a message, and where in the program it was found.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub struct Error {
    /// The stable code.
    pub code: Code,
    /// What is wrong, naming the expression, array, index or size concerned.
    pub message: String,
    /// Where in the program text, when the error points at the text.
    pub span: Option<Span>,
    /// Extra lines of explanation (`help: ...`).
    pub notes: Vec<String>,
}

/// `Result` with eqfuse's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// An error with no position.
    pub fn new(code: Code, message: impl Into<String>) -> Error {
        Error { code, message: message.into(), span: None, notes: Vec::new() }
    }

    /// An error pointing at `span` (a dummy span from the builder counts as no position).
    pub fn at(code: Code, span: Span, message: impl Into<String>) -> Error {
        let span = if span.is_dummy() { None } else { Some(span) };
        Error { code, message: message.into(), span, notes: Vec::new() }
    }

    /// The error pointing at `span` when it points nowhere yet (the position of the
    /// operation, for an error raised without one).
    pub fn or_at(mut self, span: Option<Span>) -> Error {
        if self.span.is_none() {
            self.span = span.filter(|s| !s.is_dummy());
        }
        self
    }

    /// Adds a note line.
    pub fn with_note(mut self, note: impl Into<String>) -> Error {
        self.notes.push(note.into());
        self
    }

    /// Shorthand constructors, one per code.
    pub fn parse(span: Span, m: impl Into<String>) -> Error {
        Error::at(Code::Parse, span, m)
    }
    /// `E-TYPE` at `span`.
    pub fn ty(span: Span, m: impl Into<String>) -> Error {
        Error::at(Code::Type, span, m)
    }
    /// `E-SHAPE` at `span`.
    pub fn shape(span: Span, m: impl Into<String>) -> Error {
        Error::at(Code::Shape, span, m)
    }
    /// `E-INPUT`.
    pub fn input(m: impl Into<String>) -> Error {
        Error::new(Code::Input, m)
    }
    /// `E-INDEX` at `span`.
    pub fn index(span: Span, m: impl Into<String>) -> Error {
        Error::at(Code::Index, span, m)
    }
    /// `E-DIV-ZERO` at `span`.
    pub fn div_zero(span: Span, m: impl Into<String>) -> Error {
        Error::at(Code::DivZero, span, m)
    }
    /// `E-LIMIT`.
    pub fn limit(m: impl Into<String>) -> Error {
        Error::new(Code::Limit, m)
    }
    /// `E-OUTPUT`.
    pub fn output(m: impl Into<String>) -> Error {
        Error::new(Code::Output, m)
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "error[{}]: {}", self.code, self.message)?;
        if let Some(s) = self.span {
            write!(f, " (line {}, column {})", s.line, s.col)?;
        }
        Ok(())
    }
}
