//! The generator's top level: the inputs, named functions and top-level items of a
//! program, each read from its own vector of choices.

use super::syntax::{commit, int, lam, var};
use super::{ArrT, Func, Gen, GenConfig, Ops, Src, D, SIZE_NAMES};
use crate::ast::{Expr, Item, Program};
use crate::error::Span;
use crate::types::{Dim, ElemType, Type};

impl<'a> Gen<'a> {
    pub(super) fn new(cfg: &'a GenConfig, streams: &'a [Vec<u32>]) -> Gen<'a> {
        Gen {
            src: Src { c: streams.first().map_or(&[], |v| v.as_slice()), pos: 0 },
            streams,
            cfg,
            items: Vec::new(),
            size_names: Vec::new(),
            arrays: Vec::new(),
            scalars: Vec::new(),
            funcs: Vec::new(),
            op_funcs: Vec::new(),
            locals: Vec::new(),
            in_lambda: 0,
            fresh: 0,
            outputs: Vec::new(),
            let_names: Vec::new(),
            segment_inputs: Vec::new(),
        }
    }

    pub(super) fn fresh(&mut self, prefix: &str) -> String {
        self.fresh += 1;
        format!("{prefix}{}", self.fresh)
    }

    pub(super) fn elem(&mut self) -> ElemType {
        // f32 first: a 0 choice gives the most common type
        use ElemType::*;
        const ELEMS: [ElemType; 11] = [F32, I64, F64, I32, Bool, I8, I16, U8, U16, U32, U64];
        ELEMS[self.src.weighted(&[6, 5, 3, 3, 3, 1, 1, 1, 1, 1, 1])]
    }

    pub(super) fn ops(&self) -> Ops {
        self.cfg.ops
    }

    pub(super) fn unguarded(&mut self) -> bool {
        self.cfg.allow_runtime_errors && self.src.chance(1, 4)
    }

    // ------------------------------------------------------------ program

    pub(super) fn program(&mut self) -> Program {
        // Every "one more?" decision is false on a 0 choice, so shrinking removes inputs.
        self.inputs();
        if self.ops().functions {
            for _ in 0..2 {
                if !self.src.chance(1, 3) {
                    break;
                }
                self.named_function();
            }
        }
        let streams = self.streams;
        for stream in streams.iter().skip(1).take(self.cfg.max_items.max(1)) {
            self.src = Src { c: stream, pos: 0 };
            if self.ops().functions && self.src.chance(1, 10) {
                self.named_function();
            }
            if self.src.chance(1, 7) && self.tuple_item() {
                continue;
            }
            let output = self.src.chance(2, 5);
            let scalar = self.src.chance(1, 4);
            let name = if output { self.fresh("o") } else { self.fresh("t") };
            let value = if scalar {
                let t = self.elem();
                let s = self.top_scalar(t);
                self.scalars.push((name.clone(), t));
                s
            } else {
                let (e, at) = self.top_array(&name);
                self.arrays.push((name.clone(), at));
                e
            };
            if output {
                self.outputs.push(name.clone());
                self.items.push(Item::Output { name, value: Some(value), span: Span::default() });
            } else {
                self.let_names.push(name.clone());
                self.items.push(Item::Let { name, value, span: Span::default() });
            }
        }
        // `output x` naming an earlier let; always when nothing else is output
        if let Some(last) = self.let_names.len().checked_sub(1) {
            if self.outputs.is_empty() || self.src.chance(1, 3) {
                let i = if self.outputs.is_empty() { last } else { self.src.below(last + 1) };
                let name = self.let_names[i].clone();
                self.items.push(Item::Output { name, value: None, span: Span::default() });
            }
        }
        Program { items: std::mem::take(&mut self.items) }
    }

    pub(super) fn inputs(&mut self) {
        for i in 0..4 {
            if i > 0 && !self.src.chance(1, 2) {
                break;
            }
            let name = self.fresh("in");
            let elem = self.elem();
            let rank = if self.src.chance(1, 4) { 2 } else { 1 };
            let mut dims = Vec::new();
            let mut ds = Vec::new();
            for _ in 0..rank {
                let (dim, d) = match self.src.weighted(&[6, 3, 2, 1]) {
                    3 => {
                        let k = self.src.below(self.cfg.max_size.min(4) + 1) as i64;
                        (Dim::Known(k), D { key: k.to_string(), e: int(k) })
                    }
                    w => {
                        let s = SIZE_NAMES[w.min(2)].to_string();
                        if !self.size_names.contains(&s) {
                            self.size_names.push(s.clone());
                        }
                        (Dim::Size(s.clone()), D { key: s.clone(), e: var(&s) })
                    }
                };
                dims.push(dim);
                ds.push(d);
            }
            self.items.push(Item::Input {
                name: name.clone(),
                ty: Type::Array { elem, shape: dims },
                span: Span::default(),
            });
            self.arrays.push((name, ArrT { elem, dims: ds }));
        }
        // segment offsets for the rank-1 arrays of one size name
        if self.ops().segments && self.src.chance(1, 4) {
            let lens: Vec<String> = self
                .arrays
                .iter()
                .filter(|(_, a)| a.dims.len() == 1 && self.size_names.contains(&a.dims[0].key))
                .map(|(_, a)| a.dims[0].key.clone())
                .collect();
            if !lens.is_empty() {
                let len = lens[self.src.below(lens.len())].clone();
                self.segment_input(&len);
            }
        }
        for _ in 0..2 {
            if !self.src.chance(1, 3) {
                break;
            }
            let name = self.fresh("s");
            let t = self.elem();
            self.items.push(Item::Input { name: name.clone(), ty: Type::Scalar(t), span: Span::default() });
            self.scalars.push((name, t));
        }
    }

    /// A top-level `let f = \p.. -> body`.
    pub(super) fn named_function(&mut self) {
        let name = self.fresh("g");
        let n = 1 + self.src.below(3);
        let params: Vec<ElemType> = (0..n).map(|_| self.elem()).collect();
        let ret = self.elem();
        let names: Vec<String> = (0..n).map(|_| self.fresh("p")).collect();
        let base = self.locals.len();
        for (p, t) in names.iter().zip(&params) {
            // a named function's parameter types are decided by its uses
            self.locals.push((p.clone(), *t, false));
        }
        self.in_lambda += 1;
        let depth = self.cfg.max_expr_depth;
        let body = self.sc(ret, depth);
        self.in_lambda -= 1;
        self.locals.truncate(base);
        let body = commit(ret, body);
        self.items.push(Item::Let { name: name.clone(), value: lam(names, body), span: Span::default() });
        self.funcs.push(Func { name, params, ret });
    }

    pub(super) fn top_scalar(&mut self, t: ElemType) -> Expr {
        let depth = self.cfg.max_expr_depth;
        if self.ops().reductions && self.src.chance(1, 3) {
            if let Some(e) = self.reduce_scalar(t, depth) {
                return e;
            }
        }
        let s = self.sc(t, depth);
        commit(t, s)
    }
}
