//! Sub-expressions over fewer indices than their space, materialised over those indices
//! (loop-invariant code motion for index spaces). In
//! `generate [h, w, 20] (\y x k -> .. cos ang[k] ..)` the cosine depends on `k` alone: it is
//! the same value `h * w` times. `hoist-invariant` adds the form that computes it once per
//! `k`, `generate [20] (\k -> cos ang[k])`, and reads it (`c[k]`); the beta rule keeps the
//! inline form, and the cost model picks. A factor of a contraction's element function that
//! depends on the indices of one side (`e[i, j] / z[i]` in
//! `generate [n, d, n] (\i c j -> e[i, j] / z[i] * v[j, c])`) becomes the matrix that makes
//! the product a GEMM call. The values are the same operations on the same operands:
//! bit for bit.
//!
//! A sub-expression is taken when it holds an operation dearer than a read (a division, a
//! square root, a transcendental), mentions some but not all of the space's indices, is not
//! under a branch (an `if`'s `then`/`else`, `&&`, `||`) or a lambda, and cannot fail
//! (`safe`): its reads are at plain indices of the space whose arrays certainly have that
//! extent, and it divides no integers. The materialised form evaluates it at every point of
//! the smaller space, also where the full space is empty: what it computes there fails
//! nowhere.
//!
//! The same expression over every index of the space is shared instead: where the program
//! also materialises it over that space (`let e = generate [n, m] (\i j -> exp (a[i, j] -
//! mx[i]))`, summed, while another element function over `[n, m]` recomputes
//! `exp (a[i, j] - mx[i])`), `hoist-shared` adds the form that reads `e[i, j]`, and the cost
//! model picks between reading and recomputing.
//!
//! A branch that no element changes is taken out of the loop (unswitching): for
//! `map (\x -> if flag then x * 2 else x + 1) xs`, `hoist-unswitch` adds `if flag then
//! map (\x -> x * 2) xs else map (\x -> x + 1) xs`, which runs one map. The generated code
//! of the first form runs one arm per element too where the C compiler takes the branch out
//! of the loop itself (a short function: `Func::uniform_ifs`), and computes both arms and
//! selects elsewhere; the model (an array `if` costs its dearer branch) picks. The
//! condition must mention no parameter and be unable to fail (`safe` over no index): the
//! unswitched form evaluates it also over an empty space.
//!
//! Each rule's identity is in its entry of [`table`] (the catalogue, `eqfuse rules`).

use crate::build::{dims, is_dim_of, lam, lit_i64, param};
use crate::fusion::gassed;
use crate::node_rule::{kinds, Select};
use crate::phase::Phase;
use crate::rule::{Rule, Theme};
use crate::subst::{lam_body, rebind, walk, Step, Visitor};
use crate::{Gas, EG};
use egg::{Id, Language};
use eqfuse_egraph::{ArrayLang, Kind, ParamTypes, SymDim};
use eqfuse_ir::types::ElemType;
use std::collections::HashMap;

/// The hoisting rules, sharing `gas`, each with its identity ([`crate::catalogue`]).
pub fn table(gas: &Gas) -> Vec<Rule> {
    vec![
        Rule {
            identity: r"generate sh (\i.. -> .. e ..) == generate sh (\i.. -> .. c[j..] ..) with c = generate [sh at j..] (\j.. -> e), when e mentions only the indices j.. (some, not all), is dearer than a read and cannot fail (also redomap)",
            theme: Theme::Hoist,
            spends_gas: true,
            rewrite: gassed("hoist-invariant", gas, Select::kinds(kinds![Generate, Redomap]), hoist),
            in_phases: vec![Phase::Fuse],
        },
        Rule {
            identity: r"generate sh (\i.. -> .. e ..) == generate sh (\i.. -> .. g[i..] ..) for g = generate sh (\i.. -> e) elsewhere in the program, when e mentions every index, is dearer than a read and cannot fail (also redomap)",
            theme: Theme::Hoist,
            spends_gas: true,
            rewrite: gassed("hoist-shared", gas, Select::kinds(kinds![Generate, Redomap]), share),
            in_phases: vec![Phase::Fuse],
        },
        Rule {
            identity: r"map (\x.. -> if c then t else e) xs.. == if c then map (\x.. -> t) xs.. else map (\x.. -> e) xs.., when c mentions no parameter and cannot fail (also generate)",
            theme: Theme::Hoist,
            spends_gas: true,
            rewrite: gassed("hoist-unswitch", gas, Select::kinds(kinds![Map, Generate]), unswitch),
            in_phases: vec![Phase::Fuse],
        },
    ]
}

/// The most classes one look at a sub-expression visits.
const LOOK_LIMIT: usize = 256;

/// The index space of a `generate` or `redomap` node: its dimensions (classes and what the
/// analysis knows of them) and its index function.
struct Space {
    dim_ids: Vec<Id>,
    dims: Vec<SymDim>,
    f: Id,
}

fn space_of(eg: &EG, n: &ArrayLang) -> Option<Space> {
    let (sh, f) = match *n {
        ArrayLang::Generate([sh, f]) => (sh, f),
        ArrayLang::Redomap([_, _, sh, f]) => (sh, f),
        _ => return None,
    };
    let dim_ids = eg[sh].nodes.iter().find_map(|m| match m {
        ArrayLang::Shape(ds) => Some(ds.to_vec()),
        _ => None,
    })?;
    let dims = dims(eg, sh)?;
    (dims.len() == dim_ids.len() && !dims.is_empty()).then_some(Space { dim_ids, dims, f })
}

/// Whether the smallest term of `c` holds an operation dearer than a read (outside lambdas).
fn dear(eg: &EG, c: Id) -> bool {
    let mut stack = vec![eg.find(c)];
    let mut seen = 0;
    while let Some(c) = stack.pop() {
        seen += 1;
        if seen > LOOK_LIMIT {
            return false;
        }
        let node = &eg[c].data.best;
        match node {
            ArrayLang::Lam(_) => continue,
            ArrayLang::Div(_)
            | ArrayLang::Sqrt(_)
            | ArrayLang::Exp(_)
            | ArrayLang::Log(_)
            | ArrayLang::Sin(_)
            | ArrayLang::Cos(_)
            | ArrayLang::Tan(_)
            | ArrayLang::Tanh(_)
            | ArrayLang::Pow(_)
            | ArrayLang::Atan2(_)
            | ArrayLang::Log2(_)
            | ArrayLang::Log10(_)
            | ArrayLang::Exp2(_)
            | ArrayLang::Expm1(_)
            | ArrayLang::Log1p(_)
            | ArrayLang::Erf(_)
            | ArrayLang::Erfc(_)
            | ArrayLang::Lgamma(_) => return true,
            _ => stack.extend(node.children().iter().map(|k| eg.find(*k))),
        }
    }
    false
}

/// Whether the smallest term of scalar class `c`, at depth 0 of an index function over
/// `space`, certainly evaluates without an error at every point of the space's indices it
/// mentions: no call, lambda, loop or integer division, and reads only at plain index
/// parameters of the space whose arrays certainly have the space's extent there.
fn safe(eg: &EG, c: Id, space: &[SymDim]) -> bool {
    let r = space.len();
    let mut stack = vec![eg.find(c)];
    let mut seen = 0;
    while let Some(c) = stack.pop() {
        seen += 1;
        if seen > LOOK_LIMIT || !matches!(eg[c].data.kind, Kind::Scalar(_)) {
            return false;
        }
        let node = &eg[c].data.best;
        match node {
            ArrayLang::App(_) | ArrayLang::Lam(_) | ArrayLang::Iterate(_) | ArrayLang::Proj(_) => {
                return false
            }
            ArrayLang::Div([a, _]) | ArrayLang::Rem([a, _])
                if !eg[*a].data.kind.elem().is_some_and(|t| t.is_float()) =>
            {
                return false
            }
            ArrayLang::Index(ks) => {
                let Some((&a, ix)) = ks.split_first() else { return false };
                let plain = ix.iter().enumerate().all(|(q, i)| match eg[*i].data.best {
                    ArrayLang::Param(p) if (p.index as usize) < r => {
                        is_dim_of(eg, &space[r - 1 - p.index as usize], a, q)
                    }
                    _ => false,
                });
                if !plain || !matches!(eg[a].data.kind, Kind::Array { .. }) {
                    return false;
                }
            }
            _ => stack.extend(node.children().iter().map(|k| eg.find(*k))),
        }
    }
    true
}

/// The index parameters (De Bruijn, below `r`) class `c` mentions.
fn indices(eg: &EG, c: Id, r: u32) -> Vec<u32> {
    eg[c].data.free.iter().filter(|i| *i < r).collect()
}

/// The sub-expressions of `body` to hoist: the outermost that mention some but not all of
/// the `r` indices, are [`dear`] and [`safe`], outside branches and lambdas.
fn candidates(eg: &EG, body: Id, space: &[SymDim]) -> Vec<Id> {
    let r = space.len() as u32;
    let mut out = Vec::new();
    let mut stack = vec![eg.find(body)];
    let mut seen = std::collections::HashSet::new();
    while let Some(c) = stack.pop() {
        if !seen.insert(c) || seen.len() > LOOK_LIMIT {
            continue;
        }
        let ix = indices(eg, c, r);
        if ix.is_empty() {
            continue;
        }
        if (ix.len() as u32) < r && dear(eg, c) && safe(eg, c, space) {
            out.push(c);
            continue;
        }
        match &eg[c].data.best {
            ArrayLang::Lam(_) | ArrayLang::And(_) | ArrayLang::Or(_) => {}
            ArrayLang::If([cond, _, _]) => stack.push(eg.find(*cond)),
            n => stack.extend(n.children().iter().map(|k| eg.find(*k))),
        }
    }
    out.sort();
    out
}

/// Replaces classes at depth 0 by their reads of the materialised forms.
struct Replace<'a>(&'a HashMap<Id, Id>);

impl Visitor for Replace<'_> {
    fn step(&mut self, eg: &mut EG, c: Id, depth: u32) -> Option<Step> {
        if depth == 0 {
            if let Some(&r) = self.0.get(&c) {
                return Some(Step::Replace(r));
            }
        }
        Some(match eg[c].data.best {
            _ if eg[c].data.free.is_empty() => Step::Keep,
            ArrayLang::Lam(_) => Step::Keep,
            _ => Step::Descend,
        })
    }
}

/// `e` (mentioning the indices `ix`, De Bruijn below `r`) as a read of
/// `generate [dims at ix] (\j.. -> e)` at those indices.
fn materialised(eg: &mut EG, e: Id, ix: &[u32], space: &Space) -> Option<Id> {
    let r = space.dims.len();
    // source positions of the indices, outermost first
    let mut pos: Vec<usize> = ix.iter().map(|i| r - 1 - *i as usize).collect();
    pos.sort_unstable();
    let m = pos.len();
    let params: Vec<Id> = (0..r)
        .map(|j| match pos.iter().position(|p| *p == j) {
            Some(q) => param(eg, (m - 1 - q) as u32, ElemType::I64),
            None => lit_i64(eg, 0),
        })
        .collect();
    let inner = rebind(eg, e, &params, m as u32)?;
    let f = lam(eg, vec![ElemType::I64; m], inner);
    let sh = eg.add(ArrayLang::Shape(pos.iter().map(|p| space.dim_ids[*p]).collect()));
    let g = eg.add(ArrayLang::Generate([sh, f]));
    let mut read = vec![g];
    read.extend(pos.iter().map(|p| param(eg, (r - 1 - p) as u32, ElemType::I64)));
    Some(eg.add(ArrayLang::Index(read.into())))
}

fn hoist(eg: &mut EG, _: Id, n: &ArrayLang) -> Option<Id> {
    let space = space_of(eg, n)?;
    let r = space.dims.len();
    let body = lam_body(eg, space.f, r)?;
    let found = candidates(eg, body, &space.dims);
    if found.is_empty() {
        return None;
    }
    let mut reads = HashMap::new();
    for e in found {
        let ix = indices(eg, e, r as u32);
        let read = materialised(eg, e, &ix, &space)?;
        reads.insert(eg.find(e), read);
    }
    replaced(eg, n, body, r, &reads)
}

/// The class of `generate sh (\i.. -> e)` over `r` index parameters, when the e-graph
/// already holds it.
fn existing_generate(eg: &EG, sh: Id, e: Id, r: usize) -> Option<Id> {
    let p = eg.lookup(ArrayLang::Params(ParamTypes(vec![ElemType::I64; r])))?;
    let f = eg.lookup(ArrayLang::Lam([p, e]))?;
    eg.lookup(ArrayLang::Generate([sh, f]))
}

/// The proper sub-expressions of `body` (over the space `sh`) that the program also
/// materialises over that space: the outermost mentioning every index, [`dear`] and
/// [`safe`], outside branches and lambdas, with their `generate`s.
fn shared_candidates(eg: &EG, body: Id, sh: Id, space: &[SymDim]) -> Vec<(Id, Id)> {
    let r = space.len();
    let body = eg.find(body);
    let mut out = Vec::new();
    let mut stack = vec![body];
    let mut seen = std::collections::HashSet::new();
    while let Some(c) = stack.pop() {
        if !seen.insert(c) || seen.len() > LOOK_LIMIT {
            continue;
        }
        if indices(eg, c, r as u32).len() < r {
            continue;
        }
        if c != body && dear(eg, c) && safe(eg, c, space) {
            if let Some(g) = existing_generate(eg, sh, c, r) {
                out.push((c, g));
                continue;
            }
        }
        match &eg[c].data.best {
            ArrayLang::Lam(_) | ArrayLang::And(_) | ArrayLang::Or(_) => {}
            ArrayLang::If([cond, _, _]) => stack.push(eg.find(*cond)),
            n => stack.extend(n.children().iter().map(|k| eg.find(*k))),
        }
    }
    out.sort();
    out
}

fn share(eg: &mut EG, _: Id, n: &ArrayLang) -> Option<Id> {
    let space = space_of(eg, n)?;
    let r = space.dims.len();
    let sh = match *n {
        ArrayLang::Generate([sh, _]) | ArrayLang::Redomap([_, _, sh, _]) => eg.find(sh),
        _ => return None,
    };
    let body = lam_body(eg, space.f, r)?;
    let found = shared_candidates(eg, body, sh, &space.dims);
    if found.is_empty() {
        return None;
    }
    let mut reads = HashMap::new();
    for (e, g) in found {
        // g[i..]: every index in order
        let mut read = vec![g];
        read.extend((0..r).map(|d| param(eg, (r - 1 - d) as u32, ElemType::I64)));
        let read = eg.add(ArrayLang::Index(read.into()));
        reads.insert(e, read);
    }
    replaced(eg, n, body, r, &reads)
}

/// Node `n` (a `generate` or `redomap` over `r` indices, index function body `body`) with
/// the classes of `reads` in its body replaced by their reads.
fn replaced(eg: &mut EG, n: &ArrayLang, body: Id, r: usize, reads: &HashMap<Id, Id>) -> Option<Id> {
    let new_body = walk(eg, body, &mut Replace(reads))?;
    let f = lam(eg, vec![ElemType::I64; r], new_body);
    Some(match *n {
        ArrayLang::Generate([sh, _]) => eg.add(ArrayLang::Generate([sh, f])),
        ArrayLang::Redomap([op, ne, sh, _]) => eg.add(ArrayLang::Redomap([op, ne, sh, f])),
        _ => return None,
    })
}

/// `map (\x.. -> if c then t else e) xs..` (or the `generate`) with `c` closed and
/// [`safe`]: `if c then map (\x.. -> t) xs.. else map (\x.. -> e) xs..`.
fn unswitch(eg: &mut EG, _: Id, n: &ArrayLang) -> Option<Id> {
    let f = match n {
        ArrayLang::Map(ch) => *ch.first()?,
        ArrayLang::Generate([_, f]) => *f,
        _ => return None,
    };
    let (p, body) = eg[f].nodes.iter().find_map(|m| match m {
        ArrayLang::Lam([p, b]) => Some((*p, *b)),
        _ => None,
    })?;
    let (c, t, e) = eg[body].nodes.iter().find_map(|m| match *m {
        ArrayLang::If([c, t, e]) if eg[c].data.free.is_empty() && safe(eg, c, &[]) => Some((c, t, e)),
        _ => None,
    })?;
    let arm = |eg: &mut EG, b: Id| -> Id {
        let g = eg.add(ArrayLang::Lam([p, b]));
        match n {
            ArrayLang::Map(ch) => {
                let mut kids = ch.to_vec();
                kids[0] = g;
                eg.add(ArrayLang::Map(kids.into()))
            }
            ArrayLang::Generate([sh, _]) => eg.add(ArrayLang::Generate([*sh, g])),
            _ => g,
        }
    };
    let (a, b) = (arm(eg, t), arm(eg, e));
    Some(eg.add(ArrayLang::If([c, a, b])))
}
