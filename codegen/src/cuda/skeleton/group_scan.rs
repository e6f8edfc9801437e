//! Scans over a group (a kernel of a [`LaneOp::Scan`](eqfuse_ir::plan::LaneOp::Scan) head
//! whose operator has `w > 1` results and its `w - 1` parts): the skeletons of
//! [`super::scan`] on the group's values ([`super::group`]), every component in its own
//! registers, shared arrays, scratch buffers and output.

use super::{Gen, ITEMS};
use crate::cty;
use crate::cuda::{Scratch, Skeleton};
use eqfuse_ir::plan::Func;
use std::fmt::Write as _;

impl Gen<'_> {
    /// A scan over the group of every lane of the kernel (lane 0 its head, `op` and `ne` its
    /// operator and neutral element): over a 1-d space in one pass, or along rows.
    pub(super) fn group_scan(&mut self, op: &Func, ne: &Func, exclusive: bool) -> Result<Skeleton, String> {
        self.group_functor(0, op, ne)?;
        Ok(if self.rank() == 1 { self.group_scan_1d(exclusive) } else { self.group_scan_rows(exclusive) })
    }

    /// Lines storing `v` (a value of the group) at `f` of every lane's output.
    fn group_store(&mut self, v: &str, at: &str, ind: &str) -> String {
        let outs: Vec<String> = (0..self.width(0)).map(|l| self.out(l)).collect();
        self.store_value(0, v, &outs, at, ind)
    }

    /// The element at the space's index (declared before): `ne0` where the element
    /// function fails.
    fn group_elem(&self, flat: &str, ind: &str) -> String {
        let (decls, call) = self.elem_call(flat);
        let mut s = String::new();
        w!(s, "{ind}{decls}");
        w!(s, "{ind}if ({call}) x = {};", self.elem_value(0));
        s
    }

    fn group_scan_1d(&mut self, exclusive: bool) -> Skeleton {
        let w = self.width(0);
        let g = self.value_type(0);
        let sh = self.name("EqSh0");
        let total = self.layout.total();
        let counter = self.layout.scratch(0, "unsigned int", "tile_counter");
        self.scratch.push(Scratch { fixed: 8, per_block: 0 });
        let flags = self.layout.scratch(1, "unsigned int", "flags");
        self.scratch.push(Scratch { fixed: 0, per_block: 4 });
        // the tiles' aggregates, then their inclusive prefixes: an array per component
        let mut views = Vec::new();
        for what in ["aggregates", "inclusive"] {
            let mut arrays = Vec::new();
            for c in 0..w {
                let t = self.types[c];
                arrays.push(self.layout.scratch(self.scratch.len(), cty(t), &format!("{what}{c}")));
                self.scratch.push(Scratch { fixed: 0, per_block: t.size_bytes() });
            }
            views.push(arrays.join(", "));
        }
        let elem = self.group_elem("f", "      ");
        let entry = self.entry("scan");
        let mut k = String::new();
        w!(k, "  // one pass over a group of {w}: scan the tile, take its prefix from the predecessors (look-back)");
        k.push_str(&self.shared_values(0, "eq_sh", "EQ_WARPS", "  "));
        k.push_str(&self.shared_values(0, "eq_prefix", "1", "  "));
        w!(k, "  const {sh} aggs = {{{}}};", views[0]);
        w!(k, "  const {sh} incs = {{{}}};", views[1]);
        w!(k, "  const {} op0 = {{&A}};", self.name("EqOp0"));
        k.push_str(&self.ne_init(0, "  "));
        Gen::tile_head(&mut k, &counter, &total);
        for c in 0..w {
            w!(k, "  {} xs{c}[EQ_ITEMS];", cty(self.types[c]));
        }
        w!(k, "  {g} agg = ne0;");
        w!(k, "#pragma unroll");
        w!(k, "  for (int c = 0; c < EQ_ITEMS; ++c) {{");
        w!(k, "    const long long f = lo + c;");
        w!(k, "    {g} x = ne0;");
        w!(k, "    if (f < n) {{");
        w!(k, "      const long long i0 = f;");
        k.push_str(&elem);
        w!(k, "    }}");
        for c in 0..w {
            w!(k, "    xs{c}[c] = x.c{c};");
        }
        w!(k, "    agg = op0(agg, x);");
        w!(k, "  }}");
        w!(k, "  {g} inc, exc, tot;");
        w!(k, "  eq_gblock_scan(agg, ne0, ne0, op0, eq_sh, inc, exc, tot);");
        w!(k, "  if (threadIdx.x < 32) {{");
        w!(k, "    const {g} p = eq_glookback(tile, tot, ne0, op0, {flags}, aggs, incs);");
        w!(k, "    if (threadIdx.x == 0) eq_prefix.put(0, p);");
        w!(k, "  }}");
        w!(k, "  __syncthreads();");
        w!(k, "  {g} run = op0(eq_prefix.get(0), exc);");
        w!(k, "#pragma unroll");
        w!(k, "  for (int c = 0; c < EQ_ITEMS; ++c) {{");
        w!(k, "    const long long f = lo + c;");
        w!(k, "    const {g} x = {};", self.value_of(0, |l| format!("xs{l}[c]")));
        let store = self.group_store("run", "f", "      ");
        if exclusive {
            w!(k, "    if (f < n) {{");
            k.push_str(&store);
            w!(k, "    }}");
            w!(k, "    run = op0(run, x);");
        } else {
            w!(k, "    run = op0(run, x);");
            w!(k, "    if (f < n) {{");
            k.push_str(&store);
            w!(k, "    }}");
        }
        w!(k, "  }}");
        w!(k, "}}\n");
        self.kernel_head(&entry);
        self.kernels.push_str(&k);
        Skeleton::Scan1d { entry, tile: self.opts.block as usize * ITEMS }
    }

    fn group_scan_rows(&mut self, exclusive: bool) -> Skeleton {
        let g = self.value_type(0);
        let r = self.rank();
        let len = self.layout.extent(r - 1);
        let rows = self.layout.rows();
        let unflat = self.unflatten("row", r - 1, "    ");
        let elem = self.group_elem("f", "        ");
        let store = self.group_store(if exclusive { "exc" } else { "inc" }, "f", "        ");
        let entry = self.entry("scan_rows");
        let mut k = String::new();
        w!(k, "  // a block per row, tile by tile with a carry, over a group of {}", self.width(0));
        k.push_str(&self.shared_values(0, "eq_sh", "EQ_WARPS", "  "));
        w!(k, "  const {} op0 = {{&A}};", self.name("EqOp0"));
        k.push_str(&self.ne_init(0, "  "));
        w!(k, "  const long long len = {len};");
        w!(k, "  for (long long row = blockIdx.x; row < {rows}; row += gridDim.x) {{");
        k.push_str(&unflat);
        w!(k, "    {g} carry = ne0;");
        w!(k, "    for (long long base = 0; base < len; base += EQ_BLOCK) {{");
        w!(k, "      const long long j = base + threadIdx.x;");
        w!(k, "      const long long f = row * len + j;");
        w!(k, "      {g} x = ne0;");
        w!(k, "      if (j < len) {{");
        w!(k, "        const long long i{} = j;", r - 1);
        k.push_str(&elem);
        w!(k, "      }}");
        w!(k, "      {g} inc, exc, tot;");
        w!(k, "      eq_gblock_scan(x, carry, ne0, op0, eq_sh, inc, exc, tot);");
        w!(k, "      if (j < len) {{");
        k.push_str(&store);
        w!(k, "      }}");
        w!(k, "      carry = tot;");
        w!(k, "    }}");
        w!(k, "  }}");
        w!(k, "}}\n");
        self.kernel_head(&entry);
        self.kernels.push_str(&k);
        Skeleton::ScanRows { entry }
    }
}
