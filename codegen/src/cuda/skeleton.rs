//! The kernel skeletons: the `__global__` entry points around a kernel's element function.
//! See the table in [`super`] for which skeleton each kernel gets.

use super::{GenOptions, Scratch, Skeleton};
use crate::prelude_ints::vec_type;
use crate::scalar::{emit, FnCtx, InSpace};
use crate::{cty, known_op, Dialect, KnownOp, Layout};
use eqfuse_ir::plan::{Func, Kernel, LaneOp, PermuteDest, Plan, ValueId};
use eqfuse_ir::types::ElemType;
use std::collections::HashSet;
use std::fmt::Write as _;

/// The generator of one kernel's file.
pub(crate) struct Gen<'a> {
    plan: &'a Plan,
    k: &'a Kernel,
    index: usize,
    opts: GenOptions,
    host: &'a HashSet<ValueId>,
    layout: Layout,
    funcs: String,
    kernels: String,
    scratch: Vec<Scratch>,
    /// The lanes' element types (their values' types).
    types: Vec<ElemType>,
    /// The reads the element function does without a bounds check.
    in_space: Vec<InSpace>,
    /// Appended to the names of the kernel's functions (`eq_elem`, `eq_op<k>`, `EqOp<k>`,
    /// `eq_ne<k>`): empty for a kernel of its own, `_p<n>` for phase `n` of a row block.
    pub(crate) tag: String,
    /// Lanes write their results through their values' fields ([`Layout::set_written`])
    /// instead of `Out` fields: the phases of a row block, whose results later phases read.
    pub(crate) by_value: bool,
}

/// Appends a formatted line to a `String` (writing to a `String` cannot fail).
macro_rules! w {
    ($dst:expr, $($arg:tt)*) => {{
        let _ = writeln!($dst, $($arg)*);
    }};
}

/// A kernel over a 1-d space run in tiles: each thread takes `w` consecutive elements per
/// step, loading each array read at the space's index (and storing each output) with one
/// 16-byte vector access (`float4`, `double2`, ...) when every pointer is 16-byte aligned.
struct Tile {
    /// Elements per step: 16 bytes over the widest element.
    w: usize,
    /// The arrays loaded a vector at a time, with their element types.
    arrays: Vec<(ValueId, ElemType)>,
    /// The lanes stored a vector at a time: the generate lanes of 4- and 8-byte elements (the
    /// others are stored element by element).
    stored: Vec<usize>,
    /// The element function a step calls: `eq_elem_v` (the tiled arrays' elements passed
    /// in), or `eq_elem` itself when no array is tiled (only outputs are stored a vector at
    /// a time).
    func: &'static str,
}

/// Elements per thread in a single-pass tile (scan, filter): `EQ_ITEMS` in the source.
pub(crate) const ITEMS: usize = 8;

/// The name of component `c` of a CUDA vector.
const COMPONENTS: [&str; 4] = ["x", "y", "z", "w"];

impl<'a> Gen<'a> {
    pub(crate) fn new(
        plan: &'a Plan,
        k: &'a Kernel,
        index: usize,
        opts: GenOptions,
        host: &'a HashSet<ValueId>,
    ) -> Result<Gen<'a>, String> {
        let types = crate::lane_types(plan, k, index)?;
        Ok(Gen {
            plan,
            k,
            index,
            opts,
            host,
            layout: Layout::new(Dialect::Cuda),
            funcs: String::new(),
            kernels: String::new(),
            scratch: Vec::new(),
            types,
            in_space: Vec::new(),
            tag: String::new(),
            by_value: false,
        })
    }

    /// The argument block, the device functions, the entry points, the scratch buffers and
    /// the reads left unchecked.
    pub(crate) fn finish(self) -> (Layout, String, String, Vec<Scratch>, Vec<InSpace>) {
        (self.layout, self.funcs, self.kernels, self.scratch, self.in_space)
    }

    fn rank(&self) -> usize {
        self.k.space.len()
    }

    fn entry(&self, what: &str) -> String {
        format!("eq_k{}_{what}", self.index)
    }

    /// Emits `func` as device function `fname`; the element function (`elem`) reads at
    /// indices of the space without checks when the options allow it.
    pub(crate) fn func(&mut self, fname: &str, func: &Func, what: &str) -> Result<(), String> {
        let elem = fname == self.name("eq_elem") && self.opts.unchecked;
        let in_space = if elem { Some(&mut self.in_space) } else { None };
        let mut cx =
            FnCtx { plan: self.plan, host: self.host, layout: &mut self.layout, in_space, tile: &[] };
        let text = emit(&mut cx, fname, func)?;
        w!(self.funcs, "// {what}");
        self.funcs.push_str(&text);
        self.funcs.push('\n');
        Ok(())
    }

    /// `base` with the kernel's tag: the name of one of its functions.
    pub(crate) fn name(&self, base: &str) -> String {
        format!("{base}{}", self.tag)
    }

    /// Emits a lane's operator as `eq_op<k>` and a functor `EqOp<k>` around it.
    fn op_functor(&mut self, k: usize, op: &Func, ty: ElemType) -> Result<(), String> {
        if op.params != [ty, ty] || op.ret.len() != 1 || op.reg_types.get(op.ret[0] as usize) != Some(&ty) {
            return Err(format!("kernel k{}: lane {k}'s operator is not {ty} -> {ty} -> {ty}", self.index));
        }
        let (f, functor) = (self.name(&format!("eq_op{k}")), self.name(&format!("EqOp{k}")));
        self.func(&f, op, &format!("lane {k}: the operator"))?;
        let t = cty(ty);
        w!(self.funcs, "struct {functor} {{");
        w!(self.funcs, "  const EqArgs* A;");
        w!(self.funcs, "  __device__ __forceinline__ {t} operator()({t} a, {t} b) const {{");
        w!(self.funcs, "    {t} r = a;");
        w!(self.funcs, "    {f}(*A, -1, a, b, &r);");
        w!(self.funcs, "    return r;");
        w!(self.funcs, "  }}");
        w!(self.funcs, "  __device__ __forceinline__ bool apply({t} a, {t} b, {t}* r) const {{ return {f}(*A, -1, a, b, r); }}");
        w!(self.funcs, "}};\n");
        Ok(())
    }

    fn ne_func(&mut self, k: usize, ne: &Func, ty: ElemType) -> Result<(), String> {
        if !ne.params.is_empty() || ne.ret.len() != 1 || ne.reg_types.get(ne.ret[0] as usize) != Some(&ty) {
            return Err(format!(
                "kernel k{}: lane {k}'s neutral element is not a {ty} constant function",
                self.index
            ));
        }
        self.func(&self.name(&format!("eq_ne{k}")), ne, &format!("lane {k}: the neutral element"))
    }

    /// Lines declaring the space indices `i0 ..` (the first `dims` of them) from `flat`.
    fn unflatten(&mut self, flat: &str, dims: usize, ind: &str) -> String {
        unflatten(&mut self.layout, flat, dims, ind)
    }

    /// Gives the generator the argument block to add its fields to (a row block's phases
    /// share one).
    pub(crate) fn set_layout(&mut self, layout: Layout) {
        self.layout = layout;
    }

    /// `T0 eq_x0; ...` and the call `eq_elem(A, f, i0, .., &eq_x0, ..)`.
    fn elem_call(&self, flat: &str) -> (String, String) {
        let decls: Vec<String> =
            self.types.iter().enumerate().map(|(k, t)| format!("{} eq_x{k};", cty(*t))).collect();
        let mut call = format!("{}(A, {flat}", self.name("eq_elem"));
        for d in 0..self.rank() {
            let _ = write!(call, ", i{d}");
        }
        for k in 0..self.types.len() {
            let _ = write!(call, ", &eq_x{k}");
        }
        call.push(')');
        (decls.join(" "), call)
    }

    fn kernel_head(&mut self, entry: &str) {
        self.kernels.push_str(&kernel_head(entry));
    }

    /// `__shared__` room for a block reduction of each reduce lane in `reds` (`eq_sh<i>`).
    pub(crate) fn block_partials(&self, reds: &[usize], ind: &str) -> String {
        let mut s = String::new();
        for &i in reds {
            w!(s, "{ind}__shared__ {} eq_sh{i}[EQ_WARPS];", cty(self.types[i]));
        }
        s
    }

    /// Generates the element function and the entry points; returns the launch protocol.
    pub(crate) fn build(&mut self) -> Result<Skeleton, String> {
        let rank = self.rank();
        common_fields(&mut self.layout, rank);
        let elem = &self.k.elem;
        self.func(&self.name("eq_elem"), elem, "the element function")?;
        let lanes = &self.k.lanes;
        if lanes.iter().any(|l| matches!(l.op, LaneOp::Part)) {
            return Err(format!(
                "kernel k{}: a reduction or scan over a group (a tuple of {} components) is not generated for CUDA yet",
                self.index,
                lanes.iter().map(|l| l.op.width()).max().unwrap_or(1)
            ));
        }
        let all_gen = lanes.iter().all(|l| matches!(l.op, LaneOp::Generate));
        let gen_or_reduce = lanes.iter().all(|l| matches!(l.op, LaneOp::Generate | LaneOp::Reduce { .. }));
        if all_gen {
            return self.map();
        }
        if gen_or_reduce {
            return if self.rank() == 1 { self.full_reduce() } else { self.row_reduce() };
        }
        let [lane] = lanes.as_slice() else {
            return Err(format!("kernel k{}: several lanes that are not all generate or reduce", self.index));
        };
        match &lane.op {
            LaneOp::Scan { op, ne, exclusive } => {
                let ty = self.types[0];
                self.op_functor(0, op, ty)?;
                self.ne_func(0, ne, ty)?;
                if self.rank() == 1 {
                    Ok(self.scan_1d(*exclusive))
                } else {
                    Ok(self.scan_rows(*exclusive))
                }
            }
            LaneOp::Filter { pred } => self.filter(pred),
            LaneOp::Permute { op, dest, target } => self.permute(op, dest, target),
            LaneOp::Generate | LaneOp::Reduce { .. } | LaneOp::Part => Err("unreachable lane kind".into()),
        }
    }

    /// Output pointer of lane `k`.
    pub(crate) fn out(&mut self, k: usize) -> String {
        let dst = self.k.lanes[k].dst;
        if self.by_value {
            return self.layout.array(self.plan, dst);
        }
        let nm = name(self.plan, dst);
        self.layout.out(k, self.types[k], &nm)
    }

    /// The tile of a kernel over a 1-d space, with its element function's vector copy
    /// `eq_elem_v` emitted; `None` when nothing would be loaded or stored a vector at a
    /// time. Call after `eq_elem` (whose unchecked reads it uses).
    fn tile(&mut self) -> Result<Option<Tile>, String> {
        if self.rank() != 1 || !self.opts.unchecked {
            return Ok(None);
        }
        let mut arrays: Vec<(ValueId, ElemType)> = Vec::new();
        for read in &self.in_space {
            let t = self.plan.values.get(read.array).map(|i| i.elem);
            if let (true, Some(t)) = (read.axes == [0], t) {
                // 1- and 2-byte elements (bool, i8, u16, ...) are read one at a time
                if t.size_bytes() >= 4 && !arrays.iter().any(|a| a.0 == read.array) {
                    arrays.push((read.array, t));
                }
            }
        }
        let stored: Vec<usize> = (0..self.k.lanes.len())
            .filter(|&i| matches!(self.k.lanes[i].op, LaneOp::Generate) && self.types[i].size_bytes() >= 4)
            .collect();
        let widths = arrays.iter().map(|a| a.1).chain(stored.iter().map(|&i| self.types[i]));
        let Some(widest) = widths.map(ElemType::size_bytes).max() else { return Ok(None) };
        let ids: Vec<ValueId> = arrays.iter().map(|a| a.0).collect();
        let w = 16 / widest.max(1);
        if ids.is_empty() {
            return Ok(Some(Tile { w, arrays, stored, func: "eq_elem" }));
        }
        let mut unused = Vec::new();
        let mut cx = FnCtx {
            plan: self.plan,
            host: self.host,
            layout: &mut self.layout,
            in_space: Some(&mut unused),
            tile: &ids,
        };
        let text = emit(&mut cx, "eq_elem_v", &self.k.elem)?;
        w!(self.funcs, "// the element function, its tiled arrays' elements passed in");
        self.funcs.push_str(&text);
        self.funcs.push('\n');
        Ok(Some(Tile { w, arrays, stored, func: "eq_elem_v" }))
    }

    /// The condition under which `tile`'s vector accesses are aligned: every array it
    /// loads and every output it stores starts on 16 bytes.
    fn tile_aligned(&mut self, tile: &Tile) -> String {
        let mut ptrs: Vec<String> =
            tile.arrays.iter().map(|&(v, _)| self.layout.array(self.plan, v)).collect();
        for &i in &tile.stored {
            ptrs.push(self.out(i));
        }
        let ors: Vec<String> = ptrs.iter().map(|p| format!("(unsigned long long){p}")).collect();
        format!("(({}) & 15ull) == 0ull", ors.join(" | "))
    }

    /// One step of `tile` over elements `[q * w, q * w + w)`: a vector load per tiled
    /// array, the element function per element (folding the reduce lanes into `acc<i>`),
    /// a vector store per output.
    fn tile_step(&mut self, tile: &Tile, ind: &str) -> String {
        let w = tile.w;
        let mut s = String::new();
        w!(s, "{ind}const long long f0 = q * {w};");
        for &(v, t) in &tile.arrays {
            let base = self.layout.array(self.plan, v);
            let vt = vec_type(t, w);
            w!(s, "{ind}const {vt} eq_tv{v} = __ldg((const {vt}*){base} + q);");
        }
        for &i in &tile.stored {
            w!(s, "{ind}{} eq_y{i} = {{}};", vec_type(self.types[i], w));
        }
        let decls: Vec<String> =
            self.types.iter().enumerate().map(|(k, t)| format!("{} eq_x{k};", cty(*t))).collect();
        for (c, comp) in COMPONENTS.iter().enumerate().take(w) {
            let mut call = format!("{}(A, f, i0", tile.func);
            for &(v, _) in &tile.arrays {
                let _ = write!(call, ", eq_tv{v}.{comp}");
            }
            for k in 0..self.types.len() {
                let _ = write!(call, ", &eq_x{k}");
            }
            call.push(')');
            w!(s, "{ind}{{");
            w!(s, "{ind}  const long long f = f0 + {c};");
            w!(s, "{ind}  const long long i0 = f;");
            w!(s, "{ind}  {}", decls.join(" "));
            w!(s, "{ind}  if ({call}) {{");
            for (i, lane) in self.k.lanes.iter().enumerate() {
                match lane.op {
                    LaneOp::Reduce { .. } => w!(s, "{ind}    acc{i} = op{i}(acc{i}, eq_x{i});"),
                    _ if tile.stored.contains(&i) => w!(s, "{ind}    eq_y{i}.{comp} = eq_x{i};"),
                    _ => {
                        let nm = name(self.plan, lane.dst);
                        let o = self.layout.out(i, self.types[i], &nm);
                        w!(s, "{ind}    {o}[f] = eq_x{i};");
                    }
                }
            }
            w!(s, "{ind}  }}");
            w!(s, "{ind}}}");
        }
        for &i in &tile.stored {
            let o = self.out(i);
            w!(s, "{ind}(({}*){o})[q] = eq_y{i};", vec_type(self.types[i], w));
        }
        s
    }

    /// The tiled loop over `[0, n / w * w)` (when aligned), setting `start`, the first
    /// element the scalar loop after it takes; `g` is the thread's index, `nthreads` the
    /// grid's threads.
    fn tile_loop(&mut self, tile: &Tile, n: &str, ind: &str) -> String {
        let aligned = self.tile_aligned(tile);
        let step = self.tile_step(tile, &format!("{ind}    "));
        let w = tile.w;
        let mut s = String::new();
        w!(s, "{ind}// tiles of {w} elements per thread, 16-byte loads and stores where aligned");
        w!(s, "{ind}long long start = g;");
        w!(s, "{ind}if ({aligned}) {{");
        w!(s, "{ind}  const long long nq = {n} / {w};");
        w!(s, "{ind}  for (long long q = g; q < nq; q += nthreads) {{");
        s.push_str(&step);
        w!(s, "{ind}  }}");
        w!(s, "{ind}  start = nq * {w} + g;");
        w!(s, "{ind}}}");
        s
    }

    /// A map: over a 1-d space in tiles where there are any, then (the rest, or all)
    /// element by element in a grid-stride loop.
    fn map(&mut self) -> Result<Skeleton, String> {
        let tile = self.tile()?;
        let entry = self.entry("map");
        let total = self.layout.total();
        let outs: Vec<String> = (0..self.types.len()).map(|k| self.out(k)).collect();
        let tiled = match &tile {
            Some(t) => self.tile_loop(t, &total, "  "),
            None => "  const long long start = g;\n".to_string(),
        };
        let unflat = self.unflatten("f", self.rank(), "    ");
        let (decls, call) = self.elem_call("f");
        self.kernel_head(&entry);
        let k = &mut self.kernels;
        w!(k, "  const long long nthreads = (long long)gridDim.x * EQ_BLOCK;");
        w!(k, "  const long long g = (long long)blockIdx.x * EQ_BLOCK + threadIdx.x;");
        k.push_str(&tiled);
        w!(k, "  for (long long f = start; f < {total}; f += nthreads) {{");
        k.push_str(&unflat);
        w!(k, "    {decls}");
        w!(k, "    if (!{call}) continue;");
        for (i, o) in outs.iter().enumerate() {
            w!(k, "    {o}[f] = eq_x{i};");
        }
        w!(k, "  }}");
        w!(k, "}}\n");
        Ok(Skeleton::Map { entry })
    }

    /// The reduce lanes' functors and neutral elements; `true` when every operator is a
    /// recognised commutative one.
    pub(crate) fn reduce_lanes(&mut self) -> Result<(Vec<usize>, bool), String> {
        let mut reds = Vec::new();
        let mut commutative = true;
        for (i, lane) in self.k.lanes.iter().enumerate() {
            if let LaneOp::Reduce { op, ne } = &lane.op {
                let ty = self.types[i];
                self.op_functor(i, op, ty)?;
                self.ne_func(i, ne, ty)?;
                commutative &= known_op(op).is_some();
                reds.push(i);
            }
        }
        Ok((reds, commutative))
    }

    /// Lines that set up each reduce lane's functor, neutral element and accumulator.
    pub(crate) fn reduce_setup(&self, reds: &[usize], ind: &str, with_acc: bool) -> String {
        let mut s = String::new();
        for &i in reds {
            let t = cty(self.types[i]);
            let (functor, ne) = (self.name(&format!("EqOp{i}")), self.name(&format!("eq_ne{i}")));
            w!(s, "{ind}const {functor} op{i} = {{&A}};");
            w!(s, "{ind}{t} ne{i};");
            w!(s, "{ind}{ne}(A, -1, &ne{i});");
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
                LaneOp::Reduce { .. } => w!(s, "{ind}  acc{i} = op{i}(acc{i}, eq_x{i});"),
                _ => {
                    let o = self.out(i);
                    w!(s, "{ind}  {o}[{flat}] = eq_x{i};");
                }
            }
        }
        w!(s, "{ind}}}");
        s
    }

    fn full_reduce(&mut self) -> Result<Skeleton, String> {
        let (reds, commutative) = self.reduce_lanes()?;
        let entry = self.entry("reduce");
        let total = self.layout.total();
        let counter = self.layout.scratch(0, "unsigned int", "counter");
        self.scratch.push(Scratch { fixed: 8, per_block: 0 });
        let mut parts = Vec::new();
        for &i in &reds {
            let t = self.types[i];
            let p = self.layout.scratch(self.scratch.len(), cty(t), &format!("part{i}"));
            self.scratch.push(Scratch { fixed: 0, per_block: t.size_bytes() });
            parts.push(p);
        }
        let outs: Vec<String> = reds.iter().map(|&i| self.out(i)).collect();
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
            w!(k, "  acc{i} = eq_block_reduce(acc{i}, ne{i}, op{i}, eq_sh{i});");
        }
        w!(k, "  // the last block to finish combines the per-block partials, in block order");
        w!(k, "  if (threadIdx.x == 0) {{");
        for (&i, p) in reds.iter().zip(&parts) {
            w!(k, "    {p}[blockIdx.x] = acc{i};");
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
            w!(k, "    {} a{i} = ne{i};", cty(self.types[i]));
            w!(
                k,
                "    for (long long b = lo_b; b < hi_b; ++b) a{i} = op{i}(a{i}, eq_load_volatile(&{p}[b]));"
            );
            w!(k, "    a{i} = eq_block_reduce(a{i}, ne{i}, op{i}, eq_sh{i});");
        }
        w!(k, "    if (threadIdx.x == 0) {{");
        for (&i, o) in reds.iter().zip(&outs) {
            w!(k, "      {o}[0] = a{i};");
        }
        w!(k, "      *{counter} = 0u;");
        w!(k, "    }}");
        w!(k, "  }}");
        w!(k, "}}\n");
        self.kernel_head(&entry);
        self.kernels.push_str(&k);
        Ok(Skeleton::FullReduce { entry })
    }

    fn row_reduce(&mut self) -> Result<Skeleton, String> {
        let (reds, commutative) = self.reduce_lanes()?;
        let r = self.rank();
        let len = self.layout.extent(r - 1);
        let rows = self.layout.rows();
        let outs: Vec<String> = reds.iter().map(|&i| self.out(i)).collect();
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
                w!(k, "    {} acc{i} = ne{i};", cty(self.types[i]));
            }
            k.push_str(&row_loop("    ", (id, lanes, step), commutative, r - 1));
            k.push_str(&body);
            w!(k, "    }}");
            for &i in &reds {
                if per_block {
                    w!(k, "    acc{i} = eq_block_reduce(acc{i}, ne{i}, op{i}, eq_sh{i});");
                } else {
                    w!(k, "    acc{i} = eq_warp_reduce(acc{i}, op{i});");
                }
            }
            w!(k, "    if ({id} == 0) {{");
            for (&i, o) in reds.iter().zip(&outs) {
                w!(k, "      {o}[row] = acc{i};");
            }
            w!(k, "    }}");
            w!(k, "  }}");
            w!(k, "}}\n");
            self.kernel_head(entry);
            self.kernels.push_str(&k);
        }
        Ok(Skeleton::RowReduce { warp, block })
    }

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
    fn tile_head(k: &mut String, counter: &str, total: &str) {
        w!(k, "  __shared__ long long eq_tile;");
        w!(k, "  if (threadIdx.x == 0) eq_tile = (long long)atomicAdd({counter}, 1u);");
        w!(k, "  __syncthreads();");
        w!(k, "  const long long tile = eq_tile;");
        w!(k, "  const long long n = {total};");
        w!(k, "  const long long lo = tile * (EQ_BLOCK * EQ_ITEMS) + (long long)threadIdx.x * EQ_ITEMS;");
    }

    fn scan_1d(&mut self, exclusive: bool) -> Skeleton {
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

    fn scan_rows(&mut self, exclusive: bool) -> Skeleton {
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

    fn filter(&mut self, pred: &Func) -> Result<Skeleton, String> {
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

    fn permute(&mut self, op: &Func, dest: &PermuteDest, target: &Func) -> Result<Skeleton, String> {
        let ty = self.types[0];
        let drank = dest.rank(self.plan).ok_or_else(|| format!("no destination {dest:?}"))?;
        let dst = self.k.lanes[0].dst;
        let dst_rank = self.plan.values.get(dst).map(|i| i.rank);
        let dest_name = match dest {
            PermuteDest::Array(v) => name(self.plan, *v),
            PermuteDest::Fill { .. } => "a fill".to_string(),
        };
        if dst_rank != Some(drank) || drank == 0 {
            return Err(format!("kernel k{}: a permute into `{dest_name}` of another rank", self.index));
        }
        if let PermuteDest::Fill { value, .. } = dest {
            if value.elem_type() != ty {
                return Err(format!(
                    "kernel k{}: a permute of {ty} into a fill of {}",
                    self.index,
                    value.elem_type()
                ));
            }
        }
        if target.params.len() != self.rank()
            || target.params.iter().any(|t| *t != ElemType::I64)
            || target.ret.len() != drank
            || target.ret.iter().any(|r| target.reg_types.get(*r as usize) != Some(&ElemType::I64))
        {
            return Err(format!(
                "kernel k{}: the permute target is not {} indices to {} indices",
                self.index,
                self.rank(),
                drank
            ));
        }
        self.op_functor(0, op, ty)?;
        self.func("eq_target", target, "the permute target")?;
        let total = self.layout.total();
        let out = self.out(0);
        let plan = self.plan;
        let dims = crate::dest_dims(&mut self.layout, plan, dest);
        let err = self.layout.err();
        let kid = self.layout.kid();
        let unflat = self.unflatten("f", self.rank(), "    ");
        let (decls, call) = self.elem_call("f");
        let mut tcall = String::from("eq_target(A, f");
        for d in 0..self.rank() {
            let _ = write!(tcall, ", i{d}");
        }
        for d in 0..drank {
            let _ = write!(tcall, ", &t{d}");
        }
        tcall.push(')');
        let entry = self.entry("permute");
        let p = "(&".to_string() + &out + "[slot])";
        let combine = match (known_op(op), ty) {
            (Some(KnownOp::Add), ElemType::I32) => format!("atomicAdd((int*){p}, eq_x0);"),
            (Some(KnownOp::Add), ElemType::I64) => {
                format!("atomicAdd((unsigned long long*){p}, (unsigned long long)eq_x0);")
            }
            (Some(KnownOp::Add), ElemType::F32) if self.opts.fast_math => format!("atomicAdd({p}, eq_x0);"),
            (Some(KnownOp::Add), ElemType::F64) => format!(
                "\n#if __CUDA_ARCH__ >= 600\n    atomicAdd({p}, eq_x0);\n#else\n    eq_atomic_cas64({p}, eq_x0, op0);\n#endif"
            ),
            (Some(KnownOp::Min), ElemType::I32) => format!("atomicMin((int*){p}, eq_x0);"),
            (Some(KnownOp::Max), ElemType::I32) => format!("atomicMax((int*){p}, eq_x0);"),
            (Some(k @ (KnownOp::Min | KnownOp::Max)), ElemType::I64) => {
                let f = if k == KnownOp::Min { "atomicMin" } else { "atomicMax" };
                format!(
                    "\n#if __CUDA_ARCH__ >= 350\n    {f}((long long*){p}, eq_x0);\n#else\n    eq_atomic_cas64({p}, eq_x0, op0);\n#endif"
                )
            }
            (Some(KnownOp::Add), ElemType::U32) => format!("atomicAdd((unsigned int*){p}, eq_x0);"),
            (Some(KnownOp::Add), ElemType::U64) => format!("atomicAdd((unsigned long long*){p}, eq_x0);"),
            (_, ElemType::Bool) => format!("eq_atomic_cas_bool({p}, eq_x0, op0);"),
            (_, ElemType::I32 | ElemType::F32 | ElemType::U32) => format!("eq_atomic_cas32({p}, eq_x0, op0);"),
            (_, ElemType::I64 | ElemType::F64 | ElemType::U64) => format!("eq_atomic_cas64({p}, eq_x0, op0);"),
            (_, ElemType::I8 | ElemType::I16 | ElemType::U8 | ElemType::U16) => {
                format!("eq_atomic_cas_small({p}, eq_x0, op0);")
            }
        };
        let mut k = String::new();
        match dest {
            PermuteDest::Array(v) => w!(
                k,
                "  // the output starts as a copy of `{}`; each element is combined at its target",
                name(plan, *v)
            ),
            PermuteDest::Fill { .. } => {
                w!(
                    k,
                    "  // the output starts as a fill the host makes; each element is combined at its target"
                )
            }
        }
        w!(k, "  const EqOp0 op0 = {{&A}};");
        w!(k, "  const long long stride = (long long)gridDim.x * EQ_BLOCK;");
        w!(k, "  for (long long f = (long long)blockIdx.x * EQ_BLOCK + threadIdx.x; f < {total}; f += stride) {{");
        k.push_str(&unflat);
        w!(k, "    {decls}");
        w!(k, "    if (!{call}) continue;");
        let tdecl: Vec<String> = (0..drank).map(|d| format!("t{d} = 0")).collect();
        w!(k, "    long long {};", tdecl.join(", "));
        w!(k, "    if (!{tcall}) continue;");
        if drank == 1 {
            w!(k, "    if (t0 == -1) continue;  // dropped");
        }
        let checks: Vec<String> = dims
            .iter()
            .enumerate()
            .map(|(d, dim)| format!("(unsigned long long)t{d} < (unsigned long long){dim}"))
            .collect();
        let tl: Vec<String> = (0..drank).map(|d| format!("t{d}")).collect();
        w!(k, "    if (!({})) {{", checks.join(" && "));
        w!(k, "      const long long eq_ix[{drank}] = {{{}}};", tl.join(", "));
        w!(k, "      eq_fail({err}, {kid}, EQ_ERR_TARGET, {dst}, f, {drank}, eq_ix);");
        w!(k, "      continue;");
        w!(k, "    }}");
        let mut slot = "t0".to_string();
        for (d, dim) in dims.iter().enumerate().skip(1) {
            slot = format!("({slot} * {dim} + t{d})");
        }
        w!(k, "    const long long slot = {slot};");
        w!(k, "    {combine}");
        w!(k, "  }}");
        w!(k, "}}\n");
        self.kernel_head(&entry);
        self.kernels.push_str(&k);
        Ok(Skeleton::Permute { entry, dest: dest.clone() })
    }
}

/// The fields every kernel's argument block starts with: the error record, the launch
/// number, the space's extents (`rank` of them) and its number of elements.
pub(crate) fn common_fields(layout: &mut Layout, rank: usize) {
    layout.err();
    layout.kid();
    for d in 0..rank {
        layout.extent(d);
    }
    layout.total();
}

/// The first line of entry point `entry`: it takes the argument block by value.
pub(crate) fn kernel_head(entry: &str) -> String {
    format!("extern \"C\" __global__ void __launch_bounds__(EQ_BLOCK) {entry}(const EqArgs A) {{\n")
}

/// Lines declaring the space indices `i0 ..` (the first `dims` of them) from `flat`, in 32
/// bits when every index fits ([`Slot::Narrow`](crate::Slot::Narrow)).
pub(crate) fn unflatten(layout: &mut Layout, flat: &str, dims: usize, ind: &str) -> String {
    let mut s = String::new();
    if dims == 1 {
        w!(s, "{ind}const long long i0 = {flat};");
        return s;
    }
    // 64-bit division is slow on a GPU: when every index fits in 32 bits (`narrow`, the
    // same for the whole launch), divide in 32 bits.
    let narrow = layout.narrow();
    let names: Vec<String> = (0..dims).map(|d| format!("i{d}")).collect();
    w!(s, "{ind}long long {};", names.join(", "));
    w!(s, "{ind}if ({narrow}) {{");
    w!(s, "{ind}  unsigned int eq_u = (unsigned int){flat};");
    for d in (1..dims).rev() {
        let e = layout.extent(d);
        w!(s, "{ind}  i{d} = eq_u % (unsigned int){e};");
        w!(s, "{ind}  eq_u /= (unsigned int){e};");
    }
    w!(s, "{ind}  i0 = eq_u;");
    w!(s, "{ind}}} else {{");
    w!(s, "{ind}  long long eq_t = {flat};");
    for d in (1..dims).rev() {
        let e = layout.extent(d);
        w!(s, "{ind}  i{d} = eq_t % {e};");
        w!(s, "{ind}  eq_t /= {e};");
    }
    w!(s, "{ind}  i0 = eq_t;");
    w!(s, "{ind}}}");
    s
}

/// The head of a loop over the elements `j` of row `row` (of `len` elements) that the
/// threads `(id, lanes, step)` share (`threadIdx.x`, `EQ_BLOCK`, `EQ_BLOCK` for a block per
/// row): strided when the operators commute, else a contiguous chunk per thread, folded in
/// order; then the innermost index `i<last>` and the flat index `f`. Indented by `ind`.
pub(crate) fn row_loop(
    ind: &str,
    (id, lanes, step): (&str, &str, &str),
    commutative: bool,
    last: usize,
) -> String {
    let mut s = String::new();
    if commutative {
        w!(s, "{ind}for (long long j = {id}; j < len; j += {step}) {{");
    } else {
        w!(s, "{ind}// an operator that may not commute: each thread folds a contiguous chunk, in order");
        s.push_str(&chunk_bounds(ind, &format!("(long long){id}"), lanes, "len"));
        w!(s, "{ind}for (long long j = lo; j < hi; ++j) {{");
    }
    w!(s, "{ind}  const long long i{last} = j;");
    w!(s, "{ind}  const long long f = row * len + j;");
    s
}

/// `per`, `lo` and `hi`: the contiguous chunk `[lo, hi)` of `[0, n)` that thread `id` of
/// `lanes` folds, in order, where the operator may not commute. Indented by `ind`.
fn chunk_bounds(ind: &str, id: &str, lanes: &str, n: &str) -> String {
    let mut s = String::new();
    w!(s, "{ind}const long long per = ({n} + {lanes} - 1) / {lanes};");
    w!(s, "{ind}const long long lo = {id} * per < {n} ? {id} * per : {n};");
    w!(s, "{ind}const long long hi = lo + per < {n} ? lo + per : {n};");
    s
}

/// The name of value `v`, for comments and messages.
fn name(plan: &Plan, v: ValueId) -> String {
    crate::value_name(plan, v)
}
