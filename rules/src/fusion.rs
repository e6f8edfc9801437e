//! Fusion (docs/design-decisions.md, decisions 1–3): every producer gets an index form, reads of index
//! forms are substituted away where they are provably in bounds, and consumers take fused
//! producers.
//!
//! Each rule's identity is in its entry of [`table`] (the catalogue, `eqfuse rules`).
//!
//! Every rule but `fuse-beta` and `fuse-proj-tuple` (which only finish what another rule
//! started) spends one unit of the fusion budget ([`Gas`]) each time it applies.

use crate::build::{
    arity, array_info, closed, dim_ids, dims, elem, index_params, lam, lit_i64, param, same_shape, shape_of,
};
use crate::context::{self, WalkKind};
use crate::legal::{in_bounds, neutral_pair, IndexSpace};
use crate::node_rule::{kinds, node_rule, Build, Select};
use crate::phase::Phase;
use crate::rule::{Rule, Theme};
use crate::subst::{beta, lam_body, walk_at, walk_with, Step, Visitor};
use crate::{Rewrite, EG};
use egg::{rewrite, Id};
use eqfuse_egraph::{ArrayLang, SymDim};
use std::collections::HashSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// The fusion budget: how many fusing rewrites may still apply (`--fuse-gas N`), shared by
/// the fusion rules of one run. Unlimited by default.
#[derive(Clone, Debug)]
pub struct Gas(Option<Arc<AtomicUsize>>);

impl Gas {
    /// No limit.
    pub fn unlimited() -> Gas {
        Gas(None)
    }

    /// At most `n` fusing rewrites.
    pub fn limited(n: usize) -> Gas {
        Gas(Some(Arc::new(AtomicUsize::new(n))))
    }

    /// Takes one unit; `false` when the budget is spent.
    pub fn take(&self) -> bool {
        match &self.0 {
            None => true,
            Some(a) => a.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |v| v.checked_sub(1)).is_ok(),
        }
    }

    /// What is left (`None` when unlimited).
    pub fn left(&self) -> Option<usize> {
        self.0.as_ref().map(|a| a.load(Ordering::SeqCst))
    }
}

/// A node rule that spends gas when its builder succeeds.
pub(crate) fn gassed(
    name: &str,
    gas: &Gas,
    select: Select,
    f: fn(&mut EG, Id, &ArrayLang) -> Option<Id>,
) -> Rewrite {
    let gas = gas.clone();
    let build: Build = Arc::new(move |eg: &mut EG, at: Id, n: &ArrayLang| {
        if gas.left() == Some(0) {
            return None;
        }
        let r = f(eg, at, n)?;
        // a rewrite that adds nothing new costs nothing
        if eg.find(r) == eg.find(at) || gas.take() {
            Some(r)
        } else {
            None
        }
    });
    node_rule(name, select, build)
}

fn free_rule(name: &str, select: Select, f: fn(&mut EG, Id, &ArrayLang) -> Option<Id>) -> Rewrite {
    node_rule(name, select, Arc::new(f))
}

/// The fusion rules, sharing `gas`, each with its identity ([`crate::catalogue`]).
pub fn table(gas: &Gas) -> Vec<Rule> {
    // every fusion rule runs in the fuse phase; the two the horizontal phase runs first
    // (every map to its index form, the beta rule finishing it) say so in their entries
    let spends = |identity: &'static str, rewrite: Rewrite| Rule {
        identity,
        theme: Theme::Fusion,
        spends_gas: true,
        rewrite,
        in_phases: vec![Phase::Fuse],
    };
    let free = |identity: &'static str, rewrite: Rewrite| Rule {
        identity,
        theme: Theme::Fusion,
        spends_gas: false,
        rewrite,
        in_phases: vec![Phase::Fuse],
    };
    let pattern = |identity: &'static str, r: Rewrite| spends(identity, crate::gas_pattern(r, gas));
    vec![
        spends(
            r"map f a1 .. ak == generate (shape a1) (\i.. -> f a1[i..] .. ak[i..]), when every ai certainly has one shape",
            gassed("recast-map", gas, Select::kinds(kinds![Map]), recast_map),
        )
        .also(Phase::Horizontal),
        spends(
            r"iota n == generate [n] (\i -> i)",
            gassed("recast-iota", gas, Select::kinds(kinds![Iota]), recast_iota),
        ),
        spends(
            r"fill sh x == generate sh (\i.. -> x)",
            gassed("recast-fill", gas, Select::kinds(kinds![Fill]), recast_fill),
        ),
        spends(
            r"backpermute sh f a == generate sh (\i.. -> a[f i..])",
            gassed("recast-backpermute", gas, Select::kinds(kinds![Backpermute]), recast_backpermute),
        ),
        spends(
            r"transpose a == generate [d1, d0] (\i j -> a[j, i])",
            gassed("recast-transpose", gas, Select::kinds(kinds![Transpose]), recast_transpose),
        ),
        spends(
            r"reverse a == generate (shape a) (\.. j -> a[.., d - 1 - j])",
            gassed("recast-reverse", gas, Select::kinds(kinds![Reverse]), recast_reverse),
        ),
        spends(
            r"slice a s l == generate [l] (\i -> a[s + i]), when the slice is certainly in bounds",
            gassed("recast-slice", gas, Select::kinds(kinds![Slice]), recast_slice),
        ),
        spends(
            r"gather a idx == generate (shape idx) (\i.. -> a[idx[i..]])",
            gassed("recast-gather", gas, Select::kinds(kinds![Gather]), recast_gather),
        ),
        spends(
            r"reshape sh a == generate sh (\i.. -> a[unravel (ravel i..)]), when the element counts are certainly equal",
            gassed("recast-reshape", gas, Select::kinds(kinds![Reshape]), recast_reshape),
        ),
        spends(
            r"concat a b == generate [la + lb] (\i -> if i < la then a[i] else b[i - la])",
            gassed("recast-concat", gas, Select::kinds(kinds![Concat]), recast_concat),
        ),
        spends(
            r"generate sh (\i.. -> .. a[j..] ..) == generate sh (\i.. -> .. f j.. ..) for a = generate sh' f, every j provably inside sh' (also in redomap, scanomap, scanexomap, filtermap, permutemap, a reduction or scan over a group, and in a permute's target function, an index function over the space the permute traverses)",
            gassed(
                "fuse-read",
                gas,
                Select::kinds(kinds![
                    Generate, Redomap, Scanomap, Scanexomap, Filtermap, Permutemap, Permute, GReduce, GScan
                ]),
                fuse_read,
            ),
        ),
        free(
            r"(\x.. -> body) a.. == body[a../x..], unless a computed argument (passed once) would go inside a lambda of body (an iterate's body, evaluated at every trip)",
            free_rule("fuse-beta", Select::kinds(kinds![App]), fuse_beta),
        )
        .also(Phase::Horizontal),
        free(
            r"(e0, .., ek)._i == e_i",
            free_rule("fuse-proj-tuple", Select::kinds(kinds![Proj]), proj_tuple),
        ),
        spends(
            r"reduce op ne (filter p a) == reduce op ne (map (\x -> if p x then x else ne) a), when ne is neutral for op",
            gassed("fuse-reduce-filter", gas, Select::kinds(kinds![Reduce]), reduce_filter),
        ),
        spends(
            r"reduce op ne (map g (filter p a)) == reduce op ne (map (\x -> if p x then g x else ne) a), when ne is neutral for op",
            gassed("fuse-reduce-map-filter", gas, Select::kinds(kinds![Reduce]), reduce_map_filter),
        ),
        spends(
            r"filter q (filter p a) == filter (\x -> p x && q x) a",
            gassed("fuse-filter-filter", gas, Select::kinds(kinds![Filter]), filter_filter),
        ),
        pattern(
            "reduce op ne (generate sh f) == redomap op ne sh f",
            rewrite!("fuse-reduce"; "(reduce ?op ?ne (generate ?sh ?f))" => "(redomap ?op ?ne ?sh ?f)"),
        ),
        pattern(
            "scan op ne (generate sh f) == scanomap op ne sh f",
            rewrite!("fuse-scan"; "(scan ?op ?ne (generate ?sh ?f))" => "(scanomap ?op ?ne ?sh ?f)"),
        ),
        pattern(
            "scan_exclusive op ne (generate sh f) == scanexomap op ne sh f",
            rewrite!("fuse-scan-exclusive"; "(scan_ex ?op ?ne (generate ?sh ?f))" => "(scanexomap ?op ?ne ?sh ?f)"),
        ),
        pattern(
            "filter p (generate sh f) == filtermap p sh f",
            rewrite!("fuse-filter"; "(filter ?p (generate ?sh ?f))" => "(filtermap ?p ?sh ?f)"),
        ),
        pattern(
            "permute op d g (generate sh f) == permutemap op d g sh f",
            rewrite!("fuse-permute"; "(permute ?op ?d ?g (generate ?sh ?f))" => "(permutemap ?op ?d ?g ?sh ?f)"),
        ),
    ]
}

/// The rewrites of [`table`].
pub fn rules(gas: &Gas) -> Vec<Rewrite> {
    table(gas).into_iter().map(|r| r.rewrite).collect()
}

/// `(generate sh (lam <i64..> body))`: the index lambda for `body` over `r` indices.
fn generate(eg: &mut EG, sh: Id, r: usize, body: Id) -> Id {
    let f = lam(eg, vec![eqfuse_ir::types::ElemType::I64; r], body);
    eg.add(ArrayLang::Generate([sh, f]))
}

/// `(index a i..)`.
fn read(eg: &mut EG, a: Id, ix: &[Id]) -> Id {
    let mut c = vec![a];
    c.extend_from_slice(ix);
    eg.add(ArrayLang::Index(c.into()))
}

fn recast_map(eg: &mut EG, _: Id, n: &ArrayLang) -> Option<Id> {
    let ArrayLang::Map(c) = n else { return None };
    let (f, arrays) = c.split_first()?;
    let first = *arrays.first()?;
    if arity(eg, *f)? as usize != arrays.len()
        || !closed(eg, *f)
        || !arrays.iter().all(|a| closed(eg, *a) && same_shape(eg, first, *a))
    {
        return None;
    }
    let r = array_info(eg, first)?.1.len();
    let sh = shape_of(eg, first)?;
    let ps = index_params(eg, r);
    let mut args = vec![*f];
    for a in arrays {
        args.push(read(eg, *a, &ps));
    }
    let body = eg.add(ArrayLang::App(args.into()));
    Some(generate(eg, sh, r, body))
}

fn recast_iota(eg: &mut EG, _: Id, n: &ArrayLang) -> Option<Id> {
    let ArrayLang::Iota([len]) = *n else { return None };
    let sh = eg.add(ArrayLang::Shape(vec![len].into()));
    let i = param(eg, 0, eqfuse_ir::types::ElemType::I64);
    Some(generate(eg, sh, 1, i))
}

fn recast_fill(eg: &mut EG, _: Id, n: &ArrayLang) -> Option<Id> {
    let ArrayLang::Fill([sh, x]) = *n else { return None };
    let r = dims(eg, sh)?.len();
    if !closed(eg, x) || r == 0 {
        return None;
    }
    Some(generate(eg, sh, r, x))
}

fn recast_backpermute(eg: &mut EG, _: Id, n: &ArrayLang) -> Option<Id> {
    let ArrayLang::Backpermute([sh, f, a]) = *n else { return None };
    let r = dims(eg, sh)?.len();
    let ra = array_info(eg, a)?.1.len();
    if arity(eg, f)? as usize != r || !closed(eg, f) {
        return None;
    }
    let ps = index_params(eg, r);
    let mut args = vec![f];
    args.extend(ps);
    let t = eg.add(ArrayLang::App(args.into()));
    let ix: Vec<Id> = if ra == 1 {
        vec![t]
    } else {
        (0..ra)
            .map(|k| {
                let kk = lit_i64(eg, k as i64);
                eg.add(ArrayLang::Proj([kk, t]))
            })
            .collect()
    };
    let body = read(eg, a, &ix);
    Some(generate(eg, sh, r, body))
}

fn recast_transpose(eg: &mut EG, _: Id, n: &ArrayLang) -> Option<Id> {
    let ArrayLang::Transpose([a]) = *n else { return None };
    let ds = dim_ids(eg, a)?;
    let [d0, d1] = ds[..] else { return None };
    let sh = eg.add(ArrayLang::Shape(vec![d1, d0].into()));
    let ps = index_params(eg, 2);
    let body = read(eg, a, &[ps[1], ps[0]]);
    Some(generate(eg, sh, 2, body))
}

fn recast_reverse(eg: &mut EG, _: Id, n: &ArrayLang) -> Option<Id> {
    let ArrayLang::Reverse([a]) = *n else { return None };
    let ds = dim_ids(eg, a)?;
    let r = ds.len();
    let last = *ds.last()?;
    let sh = eg.add(ArrayLang::Shape(ds.into()));
    let mut ps = index_params(eg, r);
    let one = lit_i64(eg, 1);
    let top = eg.add(ArrayLang::Sub([last, one]));
    let j = *ps.last()?;
    let flipped = eg.add(ArrayLang::Sub([top, j]));
    *ps.last_mut()? = flipped;
    let body = read(eg, a, &ps);
    Some(generate(eg, sh, r, body))
}

fn recast_slice(eg: &mut EG, _: Id, n: &ArrayLang) -> Option<Id> {
    let ArrayLang::Slice([a, s, l]) = *n else { return None };
    if !closed(eg, s) || !closed(eg, l) {
        return None;
    }
    let sh = eg.add(ArrayLang::Shape(vec![l].into()));
    let i = param(eg, 0, eqfuse_ir::types::ElemType::I64);
    let at = eg.add(ArrayLang::Add([s, i]));
    let body = read(eg, a, &[at]);
    Some(generate(eg, sh, 1, body))
}

fn recast_gather(eg: &mut EG, _: Id, n: &ArrayLang) -> Option<Id> {
    let ArrayLang::Gather([a, idx]) = *n else { return None };
    let r = array_info(eg, idx)?.1.len();
    let sh = shape_of(eg, idx)?;
    let ps = index_params(eg, r);
    let j = read(eg, idx, &ps);
    let body = read(eg, a, &[j]);
    Some(generate(eg, sh, r, body))
}

/// Whether two lists of dimensions certainly have one product.
pub(crate) fn same_count(eg: &EG, a: &[SymDim], b: &[SymDim]) -> bool {
    let split = |ds: &[SymDim]| -> Option<(i64, Vec<SymDim>)> {
        let mut k: i64 = 1;
        let mut rest = Vec::new();
        for d in ds {
            match d {
                SymDim::Const(c) => k = k.checked_mul(*c)?,
                SymDim::Dynamic => return None,
                SymDim::Class(c) => rest.push(SymDim::Class(eg.find(*c))),
                other => rest.push(other.clone()),
            }
        }
        Some((k, rest))
    };
    let (Some((ka, mut ra)), Some((kb, rb))) = (split(a), split(b)) else { return false };
    if ka != kb || ra.len() != rb.len() {
        return false;
    }
    for d in &rb {
        match ra.iter().position(|x| x == d) {
            Some(p) => {
                ra.swap_remove(p);
            }
            None => return false,
        }
    }
    true
}

fn recast_reshape(eg: &mut EG, _: Id, n: &ArrayLang) -> Option<Id> {
    let ArrayLang::Reshape([sh, a]) = *n else { return None };
    let out = dims(eg, sh)?;
    let (_, src) = array_info(eg, a)?;
    if !same_count(eg, &out, &src) || !closed(eg, sh) {
        return None;
    }
    let shape_node = eg[sh].nodes.iter().find_map(|n| match n {
        ArrayLang::Shape(ds) => Some(ds.to_vec()),
        _ => None,
    })?;
    let r = shape_node.len();
    let ps = index_params(eg, r);
    // flat = ((i0 * D1 + i1) * D2 + i2) ...
    let mut flat = ps[0];
    for k in 1..r {
        let m = eg.add(ArrayLang::Mul([flat, shape_node[k]]));
        flat = eg.add(ArrayLang::Add([m, ps[k]]));
    }
    let src_ids = dim_ids(eg, a)?;
    let m = src_ids.len();
    let mut ix = Vec::with_capacity(m);
    for k in 0..m {
        // index k = (flat / (A[k+1] * .. * A[m-1])) % A[k]  (no % for the outermost)
        let mut q = flat;
        if k + 1 < m {
            let mut stride = src_ids[k + 1];
            for d in &src_ids[k + 2..] {
                stride = eg.add(ArrayLang::Mul([stride, *d]));
            }
            q = eg.add(ArrayLang::Div([q, stride]));
        }
        if k > 0 {
            q = eg.add(ArrayLang::Rem([q, src_ids[k]]));
        }
        ix.push(q);
    }
    let body = read(eg, a, &ix);
    Some(generate(eg, sh, r, body))
}

fn recast_concat(eg: &mut EG, _: Id, n: &ArrayLang) -> Option<Id> {
    let ArrayLang::Concat([a, b]) = *n else { return None };
    let la = *dim_ids(eg, a)?.first()?;
    let lb = *dim_ids(eg, b)?.first()?;
    let total = eg.add(ArrayLang::Add([la, lb]));
    let sh = eg.add(ArrayLang::Shape(vec![total].into()));
    let i = param(eg, 0, eqfuse_ir::types::ElemType::I64);
    let cond = eg.add(ArrayLang::Lt([i, la]));
    let ra = read(eg, a, &[i]);
    let off = eg.add(ArrayLang::Sub([i, la]));
    let rb = read(eg, b, &[off]);
    let body = eg.add(ArrayLang::If([cond, ra, rb]));
    Some(generate(eg, sh, 1, body))
}

/// The (shape, index function) a node traverses, and where they sit among its children.
fn index_space(n: &ArrayLang) -> Option<(Id, Id)> {
    Some(match *n {
        ArrayLang::Generate([sh, f]) => (sh, f),
        ArrayLang::Redomap([_, _, sh, f])
        | ArrayLang::Scanomap([_, _, sh, f])
        | ArrayLang::Scanexomap([_, _, sh, f]) => (sh, f),
        ArrayLang::Filtermap([_, sh, f]) => (sh, f),
        ArrayLang::Permutemap([_, _, _, sh, f]) => (sh, f),
        ArrayLang::GReduce([_, _, sh, f, _]) | ArrayLang::GScan([_, _, sh, f, _]) => (sh, f),
        _ => return None,
    })
}

/// Replaces, in an index function's body, every read of an index form that is provably
/// in bounds by the producer's element function applied to the indices.
struct FuseReads<'a> {
    space: IndexSpace<'a>,
    /// Arrays whose reads stay reads (the outputs, in the walks of [`fuse_read`] that keep
    /// them).
    keep: &'a [Id],
    /// How far the walk fuses (see [`WalkKind`]).
    kind: WalkKind,
    fused: bool,
    /// The producers whose bodies are being walked now (a revisit inside a revisit): a
    /// producer met again reads itself through a cyclic class, and fusing it once more
    /// would unroll that cycle without end.
    chain: Vec<Id>,
    /// Reads left unfused because their producer was on the chain (a choice that depends
    /// on where the walk started).
    skipped: usize,
    /// How many walks of index arguments this one sits in (see [`FuseReads::indices`]).
    nest: u32,
}

/// How deep walks of index arguments nest in each other (each is a walk of its own, with
/// its own depth bound).
const MAX_INDEX_NEST: u32 = 4;

impl FuseReads<'_> {
    /// The fused form of the read in class `c`, if it has one; `keep` says whether reads of
    /// [`FuseReads::keep`] stay reads.
    fn fusable(&mut self, eg: &mut EG, c: Id, depth: u32, keep: bool) -> Option<Id> {
        let candidates: Vec<Vec<Id>> = eg[c]
            .nodes
            .iter()
            .filter_map(|n| match n {
                ArrayLang::Index(k) => Some(k.to_vec()),
                _ => None,
            })
            .collect();
        for k in candidates {
            let (a, ix) = k.split_first()?;
            let a = eg.find(*a);
            // (`keep` is sorted: [`output_classes`])
            if keep && self.keep.binary_search(&a).is_ok() {
                continue;
            }
            if self.chain.contains(&a) {
                self.skipped += 1;
                continue;
            }
            // an input read stays a read: no index form computes it more cheaply (one it
            // may have, `reverse o` with `o = reverse in1`, would read an array in its place)
            if eg[a].nodes.iter().any(|n| matches!(n, ArrayLang::Input(_))) {
                continue;
            }
            let producers: Vec<(Id, Id)> = eg[a]
                .nodes
                .iter()
                .filter_map(|n| match n {
                    ArrayLang::Generate([sh, f]) => Some((*sh, *f)),
                    _ => None,
                })
                .collect();
            for (sh, f) in producers {
                let Some(ds) = dims(eg, sh) else { continue };
                let Some(body) = lam_body(eg, f, ix.len()) else { continue };
                if ds.len() != ix.len()
                    || !closed(eg, f)
                    || !ix.iter().zip(&ds).all(|(j, d)| in_bounds(eg, *j, d, &self.space, depth))
                {
                    continue;
                }
                let ix = self.indices(eg, ix, depth);
                if let Some(r) = beta(eg, body, &ix) {
                    // a producer that is the read itself (`t = generate (\j -> t[j])`, an
                    // identity map merged with its operand) fuses to the same class: not a
                    // fusion, and walking it again would meet the class inside its own walk
                    if eg.find(r) == eg.find(c) {
                        continue;
                    }
                    self.chain.push(a);
                    return Some(r);
                }
            }
        }
        None
    }

    /// The index arguments of a read about to be fused, with their own reads fused first:
    /// they belong to the consumer, so a read in them of the producer being fused
    /// (`a[a[i]]`) is not the producer reading itself, which the walk of the substituted
    /// body would take it for (and leave unfused).
    fn indices(&mut self, eg: &mut EG, ix: &[Id], depth: u32) -> Vec<Id> {
        if self.nest >= MAX_INDEX_NEST {
            return ix.to_vec();
        }
        ix.iter()
            .map(|&j| {
                let mut inner = FuseReads {
                    space: IndexSpace { dims: self.space.dims },
                    keep: self.keep,
                    kind: self.kind,
                    fused: false,
                    chain: self.chain.clone(),
                    skipped: 0,
                    nest: self.nest + 1,
                };
                let r = walk_at(eg, j, depth, &mut inner);
                self.skipped += inner.skipped;
                r.unwrap_or(j)
            })
            .collect()
    }

    /// The step for a read fused into `r` (its producer's body at the read's indices).
    fn fused_into(&mut self, r: Id) -> Step {
        self.fused = true;
        if self.kind == WalkKind::OneProducer {
            // the producer's reads stay reads: `r` is not walked (and not on the chain)
            self.chain.pop();
            return Step::Replace(r);
        }
        // the producer's body may read index forms in turn: fuse the whole chain now
        Step::Revisit(r)
    }
}

impl Visitor for FuseReads<'_> {
    fn step(&mut self, eg: &mut EG, c: Id, depth: u32) -> Option<Step> {
        // a class that does not depend on the index parameters: an array is kept whole (its
        // own kernel), but a scalar is evaluated wherever the body is, so a read in it
        // (`a[0]`, provably in bounds inside the space) fuses like any other; so is a
        // function's body (a `let`'s, an `iterate`'s: it runs where the body runs, or not
        // at all)
        if eg[c].data.free.max().is_none_or(|m| m < depth) {
            if matches!(eg[c].data.kind, eqfuse_egraph::Kind::Func { .. }) {
                return Some(Step::Descend);
            }
            if !matches!(eg[c].data.kind, eqfuse_egraph::Kind::Scalar(_)) {
                return Some(Step::Keep);
            }
            // (an output read at such an index is one value: the `KeepOutputArrays` walk
            // fuses it)
            let keep = self.kind != WalkKind::KeepOutputArrays;
            if let Some(r) = self.fusable(eg, c, depth, keep) {
                return Some(self.fused_into(r));
            }
            return Some(Step::Descend);
        }
        if let Some(r) = self.fusable(eg, c, depth, true) {
            return Some(self.fused_into(r));
        }
        Some(Step::Descend)
    }

    fn revisited(&mut self) {
        self.chain.pop();
    }

    fn context_choices(&self) -> usize {
        self.skipped
    }
}

fn fuse_read(eg: &mut EG, at: Id, n: &ArrayLang) -> Option<Id> {
    let body = index_space(n).and_then(|(sh, f)| {
        let ds = dims(eg, sh)?;
        fuse_reads_in(eg, at, n, ds, f)
    });
    // a permute's target function too: its parameters are the indices of the space the
    // permute traverses (its source array's, or a `permutemap`'s shape), as a `generate`
    // body's are (a compaction's `\i -> if flags[i] == 1 then pos[i] else -1` reads the
    // flags' producer at `i`)
    let target = match *n {
        ArrayLang::Permutemap([_, _, g, sh, _]) => dims(eg, sh).map(|ds| (ds, g)),
        ArrayLang::Permute([_, _, g, a]) => dims(eg, a).map(|ds| (ds, g)),
        _ => None,
    }
    .and_then(|(ds, g)| fuse_reads_in(eg, at, n, ds, g));
    match (body, target) {
        (Some(b), Some(t)) => {
            eg.union(at, t);
            Some(b)
        }
        (b, t) => b.or(t),
    }
}

/// The fused forms of node `n` (in class `at`) whose index function `f` runs over a space
/// of dimensions `ds`: `f`'s reads of producers fused (whole chains, and the partial forms
/// that keep one producer or the outputs as reads), each a form of `n` with `f` replaced.
fn fuse_reads_in(eg: &mut EG, at: Id, n: &ArrayLang, ds: Vec<SymDim>, f: Id) -> Option<Id> {
    let body = lam_body(eg, f, ds.len())?;
    if !closed(eg, f) {
        return None;
    }
    // a walk fuses whole chains of producers; a chain through an output (written to memory
    // anyway) is also kept as a read of the output, so that both forms exist whatever the
    // order the rules met them in, and the extraction chooses
    let outputs = output_classes(eg);
    let with = |eg: &mut EG, new_body: Id| {
        let tys = vec![eqfuse_ir::types::ElemType::I64; ds.len()];
        let new_f = lam(eg, tys, new_body);
        let mut m = n.clone();
        // replace the index function child (the only child equal to `f`)
        for c in egg::Language::children_mut(&mut m) {
            if *c == f {
                *c = new_f;
            }
        }
        context::with(eg, |c| c.fused_nodes.insert(m.clone()));
        eg.add(m)
    };
    let full = walk_reads(eg, at, &ds, body, WalkKind::Chains, &[]);
    // likewise a chain is also fused one producer deep (from a node this rule did not add),
    // so that what the next producer computes can stay a read whether or not it had an
    // index form when the walk passed
    let mut partial = Vec::new();
    // and with each producer it reads (directly or through others) kept as a read in turn,
    // the rest fused: which array stays in memory is the extraction's choice, and the form
    // must not depend on whether the source wrote the kept one as an operand or read it
    // inside another's function
    if !context::with(eg, |c| c.fused_nodes.contains(n)) {
        partial.push(walk_reads(eg, at, &ds, body, WalkKind::OneProducer, &[]));
        for p in producers_read(eg, body) {
            partial.push(walk_reads(eg, at, &ds, body, WalkKind::KeepProducer(p), &[p]));
        }
    }
    if !outputs.is_empty() {
        partial.push(walk_reads(eg, at, &ds, body, WalkKind::KeepOutputs, &outputs));
        partial.push(walk_reads(eg, at, &ds, body, WalkKind::KeepOutputArrays, &outputs));
    }
    // a body that does not depend on the index (`fill sh x` recast) is one scalar, equal to
    // its fused form wherever it is: a host scalar that computes it (the `fill`'s own
    // operand) then has the fused form too
    let closed_body = eg[body].data.free.is_empty();
    for b in partial.into_iter().flatten() {
        if full.map(|f| eg.find(f)) != Some(eg.find(b)) {
            if closed_body {
                eg.union(body, b);
            }
            let r = with(eg, b);
            eg.union(at, r);
        }
    }
    let full = full?;
    if closed_body {
        eg.union(body, full);
    }
    Some(with(eg, full))
}

/// Most producers a body may read for [`producers_read`] to name them (each one named is a
/// walk and a form more).
const MAX_KEPT_PRODUCERS: usize = 6;

/// Most classes [`producers_read`] visits.
const MAX_PRODUCER_SEARCH: usize = 512;

/// The producers (arrays with an index form, not inputs) that `body` reads, and those their
/// own functions read in turn (what a walk of whole chains would fuse), when there are from
/// two to [`MAX_KEPT_PRODUCERS`] of them (sorted); else none.
fn producers_read(eg: &EG, body: Id) -> Vec<Id> {
    let mut seen: HashSet<Id> = HashSet::new();
    let mut stack = vec![eg.find(body)];
    let mut out: Vec<Id> = Vec::new();
    while let Some(c) = stack.pop() {
        if !seen.insert(c) {
            continue;
        }
        if seen.len() > MAX_PRODUCER_SEARCH {
            return Vec::new();
        }
        for n in &eg[c].nodes {
            if let ArrayLang::Index(k) = n {
                let a = eg.find(k[0]);
                let inputs = eg[a].nodes.iter().any(|m| matches!(m, ArrayLang::Input(_)));
                let fns: Vec<Id> = eg[a]
                    .nodes
                    .iter()
                    .filter_map(|m| match m {
                        ArrayLang::Generate([_, f]) => Some(eg.find(*f)),
                        _ => None,
                    })
                    .collect();
                if !inputs && !fns.is_empty() && !out.contains(&a) {
                    out.push(a);
                    if out.len() > MAX_KEPT_PRODUCERS {
                        return Vec::new();
                    }
                    stack.extend(fns);
                }
            }
            for k in egg::Language::children(n) {
                let k = eg.find(*k);
                if !eg[k].data.kind.is_array() {
                    stack.push(k);
                }
            }
        }
    }
    if out.len() < 2 {
        return Vec::new();
    }
    out.sort();
    out
}

/// The body of an index function over `ds` with its reads fused as `kind` says (but those
/// of `keep`); `None` when nothing changed.
fn walk_reads(eg: &mut EG, at: Id, ds: &[SymDim], body: Id, kind: WalkKind, keep: &[Id]) -> Option<Id> {
    let key: Vec<SymDim> = ds
        .iter()
        .map(|d| match d {
            SymDim::Class(c) => SymDim::Class(eg.find(*c)),
            d => d.clone(),
        })
        .collect();
    let key = (key, kind);
    let mut v = FuseReads {
        space: IndexSpace { dims: ds },
        keep,
        kind,
        fused: false,
        chain: vec![eg.find(at)],
        skipped: 0,
        nest: 0,
    };
    // what the walks of this e-graph found over this index space: a chain of producers is
    // fused once, not once per consumer and per iteration
    let mut space_memo = context::with(eg, |c| c.walk_memo.remove(&key)).unwrap_or_default();
    let new_body = walk_with(eg, body, &mut v, &mut space_memo);
    context::with(eg, |c| c.walk_memo.insert(key, space_memo));
    let new_body = new_body?;
    (eg.find(new_body) != eg.find(body)).then_some(new_body)
}

/// The classes of the arrays the program outputs (the root of the term the e-graph was
/// loaded from is its last class), found once per iteration.
fn output_classes(eg: &EG) -> std::rc::Rc<[Id]> {
    // shared, not copied: a copy per application would be linear in the outputs again
    if let Some(out) = context::with(eg, |c| c.outputs.clone()) {
        return out;
    }
    let Some(root) = context::with(eg, |c| c.term_order.last().copied()) else {
        return std::rc::Rc::from([]);
    };
    let mut out: Vec<Id> = eg[root]
        .nodes
        .iter()
        .filter(|n| matches!(n, ArrayLang::Outputs(_)))
        .flat_map(|n| egg::Language::children(n).iter().map(|c| eg.find(*c)))
        .filter(|c| eg[*c].data.kind.is_array())
        .collect();
    out.sort();
    out.dedup();
    let out: std::rc::Rc<[Id]> = out.into();
    context::with(eg, |c| c.outputs = Some(out.clone()));
    out
}

fn fuse_beta(eg: &mut EG, at: Id, n: &ArrayLang) -> Option<Id> {
    let ArrayLang::App(c) = n else { return None };
    let (f, args) = c.split_first()?;
    let body = lam_body(eg, *f, args.len())?;
    // argument `i` is parameter `k - 1 - i` of the body
    let k = u32::try_from(args.len()).ok()?;
    let blocked =
        (0u32..).zip(args).any(|(i, a)| !is_leaf(eg, eg.find(*a)) && under_binder(eg, body, k - 1 - i));
    if blocked {
        return merge_repeated(eg, *f, body, args);
    }
    // the form with one parameter per distinct argument too: a tree cost counts an
    // argument once there, and as often as it is used in the substituted body
    if let Some(m) = merge_repeated(eg, *f, body, args) {
        eg.union(at, m);
    }
    beta(eg, body, args)
}

/// `(\a b c -> body) x x 2 == (\a -> body[a/b, 2/c]) x`: one parameter per distinct
/// argument that is not a constant, the constants substituted. A body kept as it is (see
/// [`under_binder`]) still sees that two of its parameters are equal (`a - b` is then
/// `a - a`) and what its constants are; and a tree cost counts the argument it keeps once
/// (the substituted body would repeat it where it is used twice). `None` when the
/// arguments are distinct and none is a constant, or all are constants.
fn merge_repeated(eg: &mut EG, f: Id, body: Id, args: &[Id]) -> Option<Id> {
    let canon: Vec<Id> = args.iter().map(|a| eg.find(*a)).collect();
    let constant =
        |eg: &EG, a: Id| eg[a].data.constant.is_some() || (is_leaf(eg, a) && eg[a].data.free.is_empty());
    let mut uniq: Vec<Id> = Vec::new();
    for a in &canon {
        if !uniq.contains(a) && !constant(eg, *a) {
            uniq.push(*a);
        }
    }
    if uniq.len() == args.len() || uniq.is_empty() {
        return None;
    }
    let tys = crate::build::param_types(eg, f)?;
    if tys.len() != args.len() {
        return None;
    }
    let m = u32::try_from(uniq.len()).ok()?;
    // argument `i` becomes the parameter of its distinct argument `u`, `$(m - 1 - u)`, or
    // stays itself where it is a constant
    let mut params = Vec::with_capacity(args.len());
    for (a, ty) in canon.iter().zip(&tys) {
        match uniq.iter().position(|x| x == a) {
            Some(u) => {
                let index = m - 1 - u as u32;
                params.push(eg.add(ArrayLang::Param(eqfuse_egraph::DeBruijn { index, ty: *ty })));
            }
            None => params.push(*a),
        }
    }
    let new_tys: Vec<_> = uniq
        .iter()
        .map(|u| canon.iter().position(|x| x == u).and_then(|i| tys.get(i).copied()))
        .collect::<Option<_>>()?;
    let new_body = crate::subst::rebind(eg, body, &params, m)?;
    let new_f = crate::build::lam(eg, new_tys, new_body);
    let mut kids = vec![new_f];
    kids.extend(uniq);
    Some(eg.add(ArrayLang::App(kids.into())))
}

/// Whether class `a` holds a leaf (a literal, a parameter, a size, an input): an argument
/// that costs nothing to evaluate again.
fn is_leaf(eg: &EG, a: Id) -> bool {
    eg[a].nodes.iter().any(ArrayLang::is_leaf)
}

/// Whether parameter `p` of `body` occurs inside a lambda in it that is not applied on the
/// spot (a `let`'s runs once), in its smallest term (what substitution copies: a class that
/// also holds the loop the simplest form replaced, `iterate 0 f x` beside `x`, is not a
/// loop). Substituting a computed argument there would evaluate it at every call of that
/// lambda (every trip of an `iterate`) instead of once, so `fuse-beta` keeps such an
/// application as it is: the extraction would otherwise have both forms only under some
/// rule orders (a fusion walk rebuilds one node per class).
fn under_binder(eg: &EG, body: Id, p: u32) -> bool {
    // (class, the parameter's index there, whether inside a lambda)
    let mut stack = vec![(eg.find(body), p, false)];
    let mut seen = std::collections::HashSet::new();
    while let Some((c, p, inside)) = stack.pop() {
        if !eg[c].data.free.contains(p) || !seen.insert((c, p, inside)) {
            continue;
        }
        // a lambda's parameters count: its body sees `p` raised by them
        let arity = |f: Id| crate::build::arity(eg, f).unwrap_or(0);
        let n = &eg[c].data.best;
        match n {
            ArrayLang::Param(d) if d.index == p && inside => return true,
            ArrayLang::Lam([_, b]) => stack.push((eg.find(*b), p.saturating_add(arity(c)), true)),
            // an applied lambda (a `let`) runs once: its body is not a loop's
            ArrayLang::App(kids) => {
                let Some((f, args)) = kids.split_first() else { continue };
                stack.extend(args.iter().map(|k| (eg.find(*k), p, inside)));
                if let ArrayLang::Lam([_, b]) = &eg[*f].data.best {
                    stack.push((eg.find(*b), p.saturating_add(arity(*f)), inside));
                }
            }
            _ => stack.extend(egg::Language::children(n).iter().map(|k| (eg.find(*k), p, inside))),
        }
    }
    false
}

fn proj_tuple(eg: &mut EG, _: Id, n: &ArrayLang) -> Option<Id> {
    let ArrayLang::Proj([k, t]) = *n else { return None };
    let at = usize::try_from(crate::build::const_i64(eg, k)?).ok()?;
    eg[t].nodes.iter().find_map(|n| match n {
        ArrayLang::Tuple(es) => es.get(at).copied(),
        _ => None,
    })
}

/// `\x -> if p x then g x else ne` (`g` absent: `x`), on elements of type `t`.
fn guarded(eg: &mut EG, t: eqfuse_ir::types::ElemType, p: Id, g: Option<Id>, ne: Id) -> Id {
    let x = param(eg, 0, t);
    let keep = eg.add(ArrayLang::App(vec![p, x].into()));
    let val = match g {
        Some(g) => eg.add(ArrayLang::App(vec![g, x].into())),
        None => x,
    };
    let body = eg.add(ArrayLang::If([keep, val, ne]));
    lam(eg, vec![t], body)
}

/// The `(p, a)` of a `filter p a` node in class `c`.
fn filter_in(eg: &EG, c: Id) -> Option<(Id, Id)> {
    eg[c].nodes.iter().find_map(|n| match *n {
        ArrayLang::Filter([p, a]) => Some((p, a)),
        _ => None,
    })
}

fn reduce_filter(eg: &mut EG, _: Id, n: &ArrayLang) -> Option<Id> {
    let ArrayLang::Reduce([op, ne, arr]) = *n else { return None };
    let (p, a) = filter_in(eg, arr)?;
    if !neutral_pair(eg, op, ne) || !closed(eg, p) || !closed(eg, ne) {
        return None;
    }
    let t = elem(eg, a)?;
    let f = guarded(eg, t, p, None, ne);
    let m = eg.add(ArrayLang::Map(vec![f, a].into()));
    Some(eg.add(ArrayLang::Reduce([op, ne, m])))
}

fn reduce_map_filter(eg: &mut EG, _: Id, n: &ArrayLang) -> Option<Id> {
    let ArrayLang::Reduce([op, ne, arr]) = *n else { return None };
    let (g, filtered) = eg[arr].nodes.iter().find_map(|n| match n {
        ArrayLang::Map(c) if c.len() == 2 => Some((c[0], c[1])),
        _ => None,
    })?;
    let (p, a) = filter_in(eg, filtered)?;
    if !neutral_pair(eg, op, ne) || !closed(eg, p) || !closed(eg, g) || !closed(eg, ne) {
        return None;
    }
    let t = elem(eg, a)?;
    let f = guarded(eg, t, p, Some(g), ne);
    let m = eg.add(ArrayLang::Map(vec![f, a].into()));
    Some(eg.add(ArrayLang::Reduce([op, ne, m])))
}

fn filter_filter(eg: &mut EG, _: Id, n: &ArrayLang) -> Option<Id> {
    let ArrayLang::Filter([q, inner]) = *n else { return None };
    let (p, a) = filter_in(eg, inner)?;
    if !closed(eg, p) || !closed(eg, q) {
        return None;
    }
    let t = elem(eg, a)?;
    let x = param(eg, 0, t);
    let px = eg.add(ArrayLang::App(vec![p, x].into()));
    let qx = eg.add(ArrayLang::App(vec![q, x].into()));
    let both = eg.add(ArrayLang::And([px, qx]));
    let f = lam(eg, vec![t], both);
    Some(eg.add(ArrayLang::Filter([f, a])))
}
