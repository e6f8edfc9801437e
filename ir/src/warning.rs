//! Warnings: what the checker finds suspicious but not wrong (a `map` over two size names
//! that may differ, a lambda operator that sampled values show is not associative). A
//! program with warnings checks and runs; [`crate::check::Checked::warnings`] lists them.

use crate::error::Span;
use std::fmt;

/// A warning about the program text.
#[derive(Clone, Debug, PartialEq)]
pub struct Warning {
    /// What is suspicious.
    pub message: String,
    /// Where in the program text (none for programs built without text).
    pub span: Option<Span>,
    /// `help: ...` lines.
    pub notes: Vec<String>,
}

impl Warning {
    /// A warning pointing at `span` (a dummy span from the builder counts as no position).
    pub fn at(span: Span, message: impl Into<String>) -> Warning {
        let span = if span.is_dummy() { None } else { Some(span) };
        Warning { message: message.into(), span, notes: Vec::new() }
    }

    /// Adds a note line.
    pub fn with_note(mut self, note: impl Into<String>) -> Warning {
        self.notes.push(note.into());
        self
    }

    /// Renders the warning as the command line prints it: `warning: message`, the source
    /// line with the offending part underlined, then the notes.
    pub fn render(&self, file: &str, source: &str, color: bool) -> String {
        crate::report::render(
            crate::report::Report {
                warning: true,
                code: None,
                message: &self.message,
                span: self.span,
                notes: &self.notes,
                plain: &self.to_string(),
            },
            file,
            source,
            color,
        )
    }
}

impl fmt::Display for Warning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "warning: {}", self.message)?;
        if let Some(s) = self.span {
            write!(f, " (line {}, column {})", s.line, s.col)?;
        }
        Ok(())
    }
}
