//! Long unrolled scalar recurrences, rolled into a loop before saturation.
//!
//! A recurrence written out step by step inside a lambda (`let (x1, y1, k1) = step (x0, y0,
//! k0) in let (x2, y2, k2) = step (x1, y1, k1) in ..`, an escape-time loop unrolled by a tool)
//! reaches the encoder as one DAG of scalar nodes, component by component: there is no
//! function applied `k` times for `loop-chain` to see, and the phases' e-graph grows with
//! every step (a 1000-step chain cannot finish in the deadline). Here the step is found on
//! the term itself, the way lowering's loop rolling finds it on element code
//! (`eqfuse_lower::roll`):
//!
//! 1. From a node `top` and a child `prev` of the same operation, a breadth-first match
//!    pairs each node of the last step with its counterpart one step earlier. A node already
//!    paired as a counterpart is a *state leaf*; a node equal on both sides is an
//!    *invariant*. Every state leaf must be the counterpart of a node of the step (its next
//!    value). This gives the step function `f` (a template: the step's nodes, each child a
//!    step node, a state component or an invariant).
//! 2. The template is matched level by level down the term, each level's state being the
//!    next level's result: `f` is the same function at every link (same operations, same
//!    constants, the same invariant nodes). The walk stops where the template no longer
//!    matches, or at a level with a node used outside the chain (shared work, computed
//!    once: rolling past it would compute it twice).
//! 3. With `k >= MIN_CHAIN` levels, `top` becomes `proj i (iterate k f (tuple s0 ..))`, `s0`
//!    the state under the lowest level, `f` a lambda of the state's components returning
//!    their next values: the form the encoder gives `iterate` over a tuple, which lowering
//!    and every backend run.
//!
//! Soundness: each level computes the same operations in the same order as `f`'s body, so
//! results are bit for bit the same. The loop computes every state component at every step,
//! and the initial state eagerly: nothing rolled may fail (no integer division or
//! remainder, no array read, in the step, its invariants or the initial state), so no error
//! can appear, vanish or move.

use crate::preroll::MIN_CHAIN;
use egg::{Id, Language, RecExpr};
use eqfuse_egraph::analysis::term_kinds;
use eqfuse_egraph::{ArrayLang, DeBruijn, Facts, Kind, Literal, ParamTypes, Term};
use eqfuse_ir::ElemType;
use std::collections::{HashMap, HashSet, VecDeque};

/// The most nodes in one step's template (a failed match costs at most this much).
const MAX_STEP: usize = 512;

/// The most nodes in the subterm of an invariant copied into the step function.
const MAX_INVARIANT: usize = 256;

/// The most levels one chain rolls.
const MAX_LEVELS: usize = 1 << 20;

/// `term` with every long unrolled scalar recurrence rolled (module docs), and how many
/// applications the rolls folded (`k - 1` for `k` steps, as `loop-chain` counts them);
/// `None` when there is none.
pub(crate) fn roll(term: &Term, facts: &Facts) -> Option<(Term, usize)> {
    let nodes = term.expr.as_ref();
    // most terms have too few scalar operations for a chain
    if nodes.iter().filter(|n| is_step_op(n)).count() < MIN_CHAIN {
        return None;
    }
    let g = Graph::new(nodes, facts);
    // 0: free; 1: rolled; 2: in a chain already tried
    let mut mark = vec![0u8; nodes.len()];
    let mut rolls: Vec<Roll> = Vec::new();
    for top in (0..nodes.len()).rev() {
        if mark[top] != 0 || !is_step_op(&nodes[top]) {
            continue;
        }
        for prev in earlier(nodes, top) {
            if mark[prev] != 0 {
                continue;
            }
            let found = std::time::Instant::now();
            let Some(tpl) = discover(&g, top, prev, &mark) else { continue };
            let (levels, bottom) = walk(&g, &tpl, &mark);
            let count = levels.len();
            let ok = count >= MIN_CHAIN && bottom.iter().all(|&b| !g.fallible[b]);
            if count > 1 {
                let state = tpl.tys.len();
                crate::trace::note("preroll", "scalar chain", found, || {
                    format!("at node {top}: {count} steps, state of {state}, rolled {ok}")
                });
            }
            // a long chain refused is not walked again from each of its nodes
            if ok || count >= MIN_CHAIN {
                for u in levels.iter().flatten() {
                    mark[*u] = if ok { 1 } else { 2 };
                }
            }
            if ok {
                let results = levels[0].clone();
                rolls.push(Roll {
                    results: tpl.nexts.iter().map(|&p| results[p]).collect(),
                    tpl,
                    count,
                    bottom,
                });
                break;
            }
        }
    }
    if rolls.is_empty() {
        return None;
    }
    rebuild(term, &g, &rolls)
}

/// The children and grandchildren of `top` of its operation: where the step before it may
/// be (`x' = x * 3 + y` reads `x` one node down).
fn earlier(nodes: &[ArrayLang], top: usize) -> Vec<usize> {
    let kids = |i: usize| nodes[i].children().iter().map(|c| usize::from(*c)).collect::<Vec<usize>>();
    let mut found: Vec<usize> = Vec::new();
    let near = kids(top);
    let far = near.iter().filter(|&&c| is_step_op(&nodes[c])).flat_map(|&c| kids(c));
    for c in near.iter().copied().chain(far) {
        if nodes[top].matches(&nodes[c]) && !found.contains(&c) {
            found.push(c);
        }
    }
    found
}

/// The term's nodes with what the search needs of them.
struct Graph<'a> {
    nodes: &'a [ArrayLang],
    kinds: Vec<Kind>,
    /// Each node's parents (a parent once per child it is), as offsets into `parent_list`.
    parent_at: Vec<usize>,
    parent_list: Vec<usize>,
    /// Whether evaluating the node's subterm may fail (or is not a scalar computation).
    fallible: Vec<bool>,
}

impl<'a> Graph<'a> {
    fn new(nodes: &'a [ArrayLang], facts: &Facts) -> Graph<'a> {
        let kinds = term_kinds(nodes, facts);
        let n = nodes.len();
        let mut count = vec![0usize; n + 1];
        for node in nodes {
            for c in node.children() {
                count[usize::from(*c) + 1] += 1;
            }
        }
        for i in 0..n {
            count[i + 1] += count[i];
        }
        let mut fill = count.clone();
        let mut parent_list = vec![0usize; count[n]];
        for (i, node) in nodes.iter().enumerate() {
            for c in node.children() {
                let c = usize::from(*c);
                parent_list[fill[c]] = i;
                fill[c] += 1;
            }
        }
        let mut fallible = vec![false; n];
        for (i, node) in nodes.iter().enumerate() {
            fallible[i] =
                !infallible_op(node, &kinds, i) || node.children().iter().any(|c| fallible[usize::from(*c)]);
        }
        Graph { nodes, kinds, parent_at: count, parent_list, fallible }
    }

    fn parents(&self, i: usize) -> &[usize] {
        &self.parent_list[self.parent_at[i]..self.parent_at[i + 1]]
    }

    fn child(&self, i: usize, k: usize) -> usize {
        usize::from(self.nodes[i].children()[k])
    }

    fn scalar(&self, i: usize) -> Option<ElemType> {
        match self.kinds[i] {
            Kind::Scalar(t) => Some(t),
            _ => None,
        }
    }
}

/// Whether `node` is a scalar operation a step may hold (its children aside).
fn is_step_op(node: &ArrayLang) -> bool {
    use ArrayLang as L;
    matches!(
        node,
        L::Add(_)
            | L::Sub(_)
            | L::Mul(_)
            | L::Div(_)
            | L::Rem(_)
            | L::Eq(_)
            | L::Ne(_)
            | L::Lt(_)
            | L::Le(_)
            | L::Gt(_)
            | L::Ge(_)
            | L::And(_)
            | L::Or(_)
            | L::BitAnd(_)
            | L::BitOr(_)
            | L::BitXor(_)
            | L::Shl(_)
            | L::Shr(_)
            | L::Neg(_)
            | L::Not(_)
            | L::Min(_)
            | L::Max(_)
            | L::Abs(_)
            | L::Sqrt(_)
            | L::Exp(_)
            | L::Log(_)
            | L::Sin(_)
            | L::Cos(_)
            | L::Tan(_)
            | L::Tanh(_)
            | L::Floor(_)
            | L::Ceil(_)
            | L::Round(_)
            | L::Pow(_)
            | L::Atan2(_)
            | L::Clamp(_)
            | L::ToI32(_)
            | L::ToI64(_)
            | L::ToF32(_)
            | L::ToF64(_)
            | L::ToI8(_)
            | L::ToI16(_)
            | L::ToU8(_)
            | L::ToU16(_)
            | L::ToU32(_)
            | L::ToU64(_)
            | L::Log2(_)
            | L::Log10(_)
            | L::Exp2(_)
            | L::Expm1(_)
            | L::Log1p(_)
            | L::Erf(_)
            | L::Erfc(_)
            | L::Lgamma(_)
            | L::Popcount(_)
            | L::Clz(_)
            | L::IsNan(_)
            | L::IsInf(_)
            | L::If(_)
    )
}

/// Whether node `i` computes a scalar without failing, given its operands: a step operation
/// other than an integer division or remainder, a literal, a parameter or a size.
fn infallible_op(node: &ArrayLang, kinds: &[Kind], i: usize) -> bool {
    let scalar = matches!(kinds[i], Kind::Scalar(_));
    match node {
        ArrayLang::Div([a, _]) | ArrayLang::Rem([a, _]) => {
            matches!(kinds[usize::from(*a)], Kind::Scalar(t) if t.is_float())
        }
        ArrayLang::Lit(_) | ArrayLang::Param(_) | ArrayLang::Size(_) => scalar,
        n => scalar && is_step_op(n),
    }
}

/// A child of a template node.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Kid {
    /// Another node of the step (its position in [`Template::steps`]).
    Step(usize),
    /// State component `i`.
    Leaf(usize),
    /// A node equal at every level.
    Inv(usize),
}

/// One step of a recurrence: the step function.
struct Template {
    /// The step's nodes (term indices, ascending: children first) and their children.
    steps: Vec<usize>,
    kids: Vec<Vec<Kid>>,
    /// For each state component: the position of its next value in `steps`.
    nexts: Vec<usize>,
    /// The state components' types.
    tys: Vec<ElemType>,
}

/// A chain to roll: its step, its results (the state over its highest step), its number of
/// steps, the state under its lowest step.
struct Roll {
    tpl: Template,
    results: Vec<usize>,
    count: usize,
    bottom: Vec<usize>,
}

/// The step computing `top`, matched against the one computing `prev` (module docs, 1).
fn discover(g: &Graph<'_>, top: usize, prev: usize, mark: &[u8]) -> Option<Template> {
    let nodes = g.nodes;
    let mut pi: HashMap<usize, usize> = HashMap::from([(top, prev)]);
    let mut targets: HashSet<usize> = HashSet::from([prev]);
    let mut in_step: HashSet<usize> = HashSet::from([top]);
    let mut leaves: Vec<usize> = Vec::new();
    let mut queue: VecDeque<(usize, usize)> = VecDeque::from([(top, prev)]);
    while let Some((a, b)) = queue.pop_front() {
        if in_step.len() > MAX_STEP || mark[a] != 0 || !is_step_op(&nodes[a]) || !nodes[a].matches(&nodes[b])
        {
            return None;
        }
        if !infallible_op(&nodes[a], &g.kinds, a) {
            return None;
        }
        for (x, y) in nodes[a].children().iter().zip(nodes[b].children()) {
            let (x, y) = (usize::from(*x), usize::from(*y));
            if let Some(&p) = pi.get(&x) {
                if p != y {
                    return None;
                }
                continue;
            }
            if x == y {
                // an invariant: not a node of the steps
                if targets.contains(&x) || in_step.contains(&x) {
                    return None;
                }
                continue;
            }
            pi.insert(x, y);
            if targets.contains(&x) {
                leaves.push(x);
                continue;
            }
            targets.insert(y);
            in_step.insert(x);
            queue.push_back((x, y));
        }
    }
    // every leaf is the counterpart of a node of the step: its next value (the top for `prev`)
    let mut steps: Vec<usize> = in_step.into_iter().collect();
    steps.sort_unstable();
    // where two step nodes have one counterpart, the first in node order (deterministic)
    let mut inverse: HashMap<usize, usize> = HashMap::from([(prev, top)]);
    for k in &steps {
        inverse.entry(pi[k]).or_insert(*k);
    }
    let pos: HashMap<usize, usize> = steps.iter().enumerate().map(|(p, s)| (*s, p)).collect();
    let mut state: Vec<usize> = Vec::new();
    let mut leaf_at: HashMap<usize, usize> = HashMap::new();
    for l in leaves {
        if let std::collections::hash_map::Entry::Vacant(e) = leaf_at.entry(l) {
            e.insert(state.len());
            state.push(l);
        }
    }
    // the top is a result: the next value of `prev`
    if !leaf_at.contains_key(&prev) {
        return None;
    }
    let nexts = state.iter().map(|l| inverse.get(l).map(|n| pos[n])).collect::<Option<Vec<usize>>>()?;
    let tys = state.iter().map(|&l| g.scalar(l)).collect::<Option<Vec<ElemType>>>()?;
    let mut kids = Vec::with_capacity(steps.len());
    for &s in &steps {
        let mut ks = Vec::new();
        for c in nodes[s].children().iter().map(|c| usize::from(*c)) {
            ks.push(if let Some(&p) = pos.get(&c) {
                Kid::Step(p)
            } else if let Some(&i) = leaf_at.get(&c) {
                Kid::Leaf(i)
            } else if invariant_ok(g, c, mark) {
                Kid::Inv(c)
            } else {
                return None;
            });
        }
        kids.push(ks);
    }
    Some(Template { steps, kids, nexts, tys })
}

/// Whether node `x` may be an invariant copied into the step function: a small scalar
/// subterm that cannot fail and holds nothing rolled.
fn invariant_ok(g: &Graph<'_>, x: usize, mark: &[u8]) -> bool {
    if g.fallible[x] {
        return false;
    }
    let mut seen = HashSet::from([x]);
    let mut stack = vec![x];
    while let Some(i) = stack.pop() {
        if mark[i] == 1 || seen.len() > MAX_INVARIANT {
            return false;
        }
        for c in g.nodes[i].children() {
            if seen.insert(usize::from(*c)) {
                stack.push(usize::from(*c));
            }
        }
    }
    true
}

/// The template matched at one level whose results are `v`: the state under it and the
/// nodes it covers; `None` where it does not match.
fn match_level(g: &Graph<'_>, tpl: &Template, v: &[usize]) -> Option<(Vec<usize>, Vec<usize>)> {
    let mut at: Vec<Option<usize>> = vec![None; tpl.steps.len()];
    let mut below: Vec<Option<usize>> = vec![None; tpl.tys.len()];
    let mut stack: Vec<(usize, usize)> = tpl.nexts.iter().copied().zip(v.iter().copied()).collect();
    while let Some((p, a)) = stack.pop() {
        if let Some(b) = at[p] {
            if b != a {
                return None;
            }
            continue;
        }
        at[p] = Some(a);
        let t = tpl.steps[p];
        if !g.nodes[t].matches(&g.nodes[a]) || g.kinds[t] != g.kinds[a] {
            return None;
        }
        for (k, kid) in tpl.kids[p].iter().enumerate() {
            let c = g.child(a, k);
            match *kid {
                Kid::Step(q) => stack.push((q, c)),
                Kid::Leaf(i) => match below[i] {
                    Some(b) if b != c => return None,
                    Some(_) => {}
                    None if g.scalar(c) != Some(tpl.tys[i]) => return None,
                    None => below[i] = Some(c),
                },
                Kid::Inv(x) if x != c => return None,
                Kid::Inv(_) => {}
            }
        }
    }
    let covered = at.into_iter().collect::<Option<Vec<usize>>>()?;
    Some((below.into_iter().collect::<Option<Vec<usize>>>()?, covered))
}

/// The levels of the chain from the template down (module docs, 2): the nodes of each (in
/// the order of the template's), and the state under the lowest.
fn walk(g: &Graph<'_>, tpl: &Template, mark: &[u8]) -> (Vec<Vec<usize>>, Vec<usize>) {
    let mut v: Vec<usize> = tpl.nexts.iter().map(|&p| tpl.steps[p]).collect();
    // the chain's results may be used anywhere: they become projections of the loop
    let results: HashSet<usize> = v.iter().copied().collect();
    let mut levels: Vec<Vec<usize>> = Vec::new();
    let mut chain: HashSet<usize> = HashSet::new();
    while levels.len() < MAX_LEVELS {
        let Some((under, covered)) = match_level(g, tpl, &v) else { break };
        // a node met twice, or rolled by another chain: not a chain
        if covered.iter().any(|u| mark[*u] != 0 || chain.contains(u)) {
            break;
        }
        chain.extend(covered.iter().copied());
        // a node used outside the chain is shared work: the roll stops above its level
        let exempt = |u: &usize| levels.is_empty() && results.contains(u);
        if covered.iter().any(|u| !exempt(u) && g.parents(*u).iter().any(|p| !chain.contains(p))) {
            break;
        }
        levels.push(covered);
        v = under;
    }
    (levels, v)
}

/// `term` rebuilt from the root down with each rolled chain's results replaced by the
/// projections of its loop, the chains' other nodes left out (module docs, 3).
fn rebuild(term: &Term, g: &Graph<'_>, rolls: &[Roll]) -> Option<(Term, usize)> {
    let nodes = g.nodes;
    // each result: its chain and its component
    let result_of: HashMap<usize, (usize, usize)> = rolls
        .iter()
        .enumerate()
        .flat_map(|(r, roll)| roll.results.iter().enumerate().map(move |(i, &u)| (u, (r, i))))
        .collect();
    let mut loops: Vec<Option<Id>> = vec![None; rolls.len()];
    let mut out = RecExpr::default();
    let mut made: HashMap<usize, Id> = HashMap::new();
    // an explicit stack: a term's depth is unbounded
    let mut stack = vec![(nodes.len() - 1, false)];
    while let Some((i, ready)) = stack.pop() {
        if made.contains_key(&i) {
            continue;
        }
        if !ready {
            // a rolled chain's results need its initial state
            let kids: Vec<usize> = match result_of.get(&i) {
                Some(&(r, _)) => rolls[r].bottom.clone(),
                None => nodes[i].children().iter().map(|c| usize::from(*c)).collect(),
            };
            stack.push((i, true));
            stack.extend(kids.into_iter().filter(|c| !made.contains_key(c)).map(|c| (c, false)));
            continue;
        }
        let id = match result_of.get(&i) {
            Some(&(r, k)) => {
                let it = match loops[r] {
                    Some(it) => it,
                    None => {
                        let init = rolls[r]
                            .bottom
                            .iter()
                            .map(|b| made.get(b).copied())
                            .collect::<Option<Vec<Id>>>()?;
                        let it = build_loop(&mut out, g, &rolls[r], init);
                        loops[r] = Some(it);
                        it
                    }
                };
                let at = out.add(ArrayLang::Lit(Literal::I64(k as i64)));
                out.add(ArrayLang::Proj([at, it]))
            }
            None => {
                let mut copy = nodes[i].clone();
                for c in copy.children_mut() {
                    // every child was made before its parent (the walk's order)
                    *c = *made.get(&usize::from(*c))?;
                }
                out.add(copy)
            }
        };
        made.insert(i, id);
    }
    let folded = rolls.iter().map(|r| r.count - 1).sum();
    Some((term.renumbered(out, |i| made.get(&i).map(|&id| usize::from(id))), folded))
}

/// `iterate count f (tuple init..)` for roll `r`.
fn build_loop(out: &mut RecExpr<ArrayLang>, g: &Graph<'_>, r: &Roll, init: Vec<Id>) -> Id {
    let tpl = &r.tpl;
    let s = tpl.tys.len();
    // parameter `i` of a lambda of `s`: De Bruijn index `s - 1 - i`
    let params: Vec<Id> = (0..s)
        .map(|i| out.add(ArrayLang::Param(DeBruijn { index: (s - 1 - i) as u32, ty: tpl.tys[i] })))
        .collect();
    let mut shifted: HashMap<usize, Id> = HashMap::new();
    let mut ids: Vec<Id> = Vec::with_capacity(tpl.steps.len());
    for (p, &t) in tpl.steps.iter().enumerate() {
        let mut node = g.nodes[t].clone();
        for (k, c) in node.children_mut().iter_mut().enumerate() {
            *c = match tpl.kids[p][k] {
                Kid::Step(q) => ids[q],
                Kid::Leaf(i) => params[i],
                Kid::Inv(x) => copy_shifted(out, g.nodes, x, s as u32, &mut shifted),
            };
        }
        ids.push(out.add(node));
    }
    let body = out.add(ArrayLang::Tuple(tpl.nexts.iter().map(|&q| ids[q]).collect()));
    let types = out.add(ArrayLang::Params(ParamTypes(tpl.tys.clone())));
    let f = out.add(ArrayLang::Lam([types, body]));
    let count = out.add(ArrayLang::Lit(Literal::I64(r.count as i64)));
    let init = out.add(ArrayLang::Tuple(init.into_boxed_slice()));
    out.add(ArrayLang::Iterate([count, f, init]))
}

/// A copy of the subterm at `x` (scalar operations, no binder) one lambda of `by` parameters
/// deeper: every parameter's index raised by `by`.
fn copy_shifted(
    out: &mut RecExpr<ArrayLang>,
    nodes: &[ArrayLang],
    x: usize,
    by: u32,
    memo: &mut HashMap<usize, Id>,
) -> Id {
    let mut stack = vec![(x, false)];
    while let Some((i, ready)) = stack.pop() {
        if memo.contains_key(&i) {
            continue;
        }
        if !ready {
            stack.push((i, true));
            stack.extend(nodes[i].children().iter().map(|c| (usize::from(*c), false)));
            continue;
        }
        let node = match &nodes[i] {
            ArrayLang::Param(p) => ArrayLang::Param(DeBruijn { index: p.index + by, ty: p.ty }),
            // children were copied before their parent
            n => n.clone().map_children(|c| memo[&usize::from(c)]),
        };
        let id = out.add(node);
        memo.insert(i, id);
    }
    memo[&x]
}
