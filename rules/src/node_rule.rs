//! Rules written as Rust over one e-node: for what `egg` patterns cannot say (operations of
//! any arity, conditions on shapes and types, building lambdas whose parameter types come
//! from the analysis).
//!
//! A node rule has a *selector* (is this node a candidate? — the kinds of node it takes,
//! and legality that needs only the node and the analysis) and a *builder* (given the
//! e-graph, the matched class and the node, add the equal term and return its class, or
//! `None` when it does not apply). The searcher binds the node's children to the variables
//! `?c0`, `?c1`, ...; the applier reads them back, rebuilds the node and calls the builder,
//! then unions.
//!
//! A selector names the kinds of node it takes (`kinds![Map, Reduce]`), as an
//! `egg` pattern names its operator: the searcher visits only the classes that egg's index
//! of classes by operation lists for those kinds, in the order of their ids, instead of
//! every node of every class (on a wide program, most of a search would reach nodes no
//! rule of the phase can take). A node of another kind is never
//! matched, whatever the test says.

use crate::EG;
use egg::{Id, Language, PatternAst, SearchMatches, Searcher, Subst, Symbol, Var};
use eqfuse_egraph::ArrayLang;
use std::mem::Discriminant;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

/// The most children a matched node may have.
const MAX_CHILDREN: usize = 256;

fn child_vars() -> &'static [Var] {
    static VARS: OnceLock<Vec<Var>> = OnceLock::new();
    VARS.get_or_init(|| (0..MAX_CHILDREN).map(|k| Var::from(Symbol::from(format!("?c{k}")))).collect())
}

/// The kinds of node named by variant, `kinds![Map, Reduce]`: what [`Select`] is built from.
macro_rules! kinds {
    ($($variant:ident),+ $(,)?) => {
        vec![$(::std::mem::discriminant(&::eqfuse_egraph::ArrayLang::$variant(Default::default()))),+]
    };
}
pub(crate) use kinds;

/// Decides whether a node is a candidate: it is of one of `kinds`, and `test` accepts it.
#[derive(Clone)]
pub struct Select {
    kinds: Vec<Discriminant<ArrayLang>>,
    test: fn(&EG, &ArrayLang) -> bool,
}

impl Select {
    /// Every node of `kinds` (from the crate's `kinds!` macro).
    pub fn kinds(kinds: Vec<Discriminant<ArrayLang>>) -> Select {
        Select { kinds, test: |_, _| true }
    }

    /// The nodes of `kinds` that `test` accepts.
    pub fn when(kinds: Vec<Discriminant<ArrayLang>>, test: fn(&EG, &ArrayLang) -> bool) -> Select {
        Select { kinds, test }
    }

    /// Whether `node` is a candidate.
    pub fn accepts(&self, egraph: &EG, node: &ArrayLang) -> bool {
        self.kinds.contains(&node.discriminant()) && (self.test)(egraph, node)
    }

    /// The classes holding a node of one of the kinds, each once, in the order of their ids
    /// (egg's index, current after every rebuild; the runner searches a rebuilt e-graph).
    pub fn classes(&self, egraph: &EG) -> Vec<Id> {
        let mut ids: Vec<Id> = self.kinds.iter().filter_map(|k| egraph.classes_for_op(k)).flatten().collect();
        ids.sort_unstable();
        ids.dedup();
        ids
    }
}

/// Builds the equal term for a matched node (children canonical) in class `at`.
pub type Build = Arc<dyn Fn(&mut EG, Id, &ArrayLang) -> Option<Id> + Send + Sync>;

/// Searches the classes of the selector's kinds for nodes that it accepts.
pub struct NodeSearcher {
    select: Select,
    /// Classes searched: the deadline is read every [`CHECK_EVERY`] of them.
    searched: AtomicUsize,
}

/// How many classes a node searcher searches between two looks at the clock.
const CHECK_EVERY: usize = 64;

impl NodeSearcher {
    /// A searcher for the nodes `select` accepts.
    pub fn new(select: Select) -> NodeSearcher {
        NodeSearcher { select, searched: AtomicUsize::new(0) }
    }
}

impl Searcher<ArrayLang, eqfuse_egraph::Facts> for NodeSearcher {
    fn search_eclass_with_limit(
        &self,
        egraph: &EG,
        eclass: Id,
        limit: usize,
    ) -> Option<SearchMatches<'_, ArrayLang>> {
        if self.searched.fetch_add(1, Ordering::Relaxed).is_multiple_of(CHECK_EVERY) && past(egraph) {
            return None;
        }
        let vars = child_vars();
        let mut substs = Vec::new();
        for node in &egraph[eclass].nodes {
            if substs.len() >= limit {
                break;
            }
            if !self.select.accepts(egraph, node) {
                continue;
            }
            let kids = node.children();
            if kids.len() > MAX_CHILDREN {
                continue;
            }
            let mut s = Subst::with_capacity(kids.len());
            for (v, c) in vars.iter().zip(kids) {
                s.insert(*v, *c);
            }
            substs.push(s);
        }
        (!substs.is_empty()).then_some(SearchMatches { eclass, substs, ast: None })
    }

    fn search_with_limit(&self, egraph: &EG, mut limit: usize) -> Vec<SearchMatches<'_, ArrayLang>> {
        let mut found = Vec::new();
        for eclass in self.select.classes(egraph) {
            if limit == 0 {
                break;
            }
            if let Some(m) = self.search_eclass_with_limit(egraph, eclass, limit) {
                limit = limit.saturating_sub(m.substs.len());
                found.push(m);
            }
        }
        found
    }

    fn vars(&self) -> Vec<Var> {
        Vec::new()
    }
}

/// Rebuilds the matched node from the substitution and calls the builder.
pub struct NodeApplier {
    select: Select,
    build: Build,
}

impl egg::Applier<ArrayLang, eqfuse_egraph::Facts> for NodeApplier {
    fn apply_one(
        &self,
        egraph: &mut EG,
        eclass: Id,
        subst: &Subst,
        _searcher_ast: Option<&PatternAst<ArrayLang>>,
        _rule_name: Symbol,
    ) -> Vec<Id> {
        if past(egraph) {
            return Vec::new();
        }
        let vars = child_vars();
        // find the node of the class whose children are the bound ones
        let kids: Vec<Id> = vars.iter().map_while(|v| subst.get(*v).map(|id| egraph.find(*id))).collect();
        let node = egraph[eclass].nodes.iter().find(|n| {
            n.children().len() == kids.len()
                && n.children().iter().zip(&kids).all(|(a, b)| egraph.find(*a) == *b)
                && self.select.accepts(egraph, n)
        });
        let Some(node) = node.cloned() else { return Vec::new() };
        match (self.build)(egraph, eclass, &node) {
            Some(new) if egraph.union(eclass, new) => vec![new],
            _ => Vec::new(),
        }
    }
}

/// Whether the optimisation's deadline has passed ([`eqfuse_egraph::Facts::deadline`]):
/// then a node rule finds and applies nothing, and egg's own time limit ends the run.
fn past(egraph: &EG) -> bool {
    egraph.analysis.deadline.is_some_and(|d| std::time::Instant::now() >= d)
}

/// A rewrite named `name` from a selector and a builder.
pub fn node_rule(name: &str, select: Select, build: Build) -> crate::Rewrite {
    let searcher = NodeSearcher::new(select.clone());
    let applier = NodeApplier { select, build };
    match egg::Rewrite::new(name, searcher, applier) {
        Ok(r) => r,
        // a node rule binds no variable its applier does not bind: `Rewrite::new` cannot fail
        Err(e) => unreachable!("node rule {name}: {e}"),
    }
}

#[cfg(test)]
mod tests {
    use super::{NodeSearcher, Select};
    use crate::EG;
    use egg::{Id, Searcher};
    use eqfuse_egraph::{ArrayLang, Facts, Literal};

    /// `(a - b) + (b - a)`, `a * b`, and a class holding both `a + b` and `a * a` (a union).
    fn egraph() -> (EG, Id) {
        let mut eg = EG::new(Facts::new(std::iter::empty()));
        let (a, b) = (eg.add(ArrayLang::Param(dummy(0))), eg.add(ArrayLang::Param(dummy(1))));
        let ab = eg.add(ArrayLang::Sub([a, b]));
        let ba = eg.add(ArrayLang::Sub([b, a]));
        eg.add(ArrayLang::Add([ab, ba]));
        eg.add(ArrayLang::Mul([a, b]));
        let sum = eg.add(ArrayLang::Add([a, b]));
        let square = eg.add(ArrayLang::Mul([a, a]));
        eg.union(sum, square);
        eg.add(ArrayLang::Lit(Literal::I64(7)));
        eg.rebuild();
        let both = eg.find(sum);
        (eg, both)
    }

    fn dummy(index: u32) -> eqfuse_egraph::DeBruijn {
        eqfuse_egraph::DeBruijn { index, ty: eqfuse_ir::types::ElemType::F32 }
    }

    /// Every (class, node) a selector accepts, by looking at every node of every class.
    fn by_hand(eg: &EG, select: &Select) -> Vec<(Id, usize)> {
        let mut v: Vec<(Id, usize)> = eg
            .classes()
            .flat_map(|c| c.nodes.iter().filter(|n| select.accepts(eg, n)).map(move |_| (c.id, 1)))
            .collect();
        v.sort();
        // one entry per class, counting its accepted nodes
        let mut out: Vec<(Id, usize)> = Vec::new();
        for (c, k) in v {
            match out.last_mut() {
                Some((d, n)) if *d == c => *n += k,
                _ => out.push((c, k)),
            }
        }
        out
    }

    fn found(eg: &EG, select: Select, limit: usize) -> Vec<(Id, usize)> {
        NodeSearcher::new(select)
            .search_with_limit(eg, limit)
            .iter()
            .map(|m| (m.eclass, m.substs.len()))
            .collect()
    }

    #[test]
    fn a_searcher_finds_what_a_look_at_every_node_finds_in_the_order_of_the_classes() {
        let (eg, _) = egraph();
        for select in [
            Select::kinds(kinds![Sub]),
            Select::kinds(kinds![Add, Mul]),
            Select::when(kinds![Mul], |_, n| matches!(n, ArrayLang::Mul([a, b]) if a == b)),
            Select::kinds(kinds![Reduce]),
        ] {
            let want = by_hand(&eg, &select);
            assert_eq!(found(&eg, select, usize::MAX), want);
        }
    }

    #[test]
    fn a_node_of_a_kind_not_named_is_never_matched() {
        let (eg, _) = egraph();
        // the test accepts every node; only the named kind is searched and accepted
        let select = Select::when(kinds![Sub], |_, _| true);
        let all = found(&eg, select.clone(), usize::MAX);
        assert_eq!(all.iter().map(|(_, n)| n).sum::<usize>(), 2);
        for c in eg.classes() {
            for n in &c.nodes {
                assert_eq!(select.accepts(&eg, n), matches!(n, ArrayLang::Sub(_)), "{n}");
            }
        }
    }

    #[test]
    fn a_class_with_nodes_of_two_named_kinds_is_searched_once() {
        let (eg, both) = egraph();
        let select = Select::kinds(kinds![Add, Mul]);
        assert_eq!(select.classes(&eg).iter().filter(|c| **c == both).count(), 1);
        let m = found(&eg, select, usize::MAX);
        assert!(m.contains(&(both, 2)), "{m:?}");
    }

    #[test]
    fn the_match_limit_is_kept() {
        let (eg, _) = egraph();
        let total = |limit| {
            found(&eg, Select::kinds(kinds![Add, Mul, Sub]), limit).iter().map(|(_, n)| n).sum::<usize>()
        };
        assert_eq!(total(usize::MAX), 6);
        assert_eq!(total(3), 3);
        assert_eq!(total(0), 0);
    }
}
