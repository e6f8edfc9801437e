//! Tests only: a CPU emulator of the generated kernels, so that the skeletons and the
//! runtime are checked against the plan interpreter on a machine with no GPU.
//!
//! Each generated file is compiled by the host C++ compiler (`g++ -std=c++20`) together
//! with [`EMU_HEADER`], which defines what the kernels use of CUDA: `threadIdx`/`blockIdx`
//! (thread-locals), `__syncthreads` (a barrier per block), warp shuffles (a barrier and an
//! exchange buffer per warp), atomics (GCC's `__atomic` builtins and compare-and-swap loops),
//! the bit-cast intrinsics; `__shared__` variables are `static` (blocks run one after
//! another, each with one OS thread per CUDA thread). Each entry point gets an
//! `extern "C"` launcher taking the argument block, the grid and the block size. Memory is
//! host memory; a "device pointer" is a host address.
//!
//! Uninitialised allocations are filled with `0xCD` bytes, so that a kernel that reads what
//! nothing wrote shows up as a wrong result.
//!
//! The tests skip (with a message) where no `g++` is found.

// The emulator hands raw host pointers to C++ code compiled at test time and calls into it
// through `libloading`; the buffers are plain allocations owned by `EmuBuf`.
#![allow(unsafe_code)]

use crate::blas::{self, GemmCall};
use crate::runtime::{bytes_value, value_bytes, Gpu};
use crate::CudaOptions;
use eqfuse_codegen::cache::{write_new, CacheDir, Entry};
use eqfuse_codegen::cuda::{KernelCode, Skeleton};
use eqfuse_ir::error::{Code, Error, Result};
use eqfuse_ir::value::Value;
use std::alloc::Layout;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex};

/// What the generated kernels need of CUDA, for the host C++ compiler.
pub(crate) const EMU_HEADER: &str = r#"
#include <math.h>
#include <stdint.h>
#include <string.h>
#include <stdlib.h>
#include <pthread.h>
#define __global__
#define __device__
#define __forceinline__ inline
#define __noinline__
#define __launch_bounds__(x)
#define __shared__ static
#define __CUDA_ARCH__ 900
struct dim3 { unsigned x, y, z; };
static thread_local dim3 threadIdx, blockIdx;
static dim3 blockDim, gridDim;
struct EqEmuWarp { pthread_barrier_t bar; unsigned long long slots[32]; };
static thread_local EqEmuWarp* eqemu_warp;
static thread_local pthread_barrier_t* eqemu_block;
inline void __syncthreads() { pthread_barrier_wait(eqemu_block); }
inline void __threadfence() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
template <class T> inline unsigned long long eqemu_bits(T v) { unsigned long long u = 0; memcpy(&u, &v, sizeof(T)); return u; }
template <class T> inline T eqemu_from(unsigned long long u) { T v; memcpy(&v, &u, sizeof(T)); return v; }
template <class T> inline T __shfl_down_sync(unsigned, T v, int d) {
  const unsigned lane = threadIdx.x & 31;
  eqemu_warp->slots[lane] = eqemu_bits(v);
  pthread_barrier_wait(&eqemu_warp->bar);
  const T r = lane + d < 32 ? eqemu_from<T>(eqemu_warp->slots[lane + d]) : v;
  pthread_barrier_wait(&eqemu_warp->bar);
  return r;
}
template <class T> inline T __shfl_sync(unsigned, T v, int src) {
  const unsigned lane = threadIdx.x & 31;
  eqemu_warp->slots[lane] = eqemu_bits(v);
  pthread_barrier_wait(&eqemu_warp->bar);
  const T r = eqemu_from<T>(eqemu_warp->slots[src & 31]);
  pthread_barrier_wait(&eqemu_warp->bar);
  return r;
}
template <class T> inline T __shfl_up_sync(unsigned, T v, int d) {
  const unsigned lane = threadIdx.x & 31;
  eqemu_warp->slots[lane] = eqemu_bits(v);
  pthread_barrier_wait(&eqemu_warp->bar);
  const T r = (int)lane >= d ? eqemu_from<T>(eqemu_warp->slots[lane - d]) : v;
  pthread_barrier_wait(&eqemu_warp->bar);
  return r;
}
inline int __float_as_int(float x) { return eqemu_from<int>(eqemu_bits(x)); }
inline unsigned __float_as_uint(float x) { return eqemu_from<unsigned>(eqemu_bits(x)); }
inline float __int_as_float(int x) { return eqemu_from<float>(eqemu_bits(x)); }
inline float __uint_as_float(unsigned x) { return eqemu_from<float>(eqemu_bits(x)); }
inline long long __double_as_longlong(double x) { return eqemu_from<long long>(eqemu_bits(x)); }
inline double __longlong_as_double(long long x) { return eqemu_from<double>(eqemu_bits(x)); }
template <class T> inline T __ldg(const T* p) { return *p; }
// CUDA's vector types (the tiles' 16-byte loads and stores)
struct alignas(8) float2 { float x, y; };
struct alignas(16) float4 { float x, y, z, w; };
struct alignas(8) int2 { int x, y; };
struct alignas(16) int4 { int x, y, z, w; };
struct alignas(16) double2 { double x, y; };
struct alignas(16) longlong2 { long long x, y; };
struct alignas(8) uint2 { unsigned x, y; };
struct alignas(16) uint4 { unsigned x, y, z, w; };
struct alignas(16) ulonglong2 { unsigned long long x, y; };
inline unsigned long long atomicCAS(unsigned long long* p, unsigned long long c, unsigned long long v) {
  __atomic_compare_exchange_n(p, &c, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
  return c;
}
inline unsigned atomicCAS(unsigned* p, unsigned c, unsigned v) {
  __atomic_compare_exchange_n(p, &c, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
  return c;
}
inline unsigned atomicAdd(unsigned* p, unsigned v) { return __atomic_fetch_add(p, v, __ATOMIC_SEQ_CST); }
inline int atomicAdd(int* p, int v) { return __atomic_fetch_add(p, v, __ATOMIC_SEQ_CST); }
inline unsigned long long atomicAdd(unsigned long long* p, unsigned long long v) { return __atomic_fetch_add(p, v, __ATOMIC_SEQ_CST); }
template <class T, class F> inline T eqemu_cas_loop(T* p, F f) {
  T old = __atomic_load_n(p, __ATOMIC_SEQ_CST);
  while (!__atomic_compare_exchange_n(p, &old, f(old), false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {}
  return old;
}
inline float atomicAdd(float* p, float v) {
  unsigned* w = (unsigned*)p;
  return __uint_as_float(eqemu_cas_loop(w, [&](unsigned o) { return __float_as_uint(__uint_as_float(o) + v); }));
}
inline double atomicAdd(double* p, double v) {
  unsigned long long* w = (unsigned long long*)p;
  return __longlong_as_double((long long)eqemu_cas_loop(w, [&](unsigned long long o) {
    return (unsigned long long)__double_as_longlong(__longlong_as_double((long long)o) + v); }));
}
inline int atomicMin(int* p, int v) { return eqemu_cas_loop(p, [&](int o) { return o < v ? o : v; }); }
inline int atomicMax(int* p, int v) { return eqemu_cas_loop(p, [&](int o) { return o > v ? o : v; }); }
inline long long atomicMin(long long* p, long long v) { return eqemu_cas_loop(p, [&](long long o) { return o < v ? o : v; }); }
inline long long atomicMax(long long* p, long long v) { return eqemu_cas_loop(p, [&](long long o) { return o > v ? o : v; }); }
struct EqEmuThread { dim3 t, b; pthread_barrier_t* block; EqEmuWarp* warp; void (*body)(const void*); const void* args; };
static void* eqemu_thread(void* p) {
  EqEmuThread* e = (EqEmuThread*)p;
  threadIdx = e->t;
  blockIdx = e->b;
  eqemu_block = e->block;
  eqemu_warp = e->warp;
  e->body(e->args);
  return 0;
}
// Runs the blocks one after another, each with one thread per CUDA thread.
static void eqemu_run(unsigned grid, unsigned block, void (*body)(const void*), const void* args) {
  gridDim = {grid, 1, 1};
  blockDim = {block, 1, 1};
  const unsigned nw = (block + 31) / 32;
  EqEmuThread* ts = (EqEmuThread*)calloc(block, sizeof(EqEmuThread));
  pthread_t* hs = (pthread_t*)calloc(block, sizeof(pthread_t));
  EqEmuWarp* warps = (EqEmuWarp*)calloc(nw, sizeof(EqEmuWarp));
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, 1 << 20);
  for (unsigned b = 0; b < grid; ++b) {
    pthread_barrier_t bar;
    pthread_barrier_init(&bar, 0, block);
    for (unsigned w = 0; w < nw; ++w) pthread_barrier_init(&warps[w].bar, 0, 32);
    for (unsigned t = 0; t < block; ++t) {
      ts[t] = EqEmuThread{{t, 0, 0}, {b, 0, 0}, &bar, &warps[t / 32], body, args};
      pthread_create(&hs[t], &attr, eqemu_thread, &ts[t]);
    }
    for (unsigned t = 0; t < block; ++t) pthread_join(hs[t], 0);
    for (unsigned w = 0; w < nw; ++w) pthread_barrier_destroy(&warps[w].bar);
    pthread_barrier_destroy(&bar);
  }
  pthread_attr_destroy(&attr);
  free(ts);
  free(hs);
  free(warps);
}
#define EQEMU_ENTRY(name) \
  extern "C" void eqemu_##name(const void* args, unsigned grid, unsigned block) { \
    eqemu_run(grid, block, [](const void* a) { EqArgs A; memcpy((void*)&A, a, sizeof(EqArgs)); name(A); }, args); \
  }
"#;

/// Whether a host C++ compiler that can build the emulator is there.
pub(crate) fn compiler() -> Option<&'static str> {
    ["g++", "c++", "clang++"]
        .into_iter()
        .find(|c| Command::new(c).arg("--version").output().is_ok_and(|o| o.status.success()))
}

/// A host allocation standing in for device memory.
pub(crate) struct EmuBuf {
    ptr: *mut u8,
    len: usize,
    /// What `ptr` was allocated with (at least `len` bytes, 16-byte aligned).
    layout: Layout,
}

// SAFETY: the buffer is a plain heap allocation owned by this value; kernels write it only
// while a launch runs, during which the runtime holds it. (A `Vec` would make these impls
// unnecessary, but kernels write through the pointer `ptr` hands out while Rust holds only
// shared borrows of the buffer, which a raw allocation allows and a `Vec`'s storage does not.)
unsafe impl Send for EmuBuf {}
// SAFETY: as above; reads from Rust happen only between launches.
unsafe impl Sync for EmuBuf {}

impl EmuBuf {
    /// A buffer of `len` bytes, each `fill`; `E-LIMIT` for a size no allocation can have.
    fn new(len: usize, fill: u8) -> Result<EmuBuf> {
        let layout = Layout::from_size_align(len.max(8), 16).map_err(|_| {
            Error::new(
                Code::Limit,
                format!("an emulated buffer of {len} bytes is larger than any allocation"),
            )
        })?;
        // SAFETY: `layout` has a non-zero size.
        let ptr = unsafe { std::alloc::alloc(layout) };
        if ptr.is_null() {
            std::alloc::handle_alloc_error(layout);
        }
        // SAFETY: `ptr` points to `layout.size()` writable bytes.
        unsafe { std::ptr::write_bytes(ptr, fill, layout.size()) };
        Ok(EmuBuf { ptr, len, layout })
    }

    fn bytes(&self) -> &[u8] {
        // SAFETY: `ptr` holds `len` initialised bytes; no launch runs while this is borrowed.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }

    fn bytes_mut(&mut self) -> &mut [u8] {
        // SAFETY: as above, and `self` is borrowed mutably.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) }
    }
}

impl Drop for EmuBuf {
    fn drop(&mut self) {
        // SAFETY: allocated in `new` with this layout.
        unsafe { std::alloc::dealloc(self.ptr, self.layout) };
    }
}

/// The emulated device: compiled kernels by source hash.
pub(crate) struct Emu {
    /// Where compiled kernels are kept: a private cache directory
    /// ([`eqfuse_codegen::cache`]).
    cache: CacheDir,
    cxx: &'static str,
    libs: Mutex<HashMap<String, Arc<libloading::Library>>>,
    /// Lines put before every kernel file (tests' `#define`s).
    defines: String,
    /// GEMM calls made so far.
    gemm_calls: std::sync::atomic::AtomicUsize,
    /// The entry points launched so far, in order.
    launches: Mutex<Vec<String>>,
}

/// A compiled kernel file.
pub(crate) struct EmuModule {
    lib: Arc<libloading::Library>,
}

impl Emu {
    /// The emulator, or `None` without a host C++ compiler. Compiled kernels are kept (by
    /// the hash of the header, the compiler and their source) in the private cache directory
    /// `$XDG_CACHE_HOME/eqfuse/emu`, else `$HOME/.cache/eqfuse/emu`, for later runs; without
    /// either, or when that directory is not private, in a private temporary directory of
    /// this emulator's. What is loaded is checked first, as the CPU backend's plans are
    /// ([`eqfuse_codegen::cache`]).
    pub(crate) fn new() -> Option<Emu> {
        let cxx = compiler()?;
        let root = eqfuse_codegen::cache::root().map(|r| r.join("emu"));
        let cache = match eqfuse_codegen::cache::open(root.as_deref()) {
            Ok(c) => c,
            Err(why) => {
                eprintln!("emulator: {why}");
                return None;
            }
        };
        Some(Emu {
            cache,
            cxx,
            libs: Mutex::new(HashMap::new()),
            defines: String::new(),
            gemm_calls: Default::default(),
            launches: Default::default(),
        })
    }

    /// Compiles `src` (a kernel file with its launchers) into `KEY.so` in the private
    /// directory `work`, with [`EMU_HEADER`] written there (created new) and included.
    fn compile(&self, file: &str, key: &str, src: &str, work: &Path) -> std::result::Result<PathBuf, String> {
        let header = work.join("eqemu.h");
        let cu = work.join(format!("{key}.cpp"));
        let so = work.join(format!("{key}.so"));
        for (path, text) in [(&header, EMU_HEADER), (&cu, src)] {
            write_new(path, &[text.as_bytes()])
                .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        }
        let out = Command::new(self.cxx)
            .args(FLAGS)
            .arg("-shared")
            .arg("-include")
            .arg(&header)
            .arg(&cu)
            .arg("-o")
            .arg(&so)
            .output()
            .map_err(|e| format!("cannot run {}: {e}", self.cxx))?;
        if !out.status.success() {
            return Err(format!("{file} does not compile:\n{}", String::from_utf8_lossy(&out.stderr)));
        }
        Ok(so)
    }
}

/// The host compiler's flags (the same for the precompiled header and the kernels).
const FLAGS: &[&str] = &["-std=c++20", "-O1", "-fPIC", "-pthread", "-w"];

fn emu_err(what: impl std::fmt::Display) -> Error {
    Error::new(Code::Device, format!("emulator: {what}"))
}

fn entries(s: &Skeleton) -> Vec<&str> {
    match s {
        Skeleton::Map { entry }
        | Skeleton::FullReduce { entry }
        | Skeleton::ScanRows { entry }
        | Skeleton::Permute { entry, .. }
        | Skeleton::RowBlock { entry } => vec![entry],
        Skeleton::RowReduce { warp, block } => vec![warp, block],
        Skeleton::Scan1d { entry, .. } | Skeleton::Filter { entry, .. } => vec![entry],
    }
}

impl Gpu for Emu {
    type Buf = EmuBuf;
    type Module = EmuModule;

    fn alloc(&self, bytes: usize) -> Result<EmuBuf> {
        EmuBuf::new(bytes, 0xcd)
    }

    fn alloc_zeroed(&self, bytes: usize) -> Result<EmuBuf> {
        EmuBuf::new(bytes, 0)
    }

    fn upload(&self, buf: &mut EmuBuf, bytes: &[u8]) -> Result<()> {
        buf.bytes_mut()
            .get_mut(..bytes.len())
            .ok_or_else(|| emu_err("upload past the end"))?
            .copy_from_slice(bytes);
        Ok(())
    }

    fn download(&self, buf: &EmuBuf, offset: usize, bytes: usize) -> Result<Vec<u8>> {
        Ok(buf.bytes().get(offset..offset + bytes).ok_or_else(|| emu_err("download past the end"))?.to_vec())
    }

    fn copy(&self, src: &EmuBuf, dst: &mut EmuBuf, bytes: usize) -> Result<()> {
        let s = src.bytes().get(..bytes).ok_or_else(|| emu_err("copy past the end"))?.to_vec();
        dst.bytes_mut().get_mut(..bytes).ok_or_else(|| emu_err("copy past the end"))?.copy_from_slice(&s);
        Ok(())
    }

    fn ptr(&self, buf: &EmuBuf) -> u64 {
        buf.ptr as u64
    }

    fn module(&self, code: &KernelCode, _opts: &CudaOptions) -> Result<EmuModule> {
        let key = crate::cache::key(&[EMU_HEADER, self.cxx, &self.defines, &code.source]);
        if let Some(lib) = self.libs.lock().map_err(emu_err)?.get(&key) {
            return Ok(EmuModule { lib: lib.clone() });
        }
        let mut src = format!("{}{}", self.defines, code.source);
        for e in entries(&code.skeleton) {
            src.push_str(&format!("EQEMU_ENTRY({e})\n"));
        }
        let name = format!("{key}.so");
        let entry = Entry { name: &name, what: "emulated kernel", beside: &[] };
        let loaded = eqfuse_codegen::cache::load_or_compile(
            &self.cache,
            &entry,
            |work| self.compile(&code.file, &key, &src, work).map(|so| (so, 0.0)),
            // SAFETY: the library is one just built from generated code, or the checked
            // bytes of one this user built, copied into a private directory; its
            // initialisers are the C++ runtime's.
            |so| unsafe { libloading::Library::new(so) }.map_err(|e| e.to_string()),
        )
        .map_err(emu_err)?;
        let lib = Arc::new(loaded.module);
        self.libs.lock().map_err(emu_err)?.insert(key, lib.clone());
        Ok(EmuModule { lib })
    }

    fn launch(&self, m: &EmuModule, entry: &str, grid: u32, block: u32, args: &mut [u64]) -> Result<()> {
        type Launcher = unsafe extern "C" fn(*const u64, u32, u32);
        let name = format!("eqemu_{entry}");
        // SAFETY: `eqemu_<entry>` is defined by `EQEMU_ENTRY` with exactly this signature.
        let f = unsafe { m.lib.get::<Launcher>(name.as_bytes()) }.map_err(emu_err)?;
        // SAFETY: `args` is the kernel's argument block (8-byte fields in `EqArgs` order); its
        // pointer fields are live `EmuBuf`s held by the runtime for the whole launch, which
        // returns only when every emulated thread has finished.
        unsafe { f(args.as_ptr(), grid, block) };
        self.launches.lock().map_err(emu_err)?.push(entry.to_string());
        Ok(())
    }

    fn sms(&self) -> u32 {
        1
    }

    /// cuBLAS's definition of the call, run on the host ([`crate::blas::reference`]), so
    /// that the calls the runtime makes of a contraction are checked against the plan
    /// interpreter too.
    fn gemm(&self, g: &GemmCall, x: &EmuBuf, y: &EmuBuf, c: &mut EmuBuf) -> Result<bool> {
        // the buffers as values of the call's type (the runtime's own conversions)
        let elem = g.elem();
        let typed = |b: &EmuBuf| bytes_value(elem, &[b.bytes().len() / elem.size_bytes()], b.bytes());
        let (ok, out) = match (typed(x)?, typed(y)?, typed(c)?) {
            (Value::F32(xs), Value::F32(ys), Value::F32(mut cs)) => {
                let ok = reference_on(g, &xs, &ys, &mut cs);
                (ok, value_bytes(&Value::F32(cs)))
            }
            (Value::F64(xs), Value::F64(ys), Value::F64(mut cs)) => {
                let ok = reference_on(g, &xs, &ys, &mut cs);
                (ok, value_bytes(&Value::F64(cs)))
            }
            _ => (false, Vec::new()),
        };
        c.bytes_mut()[..out.len()].copy_from_slice(&out);
        if !ok {
            return Err(emu_err("a GEMM call that reads or writes outside its buffers"));
        }
        self.gemm_calls.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Ok(true)
    }
}

/// [`blas::reference`] on arrays (row-major, as [`bytes_value`] makes them): `false` when
/// the call addresses an element outside them.
fn reference_on<T>(
    g: &GemmCall,
    x: &ndarray::ArrayD<T>,
    y: &ndarray::ArrayD<T>,
    c: &mut ndarray::ArrayD<T>,
) -> bool
where
    T: Copy + std::ops::Mul<Output = T> + std::ops::Add<Output = T> + Default + From<f32> + 'static,
{
    match (x.as_slice(), y.as_slice(), c.as_slice_mut()) {
        (Some(x), Some(y), Some(c)) => blas::reference(g, x, y, c).is_some(),
        _ => false,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests;
