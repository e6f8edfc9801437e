//! NVRTC, loaded at run time through cudarc (`dynamic-loading`): compiles generated CUDA C
//! to a cubin for one architecture (`-arch=sm_XY`) or to PTX (`compute_XY`) for the driver to
//! finish. Needs no GPU: the `nvidia-cuda-nvrtc-cu12` wheel's `libnvrtc.so.12` is enough.
//!
//! The library is found by the dynamic loader's usual search (`LD_LIBRARY_PATH`, the system
//! paths) under the names cudarc tries (`libnvrtc.so`, `libnvrtc.so.12`, ...), else in
//! `$EQFUSE_NVRTC` (the library file or its folder), `$CUDA_HOME/lib64`, `$CUDA_PATH/lib64`
//! or `/usr/local/cuda/lib64`, which [`available`] preloads ([`preload`]). When NVRTC cannot
//! be loaded every function here returns an `E-DEVICE` error (or `false`): never a panic.
//!
//! Options: `--gpu-architecture=...`, `--std=c++17`, and `--fmad=false` so that `a * b + c`
//! is not contracted into an FMA (docs/design-decisions.md, decision 7) unless fast math is asked for
//! (`--fmad=true`).

// NVRTC's C API is reached through cudarc's `sys`/`result` layers, which are `unsafe`: each
// call below passes a program handle created here and destroyed once, and buffers sized
// by NVRTC's own size queries.
#![allow(unsafe_code)]

use cudarc::nvrtc::{result, sys};
use eqfuse_ir::error::{Code, Error, Result};
use std::ffi::{c_char, CString};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// What NVRTC produces.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Target {
    /// A cubin for `sm_XY` (compute capability X.Y written `XY`, e.g. 90 for an H100).
    Cubin(u32),
    /// PTX for `compute_XY`, compiled by the driver when the module is loaded.
    Ptx(u32),
}

impl Target {
    /// The `--gpu-architecture` value: `sm_90` or `compute_90`.
    pub fn arch(self) -> String {
        match self {
            Target::Cubin(a) => format!("sm_{a}"),
            Target::Ptx(a) => format!("compute_{a}"),
        }
    }
}

/// A compiled module: a cubin, or PTX text (NUL-terminated, as `cuModuleLoadData` wants it).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Compiled {
    /// What it is.
    pub target: Target,
    /// The bytes.
    pub image: Vec<u8>,
}

/// The options NVRTC is given for `target`.
pub fn options(target: Target, fast_math: bool) -> Vec<String> {
    vec![
        format!("--gpu-architecture={}", target.arch()),
        "--std=c++17".to_string(),
        if fast_math { "--fmad=true" } else { "--fmad=false" }.to_string(),
    ]
}

/// Loads NVRTC from `path` (the library file, or a folder holding `libnvrtc.so*`), so that
/// the loader finds it by its name afterwards. `Err` says why it could not.
pub fn preload(path: &Path) -> std::result::Result<(), String> {
    crate::libs::preload(path, |n| {
        n.starts_with("libnvrtc.so") || (n.starts_with("nvrtc64") && n.ends_with(".dll"))
    })
}

/// Whether NVRTC can be loaded by the names cudarc tries.
fn present() -> bool {
    // SAFETY: only tries to load the library (its initialisers have no preconditions).
    std::panic::catch_unwind(|| unsafe { sys::is_culib_present() }).unwrap_or(false)
}

/// Whether NVRTC can be loaded: by the usual search (or because [`preload`] loaded it),
/// else from `$EQFUSE_NVRTC`, `$CUDA_HOME/lib64`, `$CUDA_PATH/lib64` or
/// `/usr/local/cuda/lib64` (tried once, preloaded).
pub fn available() -> bool {
    static TRIED: OnceLock<()> = OnceLock::new();
    crate::libs::available(&TRIED, "EQFUSE_NVRTC", present, preload)
}

/// `E-DEVICE` for "NVRTC is not there".
fn missing() -> Error {
    Error::new(
        Code::Device,
        "NVRTC not found: no libnvrtc.so could be loaded (install the CUDA toolkit or the \
         `nvidia-cuda-nvrtc-cu12` wheel and put its lib folder on LD_LIBRARY_PATH, or set EQFUSE_NVRTC)",
    )
}

/// Runs `f`, turning a panic inside cudarc (a symbol missing from an old library) into
/// `E-DEVICE`.
fn guarded<T>(what: &str, f: impl FnOnce() -> Result<T>) -> Result<T> {
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

/// NVRTC's version, `(major, minor)`.
pub fn version() -> Result<(i32, i32)> {
    if !available() {
        return Err(missing());
    }
    guarded("NVRTC", || {
        let (mut major, mut minor) = (0, 0);
        // SAFETY: two out-pointers to live integers.
        unsafe { sys::nvrtcVersion(&mut major, &mut minor) }
            .result()
            .map_err(|e| Error::new(Code::Device, format!("nvrtcVersion: {e:?}")))?;
        Ok((major, minor))
    })
}

/// The architectures NVRTC can compile for (`[50, 52, ..., 90, ...]`).
pub fn supported_archs() -> Result<Vec<u32>> {
    if !available() {
        return Err(missing());
    }
    guarded("NVRTC", || {
        let mut n: std::ffi::c_int = 0;
        // SAFETY: an out-pointer to a live integer.
        unsafe { sys::nvrtcGetNumSupportedArchs(&mut n) }
            .result()
            .map_err(|e| Error::new(Code::Device, format!("nvrtcGetNumSupportedArchs: {e:?}")))?;
        let mut v: Vec<std::ffi::c_int> = vec![0; usize::try_from(n).unwrap_or(0)];
        if !v.is_empty() {
            // SAFETY: `v` holds the number of entries NVRTC just reported.
            unsafe { sys::nvrtcGetSupportedArchs(v.as_mut_ptr()) }
                .result()
                .map_err(|e| Error::new(Code::Device, format!("nvrtcGetSupportedArchs: {e:?}")))?;
        }
        Ok(v.into_iter().filter_map(|a| u32::try_from(a).ok()).collect())
    })
}

/// Converts NVRTC's NUL-terminated character buffer to a `String`.
fn c_text(buf: &[c_char]) -> String {
    let bytes: Vec<u8> = buf.iter().take_while(|&&c| c != 0).map(|&c| c as u8).collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

/// Where a source that failed to compile is saved.
fn failed_source_path(name: &str, source: &str) -> PathBuf {
    let dir = std::env::temp_dir().join("eqfuse-cuda");
    let stem = name.trim_end_matches(".cu");
    dir.join(format!("{stem}-{}.cu", crate::key::key(&[source])))
}

/// Compiles `source` (called `name` in messages, e.g. `k0_reduce.cu`) for `target`.
/// A compile error is `E-DEVICE` naming a file where the source was saved, with NVRTC's log.
pub fn compile(name: &str, source: &str, target: Target, fast_math: bool) -> Result<Compiled> {
    if !available() {
        return Err(missing());
    }
    let opts = options(target, fast_math);
    guarded("NVRTC", || {
        let src = CString::new(source)
            .map_err(|_| Error::new(Code::Device, format!("`{name}`: the source holds a NUL byte")))?;
        let cname = CString::new(name).unwrap_or_default();
        let prog = result::create_program(&src, Some(cname.as_c_str()))
            .map_err(|e| Error::new(Code::Device, format!("nvrtcCreateProgram: {e:?}")))?;
        let out = (|| {
            // SAFETY: `prog` was created above and is destroyed only below.
            let compiled = unsafe { result::compile_program(prog, &opts) };
            // SAFETY: as above.
            let log = unsafe { result::get_program_log(prog) }.map(|l| c_text(&l)).unwrap_or_default();
            if let Err(e) = compiled {
                let path = failed_source_path(name, source);
                let saved = std::fs::create_dir_all(path.parent().unwrap_or(Path::new(".")))
                    .and_then(|_| std::fs::write(&path, source));
                let place = match saved {
                    Ok(()) => format!("the source is saved in {}", path.display()),
                    Err(err) => format!("the source could not be saved to {}: {err}", path.display()),
                };
                return Err(Error::new(
                    Code::Device,
                    format!(
                        "NVRTC could not compile `{name}` for {} ({e:?}; {place}):\n{}",
                        target.arch(),
                        log.trim_end()
                    ),
                ));
            }
            let image = match target {
                Target::Cubin(_) => {
                    let mut size = 0usize;
                    // SAFETY: `prog` is live and compiled; `size` is a live out-pointer.
                    unsafe { sys::nvrtcGetCUBINSize(prog, &mut size) }
                        .result()
                        .map_err(|e| Error::new(Code::Device, format!("nvrtcGetCUBINSize: {e:?}")))?;
                    let mut buf = vec![0u8; size];
                    // SAFETY: `buf` has the size NVRTC just reported.
                    unsafe { sys::nvrtcGetCUBIN(prog, buf.as_mut_ptr().cast::<c_char>()) }
                        .result()
                        .map_err(|e| Error::new(Code::Device, format!("nvrtcGetCUBIN: {e:?}")))?;
                    buf
                }
                Target::Ptx(_) => {
                    // SAFETY: `prog` is live and compiled.
                    let ptx = unsafe { result::get_ptx(prog) }
                        .map_err(|e| Error::new(Code::Device, format!("nvrtcGetPTX: {e:?}")))?;
                    let mut bytes: Vec<u8> = ptx.iter().map(|&c| c as u8).collect();
                    if bytes.last() != Some(&0) {
                        bytes.push(0);
                    }
                    bytes
                }
            };
            Ok(Compiled { target, image })
        })();
        // SAFETY: `prog` was created above and not destroyed yet.
        let _ = unsafe { result::destroy_program(prog) };
        out
    })
}

/// PTX text of a compiled PTX module (without its NUL), for tests and `explain`.
pub fn ptx_text(c: &Compiled) -> Option<String> {
    match c.target {
        Target::Ptx(_) => {
            let bytes = c.image.split(|&b| b == 0).next().unwrap_or(&[]);
            Some(String::from_utf8_lossy(bytes).into_owned())
        }
        Target::Cubin(_) => None,
    }
}
