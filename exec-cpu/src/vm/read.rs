//! Array reads: contiguous slices, runs of slices, or element-by-element gathers, with the
//! reference's out-of-bounds errors.

use super::{flat_index, fmt_i64s, fmt_shape, opnd, put, slot, uniform, Cx, Opnd, VmErr, R};
use crate::col::{take, Col, Elem};
use crate::internal;
use crate::program::ArrInfo;
use eqfuse_ir::error::{Error, Span};

/// The reference's message for a read out of bounds.
fn out_of_bounds(a: &ArrInfo<'_>, ix: &[i64]) -> Error {
    let shown = match ix {
        [i] => format!("index {i}"),
        _ => format!("index {}", fmt_i64s(ix)),
    };
    let bounds = match a.shape.as_slice() {
        [n] => format!("of length {n}"),
        _ => format!("of shape {}", fmt_shape(&a.shape)),
    };
    Error::index(Span::default(), format!("{shown} out of bounds for `{}` {bounds}", a.name))
}

/// `size a axis`, with the reference's message for an axis out of range.
pub(super) fn dim(a: &ArrInfo<'_>, axis: i64) -> Result<i64, Error> {
    match usize::try_from(axis).ok().and_then(|k| a.shape.get(k)) {
        Some(&d) => i64::try_from(d).map_err(|_| Error::limit("a dimension overflows i64")),
        None => Err(Error::index(
            Span::default(),
            format!(
                "`size`: dimension {axis} out of bounds for `{}` of rank {} (shape {})",
                a.name,
                a.shape.len(),
                fmt_shape(&a.shape)
            ),
        )),
    }
}

/// The index of element `pos` (for an error message).
fn index_at(p: &Cx<'_, '_>, regs: &[Col], index: &[usize], pos: usize) -> R<Vec<i64>> {
    let mut ix = Vec::with_capacity(index.len());
    for &r in index {
        let v =
            opnd::<i64>(p, regs, r)?.at(pos).ok_or_else(|| internal("a register shorter than its block"))?;
        ix.push(v);
    }
    Ok(ix)
}

/// How a read finds its elements.
#[derive(Clone, Copy)]
pub(super) enum How {
    /// A slice of the array, from this flat position (the index is the parameters, in
    /// order, into an array of the space's shape).
    Slice(usize),
    /// Runs along the innermost dimension of the space, from this flat position (every
    /// index is a parameter).
    Runs(usize),
    /// Element by element.
    Gather,
}

/// `dst = a[index]`.
pub(super) fn read<T: Elem>(
    p: &Cx<'_, '_>,
    regs: &mut [Col],
    dst: usize,
    a: &ArrInfo<'_>,
    index: &[usize],
    n: usize,
    how: How,
) -> R {
    let data = T::of_ref(a.data).ok_or_else(|| internal("an array of another type"))?;
    let mut out = take::<T>(slot(regs, dst)?);
    out.clear();
    let res = match how {
        How::Runs(start) if !uniform(p, dst) => read_runs(p, &mut out, data, a, index, start, n),
        How::Slice(start) if !uniform(p, dst) => {
            read_into(p, regs, &mut out, data, a, index, false, n, Some(start))
        }
        _ => read_into(p, regs, &mut out, data, a, index, uniform(p, dst), n, None),
    };
    put(regs, dst, out)?;
    res
}

/// A read whose every index is a parameter of the function (an index of the space), on a
/// contiguous block from flat position `start`: along each run of the innermost dimension
/// the outer parameters are constant and the innermost one counts up, so each run reads a
/// slice of the array (`v[j]`, `m[i, j]`), a strided run (`m[j, i]`) or one element
/// repeated (`v[i]`), with the bounds checked once per run.
fn read_runs<T: Elem>(
    p: &Cx<'_, '_>,
    out: &mut Vec<T>,
    data: &[T],
    a: &ArrInfo<'_>,
    index: &[usize],
    start: usize,
    n: usize,
) -> R {
    let space = p.space.as_deref().ok_or_else(|| internal("a parameter read without a space"))?;
    let (&inner, _) = space.split_last().ok_or_else(|| internal("a parameter read over an empty space"))?;
    let last = space.len() - 1;
    if inner == 0 || index.len() != a.shape.len() || index.iter().any(|&d| d > last) {
        return Err(internal("a parameter read that does not fit its space").into());
    }
    // the multi-index of the run's first element
    let mut ix = vec![0usize; space.len()];
    let mut flat = start;
    for (slot, &d) in ix.iter_mut().zip(space).rev() {
        *slot = flat % d;
        flat /= d;
    }
    out.reserve(n);
    let mut done = 0;
    while done < n {
        let pos_inner = ix.get(last).copied().unwrap_or(0);
        let run = (n - done).min(inner - pos_inner);
        let (mut base, mut step, mut bad) = (0usize, 0usize, None::<usize>);
        for ((&d, &dim), &stride) in index.iter().zip(&a.shape).zip(&a.strides) {
            let v = ix.get(d).copied().unwrap_or(0);
            if d == last {
                if v + run > dim {
                    let k = dim.saturating_sub(v);
                    bad = Some(bad.map_or(k, |b: usize| b.min(k)));
                }
                step += stride;
            } else if v >= dim {
                bad = Some(0);
            }
            base += v * stride;
        }
        if let Some(k) = bad {
            let ix: Vec<i64> = index
                .iter()
                .map(|&d| {
                    let v = ix.get(d).copied().unwrap_or(0) + if d == last { k } else { 0 };
                    v as i64
                })
                .collect();
            return Err(VmErr::at(out_of_bounds(a, &ix), done + k));
        }
        let past = || internal("a read past the array");
        if step == 1 {
            out.extend_from_slice(data.get(base..base + run).ok_or_else(past)?);
        } else if step == 0 {
            let x = *data.get(base).ok_or_else(past)?;
            out.extend(std::iter::repeat_n(x, run));
        } else {
            let end = base + (run - 1) * step;
            if end >= data.len() {
                return Err(past().into());
            }
            out.extend((0..run).map(|k| data[base + k * step]));
        }
        done += run;
        // the next run starts at the next row
        if let Some(v) = ix.get_mut(last) {
            *v += run;
        }
        for d in (1..space.len()).rev() {
            if ix.get(d).copied().unwrap_or(0) < space.get(d).copied().unwrap_or(1) {
                break;
            }
            if let Some(v) = ix.get_mut(d) {
                *v = 0;
            }
            if let Some(v) = ix.get_mut(d - 1) {
                *v += 1;
            }
        }
    }
    Ok(())
}

#[allow(clippy::too_many_arguments)]
fn read_into<T: Elem>(
    p: &Cx<'_, '_>,
    regs: &[Col],
    out: &mut Vec<T>,
    data: &[T],
    a: &ArrInfo<'_>,
    index: &[usize],
    uni: bool,
    n: usize,
    contig: Option<usize>,
) -> R {
    if uni {
        let ix = index_at(p, regs, index, 0)?;
        let v = flat_index(&a.shape, &ix).and_then(|f| data.get(f)).ok_or_else(|| out_of_bounds(a, &ix))?;
        out.push(*v);
        return Ok(());
    }
    if let Some(start) = contig {
        // the index function reads its own element: a slice of the array
        let s = start.checked_add(n).and_then(|end| data.get(start..end));
        out.extend_from_slice(s.ok_or_else(|| internal("a contiguous read past the array"))?);
        return Ok(());
    }
    out.reserve(n);
    if let [r] = index {
        let Opnd::V(ix) = opnd::<i64>(p, regs, *r)? else {
            return Err(internal("a varying read of a uniform index").into());
        };
        for (pos, &i) in ix.iter().enumerate() {
            match usize::try_from(i).ok().and_then(|u| data.get(u)) {
                Some(&v) => out.push(v),
                None => return Err(VmErr::at(out_of_bounds(a, &[i]), pos)),
            }
        }
        return Ok(());
    }
    // several dimensions: row-major offsets, checked dimension by dimension
    let mut flat = vec![0usize; n];
    for ((&r, &d), &stride) in index.iter().zip(&a.shape).zip(&a.strides) {
        let bad = match opnd::<i64>(p, regs, r)? {
            Opnd::S(i) => match usize::try_from(i).ok().filter(|&u| u < d) {
                Some(u) => {
                    let off = u * stride;
                    flat.iter_mut().for_each(|f| *f += off);
                    None
                }
                None => Some(0),
            },
            Opnd::V(ix) => {
                let mut bad = None;
                for (pos, (f, &i)) in flat.iter_mut().zip(ix).enumerate() {
                    match usize::try_from(i).ok().filter(|&u| u < d) {
                        Some(u) => *f += u * stride,
                        None => {
                            bad = Some(pos);
                            break;
                        }
                    }
                }
                bad
            }
        };
        if let Some(pos) = bad {
            let ix = index_at(p, regs, index, pos)?;
            return Err(VmErr::at(out_of_bounds(a, &ix), pos));
        }
    }
    for &f in &flat {
        out.push(*data.get(f).ok_or_else(|| internal("a read past the array"))?);
    }
    Ok(())
}
