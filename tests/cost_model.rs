//! The cost model's terms (`lower/src/model.rs`): what each access pattern is charged, and
//! that a predicted time is its counted work priced term by term (the form
//! `benches/model_fit.py` and `eqfuse calibrate` fit rates to).

#![allow(clippy::unwrap_used)]

use eqfuse::{CostParams, OptimizeOptions};
use eqfuse_lower::model::{input_extents, plan_cost, Extents, Work};
use std::collections::HashMap;

/// The work of the optimised plan of `src` at `sizes`, priced with the CPU defaults.
fn work(src: &str, sizes: &[(&str, u64)]) -> Work {
    work_with(src, sizes, &OptimizeOptions::default())
}

/// [`work`] of the plan `opts` make.
fn work_with(src: &str, sizes: &[(&str, u64)], opts: &OptimizeOptions) -> Work {
    let prog = eqfuse::parse(src).unwrap_or_else(|e| panic!("{e}\n{src}"));
    let o = eqfuse::optimize(&prog, opts).unwrap_or_else(|e| panic!("{e}\n{src}"));
    let sizes: HashMap<String, u64> = sizes.iter().map(|(k, v)| (k.to_string(), *v)).collect();
    let checked = eqfuse::check(&prog).unwrap();
    let inputs = input_extents(&checked.inputs, &sizes);
    plan_cost(&o.result.plan, &CostParams::cpu_default(), Extents { sizes: &sizes, inputs: &inputs }).work
}

#[test]
fn a_read_at_an_index_read_from_data_is_a_gather_when_its_array_is_larger_than_a_cache() {
    // the table is a scan's result (materialised, its extent known to the model)
    let src = "input s : f32[m]\ninput idx : i64[n]\nlet t = scan (+) 0 s\noutput y = map (\\i -> t[i]) idx";
    // 16 MiB of table: past a core's cache
    assert_eq!(work(src, &[("m", 1 << 22), ("n", 1000)]).gather, 1000.0);
    // 4 KiB: the table stays in cache, the reads cost their bytes and arithmetic only
    assert_eq!(work(src, &[("m", 1024), ("n", 1000)]).gather, 0.0);
    // an input's extent is its declared shape at the sizes: the same table as an input
    let input = "input t : f32[m]\ninput idx : i64[n]\noutput y = map (\\i -> t[i]) idx";
    assert_eq!(work(input, &[("m", 1 << 22), ("n", 1000)]).gather, 1000.0);
    assert_eq!(work(input, &[("m", 1024), ("n", 1000)]).gather, 0.0);
}

#[test]
fn an_input_is_read_at_its_declared_extent() {
    // 8M elements read once: the bytes are the input's, not the default size's
    let sum = "input xs : f32[n]\noutput s = reduce (+) 0 xs";
    let w = work(sum, &[("n", 1 << 23)]);
    assert!((w.bytes - 4.0 * (1 << 23) as f64).abs() < 64.0, "{w:?}");
    // column sums of a 3000 × 3000 matrix read all of it
    let cols = "input a : f32[r, c]\noutput s = sum (transpose a)";
    let w = work(cols, &[("r", 3000), ("c", 3000)]);
    assert!(w.bytes >= 4.0 * 9e6, "{w:?}");
    // a vector broadcast over a matrix is read once, at its own extent
    let bcast = "input a : f32[n, n]\ninput v : f32[n]\noutput y = generate [n, n] (\\i j -> a[i, j] * v[j])";
    let w = work(bcast, &[("n", 2048)]);
    let (matrix, out, vector) = (4.0 * 2048.0 * 2048.0, 4.0 * 2048.0 * 2048.0, 4.0 * 2048.0);
    assert!((w.bytes - (matrix + out + vector)).abs() < 64.0, "{w:?}");
}

#[test]
fn a_stencil_reads_its_array_once_and_two_walks_read_it_twice() {
    let n = 1u64 << 22;
    let (array, out) = (4.0 * n as f64, 4.0 * n as f64);
    // three neighbours of one point: the same lines of memory, brought in once
    let blur = "input a : f32[n]\noutput b = generate [n] (\\i -> a[clamp (i - 1) 0 (n - 1)] + a[i] + a[min (i + 1) (n - 1)])";
    let w = work(blur, &[("n", n)]);
    assert!((w.bytes - (array + out)).abs() < 64.0, "{w:?}");
    // a shift by an input's value: another walk of the array, however far
    let shifted =
        "input a : f32[n]\ninput k : i64\noutput b = generate [n] (\\i -> a[i] + a[min (i + k) (n - 1)])";
    let w = work(shifted, &[("n", n)]);
    assert!((w.bytes - (2.0 * array + out)).abs() < 64.0, "{w:?}");
    // a forward and a backward walk: two streams of the array
    let mirror = "input a : f32[n]\noutput b = generate [n] (\\i -> a[i] + a[n - 1 - i])";
    let w = work(mirror, &[("n", n)]);
    assert!((w.bytes - (2.0 * array + out)).abs() < 64.0, "{w:?}");
}

#[test]
fn reads_at_indices_computed_from_the_space_are_not_gathers() {
    // a clamped stencil and a shifted read: the index is arithmetic on the point's own
    let stencil = "input a : f32[n]\noutput y = generate [n] (\\i -> a[clamp (i - 1) 0 (n - 1)] + a[i] + a[clamp (i + 1) 0 (n - 1)])";
    let w = work(stencil, &[("n", 1 << 22)]);
    assert_eq!((w.gather, w.strided), (0.0, 0.0), "{w:?}");
    assert!(w.int > 0.0, "the clamps are integer work: {w:?}");
}

#[test]
fn a_transpose_walks_across_rows_once_per_point_however_many_arrays_it_reads() {
    let one = work("input a : f32[n, m]\noutput t = transpose a", &[("n", 100), ("m", 200)]);
    assert_eq!(one.strided, 20_000.0, "{one:?}");
    let two = work(
        "input a : f32[n, m]\ninput b : f32[n, m]\noutput t = generate [m, n] (\\j i -> a[i, j] + b[i, j])",
        &[("n", 100), ("m", 200)],
    );
    assert_eq!(two.strided, 20_000.0, "{two:?}");
    // a reduction across rows is folded by the column walk: no walk across rows is paid
    let sums = work(
        "input a : f32[r, c]\noutput s = reduce (+) 0 (generate [c, r] (\\j i -> a[i, j]))",
        &[("r", 100), ("c", 200)],
    );
    assert_eq!(sums.strided, 0.0, "{sums:?}");
}

#[test]
fn scans_filters_and_permutes_pay_their_access_per_element() {
    let n = [("n", 5000)];
    assert_eq!(work("input xs : f32[n]\noutput s = scan (+) 0 xs", &n).scan, 5000.0);
    assert_eq!(work("input xs : f32[n]\noutput k = filter (\\x -> x > 0.5) xs", &n).compact, 5000.0);
    let hist = "input bins : i64[n]\noutput h = permute (+) (fill [16] 0) (\\i -> bins[i]) (fill [n] 1)";
    assert_eq!(work(hist, &n).scatter, 5000.0);
}

#[test]
fn f64_transcendental_functions_are_counted_apart_from_f32_ones() {
    let f32w = work("input xs : f32[n]\noutput y = map (\\x -> sin x + exp x) xs", &[("n", 100)]);
    let f64w = work("input xs : f64[n]\noutput y = map (\\x -> sin x + exp x) xs", &[("n", 100)]);
    assert_eq!((f32w.transcendental, f32w.transcendental_f64), (200.0, 0.0));
    assert_eq!((f64w.transcendental, f64w.transcendental_f64), (0.0, 200.0));
}

/// Every program of the examples and the conformance suite: the plan's predicted time is
/// its work priced term by term, and the kernels' work adds up to the plan's when no loop
/// or `if` repeats or chooses among them.
#[test]
fn a_predicted_time_is_its_work_priced_term_by_term() {
    let mut files: Vec<std::path::PathBuf> = std::fs::read_dir("examples")
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "eqf"))
        .collect();
    for d in std::fs::read_dir("tests/conformance").unwrap() {
        let p = d.unwrap().path().join("program.eqf");
        if p.exists() {
            files.push(p);
        }
    }
    files.sort();
    let mut checked = 0;
    for p in [CostParams::cpu_default(), CostParams::gpu_default()] {
        for f in &files {
            let src = std::fs::read_to_string(f).unwrap();
            let Ok(prog) = eqfuse::parse(&src) else { continue };
            let Ok(o) = eqfuse::optimize(&prog, &OptimizeOptions::default()) else { continue };
            for plan in [&o.result.plan, &o.result.unfused_plan] {
                let c = plan_cost(plan, &p, Extents { sizes: &HashMap::new(), inputs: &HashMap::new() });
                let priced = c.work.seconds(&p);
                assert!(
                    (c.total - priced).abs() <= 1e-9 * c.total.abs().max(1e-12),
                    "{}: {c:?}",
                    f.display()
                );
                for k in &c.kernels {
                    let s = k.work.seconds(&p);
                    assert!((k.seconds - s).abs() <= 1e-9 * s.abs().max(1e-12), "{}: {k:?}", f.display());
                }
                let straight = plan
                    .steps
                    .iter()
                    .all(|s| !matches!(s, eqfuse_ir::plan::Step::Loop(_) | eqfuse_ir::plan::Step::If { .. }));
                if straight {
                    let mut sum = Work::default();
                    for k in &c.kernels {
                        sum.add(&k.work, 1.0);
                    }
                    let (a, b) = (sum.seconds(&p), c.total);
                    assert!((a - b).abs() <= 1e-9 * b.abs().max(1e-12), "{}: {a} vs {b}", f.display());
                }
                checked += 1;
            }
        }
    }
    assert!(checked > 50, "only {checked} plans checked");
}

#[test]
fn a_program_with_a_loop_prices_its_inputs_at_their_declared_extents() {
    // the loop path assembles its pieces' plans and prices the whole at the program's
    // signature: the reduction of `xs` reads 8M elements, not the default 1M
    let src = "input xs : f32[n]\ninput steps : i64\nlet (y, k) = loop (v, c) = (0.0, 0) for s < steps do (v + 1.0, c + 1)\noutput s = reduce (+) 0 xs + y\noutput k";
    let prog = eqfuse::parse(src).unwrap_or_else(|e| panic!("{e}\n{src}"));
    let mut opts = OptimizeOptions::default();
    opts.cost.sizes.insert("n".to_string(), 1 << 23);
    let o = eqfuse::optimize(&prog, &opts).unwrap_or_else(|e| panic!("{e}\n{src}"));
    for (what, cost) in [("optimised", &o.result.cost), ("unfused", &o.result.unfused_cost)] {
        assert!(cost.work.bytes >= 4.0 * (1 << 23) as f64, "{what}: {:?}", cost.work);
    }
}

#[test]
fn a_gather_in_a_row_block_reads_its_array_from_memory() {
    // the first kernel of the row block reads `a` at its own point, the second gathers from
    // all of it: the block keeps its own rows in cache, not the 8 MiB array
    let block = "input a : i64[n, n]
output o = map (\\x y -> a[clamp y 0 (n - 1), clamp x 0 (n - 1)]) (map (\\v -> v + 1) a) a";
    let prog = eqfuse::parse(block).unwrap();
    let unfused = OptimizeOptions { no_fusion: true, ..OptimizeOptions::default() };
    let o = eqfuse::optimize(&prog, &unfused).unwrap();
    assert!(o.explain_with(false).contains("row block"), "{}", o.explain_with(false));
    let sizes: HashMap<String, u64> = HashMap::from([("n".to_string(), 1024)]);
    let inputs = input_extents(&eqfuse::check(&prog).unwrap().inputs, &sizes);
    let w = plan_cost(&o.result.plan, &CostParams::cpu_default(), Extents { sizes: &sizes, inputs: &inputs })
        .work;
    // the walk of `a` (once: the second kernel finds its rows in cache), the gather's
    // reads of `a`, the output: three arrays through memory
    let array = 8.0 * 1024.0 * 1024.0;
    assert!((w.bytes - 3.0 * array).abs() < 64.0, "{w:?}");
}

#[test]
fn a_read_at_one_index_costs_one_element_from_memory_wherever_its_kernel_is_in_a_block() {
    // the same two kernels in one row block, in either order: the map's read of `b` at one
    // index is one element from memory, whether or not the block's other kernel read `b`
    let head = "input b : f64[n, n]\ninput m : i64\n";
    let body = "generate [n, n] (\\i j -> if m == 0 then b[i, j] else b[clamp m 0 (n - 1), 0])";
    let first = format!("{head}output g = {body}\noutput t = transpose b");
    let second = format!("{head}output t = transpose b\noutput g = {body}");
    let unfused = OptimizeOptions { no_fusion: true, ..OptimizeOptions::default() };
    let sizes: HashMap<String, u64> = HashMap::from([("n".to_string(), 1024)]);
    let price = |src: &str| {
        let prog = eqfuse::parse(src).unwrap();
        let o = eqfuse::optimize(&prog, &unfused).unwrap();
        assert!(o.explain_with(false).contains("row block"), "{}", o.explain_with(false));
        let inputs = input_extents(&eqfuse::check(&prog).unwrap().inputs, &sizes);
        plan_cost(&o.result.plan, &CostParams::cpu_default(), Extents { sizes: &sizes, inputs: &inputs }).work
    };
    let (a, b) = (price(&first), price(&second));
    assert_eq!((a.bytes, a.cached), (b.bytes, b.cached), "{a:?}\n{b:?}");
}

/// An `if` whose condition is the same at every point is taken out of the loop by the C
/// compiler (`Func::uniform_ifs`, emitted as a branch): one arm runs per element, and the
/// model counts the dearer arm's operations and the decision once. One on the element
/// computes both arms and selects: both count, and its comparison per element.
#[test]
fn an_if_the_same_at_every_point_counts_its_dearer_arm() {
    let n = 1u64 << 20;
    // unfused: the optimiser would take the branch out of the map (`hoist-unswitch`)
    let unfused = OptimizeOptions { no_fusion: true, ..OptimizeOptions::default() };
    let work = |src: &str, sizes: &[(&str, u64)]| work_with(src, sizes, &unfused);
    let uniform =
        "input xs : f32[n]\ninput flag : bool\noutput y = map (\\x -> if flag then exp x else x + 1.0) xs";
    let w = work(uniform, &[("n", n)]);
    assert_eq!((w.transcendental, w.flop, w.compare), (n as f64, 0.0, 1.0), "{w:?}");
    let varying = "input xs : f32[n]\noutput y = map (\\x -> if x > 0.0 then exp x else x + 1.0) xs";
    let w = work(varying, &[("n", n)]);
    assert_eq!((w.transcendental, w.flop), (n as f64, n as f64), "{w:?}");
    assert!(w.compare >= n as f64, "{w:?}");
}
