//! The native C code of three kernel shapes (issue 43), each read off the generated source,
//! compiled by the system C compiler with the backend's own flags to check that its hot loop
//! vectorises (`-fopt-info-vec`), and run against the reference interpreter:
//! - a map over several dimensions runs as one loop over the flattened space
//!   (`Func::flat_reads`), and falls back to rows where an array is wider than the space;
//! - a reduction reading across the rows of an array (a transposed matrix–vector product)
//!   folds up to `COLUMNS` rows side by side (`Func::walks_columns`);
//! - a reduction over a select (`if c then x else ne`) computes both arms and selects by
//!   bit masks;
//! - a map that transposes (its element reads arrays across their rows) walks tiles: down
//!   each tile's columns into a buffer, then the buffer's rows out;
//! - a map calling `sin`, `cos` or `tan` on `f32` walks its points in blocks, each by the
//!   element function with those functions' medium path first, and again by the element
//!   function itself only where an argument needed the exact reduction.
//!
//! The values are multiples of 1/8 small enough that every sum is exact in `f32`, so any
//! order of folding gives the reference's bits. Random shapes print their seed.

#![allow(clippy::unwrap_used)]

mod common;

use common::{rng, vectorised_lines};
use eqfuse::{Arrays, Backend, OptimizeOptions, Value};
use eqfuse_codegen::c::{COLUMNS, TILE_ROWS};

const FLAT: &str = "input p : f32[a, b, c]
input q : f32[a, b, c]
output o = map (\\x y -> sqrt (x * x + y)) p q
";

const WIDER: &str = "input t : f32[h, v]
input b : f32[w]
output o = generate [h, w] (\\i j -> t[i, j] * 2.0)
";

const COLUMN_SUMS: &str = "input t : f32[r, c]
input x : f32[r]
output o = sum (transpose (generate [r, c] (\\i j -> t[i, j] * x[i])))
";

const SELECT_MIN: &str = "input d : f32[n]
input m : f32
output o = reduce min inf (generate [n] (\\i -> if d[i] == m then f32 i else inf))
";

const TRANSPOSED: &str = "input a : f32[n, m]
input b : f32[n, m]
output t = transpose (map (\\x y -> x + y * 0.5) a b)
output u = generate [m, n] (\\j i -> i32 (b[i, j]) + i32 j)
";

/// A transposed read that leaves the array for some shapes (`i + 1` at the last row).
const TRANSPOSED_PAST_END: &str = "input a : f32[n, m]
output t = generate [m, n] (\\j i -> a[(i + 1) % (n + 1), j])
";

const SIN: &str = "input x : f32[n]
output o = map (\\v -> sin v) x
";

const TRIG: &str = "input x : f32[n]
output s = map (\\v -> sin v) x
output c = map (\\v -> cos v) x
output t = map (\\v -> tan (v * 0.5))  x
";

/// Trigonometry over two dimensions walked as one flat loop.
const TRIG_FLAT: &str = "input p : f32[a, b]
output o = map (\\x -> cos x * sin (x * 3.0)) p
";

/// Trigonometry in a space walked by rows (`t` may be wider than the space).
const TRIG_ROWS: &str = "input t : f32[h, v]
input b : f32[w]
output o = generate [h, w] (\\i j -> sin t[i, j] + cos (t[i, j] * b[j]) * tan b[j])
";

/// Reductions of trigonometry along rows (a sum whose elements are multiples of 1/8, exact in
/// any order; a maximum; a minimum by a lambda the optimiser does not know to commute) and of
/// a whole array.
const TRIG_REDUCE: &str = "input t : f32[h, v]
input x : f32[n]
output s = reduce (+) 0 (generate [h, v] (\\i j -> floor (sin t[i, j] * 8.0) / 8.0))
output m = reduce max (-inf) (generate [h, v] (\\i j -> cos (t[i, j] * 3.0)))
output l = reduce (\\a b -> if b < a then b else a) inf (generate [h, v] (\\i j -> tan t[i, j]))
output a = reduce (+) 0 (map (\\y -> floor (cos y * 8.0) / 8.0) x)
";

/// Loops inside element functions, each kernel's only loop: 40 steps calling `sin`, a loop
/// over two dimensions reading the indices and a count known only at run time, a tuple state
/// reading a scalar input.
const LOCKSTEP: &str = "input x : f32[n]
output y = map (\\v -> iterate 40 (\\s -> 0.5 * s + 0.25 * sin s) v) x
";
const LOCKSTEP_ROWS: &str = "input t : f32[h, w]
input k : i64
output g = generate [h, w] (\\i j -> iterate k (\\s -> s * 0.5 + f32 (i + j)) t[i, j])
";
const LOCKSTEP_TUPLE: &str = "input x : f32[n]
input c : f32
output z = map (\\v -> let (a, b) = iterate 100 (\\s -> let (p, q) = s in (p * 0.5 + q, q * 0.75 + c)) (v, v * 2.0) in a - b) x
";

fn plan_of(src: &str) -> eqfuse::ir::plan::Plan {
    plan_with(src, &OptimizeOptions::default())
}

fn plan_with(src: &str, opts: &OptimizeOptions) -> eqfuse::ir::plan::Plan {
    let p = eqfuse::parse(src).unwrap();
    eqfuse::optimize(&p, opts).unwrap().result.plan
}

/// The lines of `source` that gcc reports vectorised, compiled in scratch directory `name`.
fn vectorised(source: &str, name: &str) -> Vec<usize> {
    vectorised_lines(source, &common::scratch(name))
}

/// The generated C of `src`'s plan, every kernel native.
fn source_of(src: &str) -> String {
    source_of_plan(&plan_of(src))
}

/// The generated C of `plan`, every kernel native.
fn source_of_plan(plan: &eqfuse::ir::plan::Plan) -> String {
    let code = eqfuse_codegen::c::generate(plan);
    assert!(code.kernels.iter().all(Result::is_ok), "{:?}", code.kernels);
    code.source
}

/// Kernel 0's `run` entry in `source`.
fn run_entry(source: &str) -> String {
    let start = source.find("EQ_EXPORT int eq_k0_run").unwrap();
    let end = source[start..].find("\n}\n").unwrap();
    source[start..start + end + 2].to_string()
}

/// The lines (1-based) of `source` holding `needle`, in kernel 0's `run` entry.
fn lines_of(source: &str, needle: &str) -> Vec<usize> {
    let start = source[..source.find("EQ_EXPORT int eq_k0_run").unwrap()].lines().count();
    source
        .lines()
        .enumerate()
        .skip(start)
        .take_while(|(_, l)| *l != "}")
        .filter(|(_, l)| l.contains(needle))
        .map(|(i, _)| i + 1)
        .collect()
}

/// An array of `shape` whose elements are multiples of `1/8` in `[0, 8)`.
fn f32_array(shape: &[usize], next: &mut impl FnMut() -> u64) -> Value {
    f32_scaled(shape, 8.0, next)
}

/// An array of `shape` whose elements are multiples of `1/den` in `[0, 64/den)`.
fn f32_scaled(shape: &[usize], den: f32, next: &mut impl FnMut() -> u64) -> Value {
    let n = shape.iter().product();
    let v: Vec<f32> = (0..n).map(|_| (next() % 64) as f32 / den).collect();
    Value::from(ndarray::Array::from_shape_vec(shape.to_vec(), v).unwrap().into_dyn())
}

/// Runs `src` on the CPU and on the reference interpreter; they must agree exactly.
fn agree(src: &str, inputs: &Arrays, what: &str) {
    let checked = eqfuse::check(&eqfuse::parse(src).unwrap()).unwrap();
    let want = eqfuse::run(&checked, Backend::Reference, inputs).unwrap();
    let got = eqfuse::run(&checked, Backend::Cpu, inputs).unwrap();
    assert_eq!(got, want, "{what}");
}

#[test]
fn a_map_over_three_dimensions_is_one_vectorised_loop() {
    let source = source_of(FLAT);
    insta::assert_snapshot!("flat_map_run", run_entry(&source));
    let hot = lines_of(&source, "for (long long iL = r0 * L; iL < r1 * L; ++iL)");
    assert_eq!(hot.len(), 1, "{}", run_entry(&source));
    assert!(vectorised(&source, "kernel_shapes_flat").contains(&hot[0]), "the flat loop is not vectorised");
}

#[test]
fn flat_maps_agree_with_the_reference_and_fall_back_where_an_array_is_wider() {
    let (seed, mut next) = rng();
    let mut shapes: Vec<[usize; 3]> = vec![[1, 1, 1], [2, 5, 3], [7, 1, 2], [0, 3, 3], [3, 0, 2]];
    shapes.extend(
        (0..4).map(|_| [1 + (next() % 300) as usize, 1 + (next() % 6) as usize, 1 + (next() % 4) as usize]),
    );
    for s in shapes {
        let mut inputs = Arrays::new();
        inputs.insert("p".into(), f32_array(&s, &mut next));
        inputs.insert("q".into(), f32_array(&s, &mut next));
        agree(FLAT, &inputs, &format!("seed {seed}: shape {s:?}"));
    }
    // the element reads `t` at the point, but `t` may be wider than the space: then the
    // rows run as rows (one flat loop would read the wrong elements)
    assert!(run_entry(&source_of(WIDER)).contains("iL < r1 * L"));
    for (h, v, w) in [(3, 5, 5), (3, 9, 5), (40, 130, 129), (1, 4, 1)] {
        let mut inputs = Arrays::new();
        inputs.insert("t".into(), f32_array(&[h, v], &mut next));
        inputs.insert("b".into(), f32_array(&[w], &mut next));
        agree(WIDER, &inputs, &format!("seed {seed}: t [{h}, {v}], space [{h}, {w}]"));
    }
}

#[test]
fn a_reduction_across_rows_folds_rows_side_by_side_vectorised() {
    let source = source_of(COLUMN_SUMS);
    insta::assert_snapshot!("column_sums_run", run_entry(&source));
    let hot = lines_of(&source, "for (long long q = 0; q < nr; ++q) {");
    assert_eq!(hot.len(), 1, "{}", run_entry(&source));
    assert!(
        vectorised(&source, "kernel_shapes_columns").contains(&hot[0]),
        "the loop over rows is not vectorised"
    );
}

#[test]
fn column_sums_agree_with_the_reference_at_every_width() {
    let (seed, mut next) = rng();
    // up to COLUMNS rows of the space fold side by side; more run as rows
    let mut shapes: Vec<(usize, usize)> =
        [1, 2, 3, 16, COLUMNS, COLUMNS + 1].iter().flat_map(|&c| [(1, c), (5, c), (4097, c)]).collect();
    shapes.extend((0..4).map(|_| (1 + (next() % 20_000) as usize, 1 + (next() % 70) as usize)));
    shapes.push((0, 4));
    for (r, c) in shapes {
        let mut inputs = Arrays::new();
        inputs.insert("t".into(), f32_array(&[r, c], &mut next));
        // whole numbers: every product and sum (below 2^21) is exact to 1/8
        inputs.insert("x".into(), f32_scaled(&[r], 8.0, &mut || next() % 8 * 8));
        agree(COLUMN_SUMS, &inputs, &format!("seed {seed}: [{r}, {c}]"));
    }
}

/// Products of three dimensions reading `b` down its columns (`b[p, j]` at `[i, j, p]`): an
/// integer matrix product (never a GEMM call) and a max-plus product.
const PRODUCTS_3D: &str = "input a : i32[n, k]
input b : i32[k, m]
input x : f32[n, k]
input y : f32[k, m]
output c = reduce (+) 0 (generate [n, m, k] (\\i j p -> a[i, p] * b[p, j]))
output d = reduce max (-inf) (generate [n, m, k] (\\i j p -> x[i, p] + y[p, j]))
";

#[test]
fn a_reduction_of_three_dimensions_across_rows_folds_runs_of_rows_side_by_side() {
    let source = source_of(PRODUCTS_3D);
    let entry = run_entry(&source);
    assert!(entry.contains("for (long long row0 = r0; row0 < r1;) {"), "no column walk: {entry}");
    let hot = lines_of(&source, "for (long long q = 0; q < run; ++q) {");
    assert_eq!(hot.len(), 1, "{entry}");
    assert!(
        vectorised(&source, "kernel_shapes_columns_3d").contains(&hot[0]),
        "the loop over a run of rows is not vectorised"
    );
    let (seed, mut next) = rng();
    // runs within one `i` and across several; more rows than COLUMNS; one row; empty
    let mut shapes =
        vec![(1, 1, 1), (2, 3, 5), (3, 7, 64), (5, 300, 33), (2, COLUMNS + 5, 3), (1, 1, 40), (0, 3, 2)];
    shapes.extend(
        (0..3).map(|_| (1 + (next() % 9) as usize, 1 + (next() % 600) as usize, 1 + (next() % 90) as usize)),
    );
    for (n, m, k) in shapes {
        let mut ints = |len: usize| -> Vec<i32> { (0..len).map(|_| (next() % 2001) as i32 - 1000).collect() };
        let (a, b) = (ints(n * k), ints(k * m));
        let mut inputs = Arrays::new();
        inputs.insert("a".into(), Value::from(ndarray::Array::from_shape_vec([n, k], a).unwrap().into_dyn()));
        inputs.insert("b".into(), Value::from(ndarray::Array::from_shape_vec([k, m], b).unwrap().into_dyn()));
        inputs.insert("x".into(), f32_array(&[n, k], &mut next));
        inputs.insert("y".into(), f32_array(&[k, m], &mut next));
        agree(PRODUCTS_3D, &inputs, &format!("seed {seed}: [{n}, {m}, {k}]"));
    }
}

#[test]
fn a_select_reduction_is_branch_free_and_vectorised() {
    let source = source_of(SELECT_MIN);
    let entry = run_entry(&source);
    assert!(source.contains("eq_sel_f32(r3, r4, r5)"), "{source}");
    insta::assert_snapshot!("select_min_run", entry);
    let hot = lines_of(&source, "for (int w = 0; w < ");
    let vec = vectorised(&source, "kernel_shapes_select");
    assert!(hot.iter().any(|l| vec.contains(l)), "the accumulators' loop is not vectorised: {hot:?} {vec:?}");
    let (seed, mut next) = rng();
    for n in [0usize, 1, 63, 64, 65, 1000, 1 + (next() % 200_000) as usize] {
        let d = f32_array(&[n], &mut next);
        for m in [0.0f32, 3.5, 100.0] {
            let mut inputs = Arrays::new();
            inputs.insert("d".into(), d.clone());
            inputs.insert("m".into(), Value::from(ndarray::arr0(m).into_dyn()));
            agree(SELECT_MIN, &inputs, &format!("seed {seed}: n {n}, m {m}"));
        }
    }
}

#[test]
fn a_transposing_map_walks_tiles_down_their_columns_vectorised() {
    let source = source_of(TRANSPOSED);
    let entry = run_entry(&source);
    insta::assert_snapshot!("transposed_run", entry);
    assert!(entry.contains(&format!("tile0[{}]", TILE_ROWS * eqfuse_codegen::c::TILE_COLUMNS)), "{entry}");
    // the loop down a tile's column reads neighbours: the compiler vectorises it
    let hot = lines_of(&source, "for (long long i0 = rb; i0 < re; ++i0) {");
    assert_eq!(hot.len(), 2, "{entry}");
    assert!(
        vectorised(&source, "kernel_shapes_tiles").contains(&hot[0]),
        "the loop down a tile's column is not vectorised"
    );
}

#[test]
fn transposing_maps_agree_with_the_reference_at_every_shape() {
    let (seed, mut next) = rng();
    // tiles of TILE_ROWS rows by TILE_COLUMNS inner indices: shapes at, below and past both
    let mut shapes: Vec<(usize, usize)> =
        vec![(1, 1), (1, 9), (9, 1), (8, 256), (256, 8), (257, 9), (9, 257)];
    shapes.extend([(0, 3), (3, 0), (2 * TILE_ROWS + 3, 17), (600, 300)]);
    shapes.extend((0..4).map(|_| (1 + (next() % 700) as usize, 1 + (next() % 700) as usize)));
    for (n, m) in shapes {
        let mut inputs = Arrays::new();
        inputs.insert("a".into(), f32_array(&[n, m], &mut next));
        inputs.insert("b".into(), f32_array(&[n, m], &mut next));
        agree(TRANSPOSED, &inputs, &format!("seed {seed}: [{n}, {m}]"));
        // every point reads past the end of `a` at the last row: the same error as the reference
        let mut inputs = Arrays::new();
        inputs.insert("a".into(), f32_array(&[n, m], &mut next));
        let checked = eqfuse::check(&eqfuse::parse(TRANSPOSED_PAST_END).unwrap()).unwrap();
        let want = eqfuse::run(&checked, Backend::Reference, &inputs).map_err(|e| (e.code, e.message));
        let got = eqfuse::run(&checked, Backend::Cpu, &inputs).map_err(|e| (e.code, e.message));
        assert_eq!(got, want, "seed {seed}: [{n}, {m}] past the end");
    }
}

#[test]
fn a_map_of_sin_walks_blocks_in_two_versions_the_cheap_one_vectorised() {
    let source = source_of(SIN);
    let entry = run_entry(&source);
    insta::assert_snapshot!("sin_map_run", entry);
    assert!(source.contains("eq_sin_f32_m(") && source.contains("eq_trig_big_f32("), "{source}");
    // per walk (flat, rows): the cheap loop, then the exact one where a lane was flagged
    let hot = lines_of(&source, "for (long long iL = jb; iL < je; ++iL) {");
    assert!(hot.len() >= 2 && hot.len().is_multiple_of(2), "{entry}");
    let vec = vectorised(&source, "kernel_shapes_trig");
    for pair in hot.chunks(2) {
        assert!(vec.contains(&pair[0]), "the cheap loop at line {} is not vectorised: {vec:?}", pair[0]);
    }
}

/// The bits of an `f32` value's elements (an `i64` value's, as they are).
fn bits(v: &Value) -> Vec<u64> {
    match v {
        Value::F32(a) => a.iter().map(|x| u64::from(x.to_bits())).collect(),
        Value::I64(a) => a.iter().map(|x| *x as u64).collect(),
        other => panic!("not f32: {other:?}"),
    }
}

/// Runs `src` on the CPU and on the reference interpreter: the same bits (NaNs included).
fn agree_bits(src: &str, inputs: &Arrays, what: &str) {
    let checked = eqfuse::check(&eqfuse::parse(src).unwrap()).unwrap();
    let want = eqfuse::run(&checked, Backend::Reference, inputs).unwrap();
    let got = eqfuse::run(&checked, Backend::Cpu, inputs).unwrap();
    assert_eq!(got.len(), want.len(), "{what}");
    for (name, w) in &want {
        assert_eq!(bits(&got[name]), bits(w), "{what}: output {name}");
    }
}

#[test]
fn trigonometry_with_huge_arguments_in_some_blocks_gives_the_reference_bits() {
    let source = source_of(TRIG);
    assert!(source.contains("_elem_m("), "no two-version walk: {source}");
    assert!(run_entry(&source_of(TRIG_ROWS)).contains("_elem_m("), "no two-version walk by rows");
    let flat = run_entry(&source_of(TRIG_FLAT));
    assert!(flat.contains("for (long long jb = r0 * L; jb < r1 * L; jb += 256)"), "{flat}");
    let (seed, mut next) = rng();
    let huge = [1e30f32, 3e9, f32::NAN, f32::INFINITY, f32::NEG_INFINITY, -0.0, -1e30, 4.3e8];
    let small = |n: usize, next: &mut dyn FnMut() -> u64| -> Vec<f32> {
        (0..n).map(|_| ((next() % 20_001) as f32 - 10_000.0) / 64.0).collect()
    };
    // blocks of 256 points: huge arguments in the second block and in the last, partial one
    let n = 5 * 256 + 37;
    for (k, at) in [vec![300usize, 301, 511, 5 * 256 + 3], vec![], vec![0, n - 1]].into_iter().enumerate() {
        let mut x = small(n, &mut next);
        for (i, &p) in at.iter().enumerate() {
            x[p] = huge[(i + k) % huge.len()];
        }
        x.push(huge[k]);
        let mut inputs = Arrays::new();
        inputs.insert("x".into(), Value::from(ndarray::Array::from_vec(x).into_dyn()));
        agree_bits(TRIG, &inputs, &format!("seed {seed}: case {k}"));
    }
    for (h, v, w) in [(3, 300, 290), (2, 5, 5), (70, 600, 513)] {
        let mut t = small(h * v, &mut next);
        for p in [0, h * v / 2, h * v - 1] {
            t[p] = huge[(next() % huge.len() as u64) as usize];
        }
        let b = small(w, &mut next);
        let mut inputs = Arrays::new();
        inputs.insert("t".into(), Value::from(ndarray::Array::from_shape_vec([h, v], t).unwrap().into_dyn()));
        inputs.insert("b".into(), Value::from(ndarray::Array::from_vec(b).into_dyn()));
        agree_bits(TRIG_ROWS, &inputs, &format!("seed {seed}: [{h}, {v}], space [{h}, {w}]"));
        let mut p = small(h * v, &mut next);
        p[h * v / 3] = huge[(next() % huge.len() as u64) as usize];
        let mut inputs = Arrays::new();
        inputs.insert("p".into(), Value::from(ndarray::Array::from_shape_vec([h, v], p).unwrap().into_dyn()));
        agree_bits(TRIG_FLAT, &inputs, &format!("seed {seed}: flat [{h}, {v}]"));
    }
}

#[test]
fn reductions_of_trigonometry_walk_blocks_in_two_versions_and_give_the_reference_bits() {
    let source = source_of(TRIG_REDUCE);
    assert!(source.contains("_elem_m(") && source.contains("xb0["), "no two-version reduction: {source}");
    let (seed, mut next) = rng();
    let huge = [1e30f32, 3e9, f32::NAN, f32::INFINITY, f32::NEG_INFINITY, -0.0, -1e30, 4.3e8];
    let small = |n: usize, next: &mut dyn FnMut() -> u64| -> Vec<f32> {
        (0..n).map(|_| ((next() % 20_001) as f32 - 10_000.0) / 64.0).collect()
    };
    // rows shorter than the accumulators, rows of several blocks with a partial last one
    for (h, v, n) in [(3, 300, 7), (2, 5, 5 * 256 + 37), (70, 600, 64), (1, 5 * 256 + 37, 256), (40, 20, 1)] {
        for with_huge in [false, true] {
            let mut t = small(h * v, &mut next);
            let mut x = small(n, &mut next);
            if with_huge {
                for p in [0, h * v / 2, h * v - 1, (next() % (h * v) as u64) as usize] {
                    t[p] = huge[(next() % huge.len() as u64) as usize];
                }
                x[(next() % n as u64) as usize] = huge[(next() % huge.len() as u64) as usize];
            }
            let mut inputs = Arrays::new();
            inputs.insert(
                "t".into(),
                Value::from(ndarray::Array::from_shape_vec([h, v], t).unwrap().into_dyn()),
            );
            inputs.insert("x".into(), Value::from(ndarray::Array::from_vec(x).into_dyn()));
            agree_bits(TRIG_REDUCE, &inputs, &format!("seed {seed}: [{h}, {v}], [{n}], huge {with_huge}"));
        }
    }
}

/// A row sum of `exp` that also writes its elements (the softmax's fused kernel), and a row
/// maximum: the sums' elements are multiples of 1/8, their sums exact in any order.
const EXP_ROWS: &str = "input a : f32[n, m]
let e = generate [n, m] (\\i j -> floor (exp a[i, j] * 8.0) / 8.0)
output z = reduce (+) 0 e
output mx = reduce max (-inf) (generate [n, m] (\\i j -> exp (a[i, j] - 0.5)))
output e
";

#[test]
fn row_reductions_of_math_compute_blocks_before_folding_and_give_the_reference_bits() {
    let source = source_of(EXP_ROWS);
    let entry = run_entry(&source);
    assert!(entry.contains("xb") && entry.contains("j += 1024"), "no buffered walk: {entry}");
    // the block's points in one loop, vectorised
    let points = lines_of(&source, "for (long long iL = jb; iL < jb + 1024; ++iL) {");
    assert_eq!(points.len(), 1, "{entry}");
    let vec = vectorised(&source, "kernel_shapes_buffered");
    assert!(vec.contains(&points[0]), "the block's loop at line {} is not vectorised: {vec:?}", points[0]);
    // a sum of plain reads keeps the one-version walk
    assert!(!run_entry(&source_of(COLUMN_SUMS)).contains("j += 1024"));
    let (seed, mut next) = rng();
    // rows shorter than the accumulators, than a block, of several blocks and a remainder
    for (n, m) in [(3, 20), (2, 1000), (5, 1024), (3, 3 * 1024 + 64 * 3 + 17), (70, 1100)] {
        let a: Vec<f32> = (0..n * m).map(|_| ((next() % 20_001) as f32 - 10_000.0) / 4000.0).collect();
        let mut inputs = Arrays::new();
        inputs.insert("a".into(), Value::from(ndarray::Array::from_shape_vec([n, m], a).unwrap().into_dyn()));
        agree_bits(EXP_ROWS, &inputs, &format!("seed {seed}: [{n}, {m}]"));
    }
}

#[test]
fn a_loop_in_an_element_function_walks_blocks_in_lockstep_vectorised() {
    let source = source_of(LOCKSTEP);
    let entry = run_entry(&source);
    insta::assert_snapshot!("lockstep_run", entry);
    // two versions (sin): each step over a whole block, the cheap one vectorised
    let steps = lines_of(&source, "for (long long q = 0; q < 256; ++q) {");
    assert_eq!(steps.len(), 2, "{entry}");
    let vec = vectorised(&source, "kernel_shapes_lockstep");
    assert!(vec.contains(&steps[0]), "the cheap step at line {} is not vectorised: {vec:?}", steps[0]);
    for src in [LOCKSTEP_ROWS, LOCKSTEP_TUPLE] {
        assert!(run_entry(&source_of(src)).contains("_step("), "no lockstep walk: {src}");
    }
}

#[test]
fn loops_walked_in_lockstep_give_the_reference_bits() {
    let (seed, mut next) = rng();
    let huge = [1e30f32, 3e9, f32::NAN, f32::INFINITY, f32::NEG_INFINITY, -0.0, -1e30, 4.3e8];
    let small = |n: usize, next: &mut dyn FnMut() -> u64| -> Vec<f32> {
        (0..n).map(|_| ((next() % 20_001) as f32 - 10_000.0) / 64.0).collect()
    };
    // blocks of 256 points: whole ones, a partial last one, fewer points than a block
    for n in [1, 255, 256, 5 * 256 + 37] {
        for with_huge in [false, true] {
            let mut x = small(n, &mut next);
            if with_huge {
                x[(next() % n as u64) as usize] = huge[(next() % huge.len() as u64) as usize];
            }
            let mut inputs = Arrays::new();
            inputs.insert("x".into(), Value::from(ndarray::Array::from_vec(x).into_dyn()));
            agree_bits(LOCKSTEP, &inputs, &format!("seed {seed}: [{n}], huge {with_huge}"));
            inputs.insert("c".into(), Value::from(ndarray::arr0(0.375f32).into_dyn()));
            agree_bits(LOCKSTEP_TUPLE, &inputs, &format!("seed {seed}: tuple [{n}]"));
        }
    }
    for (h, w, k) in [(3, 300, 25i64), (2, 5, 0), (70, 600, 3), (1, 257, -2)] {
        let mut inputs = Arrays::new();
        let t = small(h * w, &mut next);
        inputs.insert("t".into(), Value::from(ndarray::Array::from_shape_vec([h, w], t).unwrap().into_dyn()));
        inputs.insert("k".into(), Value::from(ndarray::arr0(k).into_dyn()));
        agree_bits(LOCKSTEP_ROWS, &inputs, &format!("seed {seed}: [{h}, {w}], {k} steps"));
    }
}

/// An argmin written as a reduction over the group (value, index) whose operator skips NaNs
/// (a comparison with NaN is false), the same per row, and an operator that keeps a NaN
/// from either side (`!(b >= a)`): it does not commute with NaNs (nor associate with them:
/// the reduction's contract asks it to, so only the shape of its code is checked).
const GROUP_ARGMIN: &str = "input d : f32[n]
let (m, i) = reduce (\\(a, i) (b, j) -> if b < a || (b == a && j < i) then (b, j) else (a, i)) (inf, n) (d, iota n)
output m
output i
";
const GROUP_ARGMIN_ROWS: &str = "input t : f32[r, c]
let (m, i) = reduce (\\(a, i) (b, j) -> if b < a || (b == a && j < i) then (b, j) else (a, i)) (inf, c) (t, generate [r, c] (\\p q -> q))
output m
output i
";
const GROUP_KEEPS_NAN: &str = "input d : f32[n]
let (m, i) = reduce (\\(a, i) (b, j) -> if !(b >= a) || (b == a && j < i) then (b, j) else (a, i)) (inf, n) (d, iota n)
output m
output i
";

/// An array of `n` multiples of 1/4 in `[-2, 2)` (ties), with NaNs of both signs, `±0.0`
/// and infinities at random places.
fn with_nans(shape: &[usize], next: &mut impl FnMut() -> u64) -> Value {
    let special = [f32::NAN, -f32::NAN, 0.0, -0.0, f32::INFINITY, f32::NEG_INFINITY];
    let n = shape.iter().product();
    let v: Vec<f32> = (0..n)
        .map(|_| match next() % 8 {
            0 => special[(next() % special.len() as u64) as usize],
            _ => (next() % 16) as f32 / 4.0 - 2.0,
        })
        .collect();
    Value::from(ndarray::Array::from_shape_vec(shape.to_vec(), v).unwrap().into_dyn())
}

#[test]
fn a_group_argmin_that_skips_nans_folds_into_independent_accumulators_and_agrees_with_the_reference() {
    let interleaved = |src: &str| run_entry(&source_of(src)).contains("for (int w = 0; w < ");
    assert!(interleaved(GROUP_ARGMIN), "{}", run_entry(&source_of(GROUP_ARGMIN)));
    assert!(interleaved(GROUP_ARGMIN_ROWS), "{}", run_entry(&source_of(GROUP_ARGMIN_ROWS)));
    assert!(!interleaved(GROUP_KEEPS_NAN), "{}", run_entry(&source_of(GROUP_KEEPS_NAN)));
    let (seed, mut next) = rng();
    for n in [0usize, 1, 5, 64, 65, 1000, 1 + (next() % 300_000) as usize] {
        let mut inputs = Arrays::new();
        inputs.insert("d".into(), with_nans(&[n], &mut next));
        agree_bits(GROUP_ARGMIN, &inputs, &format!("seed {seed}: n {n}"));
    }
    for (r, c) in [(1, 1), (3, 7), (4, 200), (2, 1 + (next() % 5000) as usize)] {
        let mut inputs = Arrays::new();
        inputs.insert("t".into(), with_nans(&[r, c], &mut next));
        agree_bits(GROUP_ARGMIN_ROWS, &inputs, &format!("seed {seed}: [{r}, {c}]"));
    }
}

const UNIFORM_IF: &str = "input xs : f32[n]
input flag : bool
output y = map (\\x -> if flag then x * 2.5 else x + 1.5) xs
";

/// A branch the same at every element (`Func::uniform_ifs`) is emitted as a branch, not a
/// select of both arms: gcc takes it out of the loop over elements and vectorises a loop per
/// arm, so one arm runs per element, as the cost model counts.
#[test]
fn a_branch_the_same_at_every_element_is_taken_out_of_the_vectorised_loop() {
    // unfused: the optimiser would take the branch out of the map (`hoist-unswitch`)
    let unfused = OptimizeOptions { no_fusion: true, ..OptimizeOptions::default() };
    let plan = plan_with(UNIFORM_IF, &unfused);
    let source = source_of_plan(&plan);
    let start = source.find("bool eq_k0_elem(").unwrap();
    let elem = &source[start..start + source[start..].find("\n}\n").unwrap()];
    assert!(elem.contains("if (r") && !elem.contains("eq_sel_f32"), "{elem}");
    let hot = lines_of(&source, "for (; j < j1; ++j)");
    let vec = vectorised(&source, "kernel_shapes_uniform_if");
    assert!(hot.iter().any(|l| vec.contains(l)), "the loop over elements is not vectorised: {hot:?} {vec:?}");
    let (seed, mut next) = rng();
    for n in [0usize, 1, 17, 1000, 1 + (next() % 200_000) as usize] {
        for flag in [false, true] {
            let mut inputs = Arrays::new();
            inputs.insert("xs".into(), f32_array(&[n], &mut next));
            inputs.insert("flag".into(), Value::from(ndarray::arr0(flag).into_dyn()));
            // the unfused plan (its kernel holds the branch) and the optimised one
            let checked = eqfuse::check(&eqfuse::parse(UNIFORM_IF).unwrap()).unwrap();
            let want = eqfuse::run(&checked, Backend::Reference, &inputs).unwrap();
            let got = eqfuse::backend::run_plan(&plan, &checked, Backend::Cpu, &inputs).unwrap();
            assert_eq!(got, want, "seed {seed}: n = {n}, flag = {flag}, unfused");
            agree(UNIFORM_IF, &inputs, &format!("seed {seed}: n = {n}, flag = {flag}"));
        }
    }
}
