//! An extracted term with what travels with its nodes: the source `let` name and the source
//! position of each node that has one.
//!
//! The optimiser extracts a new term from an e-graph after every phase; `explain` and the
//! plan name intermediate arrays as the source did, and run-time errors point into the
//! program, only because each new term takes the names and positions of the term it came
//! from. They travel through the e-graph by class: every node of the old term is loaded into
//! a class, each class takes the first name and the first position (in node order) of the
//! nodes it holds, and each node of the new term takes those of its class
//! ([`Term::carry`]). A class a substitution built from another ([`Facts::derived`]) stands
//! for the same source expression elsewhere, so it takes that one's position when it has
//! none of its own (but not its name: it is another value).

use crate::analysis::Facts;
use crate::encode::Encoded;
use crate::idmap::IdMap;
use crate::lang::ArrayLang;
use egg::{EGraph, Id, RecExpr};
use eqfuse_ir::error::Span;

/// A map from the node indices of a term to `T`, stored densely (a term's nodes are numbered
/// `0..len`).
#[derive(Clone, Debug)]
pub struct NodeMap<T>(IdMap<T>);

impl<T> Default for NodeMap<T> {
    fn default() -> NodeMap<T> {
        NodeMap(IdMap::default())
    }
}

impl<T> NodeMap<T> {
    /// The value of node `i`.
    pub fn get(&self, i: &usize) -> Option<&T> {
        self.0.get(&Id::from(*i))
    }

    /// Whether node `i` has a value.
    pub fn contains_key(&self, i: &usize) -> bool {
        self.0.contains_key(&Id::from(*i))
    }

    /// Sets the value of node `i`, returning the one it replaces.
    pub fn insert(&mut self, i: usize, value: T) -> Option<T> {
        self.0.insert(Id::from(i), value)
    }

    /// How many nodes have a value.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether no node has a value.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The nodes with their values, in node order.
    pub fn iter(&self) -> impl Iterator<Item = (usize, &T)> + '_ {
        self.0.iter().map(|(i, v)| (usize::from(i), v))
    }
}

impl<T> FromIterator<(usize, T)> for NodeMap<T> {
    /// The map of the pairs; of two values for one node the last stays.
    fn from_iter<I: IntoIterator<Item = (usize, T)>>(iter: I) -> NodeMap<T> {
        NodeMap(iter.into_iter().map(|(i, v)| (Id::from(i), v)).collect())
    }
}

/// A term (a DAG, children before parents, its last node the root) with the source `let`
/// name and the source position of its nodes, where they have one.
#[derive(Clone, Debug, Default)]
pub struct Term {
    /// The term.
    pub expr: RecExpr<ArrayLang>,
    /// The names of the nodes that were top-level `let`s in the source.
    pub names: NodeMap<String>,
    /// The source positions of the nodes, where known.
    pub spans: NodeMap<Span>,
}

impl Term {
    /// `expr` with no names and no positions.
    pub fn bare(expr: RecExpr<ArrayLang>) -> Term {
        Term { expr, names: NodeMap::default(), spans: NodeMap::default() }
    }

    /// The term `expr` extracted from `enc`'s e-graph (`index`: the node of `expr` of each
    /// class it holds), with the names of the program's `let`s and the positions of its
    /// expressions.
    pub fn encoded(enc: &Encoded, expr: RecExpr<ArrayLang>, index: &IdMap<usize>) -> Term {
        let eg = &enc.egraph;
        let marks = ByClass::first_of(eg, enc.lets.iter().cloned(), enc.spans.iter().copied());
        marks.onto(eg, expr, index)
    }

    /// The term `expr`, extracted from an e-graph `eg` this term was loaded into (`loaded`:
    /// the class of each of this term's nodes; `index`: the node of `expr` of each class it
    /// holds), with this term's names and positions carried over (module docs): the one way
    /// names and positions follow a term through a rewrite.
    pub fn carry(
        &self,
        eg: &EGraph<ArrayLang, Facts>,
        loaded: &[Id],
        expr: RecExpr<ArrayLang>,
        index: &IdMap<usize>,
    ) -> Term {
        let on = |i: usize| loaded.get(i).copied();
        let names = self.names.iter().filter_map(|(i, n)| Some((on(i)?, n.clone())));
        let spans = self.spans.iter().filter_map(|(i, s)| Some((on(i)?, *s)));
        let mut marks = ByClass::first_of(eg, names, spans);
        marks.follow_derived(eg);
        marks.onto(eg, expr, index)
    }

    /// The term `expr`, made from this one node by node (`made`: the node of `expr` each
    /// node of this term became, where it stays), with this term's names and positions on
    /// the nodes they became.
    pub fn renumbered(&self, expr: RecExpr<ArrayLang>, made: impl Fn(usize) -> Option<usize>) -> Term {
        let names = self.names.iter().filter_map(|(i, n)| Some((made(i)?, n.clone()))).collect();
        let spans = self.spans.iter().filter_map(|(i, s)| Some((made(i)?, *s))).collect();
        Term { expr, names, spans }
    }

    /// The top-level `let`s of this term loaded into an e-graph (`loaded`: the class of each
    /// node), in node order: what [`crate::decode()`] names shared classes after.
    pub fn lets(&self, loaded: &[Id]) -> Vec<(Id, String)> {
        self.names.iter().filter_map(|(i, n)| Some((*loaded.get(i)?, n.clone()))).collect()
    }
}

/// Names and positions by e-class: what [`Term::carry`] and [`Term::encoded`] gather from
/// the old term's nodes before handing it to the new term's.
struct ByClass {
    names: IdMap<String>,
    spans: IdMap<Span>,
}

impl ByClass {
    /// Each class with the first name and the first position among `names` and `spans`.
    fn first_of(
        eg: &EGraph<ArrayLang, Facts>,
        names: impl Iterator<Item = (Id, String)>,
        spans: impl Iterator<Item = (Id, Span)>,
    ) -> ByClass {
        let mut by = ByClass { names: IdMap::default(), spans: IdMap::default() };
        for (c, n) in names {
            let c = eg.find(c);
            if !by.names.contains_key(&c) {
                by.names.insert(c, n);
            }
        }
        for (c, s) in spans {
            let c = eg.find(c);
            if !by.spans.contains_key(&c) {
                by.spans.insert(c, s);
            }
        }
        by
    }

    /// Each class a substitution built, with no position of its own, takes the position of
    /// the class it was built from (in the order they were built, so a chain of them
    /// follows).
    fn follow_derived(&mut self, eg: &EGraph<ArrayLang, Facts>) {
        for &(made, from) in &eg.analysis.derived {
            let (made, from) = (eg.find(made), eg.find(from));
            if let Some(&s) = self.spans.get(&from) {
                if !self.spans.contains_key(&made) {
                    self.spans.insert(made, s);
                }
            }
        }
    }

    /// `expr` with, on each node, the name and position of its class (`index`: the node of
    /// each class).
    fn onto(&self, eg: &EGraph<ArrayLang, Facts>, expr: RecExpr<ArrayLang>, index: &IdMap<usize>) -> Term {
        let mut term = Term::bare(expr);
        for (c, &j) in index.iter() {
            let c = eg.find(c);
            if let Some(n) = self.names.get(&c) {
                term.names.insert(j, n.clone());
            }
            if let Some(&s) = self.spans.get(&c) {
                term.spans.insert(j, s);
            }
        }
        term
    }
}
