//! Property test: reductions and scans over groups (a head lane and its parts) generated for
//! CUDA and run on the emulator agree with the plan interpreter bit for bit: full and row
//! reductions (a warp per row, a block per row), inclusive and exclusive scans over a 1-d
//! space (one pass, look-back across tiles) and along rows, with operators that do not
//! commute (argmin's first index on ties, composed affine maps, segmented scans over a
//! `bool` flag), beside ordinary reductions in one kernel; at sizes 0, 1, 63, 64, 65, 1000,
//! 100000 and random ones, rows of 0, 1 and odd lengths, on several block sizes. Fresh
//! seeds, printed. And a reduction over a group in a row block (a hand-made plan: the
//! optimiser does not put groups in row blocks yet).

use super::emu;
use crate::CudaOptions;
use eqfuse_ir::check::check;
use eqfuse_ir::parse::parse;
use eqfuse_ir::plan::fixtures::{group_affine, group_argmin};
use eqfuse_ir::plan::{Block, Func, Inst, Kernel, KernelKind, Lane, LaneOp, Origin, Plan, Step, ValueInfo};
use eqfuse_ir::types::ElemType;
use eqfuse_ir::value::{compare, Tolerance, Value};
use eqfuse_optimize::{optimize, OptimizeOptions};
use indexmap::IndexMap;
use ndarray::{ArrayD, IxDyn};

type Named<T> = IndexMap<String, T>;

/// A xorshift generator from a fresh seed (printed).
struct Rng(u64);

impl Rng {
    fn fresh(what: &str) -> Rng {
        let seed = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(1, |d| d.as_nanos() as u64)
            | 1;
        eprintln!("{what}: seed {seed}");
        Rng(seed)
    }
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

/// Few distinct values, so that argmin and argmax meet many ties.
fn f32s(rng: &mut Rng, shape: &[usize]) -> Value {
    let n = shape.iter().product();
    let data: Vec<f32> = (0..n).map(|_| rng.below(5) as f32 - 2.0).collect();
    Value::F32(ArrayD::from_shape_vec(IxDyn(shape), data).unwrap())
}

fn i64s(rng: &mut Rng, shape: &[usize]) -> Value {
    let n = shape.iter().product();
    let data: Vec<i64> = (0..n).map(|_| rng.below(7) as i64 - 3).collect();
    Value::I64(ArrayD::from_shape_vec(IxDyn(shape), data).unwrap())
}

/// Flags set about one time in `1 / p`.
fn bools(rng: &mut Rng, shape: &[usize], p: u64) -> Value {
    let n = shape.iter().product();
    let data: Vec<bool> = (0..n).map(|_| rng.below(p) == 0).collect();
    Value::Bool(ArrayD::from_shape_vec(IxDyn(shape), data).unwrap())
}

/// Rank 1: argmin and argmax beside a sum and a reduction of composed affine maps (one
/// kernel, when fused, of ordinary and group reductions).
const REDUCE_1D: &str = "input xs : f32[n]
input ys : i64[n]
output i = argmin xs
output j = argmax xs
output s = reduce (+) 0 ys
let (m, k) = reduce (\\(m1, c1) (m2, c2) -> (m1 * m2, c1 * m2 + c2)) (1, 0) (ys, map (\\y -> y + 2) ys)
output m
output k
";

/// Rank 1, possibly empty: a reduction of composed affine maps alone.
const AFFINE_1D: &str = "input ys : i64[n]
let (m, k) = reduce (\\(m1, c1) (m2, c2) -> (m1 * m2, c1 * m2 + c2)) (1, 0) (ys, map (\\y -> y + 2) ys)
output m
output k
";

/// Rank 1 scans: a segmented sum over `(flag, value)` and a segmented running minimum with
/// its first index and a count (width 4).
const SCAN_1D: &str = "input fl : bool[n]
input ys : i64[n]
input xs : f32[n]
let (f, v) = SCAN (\\(f1, v1) (f2, v2) -> (f1 || f2, if f2 then v2 else v1 + v2)) (false, 0) (fl, ys)
output f
output v
let (g, w, i, c) = SCAN (\\(f1, v1, i1, k1) (f2, v2, i2, k2) -> if f2 then (true, v2, i2, k2) else (if v2 < v1 || (v2 == v1 && i2 < i1) then (f1, v2, i2, k1 + k2) else (f1, v1, i1, k1 + k2))) (false, inf, n, 0) (fl, xs, iota n, map (\\x -> 1) xs)
output g
output w
output i
output c
";

/// Rows: composed affine maps per row and a segmented sum along rows (rows may be empty).
const ROWS: &str = "input fl : bool[r, c]
input a : i64[r, c]
let (m, k) = reduce (\\(m1, c1) (m2, c2) -> (m1 * m2, c1 * m2 + c2)) (1, 0) (a, map (\\y -> y + 1) a)
output m
output k
output t = reduce (+) 0 a
let (f, v) = SCAN (\\(f1, v1) (f2, v2) -> (f1 || f2, if f2 then v2 else v1 + v2)) (false, 0) (fl, a)
output f
output v
";

/// Rows of at least one element: argmin and argmax per row.
const ROWS_ARG: &str = "input xs : f32[r, c]
output i = argmin xs
output j = argmax xs
";

struct Case {
    plan: Plan,
    ins: Named<Value>,
    sizes: Named<i64>,
    what: String,
}

/// The optimised plan of `src` (`SCAN` made `scan` or `scan_exclusive`), which must hold a
/// reduction or scan over a group; its sizes bound to `ins`.
fn program(src: &str, exclusive: bool, ins: Named<Value>, what: String) -> Case {
    let src = src.replace("SCAN", if exclusive { "scan_exclusive" } else { "scan" });
    let checked = check(&parse(&src).unwrap()).unwrap_or_else(|e| panic!("{e}\n{src}"));
    let plan = optimize(&checked, &OptimizeOptions::default()).unwrap().plan;
    assert!(has_group(&plan), "{what}: no group in\n{plan}");
    let sizes = eqfuse_ir::bind::bind_inputs(&checked, &ins, &eqfuse_ir::Limits::default()).unwrap().sizes;
    Case { plan, ins, sizes, what }
}

fn has_group(plan: &Plan) -> bool {
    plan.kernels().iter().any(|k| k.lanes.iter().any(|l| matches!(l.op, LaneOp::Part)))
}

/// `plan` with every scan made exclusive or inclusive.
fn with_exclusive(mut plan: Plan, exclusive: bool) -> Plan {
    for s in &mut plan.steps {
        if let Step::Kernel(k) = s {
            for l in &mut k.lanes {
                if let LaneOp::Scan { exclusive: e, .. } = &mut l.op {
                    *e = exclusive;
                }
            }
        }
    }
    plan
}

fn named<T>(items: Vec<(&str, T)>) -> Named<T> {
    items.into_iter().map(|(k, v)| (k.to_string(), v)).collect()
}

/// Lengths of a 1-d space: the edges of a warp and of a tile, and random ones.
fn lengths(rng: &mut Rng) -> Vec<usize> {
    let mut out = vec![0, 1, 63, 64, 65, 1000, 100_000];
    out.push(rng.below(5000) as usize + 1);
    out.push(rng.below(70_000) as usize + 1);
    out
}

/// Row shapes: empty rows, rows of one element, odd lengths, rows longer than a warp's
/// share (a block per row) and than a block.
fn row_shapes(rng: &mut Rng) -> Vec<(usize, usize)> {
    let mut out = vec![(3, 0), (0, 4), (5, 1), (7, 63), (2, 64), (3, 65), (2, 1500)];
    out.push((rng.below(40) as usize + 1, rng.below(300) as usize + 1));
    out.push((rng.below(3) as usize + 1, rng.below(3000) as usize + 1025));
    out
}

fn cases(rng: &mut Rng) -> Vec<Case> {
    let mut out = Vec::new();
    for n in lengths(rng) {
        if n == 0 {
            // argmin of nothing is an error
            let ins = named(vec![("ys", i64s(rng, &[n]))]);
            out.push(program(AFFINE_1D, false, ins, format!("affine reduce [{n}]")));
        } else {
            let ins = named(vec![("xs", f32s(rng, &[n])), ("ys", i64s(rng, &[n]))]);
            out.push(program(REDUCE_1D, false, ins, format!("reduce [{n}]")));
        }
        for exclusive in [false, true] {
            let p = [2, 7, 1000][rng.below(3) as usize];
            let ins =
                named(vec![("fl", bools(rng, &[n], p)), ("ys", i64s(rng, &[n])), ("xs", f32s(rng, &[n]))]);
            out.push(program(SCAN_1D, exclusive, ins, format!("scan excl={exclusive} [{n}] flags 1/{p}")));
        }
    }
    for (r, c) in row_shapes(rng) {
        let sizes = named(vec![("r", r as i64), ("c", c as i64)]);
        for exclusive in [false, true] {
            let ins = named(vec![("fl", bools(rng, &[r, c], 5)), ("a", i64s(rng, &[r, c]))]);
            out.push(program(ROWS, exclusive, ins, format!("rows excl={exclusive} [{r}, {c}]")));
            // the fixtures: a group of (f32, i64) and one of (i64, i64), as the plan gives them
            let ins = named(vec![("xs", f32s(rng, &[r, c]))]);
            let plan = with_exclusive(group_argmin(true), exclusive);
            let what = format!("fixture argmin scan excl={exclusive} [{r}, {c}]");
            out.push(Case { plan, ins, sizes: sizes.clone(), what });
            let ins = named(vec![("a", i64s(rng, &[r, c])), ("b", i64s(rng, &[r, c]))]);
            let what = format!("fixture affine scan excl={exclusive} [{r}, {c}]");
            out.push(Case { plan: group_affine(true, exclusive), ins, sizes: sizes.clone(), what });
        }
        let ins = named(vec![("xs", f32s(rng, &[r, c]))]);
        let what = format!("fixture argmin reduce [{r}, {c}]");
        out.push(Case { plan: group_argmin(false), ins, sizes: sizes.clone(), what });
        let ins = named(vec![("a", i64s(rng, &[r, c])), ("b", i64s(rng, &[r, c]))]);
        let what = format!("fixture affine reduce [{r}, {c}]");
        out.push(Case { plan: group_affine(false, false), ins, sizes, what });
        if c > 0 {
            let ins = named(vec![("xs", f32s(rng, &[r, c]))]);
            out.push(program(ROWS_ARG, false, ins, format!("argmin rows [{r}, {c}]")));
        }
    }
    out
}

#[test]
fn groups_on_the_emulator_agree_with_the_interpreter() {
    let Some(emu) = emu() else { return };
    let mut rng = Rng::fresh("groups_on_the_emulator_agree_with_the_interpreter");
    let cases = cases(&mut rng);
    let exact = Tolerance { rtol: 0.0, atol: 0.0, mismatch_fraction: 0.0 };
    let mut problems = Vec::new();
    let mut ran = 0;
    // a warp per block, and a larger block drawn at random
    let big = [64, 128, 256, 1024][rng.below(4) as usize];
    for block_size in [32, big] {
        let opts = CudaOptions { block_size, disk_cache: false, ..CudaOptions::default() };
        for case in &cases {
            let what = format!("{} (block {block_size})", case.what);
            let want = eqfuse_ir::plan::eval::eval(&case.plan, &case.ins, &case.sizes)
                .unwrap_or_else(|e| panic!("{what}: the interpreter fails: {e}"));
            let got = match crate::runtime::run(&emu, &case.plan, &case.ins, &case.sizes, &opts) {
                Ok(g) => g,
                Err(e) => {
                    problems.push(format!("{what}: {e}"));
                    continue;
                }
            };
            ran += 1;
            for (k, wv) in &want {
                match got.get(k) {
                    Some(gv) => {
                        if let Err(m) = compare(gv, wv, &exact) {
                            problems.push(format!("{what}: `{k}`: {m}"));
                        }
                    }
                    None => problems.push(format!("{what}: no `{k}`")),
                }
            }
        }
    }
    eprintln!("{ran} runs on the emulator");
    assert!(problems.is_empty(), "{} problems:\n{}", problems.len(), problems.join("\n"));
}

/// [`group_argmin`]'s per-row reduction as the first phase of a row block whose second phase
/// reads its results per row: `d[p, q] = xs[p, q] - val[p]` and `e[p, q] = idx[p] + q`.
fn argmin_row_block() -> Plan {
    let mut plan = group_argmin(false);
    let Some(Step::Kernel(k0)) = plan.steps.pop() else { panic!("the fixture is one kernel") };
    let (f, i) = (ElemType::F32, ElemType::I64);
    for (name, elem) in [("d", f), ("e", i)] {
        plan.values.push(ValueInfo {
            name: name.into(),
            elem,
            rank: 2,
            origin: Origin::Computed,
            span: None,
        });
    }
    let elem = Func {
        params: vec![i, i],
        reg_types: vec![i, i, f, f, f, i, i],
        body: Block {
            insts: vec![
                Inst::Read { dst: 2, array: 0, index: vec![0, 1] },
                Inst::Read { dst: 3, array: 3, index: vec![0] },
                Inst::Binary { dst: 4, op: eqfuse_ir::ast::BinOp::Sub, a: 2, b: 3 },
                Inst::Read { dst: 5, array: 4, index: vec![0] },
                Inst::Binary { dst: 6, op: eqfuse_ir::ast::BinOp::Add, a: 5, b: 1 },
            ],
        },
        ret: vec![4, 6],
        spans: vec![],
    };
    let k1 = Kernel {
        kind: KernelKind::Generate,
        space: k0.space.clone(),
        elem,
        lanes: vec![Lane { dst: 5, op: LaneOp::Generate }, Lane { dst: 6, op: LaneOp::Generate }],
        span: None,
        contraction: None,
        view_of: None,
    };
    plan.steps.push(Step::RowBlock { kernels: vec![k0, k1], local: vec![] });
    plan.outputs.extend([("d".to_string(), 5), ("e".to_string(), 6)]);
    plan
}

/// A reduction over a group in a row block runs in the block's one kernel (rows at least a
/// block long), and phase by phase where rows are shorter; both agree with the interpreter.
#[test]
fn a_group_in_a_row_block_runs_in_its_kernel() {
    let Some(emu) = emu() else { return };
    let mut rng = Rng::fresh("a_group_in_a_row_block_runs_in_its_kernel");
    let plan = argmin_row_block();
    let opts = CudaOptions { block_size: 32, disk_cache: false, ..CudaOptions::default() };
    let exact = Tolerance { rtol: 0.0, atol: 0.0, mismatch_fraction: 0.0 };
    let mut problems = Vec::new();
    let long = rng.below(500) as usize + 32;
    for (r, c, one) in [(5, 32, true), (3, 1500, true), (4, long, true), (6, 31, false), (2, 1, false)] {
        let sizes = named(vec![("r", r as i64), ("c", c as i64)]);
        let ins = named(vec![("xs", f32s(&mut rng, &[r, c]))]);
        let want = eqfuse_ir::plan::eval::eval(&plan, &ins, &sizes).unwrap();
        emu.launches.lock().unwrap().clear();
        let got = crate::runtime::run(&emu, &plan, &ins, &sizes, &opts);
        let launches = emu.launches.lock().unwrap().clone();
        let got = match got {
            Ok(g) => g,
            Err(e) => {
                problems.push(format!("[{r}, {c}]: {e}"));
                continue;
            }
        };
        for (k, wv) in &want {
            if let Err(m) = got.get(k).ok_or("missing".to_string()).and_then(|gv| compare(gv, wv, &exact)) {
                problems.push(format!("[{r}, {c}]: `{k}`: {m}"));
            }
        }
        if one != launches.iter().any(|e| e.ends_with("_rowblock")) {
            problems.push(format!("[{r}, {c}]: launches {launches:?}"));
        }
    }
    assert!(problems.is_empty(), "{} problems:\n{}", problems.len(), problems.join("\n"));
}
