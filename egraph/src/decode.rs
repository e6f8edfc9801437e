//! `decode`: an extracted term back into an `ir::Program`.
//!
//! The term is a DAG (one chosen node per e-class, or a hash-consed `RecExpr`). Decoding:
//!
//! - re-declares the inputs with their original types, then writes the `let`s it needs, then
//!   the outputs in their original order and with their original names;
//! - **top-level `let`s**: an array operation (`map`, `reduce`, ...: anything the language reference (docs/language-reference.md)
//!   forbids inside a lambda) becomes a `let` when it is used more than once or is read
//!   inside a lambda, and so does a closed `if` over arrays read inside a lambda (as a
//!   whole, so that its branches stay lazy); a closed `lam` that was a named function keeps
//!   its `let`. They take
//!   the original `let` name of their e-class when known, else a fresh `t0`, `t1`, ...;
//! - **lambdas** get parameter names by nesting level (`x0 x1` at the outermost level, `y0`
//!   inside, then `z`, `w`, `p`, `q`, `r`, `s`), kept clear of every program name by a
//!   trailing `_`; `(lam 2 (op $1 $0))` in the `op` of a reduction is written `(op)`, and
//!   `min`/`max` likewise;
//! - **local `let`s** (CSE): inside an output's expression, a lambda body, an `if` branch
//!   or the right operand of `&&`/`||` (each a *region*), a scalar subterm that is certainly evaluated in the region
//!   (reached without passing a lazy edge, or in both branches of an `if`) and used twice
//!   or more in it becomes
//!   `let v<k> = ... in` at the top of the region. Subterms reached only lazily are never
//!   hoisted out of their branch, so decoding never evaluates what the term would not;
//! - **literals** are written in `.eqf` syntax; where the checker would give a decoded literal
//!   another type than its term's (an `i32` or `f32` literal with no context), it is wrapped in
//!   the conversion (`i32 8`, `f32 0.1`), found by checking the decoded program.
//!
//! The reserved fused forms decode to their definitions (`redomap op ne sh f` is
//! `reduce op ne (generate sh f)`); `multi` has no `.eqf` form and is refused.

use crate::encode::Encoded;
use crate::lang::{ArrayLang, Literal};
use crate::term::NodeMap;
use egg::{Id, Language, RecExpr};
use eqfuse_ir::ast::Limits;
use eqfuse_ir::ast::{BinOp, Expr, ExprKind, Item, Lit, Program, UnOp};
use eqfuse_ir::check::check_with;
use eqfuse_ir::error::{Error, Result, Span};
use eqfuse_ir::types::Type;
use indexmap::IndexMap;
use std::collections::{HashMap, HashSet};

fn internal(what: impl std::fmt::Display) -> Error {
    eqfuse_ir::error::internal(format!("in the e-graph decoder: {what}"))
}

/// What decoding needs besides the term: the program's signature and names.
#[derive(Clone, Debug, Default)]
pub struct Signature {
    /// Inputs in order with their declared types.
    pub inputs: IndexMap<String, Type>,
    /// Output names in order (the children of the root `outputs` node).
    pub outputs: Vec<String>,
    /// Size names.
    pub sizes: Vec<String>,
    /// Names of original top-level `let`s (all of them: they are kept clear of fresh names).
    pub let_names: Vec<String>,
}

impl Signature {
    /// The signature of an encoded program.
    pub fn of(enc: &Encoded) -> Signature {
        Signature {
            inputs: enc.inputs.clone(),
            outputs: enc.outputs.clone(),
            sizes: enc.sizes.clone(),
            let_names: enc.lets.iter().map(|(_, n)| n.clone()).collect(),
        }
    }
}

/// A term as a DAG: nodes in topological order (children first), children are indices.
struct Dag {
    nodes: Vec<ArrayLang>,
    root: usize,
    /// Original `let` names of nodes, where known.
    names: NodeMap<String>,
}

/// Decodes the term that `choose` picks from `enc`'s e-graph (one node per e-class, e.g.
/// `|id| extractor.find_best_node(id).clone()`), naming shared classes after the program's
/// original `let`s.
pub fn decode(enc: &Encoded, choose: impl Fn(Id) -> ArrayLang) -> Result<Program> {
    let eg = &enc.egraph;
    let mut index: HashMap<Id, usize> = HashMap::new();
    let mut nodes: Vec<ArrayLang> = Vec::new();
    let root = eg.find(enc.root);
    // iterative post-order over classes
    let mut stack: Vec<(Id, bool)> = vec![(root, false)];
    let mut on_stack: HashSet<Id> = HashSet::new();
    while let Some((id, expanded)) = stack.pop() {
        if index.contains_key(&id) {
            continue;
        }
        let node = choose(id);
        if expanded {
            let n = node.map_children(|c| Id::from(index[&eg.find(c)]));
            index.insert(id, nodes.len());
            nodes.push(n);
            on_stack.remove(&id);
        } else {
            if !on_stack.insert(id) {
                return Err(internal("the chosen term has a cycle"));
            }
            stack.push((id, true));
            for c in node.children().iter().rev() {
                let c = eg.find(*c);
                if !index.contains_key(&c) {
                    if on_stack.contains(&c) {
                        return Err(internal("the chosen term has a cycle"));
                    }
                    stack.push((c, false));
                }
            }
        }
    }
    let mut names = NodeMap::default();
    for (id, name) in &enc.lets {
        if let Some(&i) = index.get(&eg.find(*id)) {
            if !names.contains_key(&i) {
                names.insert(i, name.clone());
            }
        }
    }
    let dag = Dag { root: index[&root], nodes, names };
    decode_dag(&Signature::of(enc), dag)
}

/// Decodes a `RecExpr` whose last node is the `outputs` root (identical subterms are shared).
pub fn decode_recexpr(sig: &Signature, expr: &RecExpr<ArrayLang>) -> Result<Program> {
    let mut seen: HashMap<ArrayLang, usize> = HashMap::new();
    let mut remap: Vec<usize> = Vec::with_capacity(expr.len());
    let mut nodes = Vec::new();
    for n in expr.as_ref() {
        let m = n.clone().map_children(|c| Id::from(remap[usize::from(c)]));
        let i = *seen.entry(m.clone()).or_insert_with(|| {
            nodes.push(m);
            nodes.len() - 1
        });
        remap.push(i);
    }
    let root = *remap.last().ok_or_else(|| internal("an empty term"))?;
    decode_dag(sig, Dag { nodes, root, names: NodeMap::default() })
}

/// Replaces `(proj k (multi sh lanes))` by the lane's own operation (`generate sh f` or
/// `redomap op ne sh f`) and `(proj k (tuple e..))` by `e_k`, so that the rest of the decoder
/// never sees a `multi`: horizontal fusion has no `.eqf` form, and each result is written as
/// the operation it computes.
fn resolve_projections(dag: &mut Dag) {
    for i in 0..dag.nodes.len() {
        let ArrayLang::Proj([k, x]) = dag.nodes[i] else { continue };
        let at = match dag.nodes[usize::from(k)] {
            ArrayLang::Lit(Literal::I64(v)) => usize::try_from(v).ok(),
            _ => None,
        };
        let Some(at) = at else { continue };
        let replacement = match &dag.nodes[usize::from(x)] {
            ArrayLang::Tuple(es) => es.get(at).map(|e| dag.nodes[usize::from(*e)].clone()),
            ArrayLang::Multi(cs) => match (cs.first(), cs.get(at + 1)) {
                (Some(&sh), Some(&lane)) => match dag.nodes[usize::from(lane)] {
                    ArrayLang::LaneGen([f]) => Some(ArrayLang::Generate([sh, f])),
                    ArrayLang::LaneRed([op, ne, f]) => Some(ArrayLang::Redomap([op, ne, sh, f])),
                    _ => None,
                },
                _ => None,
            },
            _ => None,
        };
        if let Some(r) = replacement {
            dag.nodes[i] = r;
        }
    }
}

fn decode_dag(sig: &Signature, mut dag: Dag) -> Result<Program> {
    resolve_projections(&mut dag);
    crate::with_big_stack(|| {
        let mut d = Decoder::new(sig, &dag);
        let program = d.program()?;
        fix_literals(program)
    })
}

/// Parameter letters by lambda nesting level.
const LETTERS: [&str; 8] = ["x", "y", "z", "w", "p", "q", "r", "s"];

/// One region: where local `let`s are placed.
struct Region {
    /// Unique id (entries of `scope` and `pending` name their region by it).
    id: usize,
    lets: Vec<(String, Expr)>,
}

struct Decoder<'a> {
    sig: &'a Signature,
    dag: &'a Dag,
    refs: Vec<u32>,
    in_lambda: Vec<bool>,
    arrayish: Vec<bool>,
    free_max: Vec<Option<u32>>,
    /// Names of hoisted (top-level `let`) nodes once written.
    hoisted: HashMap<usize, String>,
    items: Vec<Item>,
    taken: HashSet<String>,
    next_fresh: usize,
    /// Parameter names in scope, outermost first.
    params: Vec<String>,
    /// Lambda nesting level.
    level: usize,
    /// Local `let` names by (node, binder depth).
    scope: HashMap<(usize, usize), (String, usize)>,
    /// Candidates for a local `let` by (node, binder depth): the region that will hold it.
    pending: HashMap<(usize, usize), usize>,
    regions: Vec<Region>,
    next_region: usize,
    /// Regions whose names are out of sight: while a candidate of an outer region is
    /// decoded, the regions opened inside that one (its `let` lands above them).
    hidden: HashSet<usize>,
}

fn mk(kind: ExprKind) -> Expr {
    Expr::new(kind, Span::default())
}

fn var(name: &str) -> Expr {
    mk(ExprKind::Var(name.to_string()))
}

fn call(name: &str, args: Vec<Expr>) -> Expr {
    mk(ExprKind::Apply { func: Box::new(var(name)), args })
}

/// Whether a node may be bound by a local `let` (a scalar operation).
fn cse_kind(n: &ArrayLang) -> bool {
    n.bin_op().is_some()
        || n.scalar_builtin().is_some()
        || matches!(
            n,
            ArrayLang::Neg(_)
                | ArrayLang::Not(_)
                | ArrayLang::If(_)
                | ArrayLang::Iterate(_)
                | ArrayLang::Index(_)
                | ArrayLang::Length(_)
                | ArrayLang::Dim(_)
                | ArrayLang::App(_)
        )
}

impl<'a> Decoder<'a> {
    fn new(sig: &'a Signature, dag: &'a Dag) -> Decoder<'a> {
        let n = dag.nodes.len();
        let mut refs = vec![0u32; n];
        let mut reachable = vec![false; n];
        reachable[dag.root] = true;
        for i in (0..n).rev() {
            if reachable[i] {
                for c in dag.nodes[i].children() {
                    let c = usize::from(*c);
                    refs[c] += 1;
                    reachable[c] = true;
                }
            }
        }
        // free parameters (max index + 1 as a bound is enough: we only need "closed")
        let mut free_max: Vec<Option<u32>> = vec![None; n];
        for i in 0..n {
            free_max[i] = match &dag.nodes[i] {
                ArrayLang::Param(p) => Some(p.index),
                ArrayLang::Lam([k, b]) => {
                    let k = match &dag.nodes[usize::from(*k)] {
                        ArrayLang::Params(p) => p.arity(),
                        _ => 0,
                    };
                    free_max[usize::from(*b)].and_then(|m| m.checked_sub(k))
                }
                node => node.children().iter().filter_map(|c| free_max[usize::from(*c)]).max(),
            };
        }
        // arrays (structurally)
        let mut arrayish = vec![false; n];
        for i in 0..n {
            arrayish[i] = match &dag.nodes[i] {
                ArrayLang::Input(s) => sig.inputs.get(s.as_str()).is_some_and(Type::is_array),
                ArrayLang::If([_, t, _]) => arrayish[usize::from(*t)],
                node => node.array_op().is_some(),
            };
        }
        // in_lambda: reached under a binder
        let mut in_lambda = vec![false; n];
        let mut todo: Vec<usize> = Vec::new();
        for (node, _) in dag.nodes.iter().zip(&reachable).filter(|(_, r)| **r) {
            if let ArrayLang::Lam([_, b]) = node {
                todo.push(usize::from(*b));
            }
        }
        while let Some(i) = todo.pop() {
            if in_lambda[i] {
                continue;
            }
            in_lambda[i] = true;
            // an array operation read in a lambda is a top-level `let`: its own operands
            // are at the top level; so is a closed `if` over arrays (see `is_hoisted`)
            let closed_array_if =
                matches!(dag.nodes[i], ArrayLang::If(_)) && arrayish[i] && free_max[i].is_none();
            if dag.nodes[i].array_op().is_none() && !closed_array_if {
                for c in dag.nodes[i].children() {
                    todo.push(usize::from(*c));
                }
            }
        }
        let mut taken: HashSet<String> = HashSet::new();
        taken.extend(sig.inputs.keys().cloned());
        taken.extend(sig.outputs.iter().cloned());
        taken.extend(sig.sizes.iter().cloned());
        taken.extend(sig.let_names.iter().cloned());
        Decoder {
            sig,
            dag,
            refs,
            in_lambda,
            arrayish,
            free_max,
            hoisted: HashMap::new(),
            items: Vec::new(),
            taken,
            next_fresh: 0,
            params: Vec::new(),
            level: 0,
            scope: HashMap::new(),
            pending: HashMap::new(),
            regions: Vec::new(),
            next_region: 0,
            hidden: HashSet::new(),
        }
    }

    fn node(&self, i: usize) -> &'a ArrayLang {
        &self.dag.nodes[i]
    }

    /// Whether node `i` becomes a top-level `let`.
    fn is_hoisted(&self, i: usize) -> bool {
        match self.node(i) {
            ArrayLang::Lam(_) => self.free_max[i].is_none() && self.dag.names.contains_key(&i),
            n if n.array_op().is_some() => self.refs[i] >= 2 || self.in_lambda[i],
            // a closed `if` over arrays read in a lambda is a `let` as a whole: hoisting only
            // the array operations of its branches would compute them whichever branch is
            // taken (and fail where the untaken one would)
            ArrayLang::If(_) => self.in_lambda[i] && self.arrayish[i] && self.free_max[i].is_none(),
            _ => false,
        }
    }

    fn fresh(&mut self, prefix: &str) -> String {
        loop {
            let name = format!("{prefix}{}", self.next_fresh);
            self.next_fresh += 1;
            if self.taken.insert(name.clone()) {
                return name;
            }
        }
    }

    fn program(&mut self) -> Result<Program> {
        let root = self.dag.root;
        let ArrayLang::Outputs(outs) = self.node(root) else {
            return Err(internal("the root is not `outputs`"));
        };
        if outs.len() != self.sig.outputs.len() {
            return Err(internal("output count differs from the signature"));
        }
        let mut out_items = Vec::new();
        for (c, name) in outs.iter().zip(&self.sig.outputs) {
            let c = usize::from(*c);
            let e = self.region(c)?;
            let value = match &e.kind {
                ExprKind::Var(v) if v == name => None,
                _ => Some(e),
            };
            out_items.push(Item::Output { name: name.clone(), value, span: Span::default() });
        }
        let mut items: Vec<Item> = self
            .sig
            .inputs
            .iter()
            .map(|(n, t)| Item::Input { name: n.clone(), ty: t.clone(), span: Span::default() })
            .collect();
        items.append(&mut self.items);
        items.extend(out_items);
        Ok(Program { items })
    }

    /// Writes the top-level `let` for hoisted node `i` (once); its name.
    fn hoist(&mut self, i: usize) -> Result<String> {
        if let Some(n) = self.hoisted.get(&i) {
            return Ok(n.clone());
        }
        let saved = (
            std::mem::take(&mut self.params),
            std::mem::take(&mut self.level),
            std::mem::take(&mut self.scope),
            std::mem::take(&mut self.pending),
            std::mem::take(&mut self.regions),
            std::mem::take(&mut self.hidden),
        );
        let value = match self.node(i) {
            ArrayLang::Lam(_) => self.lambda(i),
            _ => self.node_expr(i),
        };
        (self.params, self.level, self.scope, self.pending, self.regions, self.hidden) = saved;
        let value = value?;
        let name = match self.dag.names.get(&i) {
            Some(n) if !self.hoisted.values().any(|v| v == n) => n.clone(),
            _ => {
                let prefix = if matches!(self.node(i), ArrayLang::Lam(_)) { "f" } else { "t" };
                self.fresh(prefix)
            }
        };
        self.items.push(Item::Let { name: name.clone(), value, span: Span::default() });
        self.hoisted.insert(i, name.clone());
        Ok(name)
    }

    /// The local `let` name of (node, depth) in sight.
    fn in_scope(&self, key: (usize, usize)) -> Option<&String> {
        self.scope.get(&key).filter(|(_, r)| !self.hidden.contains(r)).map(|(n, _)| n)
    }

    /// The region that will bind (node, depth), if in sight.
    fn pending_in(&self, key: (usize, usize)) -> Option<usize> {
        self.pending.get(&key).copied().filter(|r| !self.hidden.contains(r))
    }

    /// The expression of node `i` in the current scope.
    fn expr(&mut self, i: usize) -> Result<Expr> {
        let d = self.params.len();
        if let Some(name) = self.in_scope((i, d)) {
            return Ok(var(name));
        }
        if self.is_hoisted(i) {
            let name = self.hoist(i)?;
            return Ok(var(&name));
        }
        if let Some(r) = self.pending_in((i, d)) {
            let pos = self.regions.iter().position(|g| g.id == r).ok_or_else(|| internal("lost region"))?;
            // the value is bound at the top of region `r`: the regions opened inside it
            // are out of its sight
            let newly: Vec<usize> =
                self.regions[pos + 1..].iter().map(|g| g.id).filter(|id| self.hidden.insert(*id)).collect();
            let e = self.node_expr(i);
            for id in newly {
                self.hidden.remove(&id);
            }
            let e = e?;
            let name = self.fresh("v");
            self.regions[pos].lets.push((name.clone(), e));
            self.pending.remove(&(i, d));
            self.scope.insert((i, d), (name.clone(), r));
            return Ok(var(&name));
        }
        self.node_expr(i)
    }

    fn kids(&mut self, cs: &[Id]) -> Result<Vec<Expr>> {
        cs.iter().map(|c| self.expr(usize::from(*c))).collect()
    }

    /// Decodes `i` as a region: scalar subterms certainly evaluated in it and used twice
    /// become local `let`s at its top.
    fn region(&mut self, root: usize) -> Result<Expr> {
        let d = self.params.len();
        // uses within the region (same binder depth: lambda bodies not entered)
        let mut count: HashMap<usize, u32> = HashMap::new();
        let mut seen: HashSet<usize> = HashSet::new();
        let mut todo = vec![root];
        while let Some(i) = todo.pop() {
            if !seen.insert(i) || self.is_hoisted(i) || self.in_scope((i, d)).is_some() {
                continue;
            }
            let n = self.node(i);
            if matches!(n, ArrayLang::Lam(_)) {
                continue;
            }
            for c in n.children() {
                *count.entry(usize::from(*c)).or_insert(0) += 1;
                todo.push(usize::from(*c));
            }
        }
        // the candidates (used twice, ...), then which of them are certainly evaluated: the
        // strict sets hold candidates only, so that they stay small (a chain of n maps has
        // strict sets of n nodes each, n^2 in all)
        let wanted: HashSet<usize> = count
            .iter()
            .filter(|&(&i, &k)| {
                k >= 2
                    && cse_kind(self.node(i))
                    && !self.arrayish[i]
                    && !self.is_hoisted(i)
                    && self.in_scope((i, d)).is_none()
                    && self.pending_in((i, d)).is_none()
            })
            .map(|(&i, _)| i)
            .collect();
        let strict =
            if wanted.is_empty() { HashSet::new() } else { self.must(root, d, &mut HashMap::new(), &wanted) };
        let r = self.next_region;
        self.next_region += 1;
        self.regions.push(Region { id: r, lets: Vec::new() });
        let mut mine = Vec::new();
        let mut cands: Vec<usize> = strict.into_iter().collect();
        cands.sort_unstable();
        for i in cands {
            self.pending.insert((i, d), r);
            mine.push(i);
        }
        let body = self.expr(root);
        let region = self.regions.pop().ok_or_else(|| internal("region stack"))?;
        for i in mine {
            self.pending.remove(&(i, d));
            self.scope.remove(&(i, d));
        }
        let mut body = body?;
        for (name, value) in region.lets.into_iter().rev() {
            body = mk(ExprKind::Let { name, value: Box::new(value), body: Box::new(body) });
        }
        Ok(body)
    }

    /// The nodes of `wanted` certainly evaluated when node `i` is (at binder depth `d`):
    /// strict operands, and what both branches of an `if` evaluate.
    fn must(
        &self,
        i: usize,
        d: usize,
        memo: &mut HashMap<usize, std::rc::Rc<HashSet<usize>>>,
        wanted: &HashSet<usize>,
    ) -> HashSet<usize> {
        if let Some(s) = memo.get(&i) {
            return (**s).clone();
        }
        let mut out = HashSet::new();
        if wanted.contains(&i) {
            out.insert(i);
        }
        let n = self.node(i);
        let stop = self.is_hoisted(i) || self.in_scope((i, d)).is_some() || matches!(n, ArrayLang::Lam(_));
        if !stop {
            match n {
                ArrayLang::If([c, t, e]) => {
                    out.extend(self.must(usize::from(*c), d, memo, wanted));
                    let a = self.must(usize::from(*t), d, memo, wanted);
                    let b = self.must(usize::from(*e), d, memo, wanted);
                    out.extend(a.intersection(&b).copied());
                }
                ArrayLang::And([a, _]) | ArrayLang::Or([a, _]) => {
                    out.extend(self.must(usize::from(*a), d, memo, wanted))
                }
                _ => {
                    for c in n.children() {
                        out.extend(self.must(usize::from(*c), d, memo, wanted));
                    }
                }
            }
        }
        memo.insert(i, std::rc::Rc::new(out.clone()));
        out
    }

    /// A fresh parameter name for position `k` at the current nesting level.
    fn param_name(&mut self, k: usize) -> String {
        let mut name = match LETTERS.get(self.level) {
            Some(l) => format!("{l}{k}"),
            None => format!("p{}_{k}", self.level),
        };
        while self.taken.contains(&name) {
            name.push('_');
        }
        name
    }

    /// A `lam` node as a lambda expression.
    fn lambda(&mut self, i: usize) -> Result<Expr> {
        let ArrayLang::Lam([k, body]) = *self.node(i) else {
            return Err(internal("a function that is not a `lam`"));
        };
        let ArrayLang::Params(p) = self.node(usize::from(k)) else {
            return Err(internal("a `lam` without its parameter types"));
        };
        let k = p.arity();
        let names: Vec<String> = (0..k as usize).map(|j| self.param_name(j)).collect();
        let base = self.params.len();
        self.params.extend(names.iter().cloned());
        self.level += 1;
        let b = self.region(usize::from(body));
        self.level -= 1;
        self.params.truncate(base);
        Ok(mk(ExprKind::Lambda { params: names, body: Box::new(b?) }))
    }

    /// A function argument: a named function, a section (`op` position), or a lambda.
    fn func(&mut self, i: usize, op_pos: bool) -> Result<Expr> {
        if self.is_hoisted(i) {
            let name = self.hoist(i)?;
            return Ok(var(&name));
        }
        if op_pos {
            if let ArrayLang::Lam([k, body]) = self.node(i) {
                if matches!(self.node(usize::from(*k)), ArrayLang::Params(p) if p.arity() == 2) {
                    let b = self.node(usize::from(*body));
                    let is_param = |c: Id, want: u32| matches!(self.node(usize::from(c)), ArrayLang::Param(p) if p.index == want);
                    if let Some((op, [a, c])) = b.bin_op() {
                        if is_param(a, 1) && is_param(c, 0) {
                            return Ok(mk(ExprKind::Section(op)));
                        }
                    }
                    match b {
                        ArrayLang::Min([a, c]) if is_param(*a, 1) && is_param(*c, 0) => {
                            return Ok(var("min"))
                        }
                        ArrayLang::Max([a, c]) if is_param(*a, 1) && is_param(*c, 0) => {
                            return Ok(var("max"))
                        }
                        _ => {}
                    }
                }
            }
        }
        self.lambda(i)
    }

    /// The expression of node `i` itself (no name lookup for `i`).
    fn node_expr(&mut self, i: usize) -> Result<Expr> {
        use ArrayLang as L;
        let n = self.node(i);
        let u = |c: &Id| usize::from(*c);
        if let Some((op, [a, b])) = n.bin_op() {
            let a = self.expr(u(&a))?;
            let b =
                if matches!(op, BinOp::And | BinOp::Or) { self.region(u(&b))? } else { self.expr(u(&b))? };
            return Ok(mk(ExprKind::Binary { op, lhs: Box::new(a), rhs: Box::new(b) }));
        }
        if let Some(name) = n.scalar_builtin() {
            let args = self.kids(n.children())?;
            return Ok(call(name, args));
        }
        Ok(match n {
            L::Lit(l) => literal(*l)?,
            L::Param(p) => {
                let d = self.params.len();
                let k = p.index as usize;
                if k >= d {
                    return Err(internal(format!("parameter ${k} is not bound")));
                }
                var(&self.params[d - 1 - k])
            }
            L::Input(s) => var(s.as_str()),
            L::Size(s) => var(s.as_str()),
            L::Neg([a]) => mk(ExprKind::Unary { op: UnOp::Neg, operand: Box::new(self.expr(u(a))?) }),
            L::Not([a]) => mk(ExprKind::Unary { op: UnOp::Not, operand: Box::new(self.expr(u(a))?) }),
            L::If([c, t, e]) => {
                let c = self.expr(u(c))?;
                let t = self.region(u(t))?;
                let e = self.region(u(e))?;
                mk(ExprKind::If { cond: Box::new(c), then_: Box::new(t), else_: Box::new(e) })
            }
            L::Iterate([k, f, init]) => {
                let k = self.expr(u(k))?;
                let f = self.func(u(f), false)?;
                let init = self.expr(u(init))?;
                call("iterate", vec![k, f, init])
            }
            L::Tuple(es) => mk(ExprKind::Tuple(self.kids(es)?)),
            L::Index(cs) => {
                let (a, ix) = cs.split_first().ok_or_else(|| internal("an empty index"))?;
                let array = self.expr(u(a))?;
                mk(ExprKind::Index { array: Box::new(array), indices: self.kids(ix)? })
            }
            L::Length([a]) => call("length", vec![self.expr(u(a))?]),
            L::Dim([a, k]) => call("size", vec![self.expr(u(a))?, self.expr(u(k))?]),
            L::App(cs) => {
                let (f, args) = cs.split_first().ok_or_else(|| internal("an empty app"))?;
                let func = self.func(u(f), false)?;
                mk(ExprKind::Apply { func: Box::new(func), args: self.kids(args)? })
            }
            L::Shape(ds) => mk(ExprKind::Shape(self.kids(ds)?)),
            L::Map(cs) => {
                let (f, arrays) = cs.split_first().ok_or_else(|| internal("an empty map"))?;
                let mut args = vec![self.func(u(f), false)?];
                args.extend(self.kids(arrays)?);
                call("map", args)
            }
            L::Generate([sh, f]) => {
                let sh = self.expr(u(sh))?;
                call("generate", vec![sh, self.func(u(f), false)?])
            }
            L::Iota([a]) => call("iota", vec![self.expr(u(a))?]),
            L::Fill([sh, x]) => call("fill", self.kids(&[*sh, *x])?),
            L::Reduce([op, ne, a]) | L::Scan([op, ne, a]) | L::ScanEx([op, ne, a]) => {
                let name = n.array_op().unwrap_or("reduce");
                let op = self.func(u(op), true)?;
                let mut args = vec![op];
                args.extend(self.kids(&[*ne, *a])?);
                call(name, args)
            }
            L::Filter([p, a]) => {
                let p = self.func(u(p), false)?;
                call("filter", vec![p, self.expr(u(a))?])
            }
            L::Gather([a, idx]) => call("gather", self.kids(&[*a, *idx])?),
            L::Backpermute([sh, f, a]) => {
                let sh = self.expr(u(sh))?;
                let f = self.func(u(f), false)?;
                call("backpermute", vec![sh, f, self.expr(u(a))?])
            }
            L::Permute([op, dest, f, a]) => {
                let op = self.func(u(op), true)?;
                let dest = self.expr(u(dest))?;
                let f = self.func(u(f), false)?;
                call("permute", vec![op, dest, f, self.expr(u(a))?])
            }
            L::Transpose([a]) => call("transpose", vec![self.expr(u(a))?]),
            L::Reverse([a]) => call("reverse", vec![self.expr(u(a))?]),
            L::Reshape([sh, a]) => call("reshape", self.kids(&[*sh, *a])?),
            L::Slice([a, s, l]) => call("slice", self.kids(&[*a, *s, *l])?),
            L::Concat([a, b]) => call("concat", self.kids(&[*a, *b])?),
            L::Redomap([op, ne, sh, f]) | L::Scanomap([op, ne, sh, f]) | L::Scanexomap([op, ne, sh, f]) => {
                let name = match n {
                    L::Redomap(_) => "reduce",
                    L::Scanomap(_) => "scan",
                    _ => "scan_exclusive",
                };
                let op = self.func(u(op), true)?;
                let ne = self.expr(u(ne))?;
                let g = self.generate(u(sh), u(f))?;
                call(name, vec![op, ne, g])
            }
            L::Filtermap([p, sh, f]) => {
                let p = self.func(u(p), false)?;
                let g = self.generate(u(sh), u(f))?;
                call("filter", vec![p, g])
            }
            L::Permutemap([op, dest, g, sh, f]) => {
                let op = self.func(u(op), true)?;
                let dest = self.expr(u(dest))?;
                let g = self.func(u(g), false)?;
                let gen = self.generate(u(sh), u(f))?;
                call("permute", vec![op, dest, g, gen])
            }
            L::Multi(_) | L::LaneGen(_) | L::LaneRed(_) => {
                return Err(internal("a `multi` lane read other than by `proj`"))
            }
            L::Proj([_, x]) if matches!(self.node(u(x)), L::GReduce(_) | L::GScan(_) | L::Iterate(_)) => {
                return Err(crate::encode::unsupported(
                    "writing back a reduction, scan or `iterate` over a tuple as a program",
                    Span::default(),
                ))
            }
            L::GReduce(_) | L::GScan(_) => {
                return Err(internal("a reduction over a group read other than by `proj`"))
            }
            L::SegCheck(_) => {
                return Err(crate::encode::unsupported(
                    "writing back `reduce_segments` or `scan_segments` as a program",
                    Span::default(),
                ))
            }
            L::Proj(_) => return Err(internal("`proj` of something that is not a `multi` or a tuple")),
            L::Lam(_) => return Err(internal("a lambda where a value is expected")),
            L::Params(_) => return Err(internal("parameter types where a value is expected")),
            L::Outputs(_) => return Err(internal("`outputs` below the root")),
            _ => return Err(internal(format!("no decoding for `{n}`"))),
        })
    }

    /// `generate sh f` for a fused form (written in place: the fused form is one array
    /// operation).
    fn generate(&mut self, sh: usize, f: usize) -> Result<Expr> {
        let sh = self.expr(sh)?;
        let f = self.func(f, false)?;
        Ok(call("generate", vec![sh, f]))
    }
}

/// A literal in `.eqf` syntax, with its intended type in `ty` (for [`fix_literals`]).
fn literal(l: Literal) -> Result<Expr> {
    if let Literal::U64(v) = l {
        if i64::try_from(v).is_err() {
            // above every `i64`: a literal no context but `u64`'s may hold; `u64 (v as i64)`
            // is the same value in every context (the conversion wraps)
            let mut inner = mk(ExprKind::Lit(Lit::Int(i128::from(v as i64))));
            inner.ty = Some(Type::Scalar(eqfuse_ir::types::ElemType::I64));
            let mut e = call("u64", vec![inner]);
            e.ty = Some(Type::Scalar(eqfuse_ir::types::ElemType::U64));
            return Ok(e);
        }
    }
    let lit = match l {
        Literal::Bool(b) => Lit::Bool(b),
        Literal::I32(v) => Lit::Int(i128::from(v)),
        Literal::I64(v) => Lit::Int(i128::from(v)),
        Literal::I8(v) => Lit::Int(i128::from(v)),
        Literal::I16(v) => Lit::Int(i128::from(v)),
        Literal::U8(v) => Lit::Int(i128::from(v)),
        Literal::U16(v) => Lit::Int(i128::from(v)),
        Literal::U32(v) => Lit::Int(i128::from(v)),
        Literal::U64(v) => Lit::Int(i128::from(v)),
        Literal::F32(b) if !f32::from_bits(b).is_nan() => {
            // the shortest text that reads back (through f64, as the interpreter converts)
            // as the same f32, else the exact value
            let v = f32::from_bits(b);
            match format!("{v:?}").parse::<f64>() {
                Ok(short) if (short as f32).to_bits() == b => Lit::Float(short),
                _ => Lit::Float(f64::from(v)),
            }
        }
        Literal::F64(b) if !f64::from_bits(b).is_nan() => Lit::Float(f64::from_bits(b)),
        _ => return Err(internal(format!("the literal {l} (NaN) has no .eqf form"))),
    };
    let mut e = mk(ExprKind::Lit(lit));
    e.ty = Some(Type::Scalar(l.elem_type()));
    Ok(e)
}

/// Literal nodes in pre-order.
fn literals(e: &Expr, out: &mut Vec<Option<Type>>) {
    if let ExprKind::Lit(_) = e.kind {
        out.push(e.ty.clone());
    }
    for c in e.kind.children() {
        literals(c, out);
    }
}

/// Wraps the literals whose pre-order positions are in `wrap` in their conversion.
fn wrap_literals(e: &mut Expr, pos: &mut usize, wrap: &HashSet<usize>) {
    if let ExprKind::Lit(_) = e.kind {
        if wrap.contains(pos) {
            if let Some(Type::Scalar(t)) = e.ty.take() {
                let inner = std::mem::replace(e, var("_"));
                *e = call(t.name(), vec![inner]);
            }
        }
        *pos += 1;
        return;
    }
    for c in e.kind.children_mut() {
        wrap_literals(c, pos, wrap);
    }
}

fn clear_types(e: &mut Expr) {
    e.ty = None;
    for c in e.kind.children_mut() {
        clear_types(c);
    }
}

fn item_expr_mut(item: &mut Item) -> Option<&mut Expr> {
    match item {
        Item::Let { value, .. } | Item::LetTuple { value, .. } => Some(value),
        Item::Output { value, .. } => value.as_mut(),
        Item::Input { .. } => None,
    }
}

/// The deepest decoded program checked (the checker's stack is sized for it).
pub const DECODED_MAX_DEPTH: u32 = 1 << 16;

/// Checks the decoded program and wraps every literal the checker types otherwise than its
/// term in a conversion, until none differs; then forgets the types.
///
/// The decoded program may nest deeper than its source (fusing a chain of `n` maps nests
/// their lambda bodies `n` deep), so it is checked under [`DECODED_MAX_DEPTH`], not the
/// source's limit: a program the checker accepted must not fail once optimised.
fn fix_literals(mut program: Program) -> Result<Program> {
    let limits = Limits { max_depth: DECODED_MAX_DEPTH, ..Limits::default() };
    for _ in 0..16 {
        let checked = check_with(&program, &limits)?;
        let mut changed = false;
        for (item, citem) in program.items.iter_mut().zip(&checked.program.items) {
            let (Some(e), Some(ce)) = (item_expr_mut(item), item_expr_ref(citem)) else {
                continue;
            };
            let (mut want, mut got) = (Vec::new(), Vec::new());
            literals(e, &mut want);
            literals(ce, &mut got);
            let wrap: HashSet<usize> = want
                .iter()
                .zip(&got)
                .enumerate()
                .filter(|(_, (w, g))| w.is_some() && w != g)
                .map(|(k, _)| k)
                .collect();
            if !wrap.is_empty() {
                changed = true;
                wrap_literals(e, &mut 0, &wrap);
            }
        }
        if !changed {
            for item in &mut program.items {
                if let Some(e) = item_expr_mut(item) {
                    clear_types(e);
                }
            }
            return Ok(program);
        }
    }
    Err(internal("literal types did not settle"))
}

fn item_expr_ref(item: &Item) -> Option<&Expr> {
    match item {
        Item::Let { value, .. } | Item::LetTuple { value, .. } => Some(value),
        Item::Output { value, .. } => value.as_ref(),
        Item::Input { .. } => None,
    }
}
