//! Reductions: over a 1-d space in one launch (the last block combines the blocks'
//! partials), over rows a warp or a block per row.

use super::{chunk_bounds, row_loop, Gen};
use crate::cuda::{Scratch, Skeleton};
use crate::{cty, known_op};
use eqfuse_ir::plan::LaneOp;
use std::fmt::Write as _;

impl Gen<'_> {
    /// `__shared__` room for a block reduction of each reduce lane in `reds` (`eq_sh<i>`).
    pub(crate) fn block_partials(&self, reds: &[usize], ind: &str) -> String {
        let mut s = String::new();
        for &i in reds {
            s.push_str(&self.shared_values(i, &format!("eq_sh{i}"), "EQ_WARPS", ind));
        }
        s
    }

    /// The reduce lanes' functors and neutral elements (a reduction over a group's, on its
    /// head lane): the head lanes, and `true` when every operator is a recognised
    /// commutative one.
    pub(crate) fn reduce_lanes(&mut self) -> Result<(Vec<usize>, bool), String> {
        let mut reds = Vec::new();
        let mut commutative = true;
        for (i, lane) in self.k.lanes.iter().enumerate() {
            if let LaneOp::Reduce { op, ne } = &lane.op {
                if lane.op.width() > 1 {
                    self.group_functor(i, op, ne)?;
                    commutative = false;
                } else {
                    let ty = self.types[i];
                    self.op_functor(i, op, ty)?;
                    self.ne_func(i, ne, ty)?;
                    commutative &= known_op(op).is_some();
                }
                reds.push(i);
            }
        }
        Ok((reds, commutative))
    }

    /// The output pointers of the lanes of the reduction headed by lane `h`.
    pub(crate) fn outs_of(&mut self, h: usize) -> Vec<String> {
        (h..h + self.width(h)).map(|l| self.out(l)).collect()
    }

    /// Lines that set up each reduce lane's functor, neutral element and accumulator.
    pub(crate) fn reduce_setup(&self, reds: &[usize], ind: &str, with_acc: bool) -> String {
        let mut s = String::new();
        for &i in reds {
            let t = self.value_type(i);
            let functor = self.name(&format!("EqOp{i}"));
            w!(s, "{ind}const {functor} op{i} = {{&A}};");
            s.push_str(&self.ne_init(i, ind));
            if with_acc {
                w!(s, "{ind}{t} acc{i} = ne{i};");
            }
        }
        s
    }

    /// The body applied to one element: fold the reduce lanes, write the generate lanes.
    pub(crate) fn fold_body(&mut self, flat: &str, ind: &str) -> String {
        let (decls, call) = self.elem_call(flat);
        let mut s = String::new();
        w!(s, "{ind}{decls}");
        w!(s, "{ind}if ({call}) {{");
        let k = self.k;
        for (i, lane) in k.lanes.iter().enumerate() {
            match lane.op {
                LaneOp::Reduce { .. } => w!(s, "{ind}  acc{i} = op{i}(acc{i}, {});", self.elem_value(i)),
                // a group's component, folded by its head
                LaneOp::Part => {}
                _ => {
                    let o = self.out(i);
                    w!(s, "{ind}  {o}[{flat}] = eq_x{i};");
                }
            }
        }
        w!(s, "{ind}}}");
        s
    }

    pub(super) fn full_reduce(&mut self) -> Result<Skeleton, String> {
        let (reds, commutative) = self.reduce_lanes()?;
        let entry = self.entry("reduce");
        let total = self.layout.total();
        let counter = self.layout.scratch(0, "unsigned int", "counter");
        self.scratch.push(Scratch { fixed: 8, per_block: 0 });
        // per reduction, the per-block partials of each of its lanes
        let mut parts: Vec<Vec<String>> = Vec::new();
        for &i in &reds {
            let mut ps = Vec::new();
            for l in i..i + self.width(i) {
                let t = self.types[l];
                ps.push(self.layout.scratch(self.scratch.len(), cty(t), &format!("part{l}")));
                self.scratch.push(Scratch { fixed: 0, per_block: t.size_bytes() });
            }
            parts.push(ps);
        }
        let outs: Vec<Vec<String>> = reds.iter().map(|&i| self.outs_of(i)).collect();
        let setup = self.reduce_setup(&reds, "  ", true);
        let body = self.fold_body("f", "    ");
        let unflat = self.unflatten("f", 1, "    ");
        // the operators commute: whole tiles per thread, then the rest element by element
        let tile = if commutative { self.tile()? } else { None };
        let tiled = match &tile {
            Some(t) => self.tile_loop(t, "n", "  "),
            None => "  const long long start = g;\n".to_string(),
        };
        let mut k = String::new();
        w!(k, "  __shared__ bool eq_last;");
        k.push_str(&self.block_partials(&reds, "  "));
        k.push_str(&setup);
        w!(k, "  const long long n = {total};");
        w!(k, "  const long long nthreads = (long long)gridDim.x * EQ_BLOCK;");
        w!(k, "  const long long g = (long long)blockIdx.x * EQ_BLOCK + threadIdx.x;");
        if commutative {
            k.push_str(&tiled);
            w!(k, "  for (long long f = start; f < n; f += nthreads) {{");
        } else {
            w!(k, "  // the operator may not commute: each thread folds a contiguous chunk, in order");
            k.push_str(&chunk_bounds("  ", "g", "nthreads", "n"));
            w!(k, "  for (long long f = lo; f < hi; ++f) {{");
        }
        k.push_str(&unflat);
        k.push_str(&body);
        w!(k, "  }}");
        for &i in &reds {
            w!(k, "  acc{i} = {}(acc{i}, ne{i}, op{i}, eq_sh{i});", self.reduce_fn(i, true));
        }
        w!(k, "  // the last block to finish combines the per-block partials, in block order");
        w!(k, "  if (threadIdx.x == 0) {{");
        for (&i, p) in reds.iter().zip(&parts) {
            k.push_str(&self.store_value(i, &format!("acc{i}"), p, "blockIdx.x", "    "));
        }
        w!(k, "    __threadfence();");
        w!(k, "    eq_last = atomicAdd({counter}, 1u) == gridDim.x - 1;");
        w!(k, "  }}");
        w!(k, "  __syncthreads();");
        w!(k, "  if (eq_last) {{");
        w!(k, "    // acquire: the other blocks' partials, published before their increments");
        w!(k, "    __threadfence();");
        w!(k, "    const long long nb = gridDim.x;");
        w!(k, "    const long long per_b = (nb + EQ_BLOCK - 1) / EQ_BLOCK;");
        w!(k, "    const long long lo_b = (long long)threadIdx.x * per_b < nb ? (long long)threadIdx.x * per_b : nb;");
        w!(k, "    const long long hi_b = lo_b + per_b < nb ? lo_b + per_b : nb;");
        for (&i, p) in reds.iter().zip(&parts) {
            w!(k, "    {} a{i} = ne{i};", self.value_type(i));
            let part = self.value_of(i, |l| format!("eq_load_volatile(&{}[b])", p[l - i]));
            w!(k, "    for (long long b = lo_b; b < hi_b; ++b) a{i} = op{i}(a{i}, {part});");
            w!(k, "    a{i} = {}(a{i}, ne{i}, op{i}, eq_sh{i});", self.reduce_fn(i, true));
        }
        w!(k, "    if (threadIdx.x == 0) {{");
        for (&i, o) in reds.iter().zip(&outs) {
            k.push_str(&self.store_value(i, &format!("a{i}"), o, "0", "      "));
        }
        w!(k, "      *{counter} = 0u;");
        w!(k, "    }}");
        w!(k, "  }}");
        w!(k, "}}\n");
        self.kernel_head(&entry);
        self.kernels.push_str(&k);
        Ok(Skeleton::FullReduce { entry })
    }

    pub(super) fn row_reduce(&mut self) -> Result<Skeleton, String> {
        let (reds, commutative) = self.reduce_lanes()?;
        let r = self.rank();
        let len = self.layout.extent(r - 1);
        let rows = self.layout.rows();
        let outs: Vec<Vec<String>> = reds.iter().map(|&i| self.outs_of(i)).collect();
        let setup = self.reduce_setup(&reds, "  ", false);
        let unflat = self.unflatten("row", r - 1, "    ");
        let body = self.fold_body("f", "      ");
        let warp = self.entry("reduce_warp");
        let block = self.entry("reduce_block");
        for (entry, per_block) in [(&warp, false), (&block, true)] {
            let (lanes, id, step) =
                if per_block { ("EQ_BLOCK", "threadIdx.x", "EQ_BLOCK") } else { ("32", "lane", "32") };
            let mut k = String::new();
            if per_block {
                w!(k, "  // a block per row");
                k.push_str(&self.block_partials(&reds, "  "));
            } else {
                w!(k, "  // a warp per row");
                w!(k, "  const int lane = threadIdx.x & 31;");
            }
            k.push_str(&setup);
            w!(k, "  const long long len = {len};");
            if per_block {
                w!(k, "  for (long long row = blockIdx.x; row < {rows}; row += gridDim.x) {{");
            } else {
                w!(k, "  const long long nw = (long long)gridDim.x * EQ_WARPS;");
                w!(
                    k,
                    "  for (long long row = (long long)blockIdx.x * EQ_WARPS + (threadIdx.x >> 5); row < {rows}; row += nw) {{"
                );
            }
            k.push_str(&unflat);
            for &i in &reds {
                w!(k, "    {} acc{i} = ne{i};", self.value_type(i));
            }
            k.push_str(&row_loop("    ", (id, lanes, step), commutative, r - 1));
            k.push_str(&body);
            w!(k, "    }}");
            for &i in &reds {
                if per_block {
                    w!(k, "    acc{i} = {}(acc{i}, ne{i}, op{i}, eq_sh{i});", self.reduce_fn(i, true));
                } else {
                    w!(k, "    acc{i} = {}(acc{i}, op{i});", self.reduce_fn(i, false));
                }
            }
            w!(k, "    if ({id} == 0) {{");
            for (&i, o) in reds.iter().zip(&outs) {
                k.push_str(&self.store_value(i, &format!("acc{i}"), o, "row", "      "));
            }
            w!(k, "    }}");
            w!(k, "  }}");
            w!(k, "}}\n");
            self.kernel_head(entry);
            self.kernels.push_str(&k);
        }
        Ok(Skeleton::RowReduce { warp, block })
    }
}
