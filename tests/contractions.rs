//! Contractions (docs/contractions.md): which kernels the optimiser marks as matrix products
//! and which it must not, and random contractions — batch dimensions, transposed operands,
//! scale factors, empty extents, `f32` and `f64` — run through the CPU backend's GEMM path
//! against the reference interpreter, with a tolerance (a GEMM sums in another order).
#![allow(clippy::unwrap_used)]

use eqfuse::{Arrays, Backend, OptimizeOptions, Value};
use eqfuse_ir::value::{compare, Tolerance};
use ndarray::{ArrayD, IxDyn};
use proptest::prelude::*;

/// The kinds of the optimised plan's kernels.
fn kinds(src: &str) -> Vec<&'static str> {
    let prog = eqfuse::parse(src).unwrap_or_else(|e| panic!("{e}\n{src}"));
    let o = eqfuse::optimize(&prog, &OptimizeOptions::default()).unwrap_or_else(|e| panic!("{e}\n{src}"));
    o.result.plan.kernels().iter().map(|k| k.kind.as_str()).collect()
}

const MM: &str = "input a : f32[n, k]\ninput b : f32[k, m]\n";

/// Priced for a GPU, a matrix product of either float type and any size stays one GEMM
/// call: a row block of its products (a generate and a reduce over `[n, m, k]`, the products
/// kept per row) once looked cheaper there and ran 400 times slower on an H200.
#[test]
fn priced_for_a_gpu_matrix_products_stay_gemm_calls() {
    for t in ["f32", "f64"] {
        let src = format!(
            "input a : {t}[n, k]\ninput b : {t}[k, m]\noutput c = reduce (+) 0 (generate [n, m, k] (\\i j p -> a[i, p] * b[p, j]))"
        );
        for n in [64u64, 512, 2048, 4096] {
            let prog = eqfuse::parse(&src).unwrap();
            let sizes = ["n", "m", "k"].iter().map(|s| (s.to_string(), n)).collect();
            let opts = OptimizeOptions {
                cost: eqfuse::CostContext {
                    params: eqfuse::CostParams::gpu_default(),
                    sizes,
                    ..Default::default()
                },
                ..OptimizeOptions::default()
            };
            let o = eqfuse::optimize(&prog, &opts).unwrap();
            let kinds: Vec<&str> = o.result.plan.kernels().iter().map(|k| k.kind.as_str()).collect();
            assert_eq!(kinds, ["contract"], "{t}, n = {n}:\n{}", o.result.plan);
        }
    }
}

#[test]
fn matrix_products_are_contractions() {
    for body in [
        // the natural way, and with the factors the other way round
        "a[i, p] * b[p, j]",
        "b[p, j] * a[i, p]",
        // constant factors anywhere in the product
        "2.0 * a[i, p] * b[p, j]",
        "a[i, p] * (b[p, j] * 0.5)",
    ] {
        let src = format!("{MM}output c = reduce (+) 0 (generate [n, m, k] (\\i j p -> {body}))\n");
        assert_eq!(kinds(&src), ["contract"], "{src}");
    }
    // transposed operands, by index pattern
    let src = "input a : f64[k, n]\ninput b : f64[m, k]\n\
               output c = reduce (+) 0 (generate [n, m, k] (\\i j p -> a[p, i] * b[j, p]))\n";
    assert_eq!(kinds(src), ["contract"]);
    // a scalar input as a factor, and batch dimensions
    let src = "input q : f32[h, n, d]\ninput k : f32[h, m, d]\ninput s : f32\n\
               output c = reduce (+) 0 (generate [h, n, m, d] (\\b i j p -> q[b, i, p] * k[b, j, p] * s))\n";
    assert_eq!(kinds(src), ["contract"]);
    // a sub-block: indices plus offsets that do not depend on the point
    let src = format!(
        "{MM}input o : i64\noutput c = reduce (+) 0 (generate [n - 2, m, k - 1] (\\i j p -> a[i + 2, p + o] * b[p, j]))\n"
    );
    assert_eq!(kinds(&src), ["contract"], "{src}");
    // a product of a materialised intermediate
    let src = format!(
        "{MM}let e = map (\\x -> exp x) a\noutput c = reduce (+) 0 (generate [n, m, k] (\\i j p -> e[i, p] * b[p, j]))\n"
    );
    assert!(kinds(&src).contains(&"contract"), "{src}: {:?}", kinds(&src));
}

#[test]
fn what_is_not_a_matrix_product_stays_a_reduction() {
    let cases = [
        // a max reduction of products (and a max-plus product)
        format!("{MM}output c = reduce max (-inf) (generate [n, m, k] (\\i j p -> a[i, p] * b[p, j]))\n"),
        format!("{MM}output c = reduce max (-inf) (generate [n, m, k] (\\i j p -> a[i, p] + b[p, j]))\n"),
        // a product of products
        format!("{MM}output c = reduce (*) 1 (generate [n, m, k] (\\i j p -> a[i, p] * b[p, j]))\n"),
        // something added to each product
        format!("{MM}output c = reduce (+) 0 (generate [n, m, k] (\\i j p -> a[i, p] * b[p, j] + 1.0))\n"),
        // a third array read per product
        format!(
            "{MM}input w : f32[k]\noutput c = reduce (+) 0 (generate [n, m, k] (\\i j p -> a[i, p] * b[p, j] * w[p]))\n"
        ),
        // an index that is not a dimension of the space, nor one plus an offset
        format!("{MM}output c = reduce (+) 0 (generate [n, m, k] (\\i j p -> a[i, k - 1 - p] * b[p, j]))\n"),
        // a diagonal read
        "input a : f32[k, k]\ninput b : f32[k, m]\n\
         output c = reduce (+) 0 (generate [m, k] (\\j p -> a[p, p] * b[p, j]))\n"
            .to_string(),
        // a dimension that indexes neither operand (every row the same)
        "input a : f32[n, k]\ninput v : f32[k]\ninput b : f32[k, m]\n\
         output c = reduce (+) 0 (generate [n, m, k] (\\i j p -> v[p] * b[p, j]))\n"
            .to_string(),
        // the reduced dimension missing from an operand
        format!("{MM}output c = reduce (+) 0 (generate [n, m, k] (\\i j p -> a[i, p] * b[0, j]))\n"),
        // integers: exact, no GEMM
        "input a : i32[n, k]\ninput b : i32[k, m]\n\
         output c = reduce (+) 0 (generate [n, m, k] (\\i j p -> a[i, p] * b[p, j]))\n"
            .to_string(),
        // a matrix-vector product: bound by memory, faster as the fused reduction
        "input a : f32[n, k]\ninput v : f32[k]\n\
         output y = reduce (+) 0 (generate [n, k] (\\i p -> a[i, p] * v[p]))\n"
            .to_string(),
        // a dot product
        "input x : f32[k]\ninput y : f32[k]\noutput d = reduce (+) 0 (map (\\a b -> a * b) x y)\n".to_string(),
    ];
    for src in &cases {
        let ks = kinds(src);
        assert!(!ks.contains(&"contract"), "{src}: {ks:?}");
    }
}

/// One random contraction: the space's dimensions (roles in a random order), each operand's
/// axes in a random order, a scale, an element type, and the extents.
#[derive(Clone, Debug)]
struct Spec {
    /// Role of each outer dimension: 'b' (batch), 'i' (M), 'j' (N).
    outer: Vec<char>,
    /// Axis orders: indices into the dimensions each operand has.
    a_order: Vec<usize>,
    b_order: Vec<usize>,
    /// `b * a` instead of `a * b` in the text.
    swap: bool,
    /// 0: none, 1: a constant, 2: a scalar input.
    scale: u8,
    f64: bool,
    /// Extents, one per dimension of the space (the reduced one last).
    extents: Vec<usize>,
    /// Offsets added to the left operand's indices (a sub-block; 0: none), per axis.
    offsets: Vec<usize>,
    seed: u64,
}

fn spec() -> impl Strategy<Value = Spec> {
    (0usize..3, any::<bool>(), any::<bool>(), any::<bool>(), 0u8..3, any::<bool>(), any::<u64>())
        .prop_filter("an M or an N dimension", |(_, m, n, ..)| *m || *n)
        .prop_flat_map(|(batches, m, n, swap, scale, f64, seed)| {
            let mut outer: Vec<char> = vec!['b'; batches];
            if m {
                outer.push('i');
            }
            if n {
                outer.push('j');
            }
            let rank = outer.len() + 1;
            let a_axes = batches + usize::from(m) + 1;
            let b_axes = batches + usize::from(n) + 1;
            (
                Just(outer).prop_shuffle(),
                Just((0..a_axes).collect::<Vec<_>>()).prop_shuffle(),
                Just((0..b_axes).collect::<Vec<_>>()).prop_shuffle(),
                proptest::collection::vec(prop_oneof![1 => Just(0usize), 9 => 1usize..7], rank),
                proptest::collection::vec(prop_oneof![2 => Just(0usize), 1 => 1usize..3], a_axes),
                Just((swap, scale, f64, seed)),
            )
        })
        .prop_map(|(outer, a_order, b_order, extents, offsets, (swap, scale, f64, seed))| Spec {
            outer,
            a_order,
            b_order,
            swap,
            scale,
            f64,
            extents,
            offsets,
            seed,
        })
}

impl Spec {
    /// The program text and its inputs.
    fn program(&self) -> (String, Arrays) {
        let t = if self.f64 { "f64" } else { "f32" };
        let rank = self.outer.len() + 1;
        let var = |d: usize| format!("x{d}");
        let size = |d: usize| format!("s{d}");
        // the dimensions each operand has, then in the random axis order
        let dims_of = |role: char| -> Vec<usize> {
            let mut v: Vec<usize> =
                (0..rank - 1).filter(|&d| self.outer[d] == 'b' || self.outer[d] == role).collect();
            v.push(rank - 1);
            v
        };
        let (da, db) = (dims_of('i'), dims_of('j'));
        let a: Vec<usize> = self.a_order.iter().map(|&k| da[k]).collect();
        let b: Vec<usize> = self.b_order.iter().map(|&k| db[k]).collect();
        let join = |ds: &[usize], f: &dyn Fn(usize) -> String| {
            ds.iter().map(|&d| f(d)).collect::<Vec<_>>().join(", ")
        };
        // `a` is read at `x + offset` on each axis: its own sizes, each as large as needed
        let a_sizes: Vec<String> = a
            .iter()
            .zip(&self.offsets)
            .map(|(&d, &o)| if o == 0 { size(d) } else { format!("u{d}") })
            .collect();
        let mut src = format!("input a : {t}[{}]\ninput b : {t}[{}]\n", a_sizes.join(", "), join(&b, &size));
        // every size of the space bound by an input of its own (an offset axis of `a` has
        // a size of its own)
        for d in 0..rank {
            src.push_str(&format!("input z{d} : {t}[{}]\n", size(d)));
        }
        let a_ix: Vec<String> = a
            .iter()
            .zip(&self.offsets)
            .map(|(&d, &o)| if o == 0 { var(d) } else { format!("{} + {o}", var(d)) })
            .collect();
        let ra = format!("a[{}]", a_ix.join(", "));
        let rb = format!("b[{}]", join(&b, &var));
        let mut body = if self.swap { format!("{rb} * {ra}") } else { format!("{ra} * {rb}") };
        match self.scale {
            1 => body = format!("0.75 * {body}"),
            2 => {
                src.push_str(&format!("input s : {t}\n"));
                body = format!("{body} * s");
            }
            _ => {}
        }
        let all: Vec<usize> = (0..rank).collect();
        src.push_str(&format!(
            "output c = reduce (+) 0 (generate [{}] (\\{} -> {body}))\n",
            join(&all, &size),
            all.iter().map(|&d| var(d)).collect::<Vec<_>>().join(" ")
        ));
        let mut state = self.seed | 1;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 11) as f64 / (1u64 << 53) as f64 - 0.5
        };
        let mut value = |shape: Vec<usize>| -> Value {
            let n: usize = shape.iter().product();
            let data: Vec<f64> = (0..n).map(|_| next()).collect();
            if self.f64 {
                Value::F64(ArrayD::from_shape_vec(IxDyn(&shape), data).unwrap())
            } else {
                let data = data.into_iter().map(|x| x as f32).collect();
                Value::F32(ArrayD::from_shape_vec(IxDyn(&shape), data).unwrap())
            }
        };
        let mut inputs = Arrays::new();
        inputs.insert(
            "a".into(),
            value(a.iter().zip(&self.offsets).map(|(&d, &o)| self.extents[d] + o).collect()),
        );
        inputs.insert("b".into(), value(b.iter().map(|&d| self.extents[d]).collect()));
        for d in 0..rank {
            inputs.insert(format!("z{d}"), value(vec![self.extents[d]]));
        }
        if self.scale == 2 {
            inputs.insert("s".into(), value(Vec::new()));
        }
        (src, inputs)
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, rng_seed: proptest::test_runner::RngSeed::Fixed(0xC0_47AC7), ..ProptestConfig::default() })]

    /// Random contractions on the CPU backend (through GEMM where the plan marks them)
    /// agree with the reference interpreter; a matrix–matrix product is always marked.
    #[test]
    fn random_contractions_agree_with_the_reference(s in spec()) {
        let (src, inputs) = s.program();
        let checked = eqfuse::check(&eqfuse::parse(&src).unwrap()).unwrap();
        let has_mn = s.outer.contains(&'i') && s.outer.contains(&'j');
        prop_assert_eq!(kinds(&src).contains(&"contract"), has_mn, "{}", src);
        let want = eqfuse::run(&checked, Backend::Reference, &inputs).unwrap();
        let got = eqfuse::run(&checked, Backend::Cpu, &inputs).unwrap();
        let k = *s.extents.last().unwrap() as f64;
        let tol = if s.f64 {
            Tolerance { rtol: 1e-10, atol: 1e-12 * (k + 1.0), mismatch_fraction: 0.0 }
        } else {
            Tolerance { rtol: 1e-4, atol: 1e-6 * (k + 1.0), mismatch_fraction: 0.0 }
        };
        let r = compare(&got["c"], &want["c"], &tol);
        prop_assert!(r.is_ok(), "{}: {:?}\n{}", src, r, s.extents.iter().map(|e| e.to_string()).collect::<Vec<_>>().join(" "));
    }
}
