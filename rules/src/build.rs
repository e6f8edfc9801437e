//! Small helpers that add terms to the e-graph for the appliers: literals, parameters,
//! lambdas, shapes read off the analysis, and the queries the legality checks share.

use crate::EG;
use egg::Id;
use eqfuse_egraph::{ArrayLang, DeBruijn, Kind, Literal, ParamSet, ParamTypes, SymDim};
use eqfuse_ir::types::ElemType;
use std::collections::HashMap;

/// The `i64` literal `v`.
pub fn lit_i64(eg: &mut EG, v: i64) -> Id {
    eg.add(ArrayLang::Lit(Literal::I64(v)))
}

/// The De Bruijn parameter `$index:ty`.
pub fn param(eg: &mut EG, index: u32, ty: ElemType) -> Id {
    eg.add(ArrayLang::Param(DeBruijn { index, ty }))
}

/// `(lam <tys> body)`.
pub fn lam(eg: &mut EG, tys: Vec<ElemType>, body: Id) -> Id {
    let p = eg.add(ArrayLang::Params(ParamTypes(tys)));
    eg.add(ArrayLang::Lam([p, body]))
}

/// The parameter types of a lambda class, in source order.
pub fn param_types(eg: &EG, f: Id) -> Option<Vec<ElemType>> {
    eg[f].nodes.iter().find_map(|n| match n {
        ArrayLang::Lam([p, _]) => eg[*p].nodes.iter().find_map(|q| match q {
            ArrayLang::Params(t) => Some(t.0.clone()),
            _ => None,
        }),
        _ => None,
    })
}

/// The parameters of an `r`-index lambda in source order: `$r-1 .. $0`, all `i64`.
pub fn index_params(eg: &mut EG, r: usize) -> Vec<Id> {
    (0..r).rev().map(|k| param(eg, k as u32, ElemType::I64)).collect()
}

/// Element type and shape of an array class.
pub fn array_info(eg: &EG, id: Id) -> Option<(ElemType, Vec<SymDim>)> {
    match &eg[id].data.kind {
        Kind::Array { elem, shape } => Some((*elem, shape.clone())),
        _ => None,
    }
}

/// The dimensions of a shape or array class.
pub fn dims(eg: &EG, id: Id) -> Option<Vec<SymDim>> {
    match &eg[id].data.kind {
        Kind::Array { shape, .. } | Kind::Shape(shape) => Some(shape.clone()),
        _ => None,
    }
}

/// Element type of a scalar or array class.
pub fn elem(eg: &EG, id: Id) -> Option<ElemType> {
    eg[id].data.kind.elem()
}

/// The arity of a function class.
pub fn arity(eg: &EG, id: Id) -> Option<u32> {
    match &eg[id].data.kind {
        Kind::Func { arity, .. } => Some(*arity),
        _ => None,
    }
}

/// The constant of a class.
pub fn constant(eg: &EG, id: Id) -> Option<Literal> {
    eg[id].data.constant
}

/// The `i64` constant of a class.
pub fn const_i64(eg: &EG, id: Id) -> Option<i64> {
    match constant(eg, id) {
        Some(Literal::I64(v)) => Some(v),
        _ => None,
    }
}

/// An `i64` class for dimension `k` of array `a`, whose analysis says it is `d`.
pub fn dim_id(eg: &mut EG, a: Id, k: usize, rank: usize, d: &SymDim) -> Id {
    match d {
        SymDim::Const(v) => lit_i64(eg, *v),
        SymDim::Size(s) => eg.add(ArrayLang::Size(eqfuse_egraph::SizeName(*s))),
        SymDim::Class(c) => eg.find(*c),
        SymDim::Dynamic => {
            let a = size_owner(eg, a);
            if rank == 1 {
                return eg.add(ArrayLang::Length([a]));
            }
            let kk = lit_i64(eg, k as i64);
            eg.add(ArrayLang::Dim([a, kk]))
        }
    }
}

/// How many classes [`same_shape_arrays`] looks at (e-graphs can be cyclic).
const SAME_SHAPE_CLASSES: usize = 16;

/// Arrays certainly of `a`'s shape, `a` first: what a reversal or a one-array map in
/// `a`'s class (and theirs, in turn) is made from.
pub fn same_shape_arrays(eg: &EG, a: Id) -> Vec<Id> {
    let mut out = vec![eg.find(a)];
    let mut i = 0;
    while i < out.len() && out.len() < SAME_SHAPE_CLASSES {
        for n in &eg[out[i]].nodes {
            let b = match n {
                ArrayLang::Reverse([b]) => eg.find(*b),
                ArrayLang::Map(c) if c.len() == 2 => eg.find(c[1]),
                _ => continue,
            };
            if !out.contains(&b) {
                out.push(b);
            }
        }
        i += 1;
    }
    out
}

/// The array whose size names a dimension of `a` that the analysis does not know (a
/// filter's, or a map's of a filter): of the arrays of `a`'s shape, the first in the
/// order of the term the e-graph was loaded from, so that every rule that asks for the
/// shape of any of them gets one name for it (`length f` for `reverse f` too), whatever
/// order the rules fired in.
fn size_owner(eg: &EG, a: Id) -> Id {
    let arrays = same_shape_arrays(eg, a);
    if arrays.len() == 1 {
        return arrays[0];
    }
    crate::context::with(eg, |c| c.term_order.iter().map(|t| eg.find(*t)).find(|t| arrays.contains(t)))
        .unwrap_or(arrays[0])
}

/// The `i64` classes of every dimension of array `a`.
pub fn dim_ids(eg: &mut EG, a: Id) -> Option<Vec<Id>> {
    let (_, shape) = array_info(eg, a)?;
    let r = shape.len();
    Some(shape.iter().enumerate().map(|(k, d)| dim_id(eg, a, k, r, d)).collect())
}

/// `(shape d..)` of array `a`.
pub fn shape_of(eg: &mut EG, a: Id) -> Option<Id> {
    let ds = dim_ids(eg, a)?;
    Some(eg.add(ArrayLang::Shape(ds.into())))
}

/// Whether two dimensions are known to be equal before the program runs.
pub fn same_dim(eg: &EG, a: &SymDim, b: &SymDim) -> bool {
    match (a, b) {
        (SymDim::Dynamic, _) | (_, SymDim::Dynamic) => false,
        (SymDim::Class(x), SymDim::Class(y)) => eg.find(*x) == eg.find(*y),
        (x, y) => x == y,
    }
}

/// Whether `d` is certainly dimension `k` of array class `a`: the same known dimension, or
/// the size that `a` or an array of its shape reports (`length a`, `dim a k`; see
/// [`same_shape_arrays`]), which is how a dimension the analysis does not track (a
/// `filter`'s) is named.
pub fn is_dim_of(eg: &EG, d: &SymDim, a: Id, k: usize) -> bool {
    if dims(eg, a).and_then(|ds| ds.get(k).cloned()).is_some_and(|x| same_dim(eg, d, &x)) {
        return true;
    }
    let SymDim::Class(c) = d else { return false };
    let arrays = same_shape_arrays(eg, a);
    eg[*c].nodes.iter().any(|n| match *n {
        ArrayLang::Length([x]) => k == 0 && arrays.contains(&eg.find(x)),
        ArrayLang::Dim([x, kk]) => arrays.contains(&eg.find(x)) && const_i64(eg, kk) == i64::try_from(k).ok(),
        _ => false,
    })
}

/// Whether two array classes certainly have one shape (the same class, or the same
/// dimensions: known, or one named by the other array's size, see [`is_dim_of`]).
pub fn same_shape(eg: &EG, a: Id, b: Id) -> bool {
    if eg.find(a) == eg.find(b) {
        return true;
    }
    match (dims(eg, a), dims(eg, b)) {
        (Some(x), Some(y)) => {
            x.len() == y.len()
                && x.iter()
                    .zip(&y)
                    .enumerate()
                    .all(|(k, (p, q))| is_dim_of(eg, p, b, k) || is_dim_of(eg, q, a, k))
        }
        _ => false,
    }
}

/// Whether a class is closed: its smallest term (what substitution copies, following each
/// class's `best` node) mentions no lambda parameter. The class's free set, a union over
/// its nodes, may say otherwise for a class that also holds an open node equal to a closed
/// one (`g $1` with `g` ignoring its argument, merged with a constant): which of the two
/// exists first depends on rule order.
pub fn closed(eg: &EG, id: Id) -> bool {
    eg[id].data.free.is_empty() || best_free(eg, id).is_some_and(|s| s.is_empty())
}

/// The free parameters of a class's smallest term (`None`: too large to look at).
fn best_free(eg: &EG, root: Id) -> Option<ParamSet> {
    const MAX_CLASSES: usize = 4096;
    let mut memo: HashMap<Id, ParamSet> = HashMap::new();
    // post-order over `best` nodes (children lead to strictly smaller terms: no cycle)
    let mut stack = vec![(eg.find(root), false)];
    while let Some((c, done)) = stack.pop() {
        if memo.contains_key(&c) {
            continue;
        }
        let node = &eg[c].data.best;
        if !done {
            if memo.len() > MAX_CLASSES {
                return None;
            }
            stack.push((c, true));
            for k in egg::Language::children(node) {
                let k = eg.find(*k);
                if !memo.contains_key(&k) && !eg[k].data.free.is_empty() {
                    stack.push((k, false));
                }
            }
            continue;
        }
        let of = |k: &Id| {
            let k = eg.find(*k);
            memo.get(&k).cloned().unwrap_or_else(|| eg[k].data.free.clone())
        };
        let free = match node {
            ArrayLang::Param(p) => ParamSet::single(p.index),
            ArrayLang::Lam([p, b]) => match eg[*p].data.kind {
                Kind::Params(k) => of(b).under_binder(k),
                _ => of(b),
            },
            n => {
                let mut s = ParamSet::empty();
                for k in egg::Language::children(n) {
                    s.union_with(&of(k));
                }
                s
            }
        };
        memo.insert(c, free);
    }
    memo.remove(&eg.find(root))
}

/// The literal zero of a numeric class's type.
pub fn zero_of(eg: &mut EG, like: Id) -> Option<Id> {
    let z = match elem(eg, like)? {
        ElemType::Bool => return None,
        t => Literal::from_scalar(eqfuse_ir::value::Scalar::from_i128_wrapping(t, 0)),
    };
    Some(eg.add(ArrayLang::Lit(z)))
}

/// `x / c` as `x * (1 / c)` for a float constant `c` (exact or not: the caller decides).
pub fn mul_by_reciprocal(eg: &mut EG, _: Id, n: &ArrayLang) -> Option<Id> {
    let ArrayLang::Div([x, c]) = *n else { return None };
    let r = match constant(eg, c)? {
        Literal::F32(b) => Literal::F32((1.0 / f32::from_bits(b)).to_bits()),
        Literal::F64(b) => Literal::F64((1.0 / f64::from_bits(b)).to_bits()),
        _ => return None,
    };
    let rc = eg.add(ArrayLang::Lit(r));
    Some(eg.add(ArrayLang::Mul([x, rc])))
}
