//! Checking the array builtins of version 2 and the reductions over groups: `reduce`,
//! `scan`, `scan_exclusive`, `reduce_segments` and `scan_segments` of an array or a group,
//! `sum prod mean all any dot argmin argmax`, `slice` of any rank, and `map`/`generate`
//! with a tuple-returning function.

use super::builtins::{ordinal, shape_text, Call};
use super::dims::{combine, same};
use super::expr::{fn_ret, Checker, FnPos, TNode};
use super::text::{err, show};
use super::unify::{Class, IT, V};
use crate::error::{Error, Result};
use crate::types::{Dim, ElemType};

/// The shape of a reduction over the innermost dimension of `shape`, of element types `ts`:
/// a scalar (or tuple) at rank 1, else arrays (a group) of the outer shape.
fn reduced(ts: &[V], shape: &[Dim], group: bool) -> IT {
    match shape.split_last() {
        Some((_, [])) | None => {
            if group {
                IT::Tuple(ts.to_vec())
            } else {
                ts.first().map_or(IT::Tuple(Vec::new()), |t| IT::Scalar(*t))
            }
        }
        Some((_, outer)) => arrays(ts, outer, group),
    }
}

/// Arrays of `shape`, one per element type: a group, or one array.
fn arrays(ts: &[V], shape: &[Dim], group: bool) -> IT {
    let mut parts: Vec<IT> = ts.iter().map(|t| IT::Array { elem: *t, shape: shape.to_vec() }).collect();
    if group {
        IT::Group(parts)
    } else {
        parts.pop().unwrap_or(IT::Group(Vec::new()))
    }
}

impl Checker {
    /// The result of `map` or `generate` of shape `shape` whose function is `f`: an array,
    /// or a group when `f` returns a tuple.
    pub(crate) fn elementwise_result(&mut self, f: &TNode, shape: Vec<Dim>, c: &Call<'_>) -> Result<IT> {
        match fn_ret(&f.it) {
            IT::Scalar(v) => Ok(IT::Array { elem: v, shape }),
            IT::Tuple(vs) => Ok(arrays(&vs, &shape, true)),
            other => {
                let s = self.vars.show(&other);
                Err(err(
                    c.e,
                    format!("the function of `{}` must return a scalar or a tuple, found {s}", c.name),
                ))
            }
        }
    }

    /// The array or group that a reduction consumes: its element types, shape, and whether
    /// it is a group.
    fn reduction_input(&mut self, c: &mut Call<'_>, i: usize) -> Result<(Vec<V>, Vec<Dim>, bool)> {
        match self.arg_value(c, i)? {
            IT::Array { elem, shape } => Ok((vec![elem], shape, false)),
            IT::Group(parts) => {
                let mut ts = Vec::with_capacity(parts.len());
                let mut first: Option<Vec<Dim>> = None;
                for p in &parts {
                    let IT::Array { elem, shape } = p else {
                        let s = self.vars.show(&IT::Group(parts.clone()));
                        return Err(err(
                            c.e,
                            format!("the group given to `{}` must hold arrays only, found {s}", c.name),
                        ));
                    };
                    if let Some(f) = &first {
                        let differ = f.len() != shape.len()
                            || f.iter().zip(shape).any(|(a, b)| same(a, b) == Some(false));
                        if differ {
                            return Err(Error::shape(
                                c.e.span,
                                format!(
                                    "the arrays of a group must have one shape, found {} and {} in `{}`",
                                    shape_text(f),
                                    shape_text(shape),
                                    show(c.arg(i)?)
                                ),
                            ));
                        }
                    } else {
                        first = Some(shape.clone());
                    }
                    ts.push(*elem);
                }
                Ok((ts, first.unwrap_or_default(), true))
            }
            other => {
                let s = self.vars.show(&other);
                Err(err(
                    c.e,
                    format!(
                        "the {} argument of `{}` must be an array or a group, found {s}",
                        ordinal(i),
                        c.name
                    ),
                ))
            }
        }
    }

    /// `ne` (argument `ne_i`) and `op` (argument 0) of a reduction over elements `ts`.
    fn reduction_ne_op(&mut self, c: &mut Call<'_>, ne_i: usize, ts: &[V], group: bool) -> Result<()> {
        let name = c.name;
        let ne = self.arg_value(c, ne_i)?;
        let elem = if group {
            IT::Tuple(ts.to_vec())
        } else {
            ts.first().map_or(IT::Tuple(Vec::new()), |t| IT::Scalar(*t))
        };
        let ne_e = c.arg(ne_i)?;
        self.unify_part(&elem, &ne, ne_e, |a, b| {
            format!("the neutral element of `{name}` must have the element type {a}, found {b}")
        })?;
        let f = self.arg_fn(c, 0, &[elem.clone(), elem.clone()], FnPos::Op)?;
        let r = fn_ret(&f.it);
        c.put(0, f);
        self.unify_part(&elem, &r, c.e, |a, b| {
            format!("the op of `{name}` must return the element type {a}, found {b}")
        })
    }

    /// `reduce`, `scan`, `scan_exclusive` (op ne a) and `reduce_segments`, `scan_segments`
    /// (op ne offsets a), of an array or a group.
    #[inline(never)]
    pub(crate) fn b_reduce(&mut self, c: &mut Call<'_>) -> Result<IT> {
        let segments = c.name.ends_with("_segments");
        let a_i = if segments { 3 } else { 2 };
        let (ts, shape, group) = self.reduction_input(c, a_i)?;
        let mut count = None;
        if segments {
            let (t, d) = self.arg_rank1(c, 2)?;
            let name = c.name;
            self.expect_at(t, ElemType::I64, c.arg(2)?, |x| {
                format!("the offsets of `{name}` must be i64, found {x}")
            })?;
            if shape.len() != 1 {
                return Err(err(
                    c.e,
                    format!("`{name}` needs an array (or group) of rank 1, found rank {}", shape.len()),
                ));
            }
            count = Some(combine(&d, &Dim::Known(1), -1));
        }
        self.reduction_ne_op(c, 1, &ts, group)?;
        Ok(match (c.name, count) {
            ("reduce", _) => reduced(&ts, &shape, group),
            (_, Some(m)) if c.name == "reduce_segments" => arrays(&ts, &[m], group),
            _ => arrays(&ts, &shape, group),
        })
    }

    /// `sum prod mean all any argmin argmax` (one array) and `dot` (two rank-1 arrays).
    #[inline(never)]
    pub(crate) fn b_summary(&mut self, c: &mut Call<'_>) -> Result<IT> {
        let name = c.name;
        let (t, shape) = self.arg_array(c, 0)?;
        let (class, what) = match name {
            "mean" => (Class::Float, "float"),
            "all" | "any" => (Class::Bool, "bool"),
            _ => (Class::Numeric, "numeric"),
        };
        self.constrain_at(t, class, c.e, |d| format!("`{name}` needs a {what} array, found elements {d}"))?;
        if name == "dot" {
            let (u, d) = self.arg_rank1(c, 1)?;
            self.unify_at(t, u, c.e, |a, b| {
                format!("`dot` needs arrays of one element type, found {a} and {b}")
            })?;
            let [d0] = shape.as_slice() else {
                return Err(err(c.e, format!("`dot` needs arrays of rank 1, found rank {}", shape.len())));
            };
            if same(d0, &d) == Some(false) {
                return Err(Error::shape(
                    c.e.span,
                    format!("`dot` needs arrays of one length, found [{d0}] and [{d}] in `{}`", show(c.e)),
                ));
            }
            return Ok(IT::Scalar(t));
        }
        let elem = if name.starts_with("arg") { self.vars.known(ElemType::I64) } else { t };
        Ok(reduced(&[elem], &shape, false))
    }

    /// `slice a [s1, ..., sr] [l1, ..., lr]`: the block of extent `[l1..lr]`.
    #[inline(never)]
    pub(crate) fn b_slice_nd(&mut self, c: &mut Call<'_>) -> Result<IT> {
        let (t, shape) = self.arg_array(c, 0)?;
        let starts = self.arg_shape(c, 1)?;
        let lens = self.arg_shape(c, 2)?;
        if starts.len() != shape.len() || lens.len() != shape.len() {
            return Err(err(
                c.e,
                format!(
                    "`slice` of an array of rank {} needs {} starts and {} lengths, found {} and {}",
                    shape.len(),
                    shape.len(),
                    shape.len(),
                    starts.len(),
                    lens.len()
                ),
            ));
        }
        Ok(IT::Array { elem: t, shape: lens })
    }
}
