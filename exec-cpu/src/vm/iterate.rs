//! `iterate` loops: in phases between distinct counts, on groups of elements in L1 for pure
//! bodies, and with elements that reach a fixed point dropped from the loop.

use super::{assign, exec, gather, next_frame, opnd, put, remap, scatter, slot, ty, uniform, Cx, Opnd, R};
use crate::col::{take, with_type, Col, Elem};
use crate::internal;
use crate::lanes::{GroupLoop, IntoAny, Src};
use crate::program::LoopOp;

pub(super) fn exec_loop(
    p: &Cx<'_, '_>,
    l: &LoopOp,
    frames: &mut [Vec<Col>],
    n: usize,
    contig: Option<usize>,
) -> R {
    let regs = frames.first_mut().ok_or_else(|| internal("no frame"))?;
    for (&v, &init) in l.vars.iter().zip(&l.inits) {
        assign(p, regs, init, v, n)?;
    }
    if let Some(g) = &l.group {
        group_loop(p, l, g, regs, n)?;
        for (&d, &v) in l.dsts.iter().zip(&l.vars) {
            assign(p, regs, v, d, n)?;
        }
        return Ok(());
    }
    let counts: Option<Vec<i64>> = match opnd::<i64>(p, regs, l.count)? {
        Opnd::S(c) => {
            iterate(p, l, frames, n, c, contig, true)?;
            None
        }
        Opnd::V(cs) => Some(cs.to_vec()),
    };
    if let Some(counts) = counts {
        let lo = counts.iter().copied().min().unwrap_or(0);
        let hi = counts.iter().copied().max().unwrap_or(0);
        if lo == hi {
            iterate(p, l, frames, n, hi, contig, true)?;
        } else {
            phases(p, l, frames, n, &counts, contig)?;
        }
    }
    let regs = frames.first_mut().ok_or_else(|| internal("no frame"))?;
    for (&d, &v) in l.dsts.iter().zip(&l.vars) {
        assign(p, regs, v, d, n)?;
    }
    Ok(())
}

/// A loop whose body cannot fail, run on small groups of elements ([`crate::lanes`]).
fn group_loop(p: &Cx<'_, '_>, l: &LoopOp, g: &GroupLoop, regs: &mut [Col], n: usize) -> R {
    let mut outs: Vec<Col> = Vec::with_capacity(g.vars.len());
    for &(v, _) in &g.vars {
        outs.push(with_type!(ty(p, v), T => T::wrap(Vec::with_capacity(n))));
    }
    {
        let mut srcs = Vec::with_capacity(g.loads.len());
        for &(r, _) in &g.loads {
            srcs.push(with_type!(ty(p, r), T => src::<T>(p, regs, r)?.any()));
        }
        let counts = src::<i64>(p, regs, l.count)?;
        g.run(&srcs, counts, n, &mut outs);
    }
    for (&(v, _), col) in g.vars.iter().zip(outs) {
        if col.len() != n {
            return Err(internal("a loop state of another length than its block").into());
        }
        *slot(regs, v)? = col;
    }
    Ok(())
}

/// Register `r` as a group's source.
fn src<'a, T: Elem>(p: &'a Cx<'_, '_>, regs: &'a [Col], r: usize) -> R<Src<'a, T>> {
    Ok(match opnd::<T>(p, regs, r)? {
        Opnd::S(x) => Src::S(x),
        Opnd::V(xs) => Src::V(xs),
    })
}

/// A loop whose counts differ: between two distinct counts the elements still iterating
/// are a fixed set, run compacted (or in place when it is every element).
fn phases(
    p: &Cx<'_, '_>,
    l: &LoopOp,
    frames: &mut [Vec<Col>],
    n: usize,
    counts: &[i64],
    contig: Option<usize>,
) -> R {
    let mut steps: Vec<i64> = counts.iter().copied().filter(|&c| c > 0).collect();
    steps.sort_unstable();
    steps.dedup();
    let mut done = 0i64;
    for th in steps {
        let pos: Vec<u32> =
            counts.iter().enumerate().filter(|(_, &c)| c >= th).map(|(k, _)| k as u32).collect();
        let iters = th - done;
        done = th;
        if pos.len() == n {
            iterate(p, l, frames, n, iters, contig, true)?;
            continue;
        }
        let (regs, deeper) = frames.split_first_mut().ok_or_else(|| internal("no frame"))?;
        {
            let sub = next_frame(p, deeper, "a loop")?;
            for &r in &l.free {
                let src = regs.get(r).ok_or_else(|| internal("no register"))?;
                let dst = sub.get_mut(r).ok_or_else(|| internal("no register"))?;
                gather(src, uniform(p, r), &pos, dst)?;
            }
        }
        iterate(&p.sub(pos.len()), l, deeper, pos.len(), iters, None, false).map_err(remap(&pos))?;
        let sub = deeper.first().ok_or_else(|| internal("no frame for a loop"))?;
        for &v in &l.vars {
            with_type!(ty(p, v), T => {
                let mut out = take::<T>(slot(regs, v)?);
                let r = scatter(opnd::<T>(p, sub, v)?, &pos, &mut out);
                put(regs, v, out)?;
                r?;
            });
        }
    }
    Ok(())
}

/// Most iterations between two convergence checks of a loop whose elements keep changing.
const CONVERGE_MAX_GAP: i64 = 8;

/// Whether a compacted set of `m` elements of which `active` still change is worth
/// compacting again (a quarter or more have converged).
fn worth_compacting(active: usize, m: usize) -> bool {
    active < m - m / 4
}

/// Runs the loop body `iters` times on every element of the frame (state in `vars`).
///
/// With `converge` (the next frame is free for it), elements whose state an iteration
/// leaves unchanged, bit for bit, are at a fixed point: the body is a pure function of the
/// state and of registers the loop does not write, so every later iteration would leave
/// them unchanged too (and cannot fail on them, as this one did not). Once enough have
/// converged, the rest iterate compacted in the next frame ([`converged_iterate`]); when
/// all have, the loop stops early. The checks back off while no element converges.
#[allow(clippy::too_many_arguments)]
fn iterate(
    p: &Cx<'_, '_>,
    l: &LoopOp,
    frames: &mut [Vec<Col>],
    n: usize,
    iters: i64,
    contig: Option<usize>,
    converge: bool,
) -> R {
    let mut tmp: Vec<(usize, Col)> = Vec::new();
    let mut mask: Vec<bool> = Vec::new();
    let iters = Ord::max(iters, 0);
    let converge = converge && !l.vars.is_empty() && frames.len() > 1;
    let (mut gap, mut next_check) = (1i64, 1i64);
    for it in 0..iters {
        exec(p, &l.body, frames, n, contig)?;
        let regs = frames.first_mut().ok_or_else(|| internal("no frame"))?;
        let check = converge && it + 1 < iters && it + 1 >= next_check;
        if check {
            changed(p, l, regs, n, &mut mask)?;
        }
        step(p, l, regs, n, &mut tmp)?;
        if check {
            let active = mask.iter().filter(|&&c| c).count();
            if active == 0 {
                return Ok(());
            }
            if worth_compacting(active, n) {
                return converged_iterate(p, l, frames, &mask, iters - it - 1);
            }
            gap = if active == n { Ord::min(gap * 2, CONVERGE_MAX_GAP) } else { 1 };
            next_check = it + 1 + gap;
        }
    }
    Ok(())
}

/// The registers a compacted loop carries: its free registers and its state.
fn carried(l: &LoopOp) -> impl Iterator<Item = usize> + '_ {
    l.free.iter().copied().chain(l.vars.iter().copied().filter(|v| !l.free.contains(v)))
}

/// The rest of [`iterate`] (`rest` iterations) once some elements have converged: the
/// elements still changing (`mask`) iterate in the next frame, compacted again whenever
/// enough more converge; each element's state is written back to this frame.
fn converged_iterate(p: &Cx<'_, '_>, l: &LoopOp, frames: &mut [Vec<Col>], mask: &[bool], rest: i64) -> R {
    let (regs, deeper) = frames.split_first_mut().ok_or_else(|| internal("no frame"))?;
    let mut pos: Vec<u32> = mask.iter().enumerate().filter(|(_, &c)| c).map(|(k, _)| k as u32).collect();
    {
        let sub = next_frame(p, deeper, "a loop")?;
        for r in carried(l) {
            let src = regs.get(r).ok_or_else(|| internal("no register"))?;
            let dst = sub.get_mut(r).ok_or_else(|| internal("no register"))?;
            gather(src, uniform(p, r), &pos, dst)?;
        }
    }
    let mut tmp: Vec<(usize, Col)> = Vec::new();
    let mut keep: Vec<bool> = Vec::new();
    let (mut gap, mut next_check) = (1i64, 1i64);
    for it in 0..rest {
        let m = pos.len();
        exec(&p.sub(m), &l.body, deeper, m, None).map_err(remap(&pos))?;
        let sub = deeper.first_mut().ok_or_else(|| internal("no frame for a loop"))?;
        let check = it + 1 < rest && it + 1 >= next_check;
        if check {
            changed(p, l, sub, m, &mut keep)?;
        }
        step(p, l, sub, m, &mut tmp)?;
        if check {
            let active = keep.iter().filter(|&&c| c).count();
            if worth_compacting(active, m) {
                write_back(p, l, regs, sub, &pos)?;
                if active == 0 {
                    return Ok(());
                }
                for r in carried(l) {
                    if !uniform(p, r) {
                        with_type!(ty(p, r), T => {
                            let v = slot(sub, r).ok().and_then(T::vec_mut)
                                .ok_or_else(|| internal("a loop register of another type"))?;
                            retain(v, &keep)?;
                        });
                    }
                }
                retain(&mut pos, &keep)?;
            }
            gap = if active == m { Ord::min(gap * 2, CONVERGE_MAX_GAP) } else { 1 };
            next_check = it + 1 + gap;
        }
    }
    let sub = deeper.first().ok_or_else(|| internal("no frame for a loop"))?;
    write_back(p, l, regs, sub, &pos)
}

/// Keeps the elements of `v` whose `keep` is set.
fn retain<T: Copy>(v: &mut Vec<T>, keep: &[bool]) -> R {
    if v.len() != keep.len() {
        return Err(internal("a compaction of a column of another length").into());
    }
    let mut k = 0;
    v.retain(|_| {
        let c = keep.get(k).copied().unwrap_or(false);
        k += 1;
        c
    });
    Ok(())
}

/// Scatters the compacted frame's loop state `sub` back to `regs` at `pos`.
fn write_back(p: &Cx<'_, '_>, l: &LoopOp, regs: &mut [Col], sub: &[Col], pos: &[u32]) -> R {
    for &v in &l.vars {
        with_type!(ty(p, v), T => {
            let mut out = take::<T>(slot(regs, v)?);
            let r = scatter(opnd::<T>(p, sub, v)?, pos, &mut out);
            put(regs, v, out)?;
            r?;
        });
    }
    Ok(())
}

/// `mask[k]`: whether the iteration just run changes element `k`'s state (its next value
/// differs from its state, bit for bit, in some state register).
fn changed(p: &Cx<'_, '_>, l: &LoopOp, regs: &[Col], n: usize, mask: &mut Vec<bool>) -> R {
    mask.clear();
    mask.resize(n, false);
    for (&v, &nx) in l.vars.iter().zip(&l.nexts) {
        with_type!(ty(p, v), T => {
            let Opnd::V(old) = opnd::<T>(p, regs, v)? else {
                return Err(internal("a uniform loop state").into());
            };
            if old.len() != n {
                return Err(internal("a loop state of another length than its block").into());
            }
            match opnd::<T>(p, regs, nx)? {
                Opnd::V(new) => {
                    if new.len() != n {
                        return Err(internal("a next value of another length than its block").into());
                    }
                    mask.iter_mut().zip(old).zip(new).for_each(|((m, &a), &b)| *m |= !a.same(b));
                }
                Opnd::S(b) => mask.iter_mut().zip(old).for_each(|(m, &a)| *m |= !a.same(b)),
            }
        });
    }
    Ok(())
}

/// `vars = nexts`, all at once, on a frame of `n` elements.
fn step(p: &Cx<'_, '_>, l: &LoopOp, regs: &mut [Col], n: usize, tmp: &mut Vec<(usize, Col)>) -> R {
    // copy the nexts that are read elsewhere (other state, registers outside the body,
    // uniform ones) first, then swap in the body's own
    tmp.clear();
    for ((&v, &nx), &swap) in l.vars.iter().zip(&l.nexts).zip(&l.swap) {
        if !swap {
            let col = regs.get(nx).ok_or_else(|| internal("no register"))?;
            tmp.push((v, col.clone()));
        }
    }
    for ((&v, &nx), &swap) in l.vars.iter().zip(&l.nexts).zip(&l.swap) {
        if swap {
            if v >= regs.len() || nx >= regs.len() {
                return Err(internal("a loop register out of range").into());
            }
            regs.swap(v, nx);
        }
    }
    for (v, col) in tmp.drain(..) {
        let slot = slot(regs, v)?;
        *slot = col;
        if slot.len() != n {
            // broadcast a uniform next value to the (varying) state
            with_type!(ty(p, v), T => {
                let s = T::vec_mut(slot).ok_or_else(|| internal("a state of another type"))?;
                let x = s.first().copied().ok_or_else(|| internal("an empty uniform register"))?;
                s.clear();
                s.resize(n, x);
            });
        }
    }
    Ok(())
}
