//! `eqfuse demo`: built-in programs on generated inputs, each result checked against a
//! direct Rust computation of the same thing.

use super::{show, CmdResult};
use eqfuse::{Arrays, Backend, Error, Value};
use ndarray::{ArrayD, IxDyn};
use std::time::Instant;

/// A deterministic generator (splitmix64) for demo inputs.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in [lo, hi).
    fn uniform(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * ((self.next() >> 11) as f64 / (1u64 << 53) as f64)
    }

    fn f32s(&mut self, shape: &[usize], lo: f64, hi: f64) -> ArrayD<f32> {
        ArrayD::from_shape_simple_fn(IxDyn(shape), || self.uniform(lo, hi) as f32)
    }
}

struct Demo {
    name: &'static str,
    about: &'static str,
    source: &'static str,
    inputs: fn(&mut Rng) -> Arrays,
    /// Largest difference (see `rel`) from a direct computation, or why it cannot be compared.
    verify: fn(&Arrays, &Arrays) -> Result<f64, String>,
}

fn f32_of<'a>(a: &'a Arrays, name: &str) -> Result<&'a ArrayD<f32>, String> {
    match a.get(name) {
        Some(Value::F32(x)) => Ok(x),
        other => Err(format!("`{name}` is {other:?}, expected f32")),
    }
}

/// Relative difference for values of magnitude above 1, absolute below: f32 rounding of
/// `alpha * x + y` near zero is small in absolute terms but not relative to the result.
fn rel(got: f64, want: f64) -> f64 {
    (got - want).abs() / want.abs().max(1.0)
}

const DOTP: &str =
    "input xs : f32[n]\ninput ys : f32[n]\noutput dot = reduce (+) 0 (map (\\x y -> x * y) xs ys)\n";
const SAXPY: &str = "input alpha : f32\ninput xs : f32[n]\ninput ys : f32[n]\noutput zs = map (\\x y -> alpha * x + y) xs ys\n";
const SOFTMAX: &str = "input m : f32[r, c]\nlet mx = reduce max (-inf) m\nlet e = generate [r, c] (\\i j -> exp (m[i, j] - mx[i]))\nlet s = reduce (+) 0 e\noutput sm = generate [r, c] (\\i j -> e[i, j] / s[i])\n";

fn demos() -> Vec<Demo> {
    vec![
        Demo {
            name: "dotp",
            about: "dot product: a map feeding a reduce",
            source: DOTP,
            inputs: |r| {
                let mut a = Arrays::new();
                a.insert("xs".into(), r.f32s(&[100_000], -1.0, 1.0).into());
                a.insert("ys".into(), r.f32s(&[100_000], -1.0, 1.0).into());
                a
            },
            verify: |i, o| {
                let (xs, ys) = (f32_of(i, "xs")?, f32_of(i, "ys")?);
                let want: f64 = xs.iter().zip(ys.iter()).map(|(x, y)| f64::from(*x) * f64::from(*y)).sum();
                let got = f32_of(o, "dot")?.iter().next().copied().ok_or("empty")?;
                Ok(rel(f64::from(got), want))
            },
        },
        Demo {
            name: "saxpy",
            about: "alpha * x + y with a scalar input",
            source: SAXPY,
            inputs: |r| {
                let mut a = Arrays::new();
                a.insert("alpha".into(), Value::from(ArrayD::from_elem(IxDyn(&[]), 2.5f32)));
                a.insert("xs".into(), r.f32s(&[100_000], -1.0, 1.0).into());
                a.insert("ys".into(), r.f32s(&[100_000], -1.0, 1.0).into());
                a
            },
            verify: |i, o| {
                let (xs, ys, zs) = (f32_of(i, "xs")?, f32_of(i, "ys")?, f32_of(o, "zs")?);
                Ok(xs
                    .iter()
                    .zip(ys.iter())
                    .zip(zs.iter())
                    .map(|((x, y), z)| rel(f64::from(*z), 2.5 * f64::from(*x) + f64::from(*y)))
                    .fold(0.0, f64::max))
            },
        },
        Demo {
            name: "softmax_rows",
            about: "row-wise softmax: two row reductions and two generates",
            source: SOFTMAX,
            inputs: |r| {
                let mut a = Arrays::new();
                a.insert("m".into(), r.f32s(&[256, 300], -4.0, 4.0).into());
                a
            },
            verify: |i, o| {
                let (m, sm) = (f32_of(i, "m")?, f32_of(o, "sm")?);
                let mut worst = 0.0f64;
                for (row, out) in m.rows().into_iter().zip(sm.rows()) {
                    let mx = row.iter().fold(f64::NEG_INFINITY, |a, &b| a.max(f64::from(b)));
                    let s: f64 = row.iter().map(|&x| (f64::from(x) - mx).exp()).sum();
                    for (&x, &y) in row.iter().zip(out.iter()) {
                        worst = worst.max(rel(f64::from(y), (f64::from(x) - mx).exp() / s));
                    }
                }
                Ok(worst)
            },
        },
    ]
}

/// Runs every demo program on the best backend present and reports what it computed.
pub fn demo() -> CmdResult {
    let backend = Backend::auto();
    println!("eqfuse demo: built-in programs, optimised, run on generated inputs, backend `{backend}`");
    println!("(the fused CPU/CUDA executors are later stages: the optimised program runs on the");
    println!(" reference interpreter, so this shows what fuses, not yet how fast)\n");
    let mut rng = Rng(0x5EED);
    for d in demos() {
        println!("== {}: {}", d.name, d.about);
        for line in d.source.lines() {
            println!("   {line}");
        }
        let opt = eqfuse::optimize(&eqfuse::parse(d.source)?, &eqfuse::OptimizeOptions::default())?;
        println!(
            "   optimised in {:.1} ms: {} kernel(s), unfused {}; materialised: {}",
            opt.result.optimize_ms,
            opt.kernels.kernels.len(),
            opt.unfused.kernels.len(),
            if opt.kernels.materialized.is_empty() {
                "nothing".to_string()
            } else {
                opt.kernels.materialized.join(", ")
            }
        );
        for k in &opt.kernels.kernels {
            println!(
                "     {} over [{}]: reads {} -> writes {}",
                k.kind,
                k.space,
                k.reads.join(", "),
                k.writes.join(", ")
            );
        }
        let inputs = (d.inputs)(&mut rng);
        let start = Instant::now();
        let outputs = opt.run(backend, &inputs)?;
        let secs = start.elapsed().as_secs_f64();
        for (name, v) in &outputs {
            println!("   {name} = {}", show::summary(v));
        }
        let worst = (d.verify)(&inputs, &outputs)
            .map_err(|m| Error::new(eqfuse::Code::Device, format!("demo {} produced {m}", d.name)))?;
        if worst > 1e-4 {
            return Err(Error::new(
                eqfuse::Code::Device,
                format!("demo {}: result differs from the direct computation by {worst:.2e}", d.name),
            )
            .into());
        }
        println!(
            "   ran in {:.1} ms; matches a direct Rust computation (max difference {worst:.1e})\n",
            secs * 1e3
        );
    }
    Ok(())
}
