//! Lazy `if`s: a uniform condition runs one branch, a small branch that cannot fail is
//! speculated and selected, any other runs compacted on the elements that take it.

use super::{assign, exec, gather, next_frame, opnd, put, remap, scatter, slot, ty, uniform, Cx, Opnd, R};
use crate::col::{take, with_type, Col, Elem};
use crate::internal;
use crate::num::pick;
use crate::program::IfOp;

pub(super) fn exec_if(
    p: &Cx<'_, '_>,
    i: &IfOp,
    frames: &mut [Vec<Col>],
    n: usize,
    contig: Option<usize>,
) -> R {
    let regs = frames.first().ok_or_else(|| internal("no frame"))?;
    let taken = match opnd::<bool>(p, regs, i.cond)? {
        Opnd::S(c) => Some(c),
        Opnd::V(cs) => {
            let t = cs.iter().filter(|&&c| c).count();
            if t == n {
                Some(true)
            } else if t == 0 {
                Some(false)
            } else {
                None
            }
        }
    };
    if let Some(c) = taken {
        let br = if c { &i.then_ } else { &i.else_ };
        exec(p, &br.block, frames, n, contig)?;
        let regs = frames.first_mut().ok_or_else(|| internal("no frame"))?;
        // the branch's own result register is dead after the `if`: move its column
        let own = !br.free.contains(&br.ret)
            && uniform(p, br.ret) == uniform(p, i.dst)
            && !matches!(p.slice.get(br.ret), Some(Some(_)));
        if own && br.ret != i.dst && br.ret < regs.len() && i.dst < regs.len() {
            regs.swap(br.ret, i.dst);
            return Ok(());
        }
        return assign(p, regs, br.ret, i.dst, n);
    }
    if i.speculate {
        exec(p, &i.then_.block, frames, n, contig)?;
        exec(p, &i.else_.block, frames, n, contig)?;
        let regs = frames.first_mut().ok_or_else(|| internal("no frame"))?;
        return with_type!(ty(p, i.dst), T => select::<T>(p, regs, i));
    }
    with_type!(ty(p, i.dst), T => compacted_if::<T>(p, i, frames, n))
}

/// `dst = cond ? then : else`, both computed on every element.
fn select<T: Elem>(p: &Cx<'_, '_>, regs: &mut [Col], i: &IfOp) -> R {
    let mut out = take::<T>(slot(regs, i.dst)?);
    out.clear();
    let Opnd::V(cs) = opnd::<bool>(p, regs, i.cond)? else {
        return Err(internal("a select on a uniform condition").into());
    };
    match (opnd::<T>(p, regs, i.then_.ret)?, opnd::<T>(p, regs, i.else_.ret)?) {
        (Opnd::V(t), Opnd::V(e)) => out.extend(cs.iter().zip(t).zip(e).map(|((&c, &t), &e)| pick(c, t, e))),
        (Opnd::V(t), Opnd::S(e)) => out.extend(cs.iter().zip(t).map(|(&c, &t)| pick(c, t, e))),
        (Opnd::S(t), Opnd::V(e)) => out.extend(cs.iter().zip(e).map(|(&c, &e)| pick(c, t, e))),
        (Opnd::S(t), Opnd::S(e)) => out.extend(cs.iter().map(|&c| pick(c, t, e))),
    }
    put(regs, i.dst, out)
}

/// An `if` whose condition differs across the elements: each branch runs on the elements
/// that take it, compacted into the next frame.
fn compacted_if<T: Elem>(p: &Cx<'_, '_>, i: &IfOp, frames: &mut [Vec<Col>], n: usize) -> R {
    let (regs, deeper) = frames.split_first_mut().ok_or_else(|| internal("no frame"))?;
    let (tpos, epos) = {
        let Opnd::V(cs) = opnd::<bool>(p, regs, i.cond)? else {
            return Err(internal("a compacted if on a uniform condition").into());
        };
        partition(cs)
    };
    let mut out = take::<T>(slot(regs, i.dst)?);
    out.clear();
    out.resize(n, T::default());
    let res = (|| -> R {
        for (br, pos) in [(&i.then_, &tpos), (&i.else_, &epos)] {
            if br.block.ops.is_empty() {
                scatter_at(p, regs, br.ret, pos, &mut out)?;
                continue;
            }
            let sub = next_frame(p, deeper, "a branch")?;
            for &r in &br.free {
                let src = regs.get(r).ok_or_else(|| internal("no register"))?;
                let dst = sub.get_mut(r).ok_or_else(|| internal("no register"))?;
                gather(src, uniform(p, r), pos, dst)?;
            }
            exec(&p.sub(pos.len()), &br.block, deeper, pos.len(), None).map_err(remap(pos))?;
            let sub = deeper.first().ok_or_else(|| internal("no frame for a branch"))?;
            scatter(opnd::<T>(p, sub, br.ret)?, pos, &mut out)?;
        }
        Ok(())
    })();
    put(regs, i.dst, out)?;
    res
}

/// The positions whose condition holds and those whose condition does not, without a
/// branch per element (conditions are often unpredictable).
fn partition(cs: &[bool]) -> (Vec<u32>, Vec<u32>) {
    let n = cs.len();
    let (mut t, mut e) = (vec![0u32; n], vec![0u32; n]);
    let (mut i, mut j) = (0usize, 0usize);
    for (k, &c) in cs.iter().enumerate() {
        // both slots exist: i + j == k < n
        if let (Some(ti), Some(ej)) = (t.get_mut(i), e.get_mut(j)) {
            *ti = k as u32;
            *ej = k as u32;
        }
        i += usize::from(c);
        j += usize::from(!c);
    }
    t.truncate(i);
    e.truncate(j);
    (t, e)
}

/// `out[pos[j]] = reg[pos[j]]` (a branch with no code of its own).
fn scatter_at<T: Elem>(p: &Cx<'_, '_>, regs: &[Col], r: usize, pos: &[u32], out: &mut [T]) -> R {
    match opnd::<T>(p, regs, r)? {
        Opnd::S(x) => scatter(Opnd::S(x), pos, out),
        Opnd::V(xs) => {
            if xs.len() != out.len() || pos.last().is_some_and(|&k| k as usize >= xs.len()) {
                return Err(internal("a register of another length than its block").into());
            }
            pos.iter().for_each(|&k| out[k as usize] = xs[k as usize]);
            Ok(())
        }
    }
}
