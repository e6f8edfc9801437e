//! What placement and lowering need to know about each node of an extracted term: its kind
//! (from the analysis), its free De Bruijn parameters, and the free parameters it uses
//! inside a lambda (an argument for such a parameter is computed once, before the body).

use egg::{Id, Language, RecExpr};
use eqfuse_egraph::analysis::{term_kinds, Facts, Kind, SymDim};
use eqfuse_egraph::lang::ArrayLang;

/// Per-node facts of a term (indexed like the term's nodes).
pub struct TermFacts {
    /// The analysis' kind of each node.
    pub kinds: Vec<Kind>,
    /// Free parameters of each node (De Bruijn indices relative to the node).
    pub free: Vec<Vec<u32>>,
    /// Free parameters of each node that occur inside a lambda in it (not one applied on
    /// the spot, a `let`'s body).
    pub deep: Vec<Vec<u32>>,
}

impl TermFacts {
    /// The facts of `term`, its kinds those of an e-graph of the term alone under `facts`
    /// ([`term_kinds`]).
    pub fn new(term: &RecExpr<ArrayLang>, facts: &Facts) -> TermFacts {
        let nodes = term.as_ref();
        let kinds = term_kinds(nodes, facts);
        let free = free_params(nodes);
        let deep = deep_free(nodes, &free);
        TermFacts { kinds, free, deep }
    }

    /// Whether the map `c` (function, operands) needs operand `j` computed
    /// ([`map_operand_needed`]).
    pub fn map_operand_needed(&self, nodes: &[ArrayLang], c: &[Id], j: usize) -> bool {
        map_operand_needed(nodes, &self.kinds, &self.free, c, j)
    }
}

/// Whether the map `c` (function, operands) needs operand `j` computed: the first (its
/// index space), one its function uses, and one of a shape the analysis does not know to be
/// the first's (the map must still check it).
pub fn map_operand_needed(
    nodes: &[ArrayLang],
    kinds: &[Kind],
    free: &[Vec<u32>],
    c: &[Id],
    j: usize,
) -> bool {
    let Some(f) = c.first() else { return true };
    let k = c.len() - 1;
    let used = match nodes[usize::from(*f)] {
        ArrayLang::Lam([_, b]) => free[usize::from(b)].contains(&((k - 1 - j) as u32)),
        _ => true,
    };
    let (Some(first), Some(this)) = (c.get(1), c.get(j + 1)) else { return true };
    let known_same = match (&kinds[usize::from(*first)], &kinds[usize::from(*this)]) {
        (Kind::Array { shape: x, .. }, Kind::Array { shape: y, .. }) => {
            x.len() == y.len()
                && x.iter().zip(y).all(|(p, q)| p == q && matches!(p, SymDim::Const(_) | SymDim::Size(_)))
        }
        _ => false,
    };
    j == 0 || used || !known_same
}

/// The arity of lambda `lam` (0 when it has no parameter types).
pub(crate) fn lam_arity(nodes: &[ArrayLang], params: Id) -> u32 {
    match &nodes[usize::from(params)] {
        ArrayLang::Params(t) => t.arity(),
        _ => 0,
    }
}

/// The free parameters of every node.
fn free_params(nodes: &[ArrayLang]) -> Vec<Vec<u32>> {
    let mut free: Vec<Vec<u32>> = Vec::with_capacity(nodes.len());
    for n in nodes {
        let f: Vec<u32> = match n {
            ArrayLang::Param(p) => vec![p.index],
            ArrayLang::Lam([p, b]) => {
                let k = lam_arity(nodes, *p);
                free[usize::from(*b)].iter().filter(|&&i| i >= k).map(|i| i - k).collect()
            }
            n => {
                let mut s: Vec<u32> =
                    n.children().iter().flat_map(|c| free[usize::from(*c)].clone()).collect();
                s.sort_unstable();
                s.dedup();
                s
            }
        };
        free.push(f);
    }
    free
}

/// The free parameters of each node that occur inside a lambda in it, the body of an
/// applied lambda (a `let`'s) not counting as one.
fn deep_free(nodes: &[ArrayLang], free: &[Vec<u32>]) -> Vec<Vec<u32>> {
    let mut deep: Vec<Vec<u32>> = Vec::with_capacity(nodes.len());
    for (i, n) in nodes.iter().enumerate() {
        let mut d: Vec<u32> = match n {
            ArrayLang::Lam(_) => free[i].clone(),
            ArrayLang::App(c) => {
                let Some((f, args)) = c.split_first() else {
                    deep.push(Vec::new());
                    continue;
                };
                let mut d: Vec<u32> = args.iter().flat_map(|a| deep[usize::from(*a)].clone()).collect();
                match &nodes[usize::from(*f)] {
                    ArrayLang::Lam([p, b]) => {
                        let k = lam_arity(nodes, *p);
                        d.extend(deep[usize::from(*b)].iter().filter(|&&x| x >= k).map(|x| x - k));
                    }
                    _ => d.extend(free[usize::from(*f)].iter().copied()),
                }
                d
            }
            n => n.children().iter().flat_map(|c| deep[usize::from(*c)].clone()).collect(),
        };
        d.sort_unstable();
        d.dedup();
        deep.push(d);
    }
    deep
}
