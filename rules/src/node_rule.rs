//! Rules written as Rust over one e-node: for what `egg` patterns cannot say (operations of
//! any arity, conditions on shapes and types, building lambdas whose parameter types come
//! from the analysis).
//!
//! A node rule has a *selector* (is this node a candidate? — legality that needs only the
//! node and the analysis) and a *builder* (given the e-graph, the matched class and the
//! node, add the equal term and return its class, or `None` when it does not apply). The
//! searcher binds the node's children to the variables `?c0`, `?c1`, ...; the applier reads
//! them back, rebuilds the node and calls the builder, then unions.

use crate::EG;
use egg::{Id, Language, PatternAst, SearchMatches, Searcher, Subst, Symbol, Var};
use eqfuse_egraph::ArrayLang;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

/// The most children a matched node may have.
const MAX_CHILDREN: usize = 256;

fn child_vars() -> &'static [Var] {
    static VARS: OnceLock<Vec<Var>> = OnceLock::new();
    VARS.get_or_init(|| (0..MAX_CHILDREN).map(|k| Var::from(Symbol::from(format!("?c{k}")))).collect())
}

/// Decides whether a node is a candidate.
pub type Select = fn(&EG, &ArrayLang) -> bool;

/// Builds the equal term for a matched node (children canonical) in class `at`.
pub type Build = Arc<dyn Fn(&mut EG, Id, &ArrayLang) -> Option<Id> + Send + Sync>;

/// Searches every class for nodes that `select` accepts.
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
            if !(self.select)(egraph, node) {
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
                && (self.select)(egraph, n)
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
    let searcher = NodeSearcher::new(select);
    let applier = NodeApplier { select, build };
    match egg::Rewrite::new(name, searcher, applier) {
        Ok(r) => r,
        // a node rule binds no variable its applier does not bind: `Rewrite::new` cannot fail
        Err(e) => unreachable!("node rule {name}: {e}"),
    }
}
