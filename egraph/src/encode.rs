//! `encode`: a checked program into an e-graph.
//!
//! - Inputs become `Input` leaves (`@xs`), size names `Size` leaves (`#n`).
//! - Top-level `let`s and `output`s are encoded once, in program order; every later use of
//!   the name is the same e-class. A top-level `let` bound to a lambda (a named function) is
//!   one closed `lam` class; calls of it are `app` nodes.
//! - Lambda parameters become typed De Bruijn parameters (the last parameter is `$0`).
//! - A local `let x = e in body` has no node: each use of `x` is `e` encoded at the use's
//!   binder depth, in the environment captured where `x` was bound (correct under shadowing
//!   and under nested lambdas), memoised per (binding, depth) so that chains of lets stay
//!   linear.
//! - Operator sections and `min`/`max` passed as an `op` become two-parameter lambdas;
//!   applications of a lambda, a section or a named function become `app`.
//! - Literals take the type the checker resolved.
//! - Tuples and groups (version 2) are encoded by component (`encode/tuples.rs`): a tuple parameter
//!   is one parameter per component, a tuple pattern binds each name to its component, a
//!   group of arrays is its member arrays, and a reduction, scan or `iterate` over them is
//!   one `greduce`, `gscan` or `iterate` node whose results are `proj`ections.

mod segments;
mod tuples;

use crate::analysis::Facts;
use crate::lang::{ArrayLang, DeBruijn, InputName, Literal, ParamTypes, SizeName};
use egg::{EGraph, Id};
use eqfuse_ir::ast::{is_builtin, Expr, ExprKind, Item, Lit, UnOp};
use eqfuse_ir::check::Checked;
use eqfuse_ir::error::{Error, Result, Span};
use eqfuse_ir::types::{ElemType, Type};
use indexmap::IndexMap;
use std::collections::{HashMap, HashSet};
use std::rc::Rc;

/// A program in an e-graph, with what `decode` needs to write it back.
#[derive(Clone, Debug)]
pub struct Encoded {
    /// The e-graph (rebuilt).
    pub egraph: EGraph<ArrayLang, Facts>,
    /// The `outputs` class.
    pub root: Id,
    /// Inputs in declaration order with their declared types.
    pub inputs: IndexMap<String, Type>,
    /// Output names in order (the children of `root`, in order).
    pub outputs: Vec<String>,
    /// Size names.
    pub sizes: Vec<String>,
    /// The class of every top-level `let`, in program order, with its name (named functions
    /// included). Canonicalise with `egraph.find` before use.
    pub lets: Vec<(Id, String)>,
    /// The source position of the expressions encoded, by class, innermost first (an
    /// expression after its operands; a class met again keeps its first position).
    /// Canonicalise with `egraph.find` before use.
    pub spans: Vec<(Id, Span)>,
}

fn internal(what: impl std::fmt::Display) -> Error {
    eqfuse_ir::error::internal(format!("in the e-graph encoder: {what}"))
}

/// The message every refusal of a language form the optimiser does not handle yet starts
/// with (a version 2 loop, a tuple pattern, a group of arrays): callers that can run such a
/// program another way look for it.
pub const UNSUPPORTED: &str = "not supported by the optimiser yet: ";

/// An `E-TYPE` error for a form the optimiser does not handle yet (see [`UNSUPPORTED`]).
pub fn unsupported(what: impl std::fmt::Display, span: Span) -> Error {
    let e = Error::new(eqfuse_ir::error::Code::Type, format!("{UNSUPPORTED}{what}"));
    e.or_at((!span.is_dummy()).then_some(span))
}

/// Whether `e` is the refusal of a form the optimiser does not handle yet.
pub fn is_unsupported(e: &Error) -> bool {
    e.code == eqfuse_ir::error::Code::Type && e.message.starts_with(UNSUPPORTED)
}

/// What a local name stands for.
#[derive(Clone, Debug)]
enum Local<'p> {
    /// A lambda parameter bound at binder level `level` (0 = outermost).
    Param { level: u32, ty: ElemType },
    /// A local `let`: its value, encoded on demand in the environment `env` it was bound in.
    Let { inst: usize, value: &'p Expr, env: Env<'p> },
    /// A tuple parameter: components `level ..` of binder levels, one per type of `tys`.
    TupleParam { level: u32, tys: Vec<ElemType> },
    /// Component `k` of a tuple pattern's value (`let (a, b) = value in ..`), encoded on
    /// demand in the environment `env` it was bound in.
    Part { inst: usize, value: &'p Expr, env: Env<'p>, k: usize },
}

/// An immutable list of local bindings, innermost first.
#[derive(Clone, Debug, Default)]
struct Env<'p>(Option<Rc<EnvNode<'p>>>);

#[derive(Debug)]
struct EnvNode<'p> {
    name: &'p str,
    local: Local<'p>,
    next: Env<'p>,
    /// Whether this binding or one further out is named as a builtin is (`map`, `exp`):
    /// where none is, a builtin's name needs no walk of the list (a program of `n` nested
    /// `let`s applies `map` `n` times, and each walk would be `n` long).
    shadows_builtin: bool,
}

impl<'p> Env<'p> {
    fn push(&self, name: &'p str, local: Local<'p>) -> Env<'p> {
        let shadows_builtin = is_builtin(name) || self.shadows_builtin();
        Env(Some(Rc::new(EnvNode { name, local, next: self.clone(), shadows_builtin })))
    }

    fn shadows_builtin(&self) -> bool {
        self.0.as_ref().is_some_and(|n| n.shadows_builtin)
    }

    fn lookup(&self, name: &str) -> Option<&Local<'p>> {
        let mut cur = &self.0;
        while let Some(n) = cur {
            if n.name == name {
                return Some(&n.local);
            }
            cur = &n.next.0;
        }
        None
    }
}

struct Enc<'p> {
    eg: EGraph<ArrayLang, Facts>,
    globals: HashMap<&'p str, Id>,
    sizes: HashSet<&'p str>,
    memo: HashMap<(usize, u32), Id>,
    /// The components of tuple-valued bindings, per (binding, depth).
    parts_memo: HashMap<(usize, u32), Vec<Id>>,
    /// The components of tuple-valued top-level `let`s and patterns.
    global_parts: HashMap<&'p str, Vec<Id>>,
    /// Named functions (top-level `let`s of lambdas), for applications that return a tuple.
    global_funcs: HashMap<&'p str, &'p Expr>,
    next_inst: usize,
    spans: Vec<(Id, Span)>,
}

/// Encodes a checked program. Runs on a thread with a large stack (the encoder recurses
/// over the program's expressions).
pub fn encode(checked: &Checked) -> Result<Encoded> {
    crate::with_big_stack(|| encode_inner(checked))
}

fn encode_inner(checked: &Checked) -> Result<Encoded> {
    let facts = Facts::new(checked.inputs.iter().map(|(n, t)| (n.as_str(), t)));
    let mut enc = Enc {
        eg: EGraph::new(facts),
        globals: HashMap::new(),
        sizes: checked.sizes.iter().map(String::as_str).collect(),
        memo: HashMap::new(),
        parts_memo: HashMap::new(),
        global_parts: HashMap::new(),
        global_funcs: HashMap::new(),
        next_inst: 0,
        spans: Vec::new(),
    };
    let mut outputs = Vec::new();
    let mut out_ids = Vec::new();
    let mut lets = Vec::new();
    let top = Env::default();
    for item in &checked.program.items {
        match item {
            Item::Input { name, .. } => {
                let id = enc.eg.add(ArrayLang::Input(InputName::new(name)));
                enc.globals.insert(name, id);
            }
            Item::Let { name, value, .. } if tuples::is_tuple_typed(value) => {
                let ps = enc.parts(value, &top, 0)?;
                enc.global_parts.insert(name, ps);
            }
            Item::Let { name, value, .. } => {
                let id = if matches!(value.kind, ExprKind::Lambda { .. }) {
                    enc.global_funcs.insert(name, value);
                    enc.func(value, &top, 0)?
                } else {
                    enc.expr(value, &top, 0)?
                };
                enc.globals.insert(name, id);
                lets.push((id, name.clone()));
            }
            Item::LetTuple { names, value, span } => {
                let ps = enc.parts(value, &top, 0)?;
                if ps.len() != names.len() {
                    return Err(internal(format!(
                        "a pattern of {} names for {} parts",
                        names.len(),
                        ps.len()
                    ))
                    .or_at(Some(*span)));
                }
                for (name, id) in names.iter().zip(ps) {
                    if tuples::is_wildcard(name) {
                        continue;
                    }
                    enc.globals.insert(name, id);
                    lets.push((id, name.clone()));
                }
            }
            Item::Output { name, value, .. } => {
                let id = match value {
                    Some(v) => enc.expr(v, &top, 0)?,
                    None => *enc
                        .globals
                        .get(name.as_str())
                        .ok_or_else(|| internal(format!("`{name}` unbound")))?,
                };
                enc.globals.insert(name, id);
                outputs.push(name.clone());
                out_ids.push(id);
            }
        }
    }
    let root = enc.eg.add(ArrayLang::Outputs(out_ids.into_boxed_slice()));
    enc.eg.rebuild();
    let root = enc.eg.find(root);
    Ok(Encoded {
        egraph: enc.eg,
        root,
        inputs: checked.inputs.clone(),
        outputs,
        sizes: checked.sizes.clone(),
        lets,
        spans: enc.spans,
    })
}

/// The literal `lit` at the type the checker gave `e` (the value the interpreter uses).
fn literal(lit: Lit, e: &Expr) -> Result<Literal> {
    let ty = e.ty.as_ref().and_then(Type::elem);
    lit.value_at(ty)
        .map(Literal::from_scalar)
        .ok_or_else(|| internal(format!("literal {lit:?} typed {ty:?}")))
}

/// The parameter types of a function-typed node (each a scalar: a tuple parameter is not
/// supported yet).
fn param_types(e: &Expr) -> Result<Vec<ElemType>> {
    match &e.ty {
        Some(Type::Func { params, .. }) => params
            .iter()
            .map(|p| match p {
                Type::Scalar(t) => Ok(*t),
                _ => Err(unsupported("a function with a tuple parameter", e.span)),
            })
            .collect(),
        other => Err(internal(format!("a function has type {other:?}"))),
    }
}

impl<'p> Enc<'p> {
    fn add(&mut self, n: ArrayLang) -> Id {
        self.eg.add(n)
    }

    fn param(&mut self, index: u32, ty: ElemType) -> Id {
        self.add(ArrayLang::Param(DeBruijn { index, ty }))
    }

    fn lam(&mut self, tys: Vec<ElemType>, body: Id) -> Id {
        let n = self.add(ArrayLang::Params(ParamTypes(tys)));
        self.add(ArrayLang::Lam([n, body]))
    }

    /// `(lam 2 (op $1 $0))` for an operator or a binary builtin used as a function.
    fn binary_lam(&mut self, make: impl FnOnce(Id, Id) -> ArrayLang, tys: &[ElemType]) -> Result<Id> {
        let (&ta, &tb) = match tys {
            [a, b] => (a, b),
            _ => return Err(internal("a binary function without two parameter types")),
        };
        let a = self.param(1, ta);
        let b = self.param(0, tb);
        let body = self.add(make(a, b));
        Ok(self.lam(vec![ta, tb], body))
    }

    fn is_bound(&self, name: &str, env: &Env<'p>) -> bool {
        // no local binding has a builtin's name unless the list says so
        let local = (!is_builtin(name) || env.shadows_builtin()) && env.lookup(name).is_some();
        local || self.globals.contains_key(name) || self.sizes.contains(name)
    }

    /// Encodes a value expression at binder depth `d`, noting its source position.
    fn expr(&mut self, e: &'p Expr, env: &Env<'p>, d: u32) -> Result<Id> {
        let id = self.expr_here(e, env, d)?;
        if !e.span.is_dummy() {
            self.spans.push((id, e.span));
        }
        Ok(id)
    }

    fn expr_here(&mut self, e: &'p Expr, env: &Env<'p>, d: u32) -> Result<Id> {
        if tuples::is_tuple_typed(e) {
            return Err(unsupported("a tuple or group where one value is expected", e.span));
        }
        Ok(match &e.kind {
            ExprKind::Lit(lit) => {
                let l = literal(*lit, e)?;
                self.add(ArrayLang::Lit(l))
            }
            ExprKind::Var(name) => match env.lookup(name) {
                Some(Local::Param { level, ty }) => {
                    let (level, ty) = (*level, *ty);
                    self.param(d - 1 - level, ty)
                }
                Some(Local::Let { inst, value, env: cenv }) => {
                    let (inst, value, cenv) = (*inst, *value, cenv.clone());
                    self.let_value(inst, value, &cenv, d)?
                }
                Some(Local::Part { inst, value, env: cenv, k }) => {
                    let (inst, value, cenv, k) = (*inst, *value, cenv.clone(), *k);
                    self.part_value(inst, value, &cenv, d, k)?
                }
                Some(Local::TupleParam { .. }) => {
                    return Err(internal(format!("the tuple parameter `{name}` as one value")))
                }
                None => match self.globals.get(name.as_str()) {
                    Some(id) => *id,
                    None if self.sizes.contains(name.as_str()) => {
                        self.add(ArrayLang::Size(SizeName::new(name)))
                    }
                    None if name == "pi" => {
                        let l = literal(Lit::Float(std::f64::consts::PI), e)?;
                        self.add(ArrayLang::Lit(l))
                    }
                    // a builtin function passed as a value to an operation the encoder
                    // does not take (the optimiser's rewrites make it a lambda elsewhere)
                    None if eqfuse_ir::ast::SCALAR_BUILTINS.contains(&name.as_str()) => {
                        return Err(unsupported(
                            format!("the builtin `{name}` passed as a function here"),
                            e.span,
                        ))
                    }
                    None => return Err(internal(format!("`{name}` is not a value"))),
                },
            },
            ExprKind::Let { name, value, body } => {
                let inst = self.next_inst;
                self.next_inst += 1;
                let inner = env.push(name, Local::Let { inst, value, env: env.clone() });
                self.expr(body, &inner, d)?
            }
            ExprKind::If { cond, then_, else_ } => {
                let c = self.expr(cond, env, d)?;
                let t = self.expr(then_, env, d)?;
                let f = self.expr(else_, env, d)?;
                self.add(ArrayLang::If([c, t, f]))
            }
            ExprKind::Lambda { .. } | ExprKind::Section(_) => self.func(e, env, d)?,
            ExprKind::Binary { op, lhs, rhs } => {
                let a = self.expr(lhs, env, d)?;
                let b = self.expr(rhs, env, d)?;
                self.add(ArrayLang::binary(*op, a, b))
            }
            ExprKind::Unary { op, operand } => {
                let a = self.expr(operand, env, d)?;
                self.add(match op {
                    UnOp::Neg => ArrayLang::Neg([a]),
                    UnOp::Not => ArrayLang::Not([a]),
                })
            }
            ExprKind::Apply { func, args } => {
                if let ExprKind::Var(name) = &func.kind {
                    if is_builtin(name) && !self.is_bound(name, env) {
                        return self.builtin(name, args, env, d).map_err(|er| er.or_at(Some(e.span)));
                    }
                }
                let f = self.func(func, env, d)?;
                let mut ch = vec![f];
                for a in args {
                    if tuples::is_tuple_typed(a) {
                        ch.extend(self.parts(a, env, d)?);
                    } else {
                        ch.push(self.expr(a, env, d)?);
                    }
                }
                self.add(ArrayLang::App(ch.into_boxed_slice()))
            }
            ExprKind::Index { array, indices } => {
                let mut ch = vec![self.expr(array, env, d)?];
                for i in indices {
                    ch.push(self.expr(i, env, d)?);
                }
                self.add(ArrayLang::Index(ch.into_boxed_slice()))
            }
            ExprKind::Tuple(es) => {
                let ch = es.iter().map(|x| self.expr(x, env, d)).collect::<Result<Vec<_>>>()?;
                self.add(ArrayLang::Tuple(ch.into_boxed_slice()))
            }
            ExprKind::Shape(es) => {
                let ch = es.iter().map(|x| self.expr(x, env, d)).collect::<Result<Vec<_>>>()?;
                self.add(ArrayLang::Shape(ch.into_boxed_slice()))
            }
            ExprKind::LetTuple { names, value, body } => {
                let inner = self.bind_pattern(names, value, env);
                self.expr(body, &inner, d)?
            }
            ExprKind::Loop { .. } => return Err(unsupported("a `loop`", e.span)),
        })
    }

    /// A local `let`'s value at use depth `d` (a lambda value gives its `lam` class).
    fn let_value(&mut self, inst: usize, value: &'p Expr, cenv: &Env<'p>, d: u32) -> Result<Id> {
        if let Some(id) = self.memo.get(&(inst, d)) {
            return Ok(*id);
        }
        let id = if matches!(value.kind, ExprKind::Lambda { .. }) {
            self.func(value, cenv, d)?
        } else {
            self.expr(value, cenv, d)?
        };
        self.memo.insert((inst, d), id);
        Ok(id)
    }

    /// Encodes a function expression (lambda, named function, section, `min`/`max`) as a
    /// `lam` class at binder depth `d`.
    fn func(&mut self, f: &'p Expr, env: &Env<'p>, d: u32) -> Result<Id> {
        match &f.kind {
            ExprKind::Lambda { params, body } => {
                let (tys, inner, depth) = self.bind_params(f, params, env, d)?;
                let b = if tuples::is_tuple_typed(body) {
                    let ps = self.parts(body, &inner, depth)?;
                    self.add(ArrayLang::Tuple(ps.into_boxed_slice()))
                } else {
                    self.expr(body, &inner, depth)?
                };
                Ok(self.lam(tys, b))
            }
            ExprKind::Section(op) => {
                let op = *op;
                self.binary_lam(|a, b| ArrayLang::binary(op, a, b), &param_types(f)?)
            }
            ExprKind::Var(name) => match env.lookup(name) {
                Some(Local::Let { inst, value, env: cenv }) => {
                    let (inst, value, cenv) = (*inst, *value, cenv.clone());
                    self.let_value(inst, value, &cenv, d)
                }
                Some(Local::Param { .. } | Local::TupleParam { .. } | Local::Part { .. }) => {
                    Err(internal(format!("parameter `{name}` used as a function")))
                }
                None => match self.globals.get(name.as_str()) {
                    Some(id) => Ok(*id),
                    None => {
                        let tys = param_types(f)?;
                        let ps: Vec<Id> =
                            (0..tys.len()).map(|i| self.param((tys.len() - 1 - i) as u32, tys[i])).collect();
                        let body = ArrayLang::from_scalar_builtin(name, &ps)
                            .ok_or_else(|| internal(format!("`{name}` is not a function")))?;
                        let b = self.add(body);
                        Ok(self.lam(tys, b))
                    }
                },
            },
            _ => Err(internal("a function expected")),
        }
    }

    fn builtin(&mut self, name: &str, args: &'p [Expr], env: &Env<'p>, d: u32) -> Result<Id> {
        if let "reduce_segments" | "scan_segments" = name {
            let parts = self.segments(name == "scan_segments", args, env, d)?;
            return match parts[..] {
                [one] => Ok(one),
                _ => Err(internal(format!("`{name}` of {} components where one is expected", parts.len()))),
            };
        }
        // which arguments are functions
        let fn_args: &[usize] = match name {
            "map" | "reduce" | "scan" | "scan_exclusive" | "filter" => &[0],
            "generate" | "backpermute" | "iterate" => &[1],
            "permute" => &[0, 2],
            _ => &[],
        };
        let mut ch = Vec::with_capacity(args.len());
        for (i, a) in args.iter().enumerate() {
            if fn_args.contains(&i) {
                ch.push(self.func(a, env, d)?);
            } else if name == "map" && tuples::is_tuple_typed(a) {
                // a group's members are the map's arrays, in order
                ch.extend(self.parts(a, env, d)?);
            } else {
                ch.push(self.expr(a, env, d)?);
            }
        }
        let arr = |n: usize| -> Result<[Id; 0]> {
            if ch.len() == n {
                Ok([])
            } else {
                Err(internal(format!("`{name}` with {} arguments", ch.len())))
            }
        };
        let c = |i: usize| ch[i];
        let node = match name {
            "map" if ch.len() >= 2 => ArrayLang::Map(ch.clone().into_boxed_slice()),
            "generate" => arr(2).map(|_| ArrayLang::Generate([c(0), c(1)]))?,
            "iota" => arr(1).map(|_| ArrayLang::Iota([c(0)]))?,
            "fill" => arr(2).map(|_| ArrayLang::Fill([c(0), c(1)]))?,
            "reduce" => arr(3).map(|_| ArrayLang::Reduce([c(0), c(1), c(2)]))?,
            "scan" => arr(3).map(|_| ArrayLang::Scan([c(0), c(1), c(2)]))?,
            "scan_exclusive" => arr(3).map(|_| ArrayLang::ScanEx([c(0), c(1), c(2)]))?,
            "filter" => arr(2).map(|_| ArrayLang::Filter([c(0), c(1)]))?,
            "gather" => arr(2).map(|_| ArrayLang::Gather([c(0), c(1)]))?,
            "backpermute" => arr(3).map(|_| ArrayLang::Backpermute([c(0), c(1), c(2)]))?,
            "permute" => arr(4).map(|_| ArrayLang::Permute([c(0), c(1), c(2), c(3)]))?,
            "transpose" => arr(1).map(|_| ArrayLang::Transpose([c(0)]))?,
            "reverse" => arr(1).map(|_| ArrayLang::Reverse([c(0)]))?,
            "reshape" => arr(2).map(|_| ArrayLang::Reshape([c(0), c(1)]))?,
            "slice" => arr(3).map(|_| ArrayLang::Slice([c(0), c(1), c(2)]))?,
            "concat" => arr(2).map(|_| ArrayLang::Concat([c(0), c(1)]))?,
            "iterate" => arr(3).map(|_| ArrayLang::Iterate([c(0), c(1), c(2)]))?,
            "length" => arr(1).map(|_| ArrayLang::Length([c(0)]))?,
            "size" => arr(2).map(|_| ArrayLang::Dim([c(0), c(1)]))?,
            "argmin" | "argmax" => {
                arr(1)?;
                return self.argminmax(name == "argmax", &args[0], env, d);
            }
            other if eqfuse_ir::ast::ARRAY_BUILTINS.contains(&other) => {
                return Err(unsupported(format!("the builtin `{other}`"), Span::default()))
            }
            other => ArrayLang::from_scalar_builtin(other, &ch)
                .ok_or_else(|| internal(format!("`{other}` with {} arguments", ch.len())))?,
        };
        Ok(self.add(node))
    }
}
