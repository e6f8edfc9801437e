//! Finding a CUDA library that the dynamic loader's usual search (`LD_LIBRARY_PATH`, the
//! system paths) does not find under the names cudarc tries: NVRTC and cuBLAS are looked for
//! in a variable of their own (`$EQFUSE_NVRTC`, `$EQFUSE_CUBLAS`: the library file or its
//! folder), `$CUDA_HOME/lib64`, `$CUDA_PATH/lib64` and `/usr/local/cuda/lib64`, and preloaded
//! from there: once a library with the same name is loaded, the loader finds it by its name.

// Loading a shared library runs its initialisers; the CUDA libraries' have no
// preconditions, and each one loaded here stays loaded for the life of the process.
#![allow(unsafe_code)]

use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

/// Libraries preloaded by [`preload`], kept loaded for the life of the process.
fn preloaded() -> &'static Mutex<Vec<libloading::Library>> {
    static LIBS: OnceLock<Mutex<Vec<libloading::Library>>> = OnceLock::new();
    LIBS.get_or_init(|| Mutex::new(Vec::new()))
}

/// Loads a library from `path`: the file, or the first file of the folder whose name
/// `is_lib` accepts. `Err` says why it could not.
pub(crate) fn preload(path: &Path, is_lib: impl Fn(&str) -> bool) -> Result<(), String> {
    let files: Vec<PathBuf> = if path.is_dir() {
        let mut v: Vec<PathBuf> = std::fs::read_dir(path)
            .map_err(|e| format!("{}: {e}", path.display()))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.file_name().and_then(|n| n.to_str()).is_some_and(&is_lib))
            .collect();
        v.sort();
        v
    } else {
        vec![path.to_path_buf()]
    };
    let mut why = format!("no such library in {}", path.display());
    for f in files {
        // SAFETY: loading runs the library's initialisers, which have no preconditions; the
        // library stays loaded (kept in `preloaded`) for as long as cudarc may call into it.
        match unsafe { libloading::Library::new(&f) } {
            Ok(lib) => {
                if let Ok(mut libs) = preloaded().lock() {
                    libs.push(lib);
                }
                return Ok(());
            }
            Err(e) => why = format!("{}: {e}", f.display()),
        }
    }
    Err(why)
}

/// Whether a library is loadable: `present()` by the usual search, else after preloading it
/// (once, `tried` remembers) from `$var`, `$CUDA_HOME/lib64`, `$CUDA_PATH/lib64` or
/// `/usr/local/cuda/lib64` with `preload`.
pub(crate) fn available(
    tried: &OnceLock<()>,
    var: &str,
    present: fn() -> bool,
    preload: fn(&Path) -> Result<(), String>,
) -> bool {
    if present() {
        return true;
    }
    tried.get_or_init(|| {
        let mut places: Vec<PathBuf> = Vec::new();
        if let Some(p) = std::env::var_os(var) {
            places.push(PathBuf::from(p));
        }
        for v in ["CUDA_HOME", "CUDA_PATH"] {
            if let Some(p) = std::env::var_os(v) {
                places.push(PathBuf::from(p).join("lib64"));
            }
        }
        places.push(PathBuf::from("/usr/local/cuda/lib64"));
        for p in places {
            if preload(&p).is_ok() && present() {
                break;
            }
        }
    });
    present()
}
