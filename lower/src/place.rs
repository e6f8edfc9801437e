//! Placement: where each node of an extracted term is computed, decided on the whole term
//! before lowering emits any kernel.
//!
//! A node is
//! - [`Place::HostStrict`]: computed by the host (a kernel, a host scalar) on every run;
//! - [`Place::HostLazy`]: computed by the host only when its [`Guard`] holds — a kernel in a
//!   branch of an `if`, or the right operand of `&&` / `||`, whether that conditional is a
//!   host step or code inside an element function;
//! - [`Place::Element`]: scalar code inside the element functions of the kernels that use it;
//! - [`Place::Unused`]: not computed at all (a `map` operand its function ignores).
//!
//! The guard of a node is the disjunction, over the paths from the outputs to it, of the
//! conditions those paths pass through (`if c then t else e`: `t` under `c`, `e` under
//! `!c`; `a && b`: `b` under `a`; `a || b`: `b` under `!a`; an argument of an applied lambda,
//! a `let`, under the conditions of its uses in the body, as the lowering computes it where
//! first used). A condition joins a guard only where the host can test it: it is closed (no
//! lambda parameter in it) and its code, outside the kernels it reads, has no host step of
//! its own. Other conditions are left out, which makes the guard weaker (the node is computed
//! more often): with lambda parameters in a condition, the program computed the kernel in
//! the branch as a `let` of its own anyway (arrays are never made inside lambdas, so a
//! kernel under a lambda is a `let`'s, which the language computes).
//!
//! The lowering (`lower.rs`) computes strict kernels up front in term order, lowers a lazy
//! kernel where it is first needed, and, when the host is not already inside a step that
//! implies its guard (a branch of a host `if`), wraps it in a `Step::If` on the guard, which
//! the host tests without failing ([`crate::lower`]: a read out of bounds or a division by
//! zero in the test makes it false or true, never an error; the element function tests the
//! condition again and reports the error where the program does).
//!
//! Guards are kept small: at most [`MAX_CONJUNCTIONS`] conjunctions of at most
//! [`MAX_LITERALS`] literals each; past that a guard is weakened (literals dropped, or the
//! node made strict) — the node is then computed more often, as before placement existed.

use crate::term::{lam_arity, TermFacts};
use egg::{Id, Language};
use eqfuse_egraph::analysis::Kind;
use eqfuse_egraph::lang::ArrayLang;
use std::collections::HashMap;

/// At most this many conjunctions in a guard (more: the node is strict).
pub const MAX_CONJUNCTIONS: usize = 8;
/// At most this many literals in a conjunction (more: the last, by node, are dropped).
pub const MAX_LITERALS: usize = 8;

/// A condition of a guard: the closed `bool` node `cond` holds (`holds`) or does not.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Lit {
    /// The condition's node.
    pub cond: usize,
    /// Whether the condition must hold (`true`) or fail (`false`).
    pub holds: bool,
}

/// When a node is needed: a disjunction of conjunctions of [`Lit`]s, normalised (sorted,
/// no conjunction implied by another, complementary pairs merged).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Guard {
    any: Vec<Vec<Lit>>,
}

impl Guard {
    /// Always needed.
    pub fn always() -> Guard {
        Guard { any: vec![Vec::new()] }
    }

    /// Never needed.
    pub fn never() -> Guard {
        Guard { any: Vec::new() }
    }

    /// Whether it always holds.
    pub fn is_always(&self) -> bool {
        self.any.iter().any(Vec::is_empty)
    }

    /// Whether it never holds.
    pub fn is_never(&self) -> bool {
        self.any.is_empty()
    }

    /// The conjunctions (the guard holds when one of them does).
    pub fn conjunctions(&self) -> &[Vec<Lit>] {
        &self.any
    }

    /// This guard and `lit`.
    pub fn and(&self, lit: Lit) -> Guard {
        let flip = Lit { holds: !lit.holds, ..lit };
        let any = self
            .any
            .iter()
            .filter(|c| !c.contains(&flip))
            .map(|c| {
                let mut c = c.clone();
                if !c.contains(&lit) {
                    c.push(lit);
                }
                c
            })
            .collect();
        let mut g = Guard { any };
        g.normalise();
        g
    }

    /// This guard or `other`.
    pub fn or(&self, other: &Guard) -> Guard {
        let mut g = Guard { any: self.any.iter().chain(&other.any).cloned().collect() };
        g.normalise();
        g
    }

    /// Whether the guard holds wherever all of `facts` do (one conjunction is among them).
    pub fn implied_by(&self, facts: &[Lit]) -> bool {
        self.any.iter().any(|c| c.iter().all(|l| facts.contains(l)))
    }

    /// Whether the guard holds wherever `other` does (each of `other`'s conjunctions implies
    /// one of this guard's).
    pub fn implied_by_guard(&self, other: &Guard) -> bool {
        other.any.iter().all(|c| self.implied_by(c))
    }

    fn normalise(&mut self) {
        for c in &mut self.any {
            c.sort_unstable();
            c.dedup();
            c.truncate(MAX_LITERALS);
        }
        loop {
            self.any.sort();
            self.any.dedup();
            if self.is_always() {
                self.any = vec![Vec::new()];
                return;
            }
            // absorption: a conjunction that contains another is implied by it
            let n = self.any.len();
            let mut keep = vec![true; n];
            for a in 0..n {
                for b in 0..n {
                    if a != b && keep[a] && keep[b] && self.any[a].iter().all(|l| self.any[b].contains(l)) {
                        keep[b] = false;
                    }
                }
            }
            let mut it = keep.iter();
            self.any.retain(|_| *it.next().unwrap_or(&true));
            // `x && c || x && !c` is `x`
            let mut merged = None;
            'find: for a in 0..self.any.len() {
                for b in a + 1..self.any.len() {
                    if let Some(m) = complementary(&self.any[a], &self.any[b]) {
                        merged = Some((a, b, m));
                        break 'find;
                    }
                }
            }
            match merged {
                Some((a, b, m)) => {
                    self.any.remove(b);
                    self.any[a] = m;
                }
                None => break,
            }
        }
        if self.any.len() > MAX_CONJUNCTIONS {
            self.any = vec![Vec::new()];
        }
    }
}

/// `a` without the one literal whose negation is in `b`, when `a` and `b` differ only by it.
fn complementary(a: &[Lit], b: &[Lit]) -> Option<Vec<Lit>> {
    if a.len() != b.len() {
        return None;
    }
    let diff: Vec<usize> = (0..a.len()).filter(|&k| a[k] != b[k]).collect();
    match diff[..] {
        [k] if a[k].cond == b[k].cond => {
            let mut m = a.to_vec();
            m.remove(k);
            Some(m)
        }
        _ => None,
    }
}

/// Where a node is computed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Place {
    /// Not computed.
    Unused,
    /// On the host, on every run.
    HostStrict,
    /// On the host, only when the guard holds.
    HostLazy(Guard),
    /// Inside element functions only.
    Element,
}

/// The placement of every node of a term.
pub struct Placement {
    place: Vec<Place>,
    /// The conditionals the host runs as a `Step::If` (branch by branch).
    host_if: Vec<bool>,
    /// Whether a condition's code can be tested by the host without failing.
    testable: Vec<bool>,
}

impl Placement {
    /// The placement of `nodes` (the last node the `outputs` root).
    pub fn compute(nodes: &[ArrayLang], facts: &TermFacts) -> Placement {
        Placer::new(nodes, facts).run()
    }

    /// Where node `i` is computed.
    pub fn place(&self, i: usize) -> &Place {
        self.place.get(i).unwrap_or(&Place::Unused)
    }

    /// When node `i` is needed on the host: always for a strict node, its guard for a lazy
    /// one, never otherwise.
    pub fn guard(&self, i: usize) -> Guard {
        match self.place(i) {
            Place::HostStrict => Guard::always(),
            Place::HostLazy(g) => g.clone(),
            Place::Element | Place::Unused => Guard::never(),
        }
    }

    /// Whether conditional `i` (`if`, `&&`, `||`) is a host step: an `if` over arrays, or
    /// a conditional of the host whose lazy branch holds a kernel.
    pub fn is_host_if(&self, i: usize) -> bool {
        self.host_if.get(i).copied().unwrap_or(false)
    }

    /// Whether condition node `c` can be tested by the host without failing (its code has
    /// no host step of its own; reads and divisions are made safe by the tester).
    pub fn testable(&self, c: usize) -> bool {
        self.testable.get(c).copied().unwrap_or(false)
    }

    /// The nodes the host computes on every run, in term order.
    pub fn strict_nodes(&self) -> impl Iterator<Item = usize> + '_ {
        self.place.iter().enumerate().filter(|(_, p)| **p == Place::HostStrict).map(|(i, _)| i)
    }
}

struct Placer<'a> {
    nodes: &'a [ArrayLang],
    facts: &'a TermFacts,
    host_if: Vec<bool>,
    testable: Vec<bool>,
    /// Memo of [`Placer::uses`].
    uses_memo: HashMap<(usize, u32), Option<Guard>>,
}

impl<'a> Placer<'a> {
    fn new(nodes: &'a [ArrayLang], facts: &'a TermFacts) -> Placer<'a> {
        Placer { nodes, facts, host_if: Vec::new(), testable: Vec::new(), uses_memo: HashMap::new() }
    }

    fn kid(c: &Id) -> usize {
        usize::from(*c)
    }

    /// A kernel (or the result of one: a lane of a multi-output kernel).
    fn is_kernel(&self, i: usize) -> bool {
        match &self.nodes[i] {
            ArrayLang::Proj([_, m]) => self.nodes[usize::from(*m)].has_results(),
            n => n.array_op().is_some(),
        }
    }

    fn run(mut self) -> Placement {
        let n = self.nodes.len();
        let outs: Vec<usize> = match self.nodes.last() {
            Some(ArrayLang::Outputs(o)) => o.iter().map(Self::kid).collect(),
            _ => Vec::new(),
        };
        // the nodes the host evaluates: not under a lambda
        let mut host = vec![false; n];
        for &o in &outs {
            host[o] = true;
        }
        for i in (0..n).rev() {
            if host[i] && !matches!(self.nodes[i], ArrayLang::Lam(_)) {
                for c in self.nodes[i].children() {
                    host[Self::kid(c)] = true;
                }
            }
        }
        // which nodes are or hold a kernel; the host conditionals whose lazy part does
        let mut has_kernel = vec![false; n];
        self.host_if = vec![false; n];
        for i in 0..n {
            has_kernel[i] =
                self.is_kernel(i) || self.nodes[i].children().iter().any(|c| has_kernel[Self::kid(c)]);
            let lazy = match self.nodes[i] {
                ArrayLang::If([_, t, e]) => {
                    self.facts.kinds[i].is_array() || has_kernel[Self::kid(&t)] || has_kernel[Self::kid(&e)]
                }
                ArrayLang::And([_, b]) | ArrayLang::Or([_, b]) => has_kernel[Self::kid(&b)],
                _ => false,
            };
            // an `if` over arrays is a host step wherever it is (under a lambda too)
            let array_if = matches!(self.nodes[i], ArrayLang::If(_)) && self.facts.kinds[i].is_array();
            self.host_if[i] = (host[i] && lazy) || array_if;
        }
        // a condition the host can test: no host step in its code outside kernels
        self.testable = vec![false; n];
        let mut stepped = vec![false; n];
        for i in 0..n {
            stepped[i] = self.host_if[i]
                || (!self.is_kernel(i) && self.nodes[i].children().iter().any(|c| stepped[Self::kid(c)]));
            self.testable[i] = !stepped[i]
                && self.facts.free[i].is_empty()
                && matches!(self.facts.kinds[i], Kind::Scalar(eqfuse_ir::types::ElemType::Bool));
        }
        // guards, from the outputs down (a node's users come after it in the term)
        let mut guard: Vec<Option<Guard>> = vec![None; n];
        for &o in &outs {
            guard[o] = Some(Guard::always());
        }
        for i in (0..n).rev() {
            let Some(g) = guard[i].clone() else { continue };
            for (c, cg) in self.edges(i, &g) {
                guard[c] = Some(match &guard[c] {
                    Some(old) => old.or(&cg),
                    None => cg,
                });
            }
        }
        let place = (0..n)
            .map(|i| match &guard[i] {
                None => Place::Unused,
                Some(g) if g.is_never() => Place::Unused,
                Some(g) if host[i] || self.is_kernel(i) => {
                    if g.is_always() {
                        Place::HostStrict
                    } else {
                        Place::HostLazy(g.clone())
                    }
                }
                Some(_) => Place::Element,
            })
            .collect();
        Placement { place, host_if: self.host_if, testable: self.testable }
    }

    /// The literal "`c` is `holds`", where the host can test it: for a host step any closed
    /// condition (the host computes it before the branch), else a testable one.
    fn lit(&self, at: usize, c: usize, holds: bool) -> Option<Lit> {
        let ok = if self.host_if[at] { self.facts.free[c].is_empty() } else { self.testable[c] };
        ok.then_some(Lit { cond: c, holds })
    }

    /// The children of node `i` (needed under `g`) with the guards they are needed under.
    fn edges(&mut self, i: usize, g: &Guard) -> Vec<(usize, Guard)> {
        let with = |l: Option<Lit>| match l {
            Some(l) => g.and(l),
            None => g.clone(),
        };
        match &self.nodes[i] {
            ArrayLang::If([c, t, e]) => {
                let (c, t, e) = (Self::kid(c), Self::kid(t), Self::kid(e));
                vec![(c, g.clone()), (t, with(self.lit(i, c, true))), (e, with(self.lit(i, c, false)))]
            }
            ArrayLang::And([a, b]) => {
                let (a, b) = (Self::kid(a), Self::kid(b));
                vec![(a, g.clone()), (b, with(self.lit(i, a, true)))]
            }
            ArrayLang::Or([a, b]) => {
                let (a, b) = (Self::kid(a), Self::kid(b));
                vec![(a, g.clone()), (b, with(self.lit(i, a, false)))]
            }
            ArrayLang::Map(c) => {
                let c = c.clone();
                let mut out = vec![];
                for (j, a) in c.iter().enumerate() {
                    if j == 0 || self.facts.map_operand_needed(self.nodes, &c, j - 1) {
                        out.push((Self::kid(a), g.clone()));
                    }
                }
                out
            }
            ArrayLang::App(c) => {
                let c = c.clone();
                let Some((f, args)) = c.split_first() else { return Vec::new() };
                let mut out = vec![(Self::kid(f), g.clone())];
                let body = match &self.nodes[Self::kid(f)] {
                    ArrayLang::Lam([_, b]) => Some(Self::kid(b)),
                    _ => None,
                };
                let k = args.len();
                for (j, a) in args.iter().enumerate() {
                    let p = (k - 1 - j) as u32;
                    let a = Self::kid(a);
                    // an argument is computed where the body first uses it (not at all if it
                    // does not), unless the body uses it inside a lambda (then before it)
                    let ag = match body {
                        Some(b) if !self.facts.deep[b].contains(&p) => match self.uses(b, p) {
                            Some(u) => and_all(g, &u),
                            None => continue,
                        },
                        _ => g.clone(),
                    };
                    out.push((a, ag));
                }
                out
            }
            n => n.children().iter().map(|c| (Self::kid(c), g.clone())).collect(),
        }
    }

    /// Where the body `n` uses parameter `p`: the guard of its uses relative to `n`
    /// (`None`: it does not use it).
    fn uses(&mut self, n: usize, p: u32) -> Option<Guard> {
        if !self.facts.free[n].contains(&p) {
            return None;
        }
        if let Some(u) = self.uses_memo.get(&(n, p)) {
            return u.clone();
        }
        let or = |a: Option<Guard>, b: Option<Guard>| match (a, b) {
            (Some(a), Some(b)) => Some(a.or(&b)),
            (a, None) => a,
            (None, b) => b,
        };
        let under = |u: Option<Guard>, l: Option<Lit>| match (u, l) {
            (Some(u), Some(l)) => Some(u.and(l)),
            (u, _) => u,
        };
        let r = match self.nodes[n].clone() {
            ArrayLang::Param(_) => Some(Guard::always()),
            ArrayLang::If([c, t, e]) => {
                let (c, t, e) = (Self::kid(&c), Self::kid(&t), Self::kid(&e));
                let uc = self.uses(c, p);
                let ut = under(self.uses(t, p), self.lit(n, c, true));
                let ue = under(self.uses(e, p), self.lit(n, c, false));
                or(or(uc, ut), ue)
            }
            ArrayLang::And([a, b]) | ArrayLang::Or([a, b]) => {
                let (a, b) = (Self::kid(&a), Self::kid(&b));
                let holds = matches!(self.nodes[n], ArrayLang::And(_));
                let ua = self.uses(a, p);
                let ub = under(self.uses(b, p), self.lit(n, a, holds));
                or(ua, ub)
            }
            ArrayLang::Lam([ps, b]) => {
                let k = lam_arity(self.nodes, ps);
                self.uses(Self::kid(&b), p + k)
            }
            node => {
                let mut acc = None;
                for c in node.children() {
                    let u = self.uses(Self::kid(c), p);
                    acc = or(acc, u);
                    if acc.as_ref().is_some_and(Guard::is_always) {
                        break;
                    }
                }
                acc
            }
        };
        self.uses_memo.insert((n, p), r.clone());
        r
    }
}

/// `g` and `u` (each conjunction of `u` added to each of `g`).
fn and_all(g: &Guard, u: &Guard) -> Guard {
    let mut out = Guard::never();
    for c in u.conjunctions() {
        let mut x = g.clone();
        for l in c {
            x = x.and(*l);
        }
        out = out.or(&x);
    }
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use egg::{AstSize, Extractor, RecExpr};
    use eqfuse_egraph::encode::encode;
    use eqfuse_ir::check::check;
    use eqfuse_ir::parse::parse;

    /// The smallest term of `src` with its facts.
    fn term(src: &str) -> (RecExpr<ArrayLang>, TermFacts) {
        let checked = check(&parse(src).unwrap()).unwrap();
        let enc = encode(&checked).unwrap();
        let term = Extractor::new(&enc.egraph, AstSize).find_best(enc.root).1;
        let facts = TermFacts::new(&term, &enc.egraph.analysis);
        (term, facts)
    }

    /// The placement of every node whose printed form is `what` (the first such node).
    fn place_of(src: &str, what: &str) -> (Place, Vec<String>) {
        let (t, f) = term(src);
        let p = Placement::compute(t.as_ref(), &f);
        let nodes = t.as_ref();
        let shown = |i: usize| RecExpr::from(nodes[..=i].to_vec()).to_string();
        let i = (0..nodes.len())
            .find(|&i| nodes[i].to_string() == what)
            .unwrap_or_else(|| panic!("no `{what}` node in {t}"));
        let lits = match p.place(i) {
            Place::HostLazy(g) => g
                .conjunctions()
                .iter()
                .flatten()
                .map(|l| format!("{}{}", if l.holds { "" } else { "!" }, shown(l.cond)))
                .collect(),
            _ => Vec::new(),
        };
        (p.place(i).clone(), lits)
    }

    const GUARDED: &str = "input a : f32[n]\ninput b : f32[n]\n\
        let s = if n > 100 then reduce (+) 0.0 (map (\\v -> b[5]) b) else 0.0\n\
        output y = map (\\x -> x + s) a\n";

    #[test]
    fn a_kernel_in_an_untaken_branch_inside_an_element_function_is_lazy() {
        let (p, lits) = place_of(GUARDED, "reduce");
        assert!(matches!(p, Place::HostLazy(_)), "{p:?}");
        assert_eq!(lits, vec!["(> #n 100:i64)".to_string()]);
        // the map inside it too, under the same guard
        let (t, f) = term(GUARDED);
        let pl = Placement::compute(t.as_ref(), &f);
        let maps: Vec<&Place> = (0..t.as_ref().len())
            .filter(|&i| t.as_ref()[i].to_string() == "map")
            .map(|i| pl.place(i))
            .collect();
        assert_eq!(maps.len(), 2);
        assert!(matches!(maps[0], Place::HostLazy(_)), "{maps:?}");
        assert_eq!(maps[1], &Place::HostStrict, "the output's map");
    }

    #[test]
    fn the_condition_and_the_element_code_are_placed_where_they_run() {
        let (p, _) = place_of(GUARDED, "if");
        assert_eq!(p, Place::Element);
        let (p, _) = place_of(GUARDED, ">");
        assert_eq!(p, Place::Element);
    }

    #[test]
    fn a_kernel_needed_on_both_sides_of_an_if_is_strict() {
        let src = "input b : f32[n]\ninput a : f32[n]\n\
            let s = reduce (+) 0.0 b\n\
            output y = map (\\x -> if n > 3 then x + s else x * s) a\n";
        assert_eq!(place_of(src, "reduce").0, Place::HostStrict);
    }

    #[test]
    fn a_kernel_under_a_condition_on_a_lambda_parameter_is_strict() {
        // the condition cannot be tested by the host: the kernel is computed, as the
        // program computes its `let`
        let src = "input b : f32[n]\ninput a : f32[n]\n\
            let s = reduce (+) 0.0 b\n\
            output y = map (\\x -> if x > 0.5 then s else x) a\n";
        assert_eq!(place_of(src, "reduce").0, Place::HostStrict);
    }

    #[test]
    fn the_right_operand_of_and_and_or_is_lazy() {
        let src = "input b : f32[n]\ninput a : f32[n]\nlet r = reduce (+) 0.0 b\n\
            output y = map (\\x -> if n > 3 && r > 1.0 then x else 0.0) a\n";
        let (p, lits) = place_of(src, "reduce");
        assert!(matches!(p, Place::HostLazy(_)), "{p:?}");
        assert_eq!(lits, vec!["(> #n 3:i64)".to_string()]);
        let src = "input b : f32[n]\ninput a : f32[n]\nlet r = reduce (+) 0.0 b\n\
            output y = map (\\x -> if n > 3 || r > 1.0 then x else 0.0) a\n";
        let (p, lits) = place_of(src, "reduce");
        assert!(matches!(p, Place::HostLazy(_)), "{p:?}");
        assert_eq!(lits, vec!["!(> #n 3:i64)".to_string()]);
    }

    #[test]
    fn a_host_if_over_kernels_is_a_host_step_and_its_branches_are_lazy() {
        let src = "input b : f32[n]\n\
            output y = if n > 3 then map (\\v -> v + 1.0) b else b\n";
        let (t, f) = term(src);
        let p = Placement::compute(t.as_ref(), &f);
        let nodes = t.as_ref();
        let i = (0..nodes.len()).find(|&i| matches!(nodes[i], ArrayLang::If(_))).unwrap();
        assert!(p.is_host_if(i));
        assert_eq!(p.place(i), &Place::HostStrict);
        assert!(matches!(place_of(src, "map").0, Place::HostLazy(_)));
    }

    #[test]
    fn a_let_argument_is_needed_where_its_body_uses_it() {
        // `map (\x -> (\s -> if n > 3 then x + s else x) (r * 2.0)) a` (rules make such
        // applications; the encoding substitutes a local `let`)
        let src = "input b : f32[n]\ninput a : f32[n]\noutput y = map (\\x -> x) a\n";
        let checked = check(&parse(src).unwrap()).unwrap();
        let enc = encode(&checked).unwrap();
        let t: RecExpr<ArrayLang> =
            "(outputs (map (lam <f32> (app (lam <f32> (if (> #n 3:i64) (+ $1:f32 $0:f32) $1:f32)) \
             (* (reduce (lam <f32,f32> (+ $1:f32 $0:f32)) 0.0:f32 @b) 2.0:f32))) @a))"
                .parse()
                .unwrap();
        let f = TermFacts::new(&t, &enc.egraph.analysis);
        let p = Placement::compute(t.as_ref(), &f);
        let nodes = t.as_ref();
        let r = (0..nodes.len()).find(|&i| matches!(nodes[i], ArrayLang::Reduce(_))).unwrap();
        let Place::HostLazy(g) = p.place(r) else { panic!("{:?}", p.place(r)) };
        let [c] = g.conjunctions() else { panic!("{g:?}") };
        assert_eq!(c.len(), 1);
        assert!(c[0].holds && matches!(nodes[c[0].cond], ArrayLang::Gt(_)));
    }

    #[test]
    fn a_guard_whose_test_reads_the_node_itself_lowers() {
        // the generate `g` is needed under
        // `!(n == 0)` (the condition's else branch) or under the condition itself, whose
        // test reads `g`; testing the guard before computing `g` recursed without end
        let src = "input s3 : bool\ninput x : f32[n]\noutput y = x\n";
        let checked = check(&parse(src).unwrap()).unwrap();
        let enc = encode(&checked).unwrap();
        let t: RecExpr<ArrayLang> = "(outputs (generate (shape #n) (lam <i64> (to_i32 (min (if (if (== #n 0:i64) @s3 \
            (index (generate (shape #n) (lam <i64> (== (if @s3 true:bool @s3) true:bool))) (clamp -3:i64 0:i64 (- #n 1:i64)))) \
            (if (index (gather (scan_ex (lam <bool,bool> (&& $1:bool $0:bool)) true:bool (generate (shape #n) (lam <i64> \
            (== (if @s3 true:bool @s3) true:bool)))) (generate (shape #n) (lam <i64> (\"%\" (+ (\"%\" 0:i64 #n) #n) #n)))) \
            $0:i64) -1:i64 7:i64) 5:i64) 10:i64)))))"
            .parse()
            .unwrap();
        let sig = crate::lower::Signature { inputs: &enc.inputs, sizes: &enc.sizes, outputs: &enc.outputs };
        let plan = crate::lower::lower(&eqfuse_egraph::Term::bare(t), &enc.egraph.analysis, &sig).unwrap();
        for n in [0usize, 1, 3] {
            let mut inputs = indexmap::IndexMap::new();
            inputs.insert("s3".to_string(), eqfuse_ir::value::Value::from(ndarray::arr0(false).into_dyn()));
            inputs.insert(
                "x".to_string(),
                eqfuse_ir::value::Value::from(ndarray::Array1::<f32>::zeros(n).into_dyn()),
            );
            let mut sizes = indexmap::IndexMap::new();
            sizes.insert("n".to_string(), n as i64);
            let out = eqfuse_ir::plan::eval::eval(&plan, &inputs, &sizes).unwrap();
            assert_eq!(out["y"].shape(), &[n][..]);
        }
    }

    #[test]
    fn guards_normalise() {
        let c = |i, holds| Lit { cond: i, holds };
        let g = Guard::always().and(c(1, true));
        let h = Guard::always().and(c(1, false));
        assert!(g.or(&h).is_always(), "c || !c");
        assert!(g.and(c(1, false)).is_never(), "c && !c");
        let gx = g.and(c(2, true));
        assert_eq!(g.or(&gx), g, "absorption");
        assert!(gx.implied_by(&[c(2, true), c(1, true), c(3, false)]));
        assert!(!gx.implied_by(&[c(2, true)]));
        assert!(g.implied_by_guard(&gx));
        assert!(!gx.implied_by_guard(&g));
        let mut wide = Guard::never();
        for k in 0..=MAX_CONJUNCTIONS {
            wide = wide.or(&Guard::always().and(c(10 + k, true)));
        }
        assert!(wide.is_always(), "too many conjunctions: strict");
    }
}
