//! Single-pass tiles with decoupled look-back (scans over a 1-d space, filters) and scans
//! along rows.

use super::{Gen, ITEMS};
use crate::cty;
use crate::cuda::{Scratch, Skeleton};
use eqfuse_ir::plan::Func;
use eqfuse_ir::types::ElemType;
use std::fmt::Write as _;

impl Gen<'_> {
    /// The scratch buffers of a single-pass tile loop over values of type `t` (C name
    /// `ct`): the tile counter, the flags, the aggregates and the inclusive prefixes.
    fn lookback_scratch(&mut self, ct: &str, size: usize) -> [String; 4] {
        let counter = self.layout.scratch(0, "unsigned int", "tile_counter");
        self.scratch.push(Scratch { fixed: 8, per_block: 0 });
        let flags = self.layout.scratch(1, "unsigned int", "flags");
        self.scratch.push(Scratch { fixed: 0, per_block: 4 });
        let aggs = self.layout.scratch(2, ct, "aggregates");
        self.scratch.push(Scratch { fixed: 0, per_block: size });
        let incs = self.layout.scratch(3, ct, "inclusive");
        self.scratch.push(Scratch { fixed: 0, per_block: size });
        [counter, flags, aggs, incs]
    }

    /// The opening of a single-pass tile loop: the tile number (in the order blocks start,
    /// so that every predecessor is running or done), and `lo`, the first of the
    /// `EQ_ITEMS` consecutive elements this thread takes.
    pub(super) fn tile_head(k: &mut String, counter: &str, total: &str) {
        w!(k, "  __shared__ long long eq_tile;");
        w!(k, "  if (threadIdx.x == 0) eq_tile = (long long)atomicAdd({counter}, 1u);");
        w!(k, "  __syncthreads();");
        w!(k, "  const long long tile = eq_tile;");
        w!(k, "  const long long n = {total};");
        w!(k, "  const long long lo = tile * (EQ_BLOCK * EQ_ITEMS) + (long long)threadIdx.x * EQ_ITEMS;");
    }

    pub(super) fn scan_1d(&mut self, exclusive: bool) -> Skeleton {
        let ty = self.types[0];
        let t = cty(ty);
        let total = self.layout.total();
        let [counter, flags, aggs, incs] = self.lookback_scratch(t, ty.size_bytes());
        let out = self.out(0);
        let (decls, call) = self.elem_call("f");
        let entry = self.entry("scan");
        let mut k = String::new();
        w!(k, "  // one pass: scan the tile, take its prefix from the predecessors (look-back)");
        w!(k, "  __shared__ {t} eq_sh[EQ_WARPS];");
        w!(k, "  __shared__ {t} eq_prefix;");
        w!(k, "  const EqOp0 op0 = {{&A}};");
        w!(k, "  {t} ne0;");
        w!(k, "  eq_ne0(A, -1, &ne0);");
        Gen::tile_head(&mut k, &counter, &total);
        w!(k, "  {t} xs[EQ_ITEMS];");
        w!(k, "  {t} agg = ne0;");
        w!(k, "#pragma unroll");
        w!(k, "  for (int c = 0; c < EQ_ITEMS; ++c) {{");
        w!(k, "    const long long f = lo + c;");
        w!(k, "    {t} x = ne0;");
        w!(k, "    if (f < n) {{");
        w!(k, "      const long long i0 = f;");
        w!(k, "      {decls}");
        w!(k, "      if ({call}) x = eq_x0;");
        w!(k, "    }}");
        w!(k, "    xs[c] = x;");
        w!(k, "    agg = op0(agg, x);");
        w!(k, "  }}");
        w!(k, "  {t} inc, exc, tot;");
        w!(k, "  eq_block_scan(agg, ne0, ne0, op0, eq_sh, inc, exc, tot);");
        w!(k, "  if (threadIdx.x < 32) {{");
        w!(k, "    const {t} p = eq_lookback(tile, tot, ne0, op0, {flags}, {aggs}, {incs});");
        w!(k, "    if (threadIdx.x == 0) eq_prefix = p;");
        w!(k, "  }}");
        w!(k, "  __syncthreads();");
        w!(k, "  {t} run = op0(eq_prefix, exc);");
        w!(k, "#pragma unroll");
        w!(k, "  for (int c = 0; c < EQ_ITEMS; ++c) {{");
        w!(k, "    const long long f = lo + c;");
        if exclusive {
            w!(k, "    if (f < n) {out}[f] = run;");
            w!(k, "    run = op0(run, xs[c]);");
        } else {
            w!(k, "    run = op0(run, xs[c]);");
            w!(k, "    if (f < n) {out}[f] = run;");
        }
        w!(k, "  }}");
        w!(k, "}}\n");
        self.kernel_head(&entry);
        self.kernels.push_str(&k);
        Skeleton::Scan1d { entry, tile: self.opts.block as usize * ITEMS }
    }

    pub(super) fn scan_rows(&mut self, exclusive: bool) -> Skeleton {
        let t = cty(self.types[0]);
        let r = self.rank();
        let len = self.layout.extent(r - 1);
        let rows = self.layout.rows();
        let out = self.out(0);
        let unflat = self.unflatten("row", r - 1, "    ");
        let (decls, call) = self.elem_call("f");
        let entry = self.entry("scan_rows");
        let mut k = String::new();
        w!(k, "  // a block per row, tile by tile with a carry");
        w!(k, "  __shared__ {t} eq_sh[EQ_WARPS];");
        w!(k, "  const EqOp0 op0 = {{&A}};");
        w!(k, "  {t} ne0;");
        w!(k, "  eq_ne0(A, -1, &ne0);");
        w!(k, "  const long long len = {len};");
        w!(k, "  for (long long row = blockIdx.x; row < {rows}; row += gridDim.x) {{");
        k.push_str(&unflat);
        w!(k, "    {t} carry = ne0;");
        w!(k, "    for (long long base = 0; base < len; base += EQ_BLOCK) {{");
        w!(k, "      const long long j = base + threadIdx.x;");
        w!(k, "      const long long f = row * len + j;");
        w!(k, "      {t} x = ne0;");
        w!(k, "      if (j < len) {{");
        w!(k, "        const long long i{} = j;", r - 1);
        w!(k, "        {decls}");
        w!(k, "        if ({call}) x = eq_x0;");
        w!(k, "      }}");
        w!(k, "      {t} inc, exc, tot;");
        w!(k, "      eq_block_scan(x, carry, ne0, op0, eq_sh, inc, exc, tot);");
        w!(k, "      if (j < len) {out}[f] = {};", if exclusive { "exc" } else { "inc" });
        w!(k, "      carry = tot;");
        w!(k, "    }}");
        w!(k, "  }}");
        w!(k, "}}\n");
        self.kernel_head(&entry);
        self.kernels.push_str(&k);
        Skeleton::ScanRows { entry }
    }

    pub(super) fn filter(&mut self, pred: &Func) -> Result<Skeleton, String> {
        if self.rank() != 1 {
            return Err(format!("kernel k{}: a filter over a space of rank {}", self.index, self.rank()));
        }
        let ty = self.types[0];
        if pred.params != [ty]
            || pred.ret.len() != 1
            || pred.reg_types.get(pred.ret[0] as usize) != Some(&ElemType::Bool)
        {
            return Err(format!("kernel k{}: the filter predicate is not {ty} -> bool", self.index));
        }
        self.func("eq_pred", pred, "the predicate")?;
        let t = cty(ty);
        let total = self.layout.total();
        let [counter, flags, aggs, incs] = self.lookback_scratch("long long", 8);
        let kept = self.layout.scratch(4, "long long", "kept");
        self.scratch.push(Scratch { fixed: 8, per_block: 0 });
        let out = self.out(0);
        let (decls, call) = self.elem_call("f");
        let entry = self.entry("filter");
        let mut k = String::new();
        w!(k, "  // one pass: count the tile's kept elements, take its offset from the predecessors");
        w!(k, "  // (look-back), write them in order; the last tile records how many were kept");
        w!(k, "  __shared__ long long eq_sh[EQ_WARPS];");
        w!(k, "  __shared__ long long eq_prefix;");
        Gen::tile_head(&mut k, &counter, &total);
        w!(k, "  {t} vs[EQ_ITEMS];");
        w!(k, "  bool keeps[EQ_ITEMS];");
        w!(k, "  long long c_kept = 0;");
        w!(k, "#pragma unroll");
        w!(k, "  for (int c = 0; c < EQ_ITEMS; ++c) {{");
        w!(k, "    const long long f = lo + c;");
        w!(k, "    keeps[c] = false;");
        w!(k, "    vs[c] = {};", crate::scalar::zero(ty));
        w!(k, "    if (f < n) {{");
        w!(k, "      const long long i0 = f;");
        w!(k, "      {decls} bool eq_keep = false;");
        w!(k, "      if ({call} && eq_pred(A, f, eq_x0, &eq_keep) && eq_keep) {{ keeps[c] = true; vs[c] = eq_x0; ++c_kept; }}");
        w!(k, "    }}");
        w!(k, "  }}");
        w!(k, "  long long inc, exc, tot;");
        w!(k, "  eq_block_scan(c_kept, 0LL, 0LL, EqAddI64(), eq_sh, inc, exc, tot);");
        w!(k, "  if (threadIdx.x < 32) {{");
        w!(k, "    const long long p = eq_lookback(tile, tot, 0LL, EqAddI64(), {flags}, {aggs}, {incs});");
        w!(k, "    if (threadIdx.x == 0) {{");
        w!(k, "      eq_prefix = p;");
        w!(k, "      if (tile == (long long)gridDim.x - 1) {kept}[0] = p + tot;");
        w!(k, "    }}");
        w!(k, "  }}");
        w!(k, "  __syncthreads();");
        w!(k, "  long long at = eq_prefix + exc;");
        w!(k, "#pragma unroll");
        w!(k, "  for (int c = 0; c < EQ_ITEMS; ++c) {{");
        w!(k, "    if (keeps[c]) {out}[at++] = vs[c];");
        w!(k, "  }}");
        w!(k, "}}\n");
        self.kernel_head(&entry);
        self.kernels.push_str(&k);
        Ok(Skeleton::Filter { entry, tile: self.opts.block as usize * ITEMS })
    }
}
