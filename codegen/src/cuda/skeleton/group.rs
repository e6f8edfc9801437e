//! Reductions and scans over groups (version 2's `reduce` over `(a, b, ..)`, `argmin`,
//! Welford): a head lane whose operator has `w > 1` results and its `w - 1`
//! [`LaneOp::Part`]s.
//!
//! A group's value is `EqG<h>` (`h` the head lane), a struct of its components `c0 ..`
//! that lives in registers only, with its shuffles (one per component); its operator is
//! the functor `EqOp<h>` over it. Whatever reaches memory (the block primitives' shared
//! arrays, the per-block partials, the look-back's aggregates and prefixes, the outputs)
//! is one array per component: `EqSh<h>` is a view of such arrays (`get`, `put`,
//! `get_volatile`). The primitives are [`GROUPS`](crate::cuda::prelude::GROUPS). The
//! helpers here also serve a lane of width 1 (an ordinary reduction or scan), as the
//! skeletons always wrote it.

use super::Gen;
use crate::cty;
use eqfuse_ir::plan::{Func, LaneOp};
use std::fmt::Write as _;

impl Gen<'_> {
    /// How many lanes lane `h` heads ([`LaneOp::width`]).
    pub(crate) fn width(&self, h: usize) -> usize {
        self.k.lanes.get(h).map_or(1, |l| l.op.width())
    }

    /// The C type of the value of the reduction or scan headed by lane `h`: its element
    /// type, or its group's `EqG<h>`.
    pub(super) fn value_type(&self, h: usize) -> String {
        match self.width(h) {
            1 => cty(self.types[h]).to_string(),
            _ => self.name(&format!("EqG{h}")),
        }
    }

    /// The value of the element of the reduction or scan headed by lane `h` (the element
    /// function's results `eq_x<h> ..`).
    pub(super) fn elem_value(&self, h: usize) -> String {
        self.value_of(h, |l| format!("eq_x{l}"))
    }

    /// The value of lane `h`'s reduction or scan whose component of lane `l` is `comp(l)`.
    pub(super) fn value_of(&self, h: usize, comp: impl Fn(usize) -> String) -> String {
        match self.width(h) {
            1 => comp(h),
            w => {
                let cs: Vec<String> = (h..h + w).map(comp).collect();
                format!("{}{{{}}}", self.value_type(h), cs.join(", "))
            }
        }
    }

    /// Lines declaring `ne<h>` and setting it to lane `h`'s neutral element.
    pub(super) fn ne_init(&self, h: usize, ind: &str) -> String {
        let (t, ne) = (self.value_type(h), self.name(&format!("eq_ne{h}")));
        let mut s = String::new();
        w!(s, "{ind}{t} ne{h};");
        match self.width(h) {
            1 => w!(s, "{ind}{ne}(A, -1, &ne{h});"),
            w => {
                let outs: Vec<String> = (0..w).map(|c| format!("&ne{h}.c{c}")).collect();
                w!(s, "{ind}{ne}(A, -1, {});", outs.join(", "));
            }
        }
        s
    }

    /// Lines declaring `__shared__` room `var` of `len` values of lane `h`'s reduction or
    /// scan: an array, or one array per component (`var_<c>`) and the view `var` of them.
    pub(super) fn shared_values(&self, h: usize, var: &str, len: &str, ind: &str) -> String {
        let mut s = String::new();
        match self.width(h) {
            1 => w!(s, "{ind}__shared__ {} {var}[{len}];", cty(self.types[h])),
            w => {
                for c in 0..w {
                    w!(s, "{ind}__shared__ {} {var}_{c}[{len}];", cty(self.types[h + c]));
                }
                let arrays: Vec<String> = (0..w).map(|c| format!("{var}_{c}")).collect();
                w!(s, "{ind}const {} {var} = {{{}}};", self.name(&format!("EqSh{h}")), arrays.join(", "));
            }
        }
        s
    }

    /// The block reduction (`block`) or warp reduction of lane `h`'s values.
    pub(crate) fn reduce_fn(&self, h: usize, block: bool) -> &'static str {
        match (self.width(h) > 1, block) {
            (false, true) => "eq_block_reduce",
            (false, false) => "eq_warp_reduce",
            (true, true) => "eq_gblock_reduce",
            (true, false) => "eq_gwarp_reduce",
        }
    }

    /// Lines storing `v`, a value of lane `h`'s reduction or scan, at `at` of `ptrs` (one
    /// pointer per lane of the group).
    pub(crate) fn store_value(&self, h: usize, v: &str, ptrs: &[String], at: &str, ind: &str) -> String {
        let mut s = String::new();
        match ptrs {
            [p] if self.width(h) == 1 => w!(s, "{ind}{p}[{at}] = {v};"),
            _ => {
                for (c, p) in ptrs.iter().enumerate() {
                    w!(s, "{ind}{p}[{at}] = {v}.c{c};");
                }
            }
        }
        s
    }

    /// Emits lane `h`'s operator (`eq_op<h>`) and neutral element (`eq_ne<h>`) over a group
    /// of `w > 1` components, and the group's `EqG<h>`, `EqSh<h>` and `EqOp<h>` (module docs).
    pub(super) fn group_functor(&mut self, h: usize, op: &Func, ne: &Func) -> Result<(), String> {
        let w = op.ret.len();
        let Some(tys) = self.types.get(h..h + w).map(<[_]>::to_vec) else {
            return Err(format!("kernel k{}: lane {h} heads {w} lanes of {}", self.index, self.types.len()));
        };
        if !self.k.lanes[h + 1..h + w].iter().all(|l| matches!(l.op, LaneOp::Part)) {
            return Err(format!("kernel k{}: lane {h}'s group is not followed by its parts", self.index));
        }
        crate::check_group_op(op, ne, &tys).map_err(|e| format!("kernel k{}: lane {h}: {e}", self.index))?;
        let (f, nf) = (self.name(&format!("eq_op{h}")), self.name(&format!("eq_ne{h}")));
        self.func(&f, op, &format!("lane {h}: the operator over a group of {w}"))?;
        self.func(&nf, ne, &format!("lane {h}: the neutral element of a group of {w}"))?;
        let (g, sh, functor) =
            (self.name(&format!("EqG{h}")), self.name(&format!("EqSh{h}")), self.name(&format!("EqOp{h}")));
        let cs = 0..w;
        let ts: Vec<&str> = tys.iter().map(|t| cty(*t)).collect();
        let s = &mut self.funcs;
        w!(
            s,
            "// lanes {h}..{}: the group's value, in registers only (one register per component)",
            h + w - 1
        );
        w!(s, "struct {g} {{");
        for (c, t) in ts.iter().enumerate() {
            w!(s, "  {t} c{c};");
        }
        for dir in ["down", "up"] {
            w!(s, "  static __device__ __forceinline__ {g} shfl_{dir}({g} v, int d) {{");
            for c in cs.clone() {
                w!(s, "    v.c{c} = eq_shfl_{dir}(v.c{c}, d);");
            }
            w!(s, "    return v;");
            w!(s, "  }}");
        }
        w!(s, "}};");
        w!(s, "// the group's values in memory: one array per component");
        w!(s, "struct {sh} {{");
        for (c, t) in ts.iter().enumerate() {
            w!(s, "  {t}* c{c};");
        }
        w!(s, "  __device__ __forceinline__ {g} get(long long i) const {{");
        w!(s, "    {g} v;");
        for c in cs.clone() {
            w!(s, "    v.c{c} = c{c}[i];");
        }
        w!(s, "    return v;");
        w!(s, "  }}");
        w!(s, "  __device__ __forceinline__ {g} get_volatile(long long i) const {{");
        w!(s, "    {g} v;");
        for c in cs.clone() {
            w!(s, "    v.c{c} = eq_load_volatile(&c{c}[i]);");
        }
        w!(s, "    return v;");
        w!(s, "  }}");
        w!(s, "  __device__ __forceinline__ void put(long long i, const {g}& v) const {{");
        for c in cs.clone() {
            w!(s, "    c{c}[i] = v.c{c};");
        }
        w!(s, "  }}");
        w!(s, "}};");
        let args: Vec<String> = ["a", "b"]
            .iter()
            .flat_map(|v| cs.clone().map(move |c| format!("{v}.c{c}")))
            .chain(cs.clone().map(|c| format!("&r.c{c}")))
            .collect();
        w!(s, "struct {functor} {{");
        w!(s, "  const EqArgs* A;");
        w!(s, "  __device__ __forceinline__ {g} operator()({g} a, {g} b) const {{");
        w!(s, "    {g} r = a;");
        w!(s, "    {f}(*A, -1, {});", args.join(", "));
        w!(s, "    return r;");
        w!(s, "  }}");
        w!(s, "}};\n");
        Ok(())
    }
}
