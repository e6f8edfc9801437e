//! The integer types of version 2 (`i8 i16 u8 u16 u32 u64`) and the bit operations of
//! every integer type (`& | ^ << >> ! popcount clz`), with the conversions between all
//! types, natively (generated C) and on the VM, against the reference interpreter: the
//! results must be identical, bit for bit.
#![allow(clippy::unwrap_used)]

use eqfuse_exec_cpu::{compile_plan, run, Codegen, RunOptions};
use eqfuse_ir::check::check;
use eqfuse_ir::parse::parse;
use eqfuse_ir::testgen::identical;
use eqfuse_ir::types::ElemType;
use eqfuse_ir::value::{Scalar, Value};
use eqfuse_optimize::{optimize, OptimizeOptions};
use indexmap::IndexMap;

type Arrays = IndexMap<String, Value>;

/// `n` values of type `t`: the type's edges (0, 1, -1, the minimum and maximum and their
/// neighbours), then splitmix64 bits.
fn values(t: ElemType, n: usize, seed: u64) -> Value {
    let (lo, hi) = t.int_range().unwrap();
    let edges = [0, 1, -1, 2, lo, hi, lo + 1, hi - 1, 7, 8, 63, 64, -8];
    let mut state = seed;
    let data: Vec<Scalar> = (0..n)
        .map(|k| {
            let v = match edges.get(k) {
                Some(&e) => e,
                None => {
                    state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
                    let mut z = state;
                    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
                    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
                    i128::from(z ^ (z >> 31))
                }
            };
            Scalar::from_i128_wrapping(t, v)
        })
        .collect();
    Value::from_scalars(t, &[n], &data).unwrap()
}

/// Floats that test the saturating conversions: NaN, infinities, the integer types'
/// bounds and just past them, fractions of both signs.
fn floats(n: usize) -> Value {
    let mut v = vec![
        f64::NAN,
        f64::INFINITY,
        f64::NEG_INFINITY,
        0.0,
        -0.0,
        0.5,
        -0.5,
        -0.99,
        -1.0,
        127.9,
        128.0,
        -128.5,
        -129.0,
        255.5,
        256.0,
        32767.5,
        32768.0,
        -32769.0,
        65535.9,
        65536.0,
        2147483647.5,
        2147483648.0,
        -2147483649.0,
        4294967295.5,
        4294967296.0,
        9.2e18,
        9.3e18,
        -9.3e18,
        1.8e19,
        1.9e19,
        -1e300,
        1e300,
    ];
    let mut k = 0u64;
    while v.len() < n {
        k += 1;
        v.push(((k * 7919) % 1000) as f64 * 1.37 - 600.0);
    }
    v.truncate(n);
    Value::F64(ndarray::Array::from(v).into_dyn())
}

/// Runs `src` on the interpreter, natively (every kernel compiled: checked) and on the VM,
/// through the optimised and the unfused plan; everything must be identical.
fn agree(src: &str, inputs: &Arrays) {
    let checked =
        check(&parse(src).unwrap_or_else(|e| panic!("{e}\n{src}"))).unwrap_or_else(|e| panic!("{e}\n{src}"));
    let want = eqfuse_ir::interp::interpret(&checked, inputs).unwrap_or_else(|e| panic!("{e}\n{src}"));
    let opt = optimize(&checked, &OptimizeOptions::default()).unwrap_or_else(|e| panic!("{e}\n{src}"));
    let sizes = eqfuse_ir::bind::bind_inputs(&checked, inputs, &eqfuse_ir::Limits::default()).unwrap().sizes;
    for (label, plan) in [("optimised", &opt.plan), ("unfused", &opt.unfused_plan)] {
        for codegen in [Codegen::C, Codegen::Vm] {
            let opts = RunOptions { codegen, block_size: 16, cache_dir: None, ..RunOptions::default() };
            if codegen == Codegen::C {
                let report = compile_plan(plan, &opts);
                assert!(report.failure.is_none(), "{label}: {:?}\n{src}", report.failure);
                assert!(report.vm.is_empty(), "{label}: kernels on the VM: {:?}\n{src}\n{plan}", report.vm);
            }
            let got = run(plan, inputs, &sizes, &opts)
                .unwrap_or_else(|e| panic!("{label} {codegen:?}: {e}\n{src}"));
            for (name, w) in &want {
                let g = &got[name];
                assert!(
                    identical(g, w),
                    "{label} {codegen:?}: `{name}`: got {g:?}, want {w:?}\n{src}\n{plan}"
                );
            }
        }
    }
}

/// Arithmetic, comparisons, bit operations, `popcount`/`clz`, `abs`/`min`/`max` and `!`
/// on each integer type, with shift amounts of every size (negative ones masked too).
#[test]
fn integer_operations_agree_with_the_interpreter() {
    for t in ElemType::INTS {
        let src = format!(
            "input a : {t}[n]\ninput b : {t}[n]\n\
             output add = map (\\x y -> x + y) a b\n\
             output sub = map (\\x y -> x - y) a b\n\
             output mul = map (\\x y -> x * y) a b\n\
             output div = map (\\x y -> x / (y | 1)) a b\n\
             output rem = map (\\x y -> x % (y | 1)) a b\n\
             output neg = map (\\x -> -x) a\n\
             output bits = map (\\x y -> (x & y) ^ (x | !y)) a b\n\
             output shl = map (\\x y -> x << y) a b\n\
             output shr = map (\\x y -> x >> y) a b\n\
             output pc = map (\\x -> popcount x) a\n\
             output lz = map (\\x -> clz x) a\n\
             output lt = map (\\x y -> x < y) a b\n\
             output mm = map (\\x y -> max (min x y) (abs x)) a b\n\
             output total = reduce (+) 0 (map (\\x y -> x ^ y) a b)\n"
        );
        let n = 61;
        let ins: Arrays =
            [("a".to_string(), values(t, n, 1)), ("b".to_string(), values(t, n, 2))].into_iter().collect();
        agree(&src, &ins);
    }
}

/// Conversions between every pair of types: integers keep their low bits, floats truncate
/// and saturate with NaN to 0, integers round to the nearest float, bools are 0 or 1.
#[test]
fn conversions_agree_with_the_interpreter() {
    let n = 45;
    for from in ElemType::INTS {
        let mut src = format!("input a : {from}[n]\ninput f : f64[n]\n");
        for to in ElemType::ALL.into_iter().filter(|t| *t != ElemType::Bool) {
            src.push_str(&format!("output to_{to} = map (\\x -> {to} x) a\n"));
        }
        src.push_str(&format!("output from_f64 = map (\\x -> {from} x) f\n"));
        src.push_str(&format!("output from_f32 = map (\\x -> {from} (f32 x)) f\n"));
        src.push_str(&format!("output from_bool = map (\\x -> {from} (x > 0)) a\n"));
        let ins: Arrays =
            [("a".to_string(), values(from, n, 3)), ("f".to_string(), floats(n))].into_iter().collect();
        agree(&src, &ins);
    }
}

/// A division by zero of each integer type fails with the interpreter's error.
#[test]
fn integer_division_by_zero_fails_as_the_interpreter_does() {
    for t in ElemType::INTS {
        let src = format!("input a : {t}[n]\ninput b : {t}[n]\noutput q = map (\\x y -> x / y) a b\n");
        let ins: Arrays =
            [("a".to_string(), values(t, 20, 5)), ("b".to_string(), values(t, 20, 6))].into_iter().collect();
        let checked = check(&parse(&src).unwrap()).unwrap();
        let want = eqfuse_ir::interp::interpret(&checked, &ins).unwrap_err();
        let opt = optimize(&checked, &OptimizeOptions::default()).unwrap();
        let sizes =
            eqfuse_ir::bind::bind_inputs(&checked, &ins, &eqfuse_ir::Limits::default()).unwrap().sizes;
        for codegen in [Codegen::C, Codegen::Vm] {
            let opts = RunOptions { codegen, cache_dir: None, ..RunOptions::default() };
            let got = run(&opt.plan, &ins, &sizes, &opts).unwrap_err();
            assert_eq!((got.code, &got.message), (want.code, &want.message), "{t} {codegen:?}");
        }
    }
}
