//! The kernel skeletons: the `__global__` entry points around a kernel's element function.
//! See the table in [`super`] for which skeleton each kernel gets.

use super::{GenOptions, Scratch, Skeleton};
use crate::prelude_ints::vec_type;
use crate::scalar::{emit, FnCtx, InSpace};
use crate::{cty, Dialect, Layout};
use eqfuse_ir::plan::{Func, Kernel, LaneOp, Plan, ValueId};
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

mod group;
mod group_scan;
mod permute;
mod reduce;
mod scan;

/// A kernel over a 1-d space run in tiles: each thread takes `w` consecutive elements per
/// step, loading each array read at the space's index (and storing each output) with one
/// 16-byte vector access (`float4`, `double2`, ...) when every pointer is 16-byte aligned.
struct Tile {
    /// Elements per step: 16 bytes over the widest element.
    w: usize,
    /// Over a space of several dimensions: the C condition under which its points may be
    /// taken as one flat run ([`crate::flat::flat_condition`]).
    flat: Option<String>,
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
        let mut cx = FnCtx {
            plan: self.plan,
            host: self.host,
            layout: &mut self.layout,
            in_space,
            tile: &[],
            margins: &[],
            space: &self.k.space,
        };
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

    /// Over a space of several dimensions, the C condition under which its points may be
    /// taken as one flat run ([`crate::flat::flat_condition`]); `None` over one dimension.
    fn flat_condition(&mut self) -> Option<String> {
        if self.rank() < 2 {
            return None;
        }
        let exts: Vec<String> = (0..self.rank()).map(|d| self.layout.extent(d)).collect();
        crate::flat::flat_condition(self.plan, &mut self.layout, &self.k.elem, &self.in_space, &exts)
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

    /// Generates the element function and the entry points; returns the launch protocol.
    pub(crate) fn build(&mut self) -> Result<Skeleton, String> {
        let rank = self.rank();
        common_fields(&mut self.layout, rank);
        let elem = &self.k.elem;
        self.func(&self.name("eq_elem"), elem, "the element function")?;
        let lanes = &self.k.lanes;
        let groups = self
            .k
            .groups()
            .ok_or_else(|| format!("kernel k{}: a part lane that does not follow its head", self.index))?;
        let all_gen = lanes.iter().all(|l| matches!(l.op, LaneOp::Generate));
        // a part lane is a component of the reduction (or scan) over a group it follows
        let gen_or_reduce =
            lanes.iter().all(|l| matches!(l.op, LaneOp::Generate | LaneOp::Reduce { .. } | LaneOp::Part))
                && groups.iter().all(|&(h, w)| w == 1 || matches!(lanes[h].op, LaneOp::Reduce { .. }));
        if all_gen {
            return self.map();
        }
        if gen_or_reduce {
            return if self.rank() == 1 { self.full_reduce() } else { self.row_reduce() };
        }
        if let ([(0, w)], LaneOp::Scan { op, ne, exclusive }) = (groups.as_slice(), &lanes[0].op) {
            if *w > 1 {
                return self.group_scan(op, ne, *exclusive);
            }
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
        let rank = self.rank();
        if !self.opts.unchecked {
            return Ok(None);
        }
        // over several dimensions, a map whose element reads only at its own point, taken
        // as one flat run of points where every such array has the space's extents
        let flat = if rank >= 2 {
            if !self.k.lanes.iter().all(|l| matches!(l.op, LaneOp::Generate)) {
                return Ok(None);
            }
            match self.flat_condition() {
                Some(c) => Some(c),
                None => return Ok(None),
            }
        } else {
            None
        };
        let identity: Vec<usize> = (0..rank).collect();
        let mut arrays: Vec<(ValueId, ElemType)> = Vec::new();
        for read in &self.in_space {
            let t = self.plan.values.get(read.array).map(|i| i.elem);
            if let (true, Some(t)) = (read.axes == identity, t) {
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
            return Ok(Some(Tile { w, flat, arrays, stored, func: "eq_elem" }));
        }
        let mut unused = Vec::new();
        let mut cx = FnCtx {
            plan: self.plan,
            host: self.host,
            layout: &mut self.layout,
            in_space: Some(&mut unused),
            tile: &ids,
            margins: &[],
            space: &self.k.space,
        };
        let text = emit(&mut cx, "eq_elem_v", &self.k.elem)?;
        w!(self.funcs, "// the element function, its tiled arrays' elements passed in");
        self.funcs.push_str(&text);
        self.funcs.push('\n');
        Ok(Some(Tile { w, flat, arrays, stored, func: "eq_elem_v" }))
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
        match &tile.flat {
            Some(c) => format!("(({}) & 15ull) == 0ull && {c}", ors.join(" | ")),
            None => format!("(({}) & 15ull) == 0ull", ors.join(" | ")),
        }
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
        // the point's index: `f` itself, or `(0, .., 0, f)` in a flat run
        let mut index = "f".to_string();
        for _ in 1..self.rank() {
            index.insert_str(0, "0, ");
        }
        for (c, comp) in COMPONENTS.iter().enumerate().take(w) {
            let mut call = format!("{}(A, f, {index}", tile.func);
            for &(v, _) in &tile.arrays {
                let _ = write!(call, ", eq_tv{v}.{comp}");
            }
            for k in 0..self.types.len() {
                let _ = write!(call, ", &eq_x{k}");
            }
            call.push(')');
            w!(s, "{ind}{{");
            w!(s, "{ind}  const long long f = f0 + {c};");
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
        // an element that reads only at its own point: index (0, .., 0, f) where every such
        // array has the space's extents (no division per element)
        let unflat = match self.flat_condition() {
            Some(c) => {
                let divided = self.unflatten("f", self.rank(), "      ");
                flat_or(&divided, &c, self.rank(), "    ")
            }
            None => self.unflatten("f", self.rank(), "    "),
        };
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

/// Lines declaring the space's `rank` indices `i0 ..` as `(0, .., 0, f)` where the C
/// condition `cond` holds, else as `unflat` computes them ([`unflatten`]'s lines for a
/// space of `rank >= 2` dimensions, indented one level deeper than `ind`: a declaration of
/// the indices, then their assignments).
fn flat_or(unflat: &str, cond: &str, rank: usize, ind: &str) -> String {
    let names: Vec<String> = (0..rank).map(|d| format!("i{d}")).collect();
    let mut s = String::new();
    w!(s, "{ind}long long {};", names.join(", "));
    w!(s, "{ind}if ({cond}) {{");
    for n in &names[..rank - 1] {
        w!(s, "{ind}  {n} = 0;");
    }
    w!(s, "{ind}  {} = f;", names[rank - 1]);
    w!(s, "{ind}}} else {{");
    for line in unflat.lines().skip(1) {
        w!(s, "{line}");
    }
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
