//! Loops whose body cannot fail, compiled to machine code with Cranelift.
//!
//! The loops [`crate::lanes::flatten`] accepts (pure arithmetic, comparisons, calls and
//! `if`s run as selects) are compiled once, when the plan is compiled, into one function
//! that runs a whole frame: for each element it loads the registers the body reads from
//! outside (a broadcast scalar or the element's entry of a column), sets the state from the
//! inits, runs the body up to the element's count, stopping as soon as an iteration leaves
//! every state register unchanged bit for bit (a fixed point, as [`crate::lanes`] stops a
//! group; checked after the first iteration, then after every second one: a fixed point
//! stays one, so the check only decides when to stop), and stores the final state. Values
//! live in Cranelift variables (machine registers).
//!
//! In the function's own block, a loop is also compiled together with the pure
//! instructions just before it (a *region*, [`crate::compile::JitRegion`]; contiguous
//! reads of the block among them become sources, the arrays' slices): one call then runs
//! them all, and writes only the registers read after it. Compiled functions are cached by
//! their code (plans are compiled on every run).
//!
//! Straight-line code with no loop is a region too (`Region::l` is `None`) when it runs on
//! vectors: every varying register of one float type and only operations exact lane by
//! lane (`+ - * /`, negation, `abs`, `sqrt`, multiply-adds as a multiply then an add);
//! uniform instructions (of any type) run once, before the vectors, and are splat; the
//! scalar loop does the last elements. Element by element, such code is slower than the
//! VM's own loops, which LLVM vectorises (blackscholes went from 150 ms to 230 ms).
//!
//! The results are the lane groups', bit for bit: every operation is the instruction that
//! computes exactly [`crate::num`]'s scalar operation (integers wrap, float-to-integer
//! conversions saturate with NaN to 0, a multiply-add is a multiply then an add, never a
//! fused one), or a call of the very Rust function the lane groups use (float `%`, `min`,
//! `max`, `clamp`, rounding and the transcendentals). A loop with any other operation, a
//! host Cranelift cannot target, or a compile error leaves the loop to the lane groups.

#![allow(unsafe_code)]

mod emit;
mod helpers;

use crate::col::{with_type, Col, Elem};
use crate::compile::{LoopOp, Op};
use crate::lanes::{AnySrc, Src};
use cranelift_jit::{JITBuilder, JITModule};
use eqfuse_ir::types::ElemType;
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

/// The compiled function: `ptrs` and `strides` (bytes per element, 0 for a broadcast) of
/// each loaded register, `outs` one column per output register, `n` elements.
type LoopFn = unsafe extern "C" fn(ptrs: *const *const u8, strides: *const i64, outs: *const *mut u8, n: i64);

/// A compiled loop, with the module that owns its code.
pub(crate) struct JitLoop {
    f: LoopFn,
    /// Registers read from the frame, in the order of the function's sources.
    pub loads: Vec<usize>,
    /// Per source: the array whose slice for the block it is (a contiguous read), or none
    /// (the register's column or scalar).
    pub load_arrays: Vec<Option<usize>>,
    load_tys: Vec<ElemType>,
    /// Registers written, in the order of the function's outputs.
    pub outs: Vec<usize>,
    out_tys: Vec<ElemType>,
    /// The module owning the code `f` points to (freed with it).
    module: Mutex<Option<JITModule>>,
}

impl std::fmt::Debug for JitLoop {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JitLoop")
            .field("loads", &self.loads)
            .field("outs", &self.outs)
            .finish_non_exhaustive()
    }
}

impl Drop for JitLoop {
    fn drop(&mut self) {
        let m = self.module.get_mut().unwrap_or_else(PoisonError::into_inner).take();
        if let Some(m) = m {
            // SAFETY: the code is only reachable through `self.f`, and `self` is being
            // dropped: no call of it is in progress (a call borrows `self`) and none follows.
            unsafe { m.free_memory() };
        }
    }
}

/// What was compiled so far (tests check that the JIT ran): regions, those with no loop,
/// those that run on vectors.
pub(crate) static COMPILED: [AtomicUsize; 3] =
    [AtomicUsize::new(0), AtomicUsize::new(0), AtomicUsize::new(0)];

/// Counts a compiled region in [`COMPILED`].
fn count_compiled(straight: bool, vector: bool) {
    for (k, yes) in [true, straight, vector].into_iter().enumerate() {
        if yes {
            COMPILED[k].fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// Most compiled loops kept for reuse (plans are compiled on every run).
const CACHE_MAX: usize = 256;

/// What a compiled function computes: `prelude` (pure straight-line instructions, run
/// once per element), then the loop `l`, if any (without one, a *straight-line* region);
/// `outs` (register, register holding its value at the end) are written back.
pub(crate) struct Region<'a> {
    pub types: &'a [ElemType],
    pub prelude: &'a [Op],
    pub l: Option<&'a LoopOp>,
    pub outs: Vec<(usize, usize)>,
    /// Every register's uniformity, where the region may run on vectors (a straight-line
    /// region: its uniform sources are broadcast, the others columns).
    pub uniform: Option<&'a [bool]>,
}

/// The registers `ops` read before they write them (nested blocks included), in order of
/// first use, added to `loads`; the registers they write, added to `defined`.
/// `arrays`: where contiguous reads of the block are allowed (the prelude), the array each
/// read register loads from, by register.
fn free_reads(
    ops: &[Op],
    defined: &mut HashSet<usize>,
    loads: &mut Vec<usize>,
    mut arrays: Option<&mut Vec<(usize, usize)>>,
) -> Option<()> {
    let read = |r: usize, defined: &HashSet<usize>, loads: &mut Vec<usize>| {
        if !defined.contains(&r) && !loads.contains(&r) {
            loads.push(r);
        }
    };
    for op in ops {
        match op {
            Op::Const { dst, .. } => {
                defined.insert(*dst);
            }
            Op::Unary { dst, a, .. } => {
                read(*a, defined, loads);
                defined.insert(*dst);
            }
            Op::Binary { dst, a, b, .. } => {
                read(*a, defined, loads);
                read(*b, defined, loads);
                defined.insert(*dst);
            }
            Op::Call { dst, args, .. } => {
                args.iter().for_each(|&r| read(r, defined, loads));
                defined.insert(*dst);
            }
            Op::MulAdd { dst, a, b, c, .. } => {
                [*a, *b, *c].iter().for_each(|&r| read(r, defined, loads));
                defined.insert(*dst);
            }
            Op::If(i) => {
                read(i.cond, defined, loads);
                free_reads(&i.then_.block.ops, defined, loads, None)?;
                read(i.then_.ret, defined, loads);
                free_reads(&i.else_.block.ops, defined, loads, None)?;
                read(i.else_.ret, defined, loads);
                defined.insert(i.dst);
            }
            // a contiguous read of the block: a source, the array's slice
            Op::Read { dst, arr, contiguous: true, .. } => {
                let arrays = arrays.as_deref_mut()?;
                if defined.contains(dst) || loads.contains(dst) {
                    return None;
                }
                loads.push(*dst);
                arrays.push((*dst, *arr));
                defined.insert(*dst);
            }
            Op::Read { .. } | Op::Dim { .. } | Op::Loop(_) => return None,
        }
    }
    Some(())
}

/// Compiles a region, or `None` when some operation has no exact translation or the host
/// cannot be targeted. Regions already compiled are reused.
pub(crate) fn compile(region: &Region<'_>) -> Option<Arc<JitLoop>> {
    type Cache = Mutex<HashMap<String, Option<Arc<JitLoop>>>>;
    static CACHE: OnceLock<Cache> = OnceLock::new();
    let l = region.l;
    // the sources: what the prelude reads, the count, the inits, what the body reads
    // that the region does not compute (the state is set from the inits)
    let mut defined = HashSet::new();
    let mut loads = Vec::new();
    let mut arrays = Vec::new();
    free_reads(region.prelude, &mut defined, &mut loads, Some(&mut arrays))?;
    if let Some(l) = l {
        for &r in std::iter::once(&l.count).chain(&l.inits) {
            if !defined.contains(&r) && !loads.contains(&r) {
                loads.push(r);
            }
        }
        defined.extend(l.vars.iter().copied());
        free_reads(&l.body.ops, &mut defined, &mut loads, None)?;
        for &r in &l.nexts {
            if !defined.contains(&r) && !loads.contains(&r) {
                loads.push(r);
            }
        }
    }
    // straight-line code only on vectors: element by element, Cranelift's scalar code is
    // slower than the VM's loops (which LLVM vectorises) and its calls (measured:
    // blackscholes 150 ms against 230 ms)
    if l.is_none() && emit::vector_type(region, &loads).is_none() {
        return None;
    }
    let bcast = region.uniform.map(|u| loads.iter().map(|&r| u.get(r).copied()).collect::<Vec<_>>());
    let key =
        format!("{:?}|{:?}|{:?}|{:?}|{loads:?}|{bcast:?}", region.types, region.prelude, l, region.outs);
    let cache = CACHE.get_or_init(|| Mutex::new(HashMap::new()));
    if let Some(hit) = cache.lock().unwrap_or_else(PoisonError::into_inner).get(&key) {
        return hit.clone();
    }
    let made = build(region, loads.clone(), arrays).map(Arc::new);
    if made.is_some() {
        count_compiled(l.is_none(), emit::vector_type(region, &loads).is_some());
    }
    let mut c = cache.lock().unwrap_or_else(PoisonError::into_inner);
    if c.len() < CACHE_MAX {
        c.insert(key, made.clone());
    }
    made
}

fn build(region: &Region<'_>, loads: Vec<usize>, arrays: Vec<(usize, usize)>) -> Option<JitLoop> {
    use cranelift_codegen::settings::{self, Configurable};
    use cranelift_module::{default_libcall_names, Linkage, Module};
    let (types, l) = (region.types, region.l);
    if l.is_some_and(|l| l.vars.is_empty() || l.vars.len() != l.nexts.len() || l.vars.len() != l.inits.len())
    {
        return None;
    }
    let load_tys = loads.iter().map(|&r| types.get(r).copied()).collect::<Option<Vec<_>>>()?;
    let out_tys = region.outs.iter().map(|&(r, _)| types.get(r).copied()).collect::<Option<Vec<_>>>()?;
    let isa_builder = cranelift_native::builder().ok()?;
    let mut flags = settings::builder();
    flags.set("opt_level", "speed").ok()?;
    flags.set("use_colocated_libcalls", "false").ok()?;
    flags.set("is_pic", "false").ok()?;
    let isa = isa_builder.finish(settings::Flags::new(flags)).ok()?;
    let mut module = JITModule::new(JITBuilder::with_isa(isa, default_libcall_names()));
    let mut ctx = module.make_context();
    if module.target_config().pointer_type() != cranelift_codegen::ir::types::I64 {
        return None;
    }
    emit::function(&mut ctx.func, module.target_config(), region, &loads)?;
    let id = module.declare_function("eqfuse_loop", Linkage::Local, &ctx.func.signature).ok()?;
    module.define_function(id, &mut ctx).ok()?;
    module.clear_context(&mut ctx);
    module.finalize_definitions().ok()?;
    let code = module.get_finalized_function(id);
    // SAFETY: `code` is the finalised function just defined with the signature `LoopFn`
    // describes (three pointers and an i64, the host's default calling convention, no
    // result); it stays valid while `module` lives, which the returned value owns.
    let f = unsafe { std::mem::transmute::<*const u8, LoopFn>(code) };
    let outs = region.outs.iter().map(|&(r, _)| r).collect();
    let load_arrays = loads.iter().map(|r| arrays.iter().find(|(d, _)| d == r).map(|&(_, a)| a)).collect();
    Some(JitLoop { f, loads, load_arrays, load_tys, outs, out_tys, module: Mutex::new(Some(module)) })
}

/// A scalar's bytes in the first bytes of a `u64` (as the function loads it).
fn scalar_word<const K: usize>(bytes: [u8; K]) -> u64 {
    let mut w = [0u8; 8];
    if let Some(d) = w.get_mut(..K) {
        d.copy_from_slice(&bytes);
    }
    u64::from_ne_bytes(w)
}

impl JitLoop {
    /// Runs the region on a frame of `n` elements: `srcs` are the sources of
    /// [`JitLoop::loads`], in order; `outs` receive the values of [`JitLoop::outs`]
    /// (columns of their types, replaced). `None` (nothing run) when a source or an output
    /// is not of the type or the length compiled for.
    pub(crate) fn run(&self, srcs: &[AnySrc<'_>], n: usize, outs: &mut [Col]) -> Option<()> {
        if srcs.len() != self.loads.len() || outs.len() != self.outs.len() {
            return None;
        }
        let n64 = i64::try_from(n).ok()?;
        // per source: a column (pointer and stride) or a broadcast scalar (stored here)
        let mut words = vec![0u64; srcs.len()];
        let mut cols: Vec<Option<(*const u8, i64)>> = Vec::with_capacity(srcs.len());
        fn col<T>(xs: &[T], n: usize) -> Option<(*const u8, i64)> {
            (xs.len() >= n).then(|| (xs.as_ptr().cast::<u8>(), std::mem::size_of::<T>() as i64))
        }
        for ((src, &t), w) in srcs.iter().zip(&self.load_tys).zip(words.iter_mut()) {
            let c = match (src, t) {
                (AnySrc::B(Src::S(x)), ElemType::Bool) => {
                    *w = scalar_word([u8::from(*x)]);
                    None
                }
                (AnySrc::I32(Src::S(x)), ElemType::I32) => {
                    *w = scalar_word(x.to_ne_bytes());
                    None
                }
                (AnySrc::I64(Src::S(x)), ElemType::I64) => {
                    *w = scalar_word(x.to_ne_bytes());
                    None
                }
                (AnySrc::F32(Src::S(x)), ElemType::F32) => {
                    *w = scalar_word(x.to_ne_bytes());
                    None
                }
                (AnySrc::F64(Src::S(x)), ElemType::F64) => {
                    *w = scalar_word(x.to_ne_bytes());
                    None
                }
                (AnySrc::B(Src::V(xs)), ElemType::Bool) => Some(col(xs, n)?),
                (AnySrc::I32(Src::V(xs)), ElemType::I32) => Some(col(xs, n)?),
                (AnySrc::I64(Src::V(xs)), ElemType::I64) => Some(col(xs, n)?),
                (AnySrc::F32(Src::V(xs)), ElemType::F32) => Some(col(xs, n)?),
                (AnySrc::F64(Src::V(xs)), ElemType::F64) => Some(col(xs, n)?),
                _ => return None,
            };
            cols.push(c);
        }
        let (ptrs, strides): (Vec<*const u8>, Vec<i64>) = cols
            .iter()
            .zip(&words)
            .map(|(c, w)| c.unwrap_or((std::ptr::from_ref(w).cast::<u8>(), 0)))
            .unzip();
        if outs.iter().zip(&self.out_tys).any(|(out, &t)| out.ty() != t) {
            return None;
        }
        // nothing fails from here: the outputs are resized and written
        let mut optrs: Vec<*mut u8> = Vec::with_capacity(outs.len());
        for (out, &t) in outs.iter_mut().zip(&self.out_tys) {
            let p = with_type!(t, T => {
                let v = T::vec_mut(out)?;
                // every element is written: the old contents may stay
                v.resize(n, T::default());
                v.as_mut_ptr().cast::<u8>()
            });
            optrs.push(p);
        }
        // SAFETY: the function reads, for each source `k` and element `i < n`, the value
        // of its type at `ptrs[k] + i * strides[k]`: a column of at least `n` elements of
        // that type (checked above) or, with stride 0, the scalar stored in `words` (which
        // outlives the call); it writes element `i < n` of each output, a vector of `n`
        // elements of the output register's type (checked above, resized to `n`), which
        // nothing else borrows during the call. It calls only the helpers of
        // `jit::helpers`, and touches no other memory.
        unsafe { (self.f)(ptrs.as_ptr(), strides.as_ptr(), optrs.as_ptr(), n64) };
        Some(())
    }
}
