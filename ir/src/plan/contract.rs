//! Contractions: a reduction kernel that is a (batched) matrix product, which an executor
//! with a GEMM library runs as library calls instead of as a reduction.
//!
//! A kernel is a contraction when it has one `Reduce` lane with the operator `+` and the
//! neutral element `+0.0` over floats, and its element function is a product of exactly two
//! reads whose indices are parameters of the space (each at most once per read), each
//! possibly plus an offset that does not depend on the point (a sub-block: `a[i + 2, p]`),
//! times any number of factors that do not depend on the point (constants and 0-d values):
//!
//! ```text
//! c[i, j]     = Σ_p a[i, p] · b[p, j]             matrix-matrix
//! c[i, j]     = Σ_p a[p, i] · b[j, p]             transposed operands (by index pattern)
//! c[h, i, j]  = Σ_p q[h, i, p] · k[h, j, p]       batched
//! y[i]        = Σ_p m[i, p] · v[p]                matrix-vector
//! c[i, j]     = Σ_p s · a[i, p] · b[p, j]         scaled (s a constant or a host scalar)
//! c[i, j]     = Σ_p a[i + 1, p + o] · b[p, j]     a sub-block (o a host scalar)
//! ```
//!
//! The innermost dimension of the space is the one reduced (`K`); it must index both reads.
//! Every other dimension of the space indexes the left read only (`M`, at most one such
//! dimension), the right read only (`N`, at most one), or both (a batch dimension, any
//! number); at least one of `M` and `N` must be there (a batched dot product stays a
//! reduction: it is bound by memory, not by arithmetic).
//!
//! Recognising a contraction changes no semantics but the order of the sum, which the
//! language leaves free for a float `reduce` (a GEMM library also sums in blocks and may use
//! fused multiply-add; the tests compare contractions with a tolerance). The kernel itself
//! stays in the plan as the definition: an executor without GEMM runs it as it is, and one
//! with GEMM falls back to it when a read would be out of bounds, so the error is the
//! reduction's.
//!
//! Recognition is legality only: whether a contraction is worth it is the cost model's
//! question (`eqfuse_lower::model`), which prices it at the GEMM rate, and the extraction
//! chooses what to materialise so that products of materialised arrays appear.

use super::{known_op, Func, Inst, Kernel, KnownOp, LaneOp, Plan, Reg, ValueId};
use crate::ast::BinOp;
use crate::types::ElemType;
use crate::value::Scalar;
use std::collections::{HashMap, HashSet};

/// A kernel recognised as a contraction: `dst[outer] = scale · Σ_K a[..] · b[..]`.
#[derive(Clone, Debug, PartialEq)]
pub struct Contraction {
    /// The left operand (the one holding `M`, when there is one).
    pub a: Operand,
    /// The right operand.
    pub b: Operand,
    /// Factors of the product that do not depend on the point, in the order they appear.
    pub scale: Vec<Factor>,
}

/// One array of a contraction: for each of its axes, the dimension of the kernel's space
/// that indexes it, and an offset added to that index (a read of a sub-block).
#[derive(Clone, Debug, PartialEq)]
pub struct Operand {
    /// The array read.
    pub array: ValueId,
    /// `axes[d]`: the space dimension indexing axis `d` of the array.
    pub axes: Vec<usize>,
    /// `offsets[d]`: an `i64` added to that dimension's index (`a[i + 2, p + o]`), if any.
    pub offsets: Vec<Option<Factor>>,
}

/// A factor that does not depend on the point.
#[derive(Clone, Debug, PartialEq)]
pub enum Factor {
    /// A constant.
    Const(Scalar),
    /// A 0-d value of the plan.
    Value(ValueId),
}

impl Factor {
    /// Its value: the constant, or the 0-d value `load` gives.
    pub fn value(
        &self,
        load: &mut impl FnMut(ValueId) -> crate::error::Result<Scalar>,
    ) -> crate::error::Result<Scalar> {
        match self {
            Factor::Const(s) => Ok(*s),
            Factor::Value(v) => load(*v),
        }
    }
}

/// What a dimension of the space is in a contraction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// Indexes both operands and the result.
    Batch,
    /// Indexes the left operand and the result.
    M,
    /// Indexes the right operand and the result.
    N,
    /// The reduced (innermost) dimension: indexes both operands.
    K,
}

/// How to run a contraction on row-major arrays of given shapes: GEMM calls
/// `C = α A B` of `m × k` by `k × n`, with strides in elements, one per batch point,
/// `A` and `B` starting `base` elements into their arrays.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Layout {
    /// Rows of `A` and `C`.
    pub m: usize,
    /// Columns of `B` and `C`.
    pub n: usize,
    /// The reduced extent.
    pub k: usize,
    /// `A`'s row (`M`) and column (`K`) strides.
    pub a: (isize, isize),
    /// `B`'s row (`K`) and column (`N`) strides.
    pub b: (isize, isize),
    /// `C`'s row (`M`) and column (`N`) strides.
    pub c: (isize, isize),
    /// The batch dimensions: extent and the strides of `A`, `B` and `C` along it.
    pub batch: Vec<(usize, isize, isize, isize)>,
    /// Where `A` and `B` start in their arrays (the offsets of a sub-block).
    pub base: (isize, isize),
}

impl Contraction {
    /// The contraction `kernel` of `plan` is, if it is one (see the module docs).
    pub fn of(kernel: &Kernel, plan: &Plan) -> Option<Contraction> {
        let [lane] = kernel.lanes.as_slice() else { return None };
        let LaneOp::Reduce { op, ne } = &lane.op else { return None };
        let elem = plan.values.get(lane.dst)?.elem;
        if !matches!(elem, ElemType::F32 | ElemType::F64)
            || known_op(op) != Some(KnownOp::Add)
            || !is_plus_zero(ne)
        {
            return None;
        }
        let f = &kernel.elem;
        let rank = kernel.space.len();
        if rank < 2 || f.params.len() != rank || f.ret.len() != 1 {
            return None;
        }
        // the product's factors; every instruction of the body must be used by it
        let defs: HashMap<Reg, &Inst> =
            f.body.insts.iter().flat_map(|i| i.dsts().into_iter().map(move |d| (d, i))).collect();
        let mut used: HashSet<Reg> = HashSet::new();
        // a point-independent value: a constant or a loaded 0-d value
        let invariant = |r: Reg, used: &mut HashSet<Reg>| -> Option<Factor> {
            used.insert(r);
            match defs.get(&r)? {
                Inst::Const { value, .. } => Some(Factor::Const(*value)),
                Inst::Load { value, .. } => Some(Factor::Value(*value)),
                _ => None,
            }
        };
        let mut reads: Vec<Operand> = Vec::new();
        let mut scale = Vec::new();
        let mut stack = vec![f.ret[0]];
        while let Some(r) = stack.pop() {
            used.insert(r);
            match defs.get(&r)? {
                Inst::Binary { op: BinOp::Mul, a, b, .. } => stack.extend([*b, *a]),
                Inst::Read { array, index, .. } => {
                    let mut o = Operand { array: *array, axes: Vec::new(), offsets: Vec::new() };
                    for &ix in index {
                        // a parameter, or a parameter plus a point-independent offset
                        let (d, off) = match usize::try_from(ix).ok().filter(|d| *d < rank) {
                            Some(d) => (d, None),
                            None => {
                                used.insert(ix);
                                let Inst::Binary { op: BinOp::Add, a, b, .. } = defs.get(&ix)? else {
                                    return None;
                                };
                                let (p, x) = if (*a as usize) < rank { (*a, *b) } else { (*b, *a) };
                                let d = usize::try_from(p).ok().filter(|d| *d < rank)?;
                                (d, Some(invariant(x, &mut used)?))
                            }
                        };
                        if o.axes.contains(&d) {
                            return None;
                        }
                        o.axes.push(d);
                        o.offsets.push(off);
                    }
                    reads.push(o);
                }
                Inst::Const { .. } | Inst::Load { .. } => scale.push(invariant(r, &mut used)?),
                _ => return None,
            }
        }
        if f.body.insts.iter().flat_map(Inst::dsts).any(|d| !used.contains(&d)) || reads.len() != 2 {
            return None;
        }
        let b = reads.pop()?;
        let a = reads.pop()?;
        let mut c = Contraction { a, b, scale };
        let roles = c.roles(rank)?;
        // the left operand holds M when there is one
        if !roles.contains(&Role::M) {
            std::mem::swap(&mut c.a, &mut c.b);
        }
        Some(c)
    }

    /// The role of each dimension of a space of `rank` dimensions, or `None` when the
    /// reads do not make a contraction (a dimension indexing neither read, two `M` or two
    /// `N` dimensions, no `M` and no `N`, `K` missing from a read).
    pub fn roles(&self, rank: usize) -> Option<Vec<Role>> {
        let k = rank.checked_sub(1)?;
        if !self.a.axes.contains(&k) || !self.b.axes.contains(&k) {
            return None;
        }
        let mut roles = Vec::with_capacity(rank);
        for d in 0..k {
            roles.push(match (self.a.axes.contains(&d), self.b.axes.contains(&d)) {
                (true, true) => Role::Batch,
                (true, false) => Role::M,
                (false, true) => Role::N,
                (false, false) => return None,
            });
        }
        roles.push(Role::K);
        let count = |r: Role| roles.iter().filter(|x| **x == r).count();
        (count(Role::M) <= 1 && count(Role::N) <= 1 && count(Role::M) + count(Role::N) >= 1).then_some(roles)
    }

    /// The GEMM calls for a space of extents `space` and operands of row-major shapes
    /// `a.0` and `b.0` read at offsets `a.1` and `b.1` (one per axis, 0 where the operand
    /// has none: [`Operand::offsets`] evaluated), or `None` when a read of the reduction
    /// would be out of bounds (the caller runs the kernel instead, for its error) or the
    /// roles do not hold.
    pub fn layout(&self, space: &[usize], a: (&[usize], &[i64]), b: (&[usize], &[i64])) -> Option<Layout> {
        let roles = self.roles(space.len())?;
        let empty = space.contains(&0);
        // the strides of an operand along the space's dimensions, and where it starts
        let strides = |(shape, offs): (&[usize], &[i64]), axes: &[usize]| -> Option<(Vec<isize>, isize)> {
            if shape.len() != axes.len() || offs.len() != axes.len() {
                return None;
            }
            let mut out = vec![0isize; space.len()];
            let (mut acc, mut base) = (1isize, 0isize);
            for ((&d, &len), &off) in axes.iter().zip(shape).zip(offs).rev() {
                // every index read, `off .. off + extent`, must be in `0 .. len` (an empty
                // space reads nothing)
                let end = off.checked_add(i64::try_from(space[d]).ok()?)?;
                if !empty && (off < 0 || end > i64::try_from(len).ok()?) {
                    return None;
                }
                out[d] = acc;
                if !empty {
                    base = base.checked_add(isize::try_from(off).ok()?.checked_mul(acc)?)?;
                }
                acc = acc.checked_mul(isize::try_from(len).ok()?)?;
            }
            Some((out, base))
        };
        let (sa, base_a) = strides(a, &self.a.axes)?;
        let (sb, base_b) = strides(b, &self.b.axes)?;
        // the result: row-major over the outer dimensions
        let outer = space.len() - 1;
        let mut sc = vec![0isize; space.len()];
        let mut acc = 1isize;
        for d in (0..outer).rev() {
            sc[d] = acc;
            acc = acc.checked_mul(isize::try_from(space[d]).ok()?)?;
        }
        let find = |r: Role| roles.iter().position(|x| *x == r);
        let pick = |d: Option<usize>, s: &[isize]| d.map_or(0, |d| s[d]);
        let (dm, dn, dk) = (find(Role::M), find(Role::N), outer);
        let ext = |d: Option<usize>| d.map_or(1, |d| space[d]);
        Some(Layout {
            m: ext(dm),
            n: ext(dn),
            k: space[dk],
            a: (pick(dm, &sa), sa[dk]),
            b: (sb[dk], pick(dn, &sb)),
            c: (pick(dm, &sc), pick(dn, &sc)),
            batch: (0..outer)
                .filter(|d| roles[*d] == Role::Batch)
                .map(|d| (space[d], sa[d], sb[d], sc[d]))
                .collect(),
            base: (base_a, base_b),
        })
    }

    /// Each operand's index offsets, evaluated by `load` (0 on an axis with none): the
    /// second and third arguments of [`Contraction::layout`].
    pub fn offsets(
        &self,
        mut load: impl FnMut(ValueId) -> crate::error::Result<Scalar>,
    ) -> crate::error::Result<(Vec<i64>, Vec<i64>)> {
        let mut eval = |offs: &[Option<Factor>]| -> crate::error::Result<Vec<i64>> {
            offs.iter()
                .map(|o| match o {
                    None => Ok(0),
                    Some(f) => match f.value(&mut load)? {
                        Scalar::I64(x) => Ok(x),
                        other => Err(crate::error::internal(format!(
                            "an index offset that is {}",
                            other.elem_type()
                        ))),
                    },
                })
                .collect()
        };
        Ok((eval(&self.a.offsets)?, eval(&self.b.offsets)?))
    }

    /// The product of the factors ([`Contraction::scale`]), in their order, starting from
    /// 1 of `elem` (`f32` or `f64`): the `alpha` of the GEMM calls.
    pub fn alpha(
        &self,
        elem: ElemType,
        mut load: impl FnMut(ValueId) -> crate::error::Result<Scalar>,
    ) -> crate::error::Result<Scalar> {
        let mut alpha = match elem {
            ElemType::F32 => Scalar::F32(1.0),
            ElemType::F64 => Scalar::F64(1.0),
            other => return Err(crate::error::internal(format!("a contraction over {other}"))),
        };
        for f in &self.scale {
            alpha = match (alpha, f.value(&mut load)?) {
                (Scalar::F32(p), Scalar::F32(q)) => Scalar::F32(p * q),
                (Scalar::F64(p), Scalar::F64(q)) => Scalar::F64(p * q),
                _ => return Err(crate::error::internal("a contraction's factor of another type")),
            };
        }
        Ok(alpha)
    }

    /// Whether it has both an `M` and an `N` dimension (a matrix–matrix product, batched or
    /// not) in a space of `rank` dimensions. A matrix–vector product is bound by memory: it
    /// runs faster as the fused reduction it is than through a GEMM library, which copies
    /// (packs) the matrix first (docs/contractions.md), so lowering marks only these.
    pub fn is_matrix_product(&self, rank: usize) -> bool {
        self.roles(rank).is_some_and(|r| r.contains(&Role::M) && r.contains(&Role::N))
    }

    /// The product as a formula over index letters, values named by `name`:
    /// `c[i, j] = Σp a[i, p] · b[p, j]`, `y[i] = 0.5 · Σp m[i, p] · v[p]`,
    /// `c[h0, i, j] = Σp q[h0, i, p] · k[h0, j, p]` (batch dimensions `h0`, `h1`, ...).
    pub fn formula(&self, dst: &str, rank: usize, name: impl Fn(ValueId) -> String) -> String {
        let Some(roles) = self.roles(rank) else { return format!("{dst} = ?") };
        let letters: Vec<String> = roles
            .iter()
            .enumerate()
            .map(|(d, r)| match r {
                Role::Batch => format!("h{d}"),
                Role::M => "i".into(),
                Role::N => "j".into(),
                Role::K => "p".into(),
            })
            .collect();
        let show = |f: &Factor| match f {
            Factor::Const(c) => c.to_string(),
            Factor::Value(v) => name(*v),
        };
        let read = |o: &Operand| {
            let ix: Vec<String> = o
                .axes
                .iter()
                .zip(&o.offsets)
                .map(|(d, off)| match off {
                    Some(f) => format!("{} + {}", letters[*d], show(f)),
                    None => letters[*d].clone(),
                })
                .collect();
            format!("{}[{}]", name(o.array), ix.join(", "))
        };
        let outer: Vec<String> = letters[..rank - 1].to_vec();
        let scale: String = self.scale.iter().map(|f| format!("{} · ", show(f))).collect();
        let lhs = if outer.is_empty() { dst.to_string() } else { format!("{dst}[{}]", outer.join(", ")) };
        format!("{lhs} = {scale}Σp {} · {}", read(&self.a), read(&self.b))
    }
}

impl Layout {
    /// The offsets (in elements) of `A`, `B` and `C` for each batch point, in row-major
    /// order of the batch dimensions.
    pub fn batch_offsets(&self) -> Vec<(isize, isize, isize)> {
        let mut out = vec![(0isize, 0isize, 0isize)];
        for &(len, sa, sb, sc) in &self.batch {
            let mut next = Vec::with_capacity(out.len() * len);
            for &(a, b, c) in &out {
                for i in 0..len as isize {
                    next.push((a + i * sa, b + i * sb, c + i * sc));
                }
            }
            out = next;
        }
        out
    }
}

/// Whether `ne` is the constant `+0.0`.
fn is_plus_zero(ne: &Func) -> bool {
    match (ne.params.len(), ne.body.insts.as_slice(), ne.ret.as_slice()) {
        (0, [Inst::Const { dst, value }], [r]) if dst == r => match value {
            Scalar::F32(x) => x.to_bits() == 0,
            Scalar::F64(x) => x.to_bits() == 0,
            _ => false,
        },
        _ => false,
    }
}
