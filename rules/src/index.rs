//! Index algebra: compositions of index-space operations, and sizes the analysis knows.
//!
//! Each composition keeps the errors of the original: where the inner operation could fail
//! (a slice out of range, a reshape whose element counts differ), the rule fires only when
//! that failure is excluded before the program runs.

use crate::build::{array_info, const_i64, dims};
use crate::legal::{in_bounds, IndexSpace};
use crate::node_rule::{kinds, node_rule, Select};
use crate::phase::Phase;
use crate::rule::{themed, Rule, Theme};
use crate::subst::lam_body;
use crate::{Rewrite, EG};
use egg::{rewrite as rw, Id};
use eqfuse_egraph::{ArrayLang, SymDim};
use std::sync::Arc;

/// The index rules, each with its identity ([`crate::catalogue`]).
pub fn table() -> Vec<Rule> {
    themed(
        Theme::Index,
        &[Phase::Simplify, Phase::Fuse],
        vec![
            (
                r#"transpose (transpose a) == a"#,
                rw!("idx-transpose-transpose"; "(transpose (transpose ?a))" => "?a"),
            ),
            (r#"reverse (reverse a) == a"#, rw!("idx-reverse-reverse"; "(reverse (reverse ?a))" => "?a")),
            (
                r#"slice (slice a s1 l1) s2 l2 == slice a (s1 + s2) l2, when 0 <= s2 and s2 + l2 <= l1"#,
                node_rule("idx-slice-slice", Select::kinds(kinds![Slice]), Arc::new(slice_slice)),
            ),
            (
                r#"backpermute sh2 g (backpermute sh1 f a) == backpermute sh2 (f . g) a, when g stays inside sh1"#,
                node_rule(
                    "idx-backpermute-backpermute",
                    Select::kinds(kinds![Backpermute]),
                    Arc::new(backpermute_backpermute),
                ),
            ),
            (
                r#"reshape s2 (reshape s1 a) == reshape s2 a, when s1 and a have one element count"#,
                node_rule("idx-reshape-reshape", Select::kinds(kinds![Reshape]), Arc::new(reshape_reshape)),
            ),
            (
                r#"reshape (shape a) a == a"#,
                node_rule(
                    "idx-reshape-same",
                    Select::when(
                        kinds![Reshape],
                        |eg, n| matches!(n, ArrayLang::Reshape([sh, a]) if same_dims(eg, *sh, *a)),
                    ),
                    Arc::new(|_, _, n| n_child(n, 1)),
                ),
            ),
            (
                r#"generate (shape a) (\i.. -> a[i..]) == a (eta)"#,
                node_rule("idx-eta", Select::kinds(kinds![Generate]), Arc::new(eta)),
            ),
            (
                r#"length a == d, size a k == d_k, when the analysis knows d; length (reverse f) == length f, where only the program knows it"#,
                node_rule("idx-size-known", Select::kinds(kinds![Length, Dim]), Arc::new(size_known)),
            ),
            (
                r#"d_k == size a k (and d == length a) for a generate `a` over a shape whose dimension d_k is a size expression: every array of that size offers its length, whichever of them a rule happened to ask for first"#,
                size_intro_rule(),
            ),
        ],
    )
}

/// The rewrites of [`table`].
pub fn rules() -> Vec<Rewrite> {
    table().into_iter().map(|r| r.rewrite).collect()
}

fn n_child(n: &ArrayLang, k: usize) -> Option<Id> {
    egg::Language::children(n).get(k).copied()
}

fn same_dims(eg: &EG, sh: Id, a: Id) -> bool {
    match (dims(eg, sh), array_info(eg, a)) {
        (Some(x), Some((_, y))) => {
            x.len() == y.len() && x.iter().enumerate().all(|(k, p)| crate::build::is_dim_of(eg, p, a, k))
        }
        _ => false,
    }
}

fn slice_slice(eg: &mut EG, _: Id, n: &ArrayLang) -> Option<Id> {
    let ArrayLang::Slice([inner, s2, l2]) = *n else { return None };
    let (a, s1, l1) = eg[inner].nodes.iter().find_map(|n| match *n {
        ArrayLang::Slice([a, s, l]) => Some((a, s, l)),
        _ => None,
    })?;
    let (v2, w2, w1) = (const_i64(eg, s2)?, const_i64(eg, l2)?, const_i64(eg, l1)?);
    if v2 < 0 || w2 < 0 || v2.checked_add(w2)? > w1 {
        return None;
    }
    let s = eg.add(ArrayLang::Add([s1, s2]));
    Some(eg.add(ArrayLang::Slice([a, s, l2])))
}

fn backpermute_backpermute(eg: &mut EG, at: Id, n: &ArrayLang) -> Option<Id> {
    let ArrayLang::Backpermute([sh2, g, inner]) = *n else { return None };
    // a class that is a backpermute of itself (`o = backpermute sh f o`, met when both are
    // one constant array): composing would add `f . f . ...` without end
    if eg.find(inner) == eg.find(at) {
        return None;
    }
    let (sh1, f, a) = eg[inner].nodes.iter().find_map(|n| match *n {
        ArrayLang::Backpermute([sh, f, a]) => Some((sh, f, a)),
        _ => None,
    })?;
    let (d2, d1) = (dims(eg, sh2)?, dims(eg, sh1)?);
    let gb = lam_body(eg, g, d2.len())?;
    // g's results, one per dimension of sh1
    let outs: Vec<Id> = if d1.len() == 1 {
        vec![gb]
    } else {
        eg[gb].nodes.iter().find_map(|n| match n {
            ArrayLang::Tuple(es) if es.len() == d1.len() => Some(es.to_vec()),
            _ => None,
        })?
    };
    let space = IndexSpace { dims: &d2 };
    if !outs.iter().zip(&d1).all(|(j, d): (&Id, &SymDim)| in_bounds(eg, *j, d, &space, 0)) {
        return None;
    }
    // \i.. -> f (g i..)
    let ps = crate::build::index_params(eg, d2.len());
    let mut gargs = vec![g];
    gargs.extend(ps);
    let gi = eg.add(ArrayLang::App(gargs.into()));
    let mut fargs = vec![f];
    if d1.len() == 1 {
        fargs.push(gi);
    } else {
        for k in 0..d1.len() {
            let kk = crate::build::lit_i64(eg, k as i64);
            fargs.push(eg.add(ArrayLang::Proj([kk, gi])));
        }
    }
    let body = eg.add(ArrayLang::App(fargs.into()));
    let h = crate::build::lam(eg, vec![eqfuse_ir::types::ElemType::I64; d2.len()], body);
    Some(eg.add(ArrayLang::Backpermute([sh2, h, a])))
}

fn reshape_reshape(eg: &mut EG, _: Id, n: &ArrayLang) -> Option<Id> {
    let ArrayLang::Reshape([s2, inner]) = *n else { return None };
    let (s1, a) = eg[inner].nodes.iter().find_map(|n| match *n {
        ArrayLang::Reshape([s, a]) => Some((s, a)),
        _ => None,
    })?;
    let (d1, (_, da)) = (dims(eg, s1)?, array_info(eg, a)?);
    if !crate::fusion::same_count(eg, &d1, &da) {
        return None;
    }
    Some(eg.add(ArrayLang::Reshape([s2, a])))
}

fn eta(eg: &mut EG, _: Id, n: &ArrayLang) -> Option<Id> {
    let ArrayLang::Generate([sh, f]) = *n else { return None };
    let r = dims(eg, sh)?.len();
    let body = lam_body(eg, f, r)?;
    // body == (index a $r-1 .. $0) with a closed and of shape sh
    let a = eg[body].nodes.iter().find_map(|n| match n {
        ArrayLang::Index(c) if c.len() == r + 1 => {
            let ok = c[1..].iter().enumerate().all(|(k, j)| {
                eg[*j].nodes.iter().any(|m| matches!(m, ArrayLang::Param(p) if p.index as usize == r - 1 - k))
            });
            ok.then_some(c[0])
        }
        _ => None,
    })?;
    (crate::build::closed(eg, a) && same_dims(eg, sh, a)).then_some(a)
}

fn size_intro_rule() -> Rewrite {
    let searcher = crate::node_rule::NodeSearcher::new(Select::kinds(kinds![Generate]));
    match egg::Rewrite::new("idx-size-intro", searcher, SizeIntro) {
        Ok(r) => r,
        Err(e) => unreachable!("idx-size-intro: {e}"),
    }
}

/// `idx-size-intro`: its rewrite is a union of two scalar classes (a size expression and
/// the array's length), not of the matched array with something new.
struct SizeIntro;

impl egg::Applier<ArrayLang, eqfuse_egraph::Facts> for SizeIntro {
    fn apply_one(
        &self,
        eg: &mut EG,
        at: Id,
        _: &egg::Subst,
        _: Option<&egg::PatternAst<ArrayLang>>,
        _: egg::Symbol,
    ) -> Vec<Id> {
        let Some((_, shape)) = array_info(eg, at) else { return Vec::new() };
        let mut changed = Vec::new();
        for (k, d) in shape.iter().enumerate() {
            let SymDim::Class(c) = d else { continue };
            let size = if shape.len() == 1 {
                eg.add(ArrayLang::Length([at]))
            } else {
                let Ok(k) = i64::try_from(k) else { continue };
                let k = crate::build::lit_i64(eg, k);
                eg.add(ArrayLang::Dim([at, k]))
            };
            if eg.union(*c, size) {
                changed.push(size);
            }
        }
        changed
    }
}

fn size_known(eg: &mut EG, at: Id, n: &ArrayLang) -> Option<Id> {
    let (a, k) = match *n {
        ArrayLang::Length([a]) => (a, 0usize),
        ArrayLang::Dim([a, k]) => (a, usize::try_from(const_i64(eg, k)?).ok()?),
        _ => return None,
    };
    let (_, shape) = array_info(eg, a)?;
    let rank = shape.len();
    // what the analysis knows of the dimension, and the shapes of the class's generates
    // (the analysis keeps one of two size expressions it merges, whichever came first)
    let mut known = vec![shape.get(k)?.clone()];
    for m in &eg[a].nodes {
        match m {
            ArrayLang::Generate([sh, _]) => known.extend(dims(eg, *sh).and_then(|ds| ds.get(k).cloned())),
            // a map has the shape of its arrays, when they certainly agree (otherwise the
            // map's own shape check must still run and fail)
            ArrayLang::Map(c) => {
                let ds: Vec<Option<SymDim>> = c[1..]
                    .iter()
                    .map(|x| array_info(eg, *x).and_then(|(_, ds)| ds.get(k).cloned()))
                    .collect();
                if let Some(Some(first)) = ds.first() {
                    if ds.iter().all(|d| d.as_ref().is_some_and(|d| crate::build::same_dim(eg, d, first))) {
                        known.push(first.clone());
                    }
                }
            }
            _ => {}
        }
    }
    // a dimension only the program knows: the one name every array of this shape gets
    // (`length (reverse f) == length f`)
    if shape.get(k) == Some(&SymDim::Dynamic) {
        known.push(SymDim::Class(crate::build::dim_id(eg, a, k, rank, &SymDim::Dynamic)));
    }
    let at = eg.find(at);
    let mut found = None;
    for d in known {
        let c = match d {
            SymDim::Dynamic => continue,
            // a size expression of the program (`n + n` for a concatenation): the same class
            SymDim::Class(c) => c,
            d => crate::build::dim_id(eg, a, k, rank, &d),
        };
        if eg.find(c) == at {
            continue;
        }
        match found {
            None => found = Some(c),
            // every size expression known for it is one class
            Some(f) => {
                eg.union(f, c);
            }
        }
    }
    found
}
