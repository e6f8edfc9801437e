//! The error of a failed [`Step::Assert`](super::Step::Assert): its message with the
//! extents it shows filled in. Every executor reports a failed check with this, so that
//! they all say the same.

use super::{Arg, ValueId};
use crate::error::{Code, Error, Result, Span};
use crate::value::Scalar;

/// The error of a failed assert: `message` with `{k}` replaced by the extents `shown[k]` as
/// a shape (`[10, 3]`), `{k#}` by their product and `{k!}` by the extents without brackets;
/// host scalars among the extents are read with `load`. An extent that cannot be read (or
/// is not an `i64`) shows as `?`.
///
/// ```
/// use eqfuse_ir::error::Code;
/// use eqfuse_ir::plan::{assert_error, Arg};
/// use eqfuse_ir::value::Scalar;
/// let shown = vec![vec![Arg::Const(2), Arg::Value(0)], vec![Arg::Const(7)]];
/// let e = assert_error(Code::Shape, "{0} ({0#} elements) and {1!}", &shown, None, |_| Ok(Scalar::I64(5)));
/// assert_eq!(e.message, "[2, 5] (10 elements) and 7");
/// ```
pub fn assert_error(
    code: Code,
    message: &str,
    shown: &[Vec<Arg>],
    span: Option<Span>,
    mut load: impl FnMut(ValueId) -> Result<Scalar>,
) -> Error {
    let mut extents: Vec<Vec<Option<i64>>> = Vec::with_capacity(shown.len());
    for dims in shown {
        extents.push(
            dims.iter()
                .map(|a| match a {
                    Arg::Const(c) => Some(*c),
                    Arg::Value(v) => match load(*v) {
                        Ok(Scalar::I64(n)) => Some(n),
                        _ => None,
                    },
                })
                .collect(),
        );
    }
    let text = |d: &Option<i64>| d.map_or_else(|| "?".to_string(), |n| n.to_string());
    let mut out = String::with_capacity(message.len() + 16);
    let mut rest = message;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        let Some(close) = after.find('}') else {
            out.push_str(&rest[open..]);
            rest = "";
            break;
        };
        let inner = &after[..close];
        let (digits, form) = match inner.strip_suffix('#') {
            Some(d) => (d, '#'),
            None => match inner.strip_suffix('!') {
                Some(d) => (d, '!'),
                None => (inner, ' '),
            },
        };
        match digits.parse::<usize>().ok().and_then(|k| extents.get(k)) {
            Some(dims) => {
                let listed = dims.iter().map(text).collect::<Vec<_>>().join(", ");
                match form {
                    '#' => {
                        let product = dims
                            .iter()
                            .try_fold(1i64, |acc, d| d.and_then(|d| acc.checked_mul(d)))
                            .map_or_else(|| "?".to_string(), |n| n.to_string());
                        out.push_str(&product);
                    }
                    '!' => out.push_str(&listed),
                    _ => {
                        out.push('[');
                        out.push_str(&listed);
                        out.push(']');
                    }
                }
            }
            None => {
                out.push('{');
                out.push_str(inner);
                out.push('}');
            }
        }
        rest = &after[close + 1..];
    }
    out.push_str(rest);
    Error::new(code, out).or_at(span)
}
