//! The device's error record: where a kernel writes the first error of the program it met
//! (an index out of bounds, a division by zero), read back before any host step, any
//! download and at the end of a run, and turned into the interpreter's error.

use super::{fmt_shape, internal, Gpu, Run};
use eqfuse_ir::error::Result;
use eqfuse_ir::error::{Error, Span};

/// Length of the error record, in `i64`s: code, kernel, what, element, count, 8 indices.
pub(crate) const REC_LEN: usize = 16;
const REC_IX: usize = 8;

/// The multi-index of row-major position `flat` in `shape`.
fn unflatten(shape: &[usize], mut flat: usize) -> Vec<usize> {
    let mut ix = vec![0; shape.len()];
    for (slot, &d) in ix.iter_mut().zip(shape).rev() {
        if d > 0 {
            *slot = flat % d;
            flat /= d;
        }
    }
    ix
}

impl<G: Gpu> Run<'_, G> {
    /// Reads the error record (when a kernel ran since it was last read): the first error
    /// a kernel recorded, as the interpreter reports it.
    pub(super) fn check_errors(&mut self) -> Result<()> {
        if !self.dirty {
            return Ok(());
        }
        self.dirty = false;
        let bytes = self.gpu.download(&self.record, 0, REC_LEN * 8)?;
        let rec: Vec<i64> = bytes
            .chunks_exact(8)
            .map(|c| {
                let mut a = [0u8; 8];
                a.copy_from_slice(c);
                i64::from_le_bytes(a)
            })
            .collect();
        if rec.first().copied().unwrap_or(0) == 0 {
            return Ok(());
        }
        Err(self.decode(&rec))
    }

    /// The error a record describes, at the failing instruction's source position (packed
    /// with the code, [`eqfuse_codegen::site::site_code`]) else its kernel's.
    fn decode(&self, rec: &[i64]) -> Error {
        let get = |i: usize| rec.get(i).copied().unwrap_or(0);
        let (code, site) = eqfuse_codegen::site::site_of(get(0));
        let site = site.map(|(line, col)| Span { start: 0, end: 0, line, col });
        let launch = usize::try_from(get(1)).ok().and_then(|k| self.launched.get(k));
        self.decode_here(code, rec).or_at(site).or_at(launch.and_then(|l| l.span))
    }

    fn decode_here(&self, code: i64, rec: &[i64]) -> Error {
        let get = |i: usize| rec.get(i).copied().unwrap_or(0);
        let (kid, what, elem, n) = (get(1), get(2), get(3), get(4));
        let ix: Vec<i64> = (0..(n.clamp(0, REC_IX as i64) as usize)).map(|k| get(5 + k)).collect();
        let launch = usize::try_from(kid).ok().and_then(|k| self.launched.get(k));
        let at = |msg: String| -> String {
            match (launch, usize::try_from(elem)) {
                (Some(l), Ok(e)) => {
                    format!("{msg}, in `{}` at element {}", l.kind, fmt_shape(&unflatten(&l.space, e)))
                }
                _ => msg,
            }
        };
        let shown = |ix: &[i64]| match ix {
            [i] => i.to_string(),
            _ => fmt_shape(ix),
        };
        let value = usize::try_from(what).ok();
        let shape_of = |v: Option<usize>| -> Vec<usize> {
            v.and_then(|v| self.vals.get(v))
                .and_then(|x| x.as_ref())
                .map(|x| x.shape.clone())
                .unwrap_or_default()
        };
        let name_of = |v: Option<usize>| v.map(|v| self.name(v)).unwrap_or_else(|| "?".into());
        match code {
            1 => {
                let shape = shape_of(value);
                let bounds = match shape.as_slice() {
                    [n] => format!("of length {n}"),
                    _ => format!("of shape {}", fmt_shape(&shape)),
                };
                let idx = match ix.as_slice() {
                    [i] => format!("index {i}"),
                    _ => format!("index {}", fmt_shape(&ix)),
                };
                Error::index(
                    Span::default(),
                    at(format!("{idx} out of bounds for `{}` {bounds}", name_of(value))),
                )
            }
            2 => {
                let shape = shape_of(value);
                Error::index(
                    Span::default(),
                    at(format!(
                        "`size`: dimension {} out of bounds for `{}` of rank {} (shape {})",
                        ix.first().copied().unwrap_or(0),
                        name_of(value),
                        shape.len(),
                        fmt_shape(&shape)
                    )),
                )
            }
            3 | 4 => {
                let (word, sym) = if code == 3 { ("division", "/") } else { ("remainder", "%") };
                let ty = eqfuse_codegen::prelude_ints::type_of_code(what);
                let x = ix.first().copied().unwrap_or(0);
                // the dividend, recorded as a `long long`, read back at its type
                let x = eqfuse_ir::value::Scalar::from_i128_wrapping(ty, i128::from(x));
                Error::div_zero(Span::default(), at(format!("integer {word} by zero: `{x} {sym} 0` on {ty}")))
            }
            5 => {
                let shape = shape_of(value);
                let from = match (launch, usize::try_from(elem)) {
                    (Some(l), Ok(e)) => fmt_shape(&unflatten(&l.space, e)),
                    _ => "?".into(),
                };
                Error::index(
                    Span::default(),
                    format!(
                        "permute: target {} out of bounds for `{}` of shape {} (from element {from} of the source)",
                        shown(&ix),
                        name_of(value),
                        fmt_shape(&shape)
                    ),
                )
            }
            _ => internal(format!("an unknown device error code {code}")),
        }
    }
}
