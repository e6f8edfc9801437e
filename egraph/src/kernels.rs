//! The kernels of an extracted term: what `explain` reports until the full `ir::Plan`
//! lowering exists.
//!
//! Every array operation the term chooses is one kernel (a `multi` is one kernel with a
//! result per lane); scalar code outside any kernel runs on the host between kernels. A
//! kernel *reads* the program inputs and the results of other kernels that its operands
//! and element functions mention (by indexing or as operands); it *writes* its results,
//! named after the program's outputs, else the source `let` they came from, else `t0`,
//! `t1`, .... `loops` counts the `iterate` nodes in its element functions. `materialized`
//! lists the arrays written by one kernel for another that are not program outputs.

use crate::analysis::{Facts, Kind, SymDim};
use crate::lang::ArrayLang;
use egg::{EGraph, Id, Language, RecExpr};
use std::collections::{BTreeSet, HashMap};

/// One kernel.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KernelInfo {
    /// `map`, `generate`, `reduce`, `scan`, `filter`, `permute`, `gather` or `copy`.
    pub kind: &'static str,
    /// Names of the arrays and scalars it reads (program inputs and other kernels'
    /// results), sorted.
    pub reads: Vec<String>,
    /// Names of its results.
    pub writes: Vec<String>,
    /// `iterate` loops in its element functions.
    pub loops: usize,
    /// The element count of its index space, as a product of dimensions (`n*m`).
    pub space: String,
}

/// The kernels of a term, in an order that respects their dependencies.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct KernelSummary {
    /// The kernels.
    pub kernels: Vec<KernelInfo>,
    /// Intermediate arrays written to memory (neither inputs nor outputs).
    pub materialized: Vec<String>,
}

/// The kernel kind of an array operation node.
pub fn kernel_kind(n: &ArrayLang, lanes_reduce: bool) -> Option<&'static str> {
    use ArrayLang as L;
    Some(match n {
        L::Map(_) => "map",
        L::Generate(_) | L::Iota(_) | L::Fill(_) => "generate",
        L::Reduce(_) | L::Redomap(_) => "reduce",
        L::Scan(_) | L::ScanEx(_) | L::Scanomap(_) | L::Scanexomap(_) => "scan",
        L::Filter(_) | L::Filtermap(_) => "filter",
        L::Permute(_) | L::Permutemap(_) => "permute",
        L::Gather(_) | L::Backpermute(_) | L::Transpose(_) | L::Reverse(_) | L::Slice(_) | L::Concat(_) => {
            "gather"
        }
        L::Reshape(_) => "copy",
        L::Multi(_) if lanes_reduce => "reduce",
        L::Multi(_) => "generate",
        _ => return None,
    })
}

struct Summarizer<'a> {
    term: &'a RecExpr<ArrayLang>,
    kinds: Vec<Kind>,
    /// The kernel (node index) each node is the result of, for kernel results.
    kernel_of: Vec<Option<usize>>,
    names: HashMap<usize, Vec<String>>,
    fresh: usize,
}

impl Summarizer<'_> {
    fn node(&self, i: usize) -> &ArrayLang {
        &self.term.as_ref()[i]
    }

    fn name(&mut self, i: usize) -> Vec<String> {
        if let Some(n) = self.names.get(&i) {
            return n.clone();
        }
        let n = vec![format!("t{}", self.fresh)];
        self.fresh += 1;
        self.names.insert(i, n.clone());
        n
    }

    /// Reads (input names, and kernel results as node indices in `deps`) and loops of the
    /// code reachable from `start` without entering another kernel.
    fn scan(&mut self, start: &[Id], reads: &mut BTreeSet<String>, loops: &mut usize, deps: &mut Vec<usize>) {
        let mut stack: Vec<usize> = start.iter().map(|c| usize::from(*c)).collect();
        let mut seen = std::collections::HashSet::new();
        while let Some(i) = stack.pop() {
            if !seen.insert(i) {
                continue;
            }
            if self.kernel_of[i].is_some() {
                deps.push(i);
                continue;
            }
            match self.node(i) {
                ArrayLang::Input(s) => {
                    reads.insert(s.as_str().to_string());
                }
                // sizes are known on the host: `length a` reads no element of `a`
                ArrayLang::Length(_) | ArrayLang::Dim(_) => {}
                n => {
                    if matches!(n, ArrayLang::Iterate(_)) {
                        *loops += 1;
                    }
                    stack.extend(n.children().iter().map(|c| usize::from(*c)));
                }
            }
        }
    }
}

fn space_of(kind: &Kind) -> String {
    let dims = match kind {
        Kind::Array { shape, .. } | Kind::Shape(shape) => shape.clone(),
        _ => return "1".into(),
    };
    let parts: Vec<String> = dims
        .iter()
        .map(|d| match d {
            SymDim::Const(v) => v.to_string(),
            SymDim::Size(s) => s.to_string(),
            SymDim::Class(_) | SymDim::Dynamic => "?".into(),
        })
        .collect();
    parts.join("*")
}

/// Summarises the kernels of `term` (its last node is the `outputs` root). `outputs` are
/// the program's output names in order, `names` the source `let` names of term nodes.
pub fn summarize(
    term: &RecExpr<ArrayLang>,
    facts: &Facts,
    outputs: &[String],
    names: &HashMap<usize, String>,
) -> KernelSummary {
    let nodes = term.as_ref();
    let Some(ArrayLang::Outputs(outs)) = nodes.last() else { return KernelSummary::default() };
    // kinds, from an e-graph of the term
    let mut eg: EGraph<ArrayLang, Facts> = EGraph::new(facts.clone());
    let mut ids: Vec<Id> = Vec::with_capacity(nodes.len());
    for n in nodes {
        let m = n.clone().map_children(|c| ids[usize::from(c)]);
        ids.push(eg.add(m));
    }
    let kinds: Vec<Kind> = ids.iter().map(|id| eg[*id].data.kind.clone()).collect();
    let mut kernel_of = vec![None; nodes.len()];
    for (i, n) in nodes.iter().enumerate() {
        if matches!(n, ArrayLang::Multi(_)) {
            continue;
        }
        if let ArrayLang::Proj([_, m]) = n {
            if matches!(nodes[usize::from(*m)], ArrayLang::Multi(_)) {
                kernel_of[i] = Some(usize::from(*m));
            }
            continue;
        }
        if n.array_op().is_some() {
            kernel_of[i] = Some(i);
        }
    }
    let mut out_names: HashMap<usize, Vec<String>> = HashMap::new();
    for (k, o) in outs.iter().enumerate() {
        let i = usize::from(*o);
        if let Some(name) = outputs.get(k) {
            out_names.entry(i).or_default().push(name.clone());
        }
    }
    let mut all_names: HashMap<usize, Vec<String>> =
        names.iter().map(|(i, n)| (*i, vec![n.clone()])).collect();
    for (i, n) in &out_names {
        all_names.insert(*i, n.clone());
    }
    let mut s = Summarizer { term, kinds, kernel_of, names: all_names, fresh: 0 };
    // kernels reachable from the outputs through host code and other kernels
    let mut host_reads = BTreeSet::new();
    let mut loops = 0;
    let mut todo = Vec::new();
    s.scan(outs, &mut host_reads, &mut loops, &mut todo);
    type Found = (BTreeSet<String>, usize, BTreeSet<usize>, Vec<usize>);
    let mut kernels: HashMap<usize, Found> = HashMap::new();
    while let Some(i) = todo.pop() {
        let Some(k) = s.kernel_of[i] else { continue };
        let entry_is_new = !kernels.contains_key(&k);
        kernels.entry(k).or_insert_with(|| (BTreeSet::new(), 0, BTreeSet::new(), Vec::new())).2.insert(i);
        if !entry_is_new {
            continue;
        }
        let mut reads = BTreeSet::new();
        let mut l = 0;
        let mut deps = Vec::new();
        let kids: Vec<Id> = s.node(k).children().to_vec();
        s.scan(&kids, &mut reads, &mut l, &mut deps);
        todo.extend(deps.iter().copied());
        if let Some(e) = kernels.get_mut(&k) {
            e.0 = reads;
            e.1 = l;
            e.3 = deps;
        }
    }
    let mut order: Vec<usize> = kernels.keys().copied().collect();
    order.sort_unstable();
    // fresh names in kernel order, results of one kernel in lane order
    for k in &order {
        for r in kernels[k].2.clone() {
            s.name(r);
        }
    }
    let mut summary = KernelSummary::default();
    for k in order {
        let (inputs_read, loops, results, deps) = &kernels[&k];
        let mut reads = inputs_read.clone();
        for d in deps {
            reads.extend(s.name(*d));
        }
        let lanes_reduce =
            s.node(k).children().iter().any(|c| matches!(nodes[usize::from(*c)], ArrayLang::LaneRed(_)));
        let kind = kernel_kind(s.node(k), lanes_reduce).unwrap_or("copy");
        let mut writes = Vec::new();
        let mut results: Vec<usize> = results.iter().copied().collect();
        results.sort_by_key(|r| match nodes[*r] {
            ArrayLang::Proj([at, _]) => match nodes[usize::from(at)] {
                ArrayLang::Lit(crate::lang::Literal::I64(v)) => v,
                _ => 0,
            },
            _ => 0,
        });
        for r in &results {
            for n in s.name(*r) {
                if !out_names.values().any(|o| o.contains(&n)) && s.kinds[*r].is_array() {
                    summary.materialized.push(n.clone());
                }
                writes.push(n);
            }
        }
        let space_kind = match s.node(k) {
            ArrayLang::Redomap([_, _, sh, _])
            | ArrayLang::Scanomap([_, _, sh, _])
            | ArrayLang::Scanexomap([_, _, sh, _])
            | ArrayLang::Filtermap([_, sh, _])
            | ArrayLang::Permutemap([_, _, _, sh, _]) => s.kinds[usize::from(*sh)].clone(),
            ArrayLang::Multi(c) => c.first().map_or(Kind::Unknown, |sh| s.kinds[usize::from(*sh)].clone()),
            ArrayLang::Reduce([_, _, a]) | ArrayLang::Scan([_, _, a]) | ArrayLang::ScanEx([_, _, a]) => {
                s.kinds[usize::from(*a)].clone()
            }
            ArrayLang::Filter([_, a]) | ArrayLang::Permute([_, _, _, a]) => s.kinds[usize::from(*a)].clone(),
            _ => s.kinds[k].clone(),
        };
        // program outputs first, in program order
        writes.sort_by_key(|w| outputs.iter().position(|o| o == w).unwrap_or(usize::MAX));
        summary.kernels.push(KernelInfo {
            kind,
            reads: reads.iter().cloned().collect(),
            writes,
            loops: *loops,
            space: space_of(&space_kind),
        });
    }
    // an output that is a program input is a copy
    for (k, o) in outs.iter().enumerate() {
        if let (ArrayLang::Input(src), Some(name)) = (&nodes[usize::from(*o)], outputs.get(k)) {
            if s.kinds[usize::from(*o)].is_array() {
                summary.kernels.push(KernelInfo {
                    kind: "copy",
                    reads: vec![src.as_str().to_string()],
                    writes: vec![name.clone()],
                    loops: 0,
                    space: space_of(&s.kinds[usize::from(*o)]),
                });
            }
        }
    }
    summary
}
