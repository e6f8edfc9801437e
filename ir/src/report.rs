//! Drawing an error or a warning as the command line prints it: the first line, the source
//! snippet with the offending part underlined (codespan-reporting), then the notes.

use crate::error::Span;

/// What to draw.
pub(crate) struct Report<'a> {
    /// A warning (`warning: ...`) rather than an error (`error[E-CODE]: ...`).
    pub warning: bool,
    /// The stable code of an error.
    pub code: Option<&'a str>,
    /// The message.
    pub message: &'a str,
    /// Where in the program text.
    pub span: Option<Span>,
    /// `help: ...` lines.
    pub notes: &'a [String],
    /// The one-line form (`Display`), used where no snippet can be drawn.
    pub plain: &'a str,
}

/// The longest source text (whole lines) a rendered snippet shows; beyond, [`render`]
/// prints the message with its line and column instead.
const MAX_SNIPPET_BYTES: usize = 4096;

/// Renders `r` against `source`, the text of the program file `file`.
pub(crate) fn render(r: Report<'_>, file: &str, source: &str, color: bool) -> String {
    use codespan_reporting::diagnostic::{Diagnostic, Label};
    use codespan_reporting::files::SimpleFile;
    use codespan_reporting::term::{self, termcolor::Buffer};

    let mut diag = if r.warning { Diagnostic::warning() } else { Diagnostic::error() };
    if let Some(code) = r.code {
        diag = diag.with_code(code);
    }
    diag = diag.with_message(r.message);
    if let Some(span) = r.span {
        let end = span.end.max(span.start).min(source.len());
        let start = span.start.min(end);
        // a snippet shows the span's first and last lines: past a few kilobytes (a
        // 200 000-deep nesting on one line) the plain message, with its line and column,
        // says more
        let line_start = |at: usize| source.get(..at).and_then(|s| s.rfind('\n')).map_or(0, |i| i + 1);
        let line_end =
            |at: usize| source.get(at..).and_then(|s| s.find('\n')).map_or(source.len(), |i| at + i);
        let long = |at: usize| line_end(at).saturating_sub(line_start(at)) > MAX_SNIPPET_BYTES;
        if long(start) || long(end) {
            let mut text = format!("{}\n  --> {file}\n", r.plain);
            for n in r.notes {
                text.push_str(&format!("  = {n}\n"));
            }
            return text;
        }
        if source.is_char_boundary(start) && source.is_char_boundary(end) {
            diag = diag.with_labels(vec![Label::primary((), start..end)]);
        }
    }
    diag = diag.with_notes(r.notes.to_vec());
    let file = SimpleFile::new(file, source);
    let mut buf = if color { Buffer::ansi() } else { Buffer::no_color() };
    let config = term::Config::default();
    if term::emit_to_write_style(&mut buf, &config, &file, &diag).is_err() {
        return r.plain.to_string();
    }
    String::from_utf8_lossy(buf.as_slice()).into_owned()
}

impl crate::error::Error {
    /// Renders the error as the command line prints it: the `error[E-CODE]: message` line,
    /// then (when the error has a position) the source line with the offending part
    /// underlined, then the notes. `file` names the program file, `source` is its text.
    pub fn render(&self, file: &str, source: &str, color: bool) -> String {
        render(
            Report {
                warning: false,
                code: Some(self.code.as_str()),
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
