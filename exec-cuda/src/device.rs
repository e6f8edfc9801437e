//! The CUDA device, through cudarc's driver API: opening it (context, one stream),
//! compiling and loading modules (NVRTC, the in-memory and disk caches), buffers and
//! launches. This is the [`Gpu`] the runtime runs plans on.
//!
//! Nothing here panics: cudarc panics when a driver symbol is missing (an old driver), so
//! every entry into it is guarded and a panic becomes `E-DEVICE`.

// The CUDA driver API is `unsafe` where the compiler cannot check what the GPU will do:
// launching a kernel (its parameters must match the kernel's signature and point to live
// device memory of the right size), allocating uninitialised device memory, loading the
// driver library, and turning off cudarc's event tracking (sound here because every
// operation goes to one stream). Each such call carries a `SAFETY:` comment; this module,
// `nvrtc` and the tests' emulator (`emulate`, its buffers and the kernels it loads) are the
// only ones of the crate that need `unsafe`.
#![allow(unsafe_code)]

use crate::blas::GemmCall;
use crate::nvrtc::{self, Compiled, Target};
use crate::runtime::Gpu;
use crate::{cache, CudaOptions};
use cudarc::cublas::{self, sys::cublasOperation_t as Op, CudaBlas};
use cudarc::driver::{
    result as dresult, sys as dsys, CudaContext, CudaFunction, CudaModule, CudaSlice, CudaStream,
};
use cudarc::driver::{DevicePtr, DriverError};
use eqfuse_codegen::cuda::KernelCode;
use eqfuse_ir::error::internal;
use eqfuse_ir::error::{Code, Error, Result};
use eqfuse_ir::value::Scalar;
use std::collections::HashMap;
use std::ffi::c_void;
use std::sync::{Arc, Mutex, OnceLock};

/// `E-DEVICE` from a driver error.
fn dev_err(what: &str, e: DriverError) -> Error {
    if e.0 == dsys::CUresult::CUDA_ERROR_OUT_OF_MEMORY {
        return Error::new(Code::Device, format!("out of memory on the device ({what})"));
    }
    Error::new(Code::Device, format!("{what}: {e:?}"))
}

/// Runs `f`, turning a panic inside cudarc (a symbol missing from an old driver) into
/// `E-DEVICE`.
pub(crate) fn guarded<T>(what: &str, f: impl FnOnce() -> Result<T>) -> Result<T> {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(p) => {
            let msg = p
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_else(|| "a panic".into());
            Err(Error::new(Code::Device, format!("{what}: {msg}")))
        }
    }
}

/// Whether the CUDA driver library can be loaded.
fn driver_present() -> bool {
    // SAFETY: only tries to load `libcuda` (its initialisers have no preconditions).
    std::panic::catch_unwind(|| unsafe { dsys::is_culib_present() }).unwrap_or(false)
}

/// Whether a driver and at least one device are present.
pub(crate) fn available() -> bool {
    driver_present()
        && std::panic::catch_unwind(CudaContext::device_count)
            .ok()
            .and_then(|r| r.ok())
            .is_some_and(|n| n > 0)
}

/// Whether cuBLAS can be loaded: by the loader's usual search, else from `$EQFUSE_CUBLAS`
/// or a CUDA installation ([`crate::libs::available`]).
pub(crate) fn blas_available() -> bool {
    fn present() -> bool {
        // SAFETY: only tries to load the library (its initialisers have no preconditions).
        std::panic::catch_unwind(|| unsafe { cublas::sys::is_culib_present() }).unwrap_or(false)
    }
    fn preload(p: &std::path::Path) -> std::result::Result<(), String> {
        crate::libs::preload(p, |n| n.starts_with("libcublas.so"))
    }
    static TRIED: OnceLock<()> = OnceLock::new();
    crate::libs::available(&TRIED, "EQFUSE_CUBLAS", present, preload)
}

/// One GPU: its context, the stream all work goes to, and the modules loaded so far.
pub(crate) struct Device {
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    /// Compute capability as `XY`.
    arch: u32,
    /// Streaming multiprocessors.
    sms: u32,
    /// Loaded modules by cache key.
    modules: Mutex<HashMap<String, Arc<CudaModule>>>,
    /// Functions by (cache key, name).
    functions: Mutex<HashMap<(String, String), CudaFunction>>,
    /// NVRTC's version and architectures, once known.
    nvrtc: OnceLock<((i32, i32), Vec<u32>)>,
    /// A cuBLAS handle on `stream`, once asked for (`None`: no cuBLAS).
    blas: OnceLock<Option<CudaBlas>>,
}

/// The devices opened so far, by ordinal.
fn devices() -> &'static Mutex<HashMap<usize, Arc<Device>>> {
    static DEVICES: OnceLock<Mutex<HashMap<usize, Arc<Device>>>> = OnceLock::new();
    DEVICES.get_or_init(|| Mutex::new(HashMap::new()))
}

impl Device {
    /// Device `ordinal`, opened once.
    pub(crate) fn get(ordinal: usize) -> Result<Arc<Device>> {
        let mut map =
            devices().lock().map_err(|_| Error::new(Code::Device, "the device table is poisoned"))?;
        if let Some(d) = map.get(&ordinal) {
            return Ok(d.clone());
        }
        if !driver_present() {
            return Err(Error::new(
                Code::Device,
                "no CUDA driver found: libcuda.so could not be loaded (is this a machine with an NVIDIA GPU and its driver?)",
            ));
        }
        let d = guarded("CUDA driver", || {
            let n = CudaContext::device_count().map_err(|e| match e.0 {
                dsys::CUresult::CUDA_ERROR_NO_DEVICE => {
                    Error::new(Code::Device, "no GPU: the CUDA driver finds no device")
                }
                _ => dev_err("cuInit", e),
            })?;
            if n <= 0 {
                return Err(Error::new(Code::Device, "no GPU: the CUDA driver finds no device"));
            }
            if ordinal >= n as usize {
                return Err(Error::new(
                    Code::Device,
                    format!("no GPU {ordinal}: the driver finds {n} device(s)"),
                ));
            }
            let ctx = CudaContext::new(ordinal).map_err(|e| dev_err("creating the CUDA context", e))?;
            // SAFETY: every buffer and launch of this crate goes to the one stream created
            // below, so no use needs synchronising with another stream.
            unsafe { ctx.disable_event_tracking() };
            let stream = ctx.new_stream().map_err(|e| dev_err("creating a stream", e))?;
            let (major, minor) = ctx.compute_capability().map_err(|e| dev_err("compute capability", e))?;
            let sms = ctx
                .attribute(dsys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)
                .map_err(|e| dev_err("multiprocessor count", e))?;
            Ok(Arc::new(Device {
                ctx,
                stream,
                arch: (major.max(0) as u32) * 10 + minor.max(0) as u32,
                sms: sms.max(1) as u32,
                modules: Mutex::new(HashMap::new()),
                functions: Mutex::new(HashMap::new()),
                nvrtc: OnceLock::new(),
                blas: OnceLock::new(),
            }))
        })?;
        map.insert(ordinal, d.clone());
        Ok(d)
    }

    /// What to compile for: a cubin for the device's architecture when NVRTC knows it (PTX
    /// for the same as a fallback), else PTX for the newest architecture NVRTC knows below
    /// it.
    fn targets(&self, opts: &CudaOptions, supported: &[u32]) -> Vec<Target> {
        let arch = opts.arch.unwrap_or(self.arch);
        if supported.is_empty() || supported.contains(&arch) {
            return vec![Target::Cubin(arch), Target::Ptx(arch)];
        }
        let below = supported.iter().copied().filter(|&a| a <= arch).max();
        vec![Target::Ptx(below.or_else(|| supported.iter().copied().min()).unwrap_or(arch))]
    }

    /// The module of `code`, compiled (or found in a cache) and loaded; its cache key.
    fn load(&self, code: &KernelCode, opts: &CudaOptions) -> Result<(String, Arc<CudaModule>)> {
        let (version, supported) = match self.nvrtc.get() {
            Some(v) => v.clone(),
            None => {
                let v = (nvrtc::version()?, nvrtc::supported_archs().unwrap_or_default());
                self.nvrtc.get_or_init(|| v).clone()
            }
        };
        // a private folder (`cache::open`), whose images are checked before they are used
        let dir = if opts.disk_cache { opts.cache_dir.clone().or_else(cache::default_dir) } else { None };
        let dir = dir.as_deref().and_then(cache::open);
        let mut why = Vec::new();
        for target in self.targets(opts, &supported) {
            let options = nvrtc::options(target, opts.fast_math);
            let key = cache::module_key(&code.source, target, &options, version);
            if let Some(m) = self.modules.lock().ok().and_then(|m| m.get(&key).cloned()) {
                return Ok((key, m));
            }
            let compiled = match dir.as_ref().and_then(|d| cache::load(d, &key, target)) {
                Some(c) => c,
                None => {
                    let c = nvrtc::compile(&code.file, &code.source, target, opts.fast_math)?;
                    if let Some(d) = dir.as_ref() {
                        cache::store(d, &key, &c);
                    }
                    c
                }
            };
            let ptx = match &compiled {
                Compiled { target: Target::Cubin(_), image } => {
                    cudarc::nvrtc::Ptx::from_binary(image.clone())
                }
                c => cudarc::nvrtc::Ptx::from_src(nvrtc::ptx_text(c).unwrap_or_default()),
            };
            match guarded("loading a module", || {
                self.ctx
                    .load_module(ptx)
                    .map_err(|e| dev_err(&format!("loading `{}` ({})", code.file, target.arch()), e))
            }) {
                Ok(m) => {
                    if let Ok(mut map) = self.modules.lock() {
                        map.insert(key.clone(), m.clone());
                    }
                    return Ok((key, m));
                }
                Err(e) => why.push(e.message),
            }
        }
        Err(Error::new(
            Code::Device,
            format!("the kernel `{}` could not be loaded: {}", code.file, why.join("; ")),
        ))
    }

    /// The cuBLAS handle, made the first time (`None`, said once on stderr, when the
    /// library cannot be loaded or initialised: matrix products then run as their kernels).
    fn blas(&self) -> Option<&CudaBlas> {
        self.blas
            .get_or_init(|| {
                let why = if !blas_available() {
                    "libcublas.so was not found (put its folder on LD_LIBRARY_PATH, or set EQFUSE_CUBLAS)"
                        .to_string()
                } else {
                    match guarded("cuBLAS", || {
                        CudaBlas::new(self.stream.clone())
                            .map_err(|e| Error::new(Code::Device, format!("creating a cuBLAS handle: {e:?}")))
                    }) {
                        Ok(b) => return Some(b),
                        Err(e) => e.message,
                    }
                };
                eprintln!("eqfuse: {why}; matrix products run as reduction kernels");
                None
            })
            .as_ref()
    }

    /// Function `name` of the module under `key`.
    fn function(&self, key: &str, module: &Arc<CudaModule>, name: &str) -> Result<CudaFunction> {
        let k = (key.to_string(), name.to_string());
        if let Some(f) = self.functions.lock().ok().and_then(|m| m.get(&k).cloned()) {
            return Ok(f);
        }
        let f = module.load_function(name).map_err(|e| dev_err(&format!("kernel `{name}`"), e))?;
        if let Ok(mut m) = self.functions.lock() {
            m.insert(k, f.clone());
        }
        Ok(f)
    }
}

/// A loaded module and its cache key.
pub(crate) struct Loaded {
    key: String,
    module: Arc<CudaModule>,
}

impl Gpu for Device {
    type Buf = CudaSlice<u8>;
    type Module = Loaded;

    fn alloc(&self, bytes: usize) -> Result<CudaSlice<u8>> {
        // SAFETY: the memory is uninitialised; the runtime writes every buffer it allocates
        // here (by a kernel, an upload or a copy) before reading it, and never reads
        // padding bytes as elements.
        guarded("allocating", || {
            unsafe { self.stream.alloc::<u8>(bytes) }
                .map_err(|e| dev_err(&format!("allocating {bytes} bytes"), e))
        })
    }

    fn alloc_zeroed(&self, bytes: usize) -> Result<CudaSlice<u8>> {
        guarded("allocating", || {
            self.stream.alloc_zeros::<u8>(bytes).map_err(|e| dev_err(&format!("allocating {bytes} bytes"), e))
        })
    }

    fn upload(&self, buf: &mut CudaSlice<u8>, bytes: &[u8]) -> Result<()> {
        guarded("copying to the device", || {
            let mut view = buf.slice_mut(0..bytes.len());
            self.stream.memcpy_htod(bytes, &mut view).map_err(|e| dev_err("copying to the device", e))
        })
    }

    fn download(&self, buf: &CudaSlice<u8>, offset: usize, bytes: usize) -> Result<Vec<u8>> {
        guarded("copying from the device", || {
            let view = buf.slice(offset..offset + bytes);
            let out = self.stream.clone_dtoh(&view).map_err(|e| dev_err("copying from the device", e))?;
            self.stream.synchronize().map_err(|e| dev_err("running the kernels", e))?;
            Ok(out)
        })
    }

    fn copy(&self, src: &CudaSlice<u8>, dst: &mut CudaSlice<u8>, bytes: usize) -> Result<()> {
        guarded("copying on the device", || {
            let mut dv = dst.slice_mut(0..bytes);
            self.stream
                .memcpy_dtod(&src.slice(0..bytes), &mut dv)
                .map_err(|e| dev_err("copying on the device", e))
        })
    }

    fn ptr(&self, buf: &CudaSlice<u8>) -> u64 {
        // Event tracking is off: the returned guard records nothing.
        let (p, _guard) = buf.device_ptr(&self.stream);
        p
    }

    fn module(&self, code: &KernelCode, opts: &CudaOptions) -> Result<Loaded> {
        let (key, module) = self.load(code, opts)?;
        Ok(Loaded { key, module })
    }

    fn launch(&self, m: &Loaded, entry: &str, grid: u32, block: u32, args: &mut [u64]) -> Result<()> {
        guarded("launching a kernel", || {
            let f = self.function(&m.key, &m.module, entry)?;
            self.ctx.bind_to_thread().map_err(|e| dev_err("binding the context", e))?;
            let mut params: [*mut c_void; 1] = [args.as_mut_ptr().cast::<c_void>()];
            // SAFETY: every entry point of a generated module takes exactly one parameter,
            // `const EqArgs A`, a struct of `code.slots.len()` 8-byte fields (pointers,
            // `long long`s, 8-byte unions) in the order of `code.slots`; `args` holds exactly
            // those fields in that order (built by the runtime from the same `KernelCode`),
            // and the driver copies them at launch. Every pointer field is a live allocation
            // of this device's stream: inputs and values cover their shapes (whose
            // dimensions are the `Dim` fields the kernel bounds-checks against), outputs
            // cover the extents passed in the same block, scratch buffers are sized for
            // `grid` blocks. Buffers are freed only through their `CudaSlice`s,
            // asynchronously on the same stream, hence after the kernel has run.
            unsafe {
                dresult::launch_kernel(
                    f.cu_function(),
                    (grid, 1, 1),
                    (block, 1, 1),
                    0,
                    self.stream.cu_stream(),
                    &mut params,
                )
            }
            .map_err(|e| dev_err(&format!("launching `{entry}`"), e))
        })
    }

    fn sms(&self) -> u32 {
        self.sms
    }

    fn gemm(
        &self,
        g: &GemmCall,
        x: &CudaSlice<u8>,
        y: &CudaSlice<u8>,
        c: &mut CudaSlice<u8>,
    ) -> Result<bool> {
        let Some(blas) = self.blas() else { return Ok(false) };
        guarded("cuBLAS", || {
            self.ctx.bind_to_thread().map_err(|e| dev_err("binding the context", e))?;
            let size = g.elem().size_bytes() as u64;
            let at = |buf: &CudaSlice<u8>, off: usize| self.ptr(buf) + off as u64 * size;
            let (px, py, pc) = (at(x, g.x.off), at(y, g.y.off), at(c, g.c_off));
            let op = |t: bool| if t { Op::CUBLAS_OP_T } else { Op::CUBLAS_OP_N };
            let (ta, tb) = (op(g.x.trans), op(g.y.trans));
            let (sx, sy, sc) = g.strides;
            let h = *blas.handle();
            // the one call for both types: `f` takes `alpha`, `beta` and pointers of type `t`
            macro_rules! call {
                ($f:path, $t:ty, $alpha:expr) => {
                    $f(
                        h,
                        ta,
                        tb,
                        g.m,
                        g.n,
                        g.k,
                        &$alpha,
                        px as *const $t,
                        g.x.ld,
                        sx,
                        py as *const $t,
                        g.y.ld,
                        sy,
                        &(0.0 as $t),
                        pc as *mut $t,
                        g.ldc,
                        sc,
                        g.batch,
                    )
                };
            }
            // SAFETY: the handle's stream is this device's one stream, so the call runs after
            // the work that wrote `x` and `y` and before any that reads `c`; the runtime
            // checked that every element the call addresses (`GemmCall::needs`, from the
            // offsets, leading dimensions, extents and batch strides passed here) lies inside
            // the three buffers, which live until the stream has run past the call (they are
            // freed only through their `CudaSlice`s, asynchronously on the same stream).
            let r = unsafe {
                match g.alpha {
                    Scalar::F32(alpha) => call!(cublas::result::sgemm_strided_batched, f32, alpha),
                    Scalar::F64(alpha) => call!(cublas::result::dgemm_strided_batched, f64, alpha),
                    other => return Err(internal(format!("a GEMM call over {}", other.elem_type()))),
                }
            };
            r.map_err(|e| Error::new(Code::Device, format!("cuBLAS gemm: {e:?}")))?;
            Ok(true)
        })
    }
}
