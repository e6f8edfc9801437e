//! Shared helpers for integration tests: the conformance cases (read by
//! `eqfuse_ir::conformance`, as every suite reads them) and scratch directories.
#![allow(dead_code)]

pub use eqfuse::ir::conformance::Case;
use std::path::{Path, PathBuf};

/// The conformance suite (`tests/conformance`), and the cases of the directory
/// `EQFUSE_EXTRA_CONFORMANCE` names, when it is set (a suite of the same layout kept
/// outside the repository); a malformed case, or a name that is not a directory, fails the
/// test.
pub fn project_cases() -> Vec<Case> {
    eqfuse::ir::conformance::project_cases(Path::new(env!("CARGO_MANIFEST_DIR")))
        .unwrap_or_else(|e| panic!("{e}"))
}

/// A fresh scratch directory under cargo's per-test tmp dir.
pub fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    dir
}

/// A layer normalisation over the rows of `x` (mean, variance, normalise): one row block.
pub const LAYERNORM: &str = "input x : f32[r, c]
let mean = map (\\s -> s / f32 c) (reduce (+) 0 x)
let d = generate [r, c] (\\i j -> x[i, j] - mean[i])
let var = map (\\s -> s / f32 c) (reduce (+) 0 (map (\\v -> v * v) d))
output y = generate [r, c] (\\i j -> d[i, j] / sqrt (var[i] + 0.00001))
";

/// A log-sum-exp of each row of `x`: one row block.
pub const LOGSUMEXP: &str = "input x : f64[r, c]
let mx = reduce max (-inf) x
output lse = map (\\m s -> m + log s) mx (reduce (+) 0 (generate [r, c] (\\i j -> exp (x[i, j] - mx[i]))))
";

/// An `f64` (else `f32`) array of `shape` whose elements are uniform in `[lo, lo + 1)`,
/// drawn from [`xorshift`] of `seed`.
pub fn uniform(shape: &[usize], f64: bool, lo: f64, seed: u64) -> eqfuse::Value {
    use ndarray::{ArrayD, IxDyn};
    let mut next = xorshift(seed);
    let data: Vec<f64> =
        (0..shape.iter().product()).map(|_| (next() >> 11) as f64 / (1u64 << 53) as f64 + lo).collect();
    let sh = IxDyn(shape);
    if f64 {
        eqfuse::Value::F64(ArrayD::from_shape_vec(sh, data).expect("the shape's element count"))
    } else {
        let data = data.into_iter().map(|v| v as f32).collect();
        eqfuse::Value::F32(ArrayD::from_shape_vec(sh, data).expect("the shape's element count"))
    }
}

/// A xorshift generator from `seed` (any value): each call the next 64 random bits, for
/// test data that the test's own seed decides.
pub fn xorshift(seed: u64) -> impl FnMut() -> u64 {
    let mut state = seed | 1;
    move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    }
}

/// A fresh seed (printed, so that a failure can be replayed) and a xorshift generator from
/// it.
pub fn rng() -> (u64, impl FnMut() -> u64) {
    let seed =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(1, |d| d.as_nanos() as u64);
    eprintln!("seed {seed}");
    let mut state = seed | 1;
    (seed, move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    })
}

/// `src` parsed and optimised with the default options (a failure panics, naming it).
pub fn optimise(src: &str) -> eqfuse::Optimized {
    let p = eqfuse::parse(src).unwrap_or_else(|e| panic!("{e}\n{src}"));
    eqfuse::optimize(&p, &eqfuse::OptimizeOptions::default()).unwrap_or_else(|e| panic!("{e}\n{src}"))
}

/// A plan's kernels, top level.
pub fn kernels(steps: &[eqfuse::ir::plan::Step]) -> Vec<&eqfuse::ir::plan::Kernel> {
    steps
        .iter()
        .filter_map(|s| if let eqfuse::ir::plan::Step::Kernel(k) = s { Some(k) } else { None })
        .collect()
}

/// The lines of `source` at which the C compiler, with the backend's flags, reports a
/// vectorised loop.
pub fn vectorised_lines(source: &str, dir: &Path) -> Vec<usize> {
    let (cc, flags) = eqfuse_exec_cpu::c_compiler_and_flags();
    let c = dir.join("k.c");
    std::fs::write(&c, source).unwrap_or_else(|e| panic!("{}: {e}", c.display()));
    let out = std::process::Command::new(&cc)
        .args(flags.iter().filter(|f| **f != "-w"))
        .arg("-fopt-info-vec-optimized")
        .arg(&c)
        .arg("-o")
        .arg(dir.join("k.so"))
        .output()
        .unwrap_or_else(|e| panic!("{cc}: {e}"));
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let report = String::from_utf8_lossy(&out.stderr);
    report
        .lines()
        .filter(|l| l.contains("optimized: loop vectorized"))
        .filter_map(|l| l.strip_prefix(&format!("{}:", c.display()))?.split(':').next()?.parse().ok())
        .collect()
}
