//! The cost model's per-element rates measured through the kernels eqfuse generates: each
//! probe is a small program that stresses one term of the model (`f32` arithmetic, `f64`
//! transcendental functions, gathers, a transpose's reads, a scan, ...). It is optimised
//! and compiled as `eqfuse run` would, timed on the CPU backend, and its plan's [`Work`]
//! counted at the probe's sizes. The probes' rates are the non-negative solution of
//! `predicted = measured` over all of them in the least-squares sense, relative to each
//! probe's time, with the terms measured directly (bandwidth, launch, GEMM) held at their
//! measured values ([`fit`]). The machine's rates are then the defaults scaled by the
//! probes' ratio to what they measured on the machine the defaults were fitted on
//! ([`REFERENCE`]).
//!
//! Micro-loops written in Rust, which `calibrate` timed before, measured other code than
//! the kernels run: on the development machine they put `f32` transcendental functions at
//! 7e8 per second, and the generated kernels (eqfuse's own functions, 16 lanes wide) run
//! 3.5e9. Over the programs of the suites their rates ranked predicted times at 0.83
//! (Spearman) against the measured ones; the defaults, 0.90 (docs/performance.md).

use super::{human, rate_unit, settle, RATE_RANGE};
use crate::random_inputs::{random_inputs, RandomInputs};
use crate::Arrays;
use eqfuse_ir::plan::Plan;
use eqfuse_lower::model::{plan_cost, CostParams, Extents, Work};
use indexmap::IndexMap;
use std::collections::HashMap;
use std::time::{Duration, Instant};

/// How long each probe is timed (after one untimed run that compiles and warms it).
const PROBE_TIME: Duration = Duration::from_millis(200);
/// Most timed runs of a probe.
const PROBE_RUNS: usize = 50;

/// A probe: the term it stresses, its program, its sizes and the range of its integer
/// inputs (the indices of a gather or a permute).
struct Probe {
    term: &'static str,
    source: String,
    sizes: Vec<(&'static str, i64)>,
    ints: (i64, i64),
}

/// Where and how the probes run.
pub struct Target<'a> {
    /// The parameters the probes' plans are chosen and counted with, whose rates a rate
    /// the probes cannot find keeps (the backend's defaults).
    pub base: CostParams,
    /// How many times the CPU's element counts each probe runs over (a GPU needs far more
    /// work per probe than a launch costs).
    pub scale: i64,
    /// Scale `base`'s rates by the probes' ratio to [`REFERENCE`] (what the CPU defaults
    /// were fitted against), rather than take the probes' rates as they are.
    pub relative: bool,
    /// The least seconds of runs of a plan on its inputs and sizes.
    pub time: &'a Timer,
}

/// Times a plan on its inputs and sizes: the least seconds of its runs.
pub type Timer = dyn Fn(&Plan, &Arrays, &IndexMap<String, i64>) -> crate::Result<f64>;

/// A map over `xs : TY[n]` whose element is a chain of `steps` dependent steps (`step(k,
/// previous)`), each with constants of its own (so no rule folds or rolls them): enough
/// work per element that the probe's time is its operations', not its memory's.
fn chain(ty: &str, steps: usize, step: impl Fn(usize, &str) -> String) -> String {
    let mut s = format!("input xs : {ty}[n]\noutput y = map (\\x ->\n");
    let mut prev = "x".to_string();
    for k in 0..steps {
        s.push_str(&format!("  let v{k} = {} in\n", step(k, &prev)));
        prev = format!("v{k}");
    }
    s.push_str(&format!("  {prev}) xs"));
    s
}

/// The probes, one per term of [`Work::rated`], over `scale` times the CPU's elements.
fn probes(scale: i64) -> Vec<Probe> {
    let x = |n: i64| n.saturating_mul(scale.max(1));
    // the side of a square of `scale` times as many elements, about
    let side = |n: i64| n.saturating_mul((scale.max(1) as f64).sqrt().round() as i64);
    let n = x(1 << 21);
    let small = |k: usize| format!("{:.6}", 1.0 + (k + 1) as f64 * 1e-4);
    let probe = |term, source, sizes: &[(&'static str, i64)], ints| Probe {
        term,
        source,
        sizes: sizes.to_vec(),
        ints,
    };
    vec![
        probe(
            "flop",
            chain("f32", 48, |k, v| format!("{v} * {} + {:.6}", small(k), 0.5 / (k + 1) as f64)),
            &[("n", n)],
            (0, 16),
        ),
        probe(
            "div",
            chain("f32", 8, |k, v| format!("{:.4} / ({v} + 1.0)", 1.0 + k as f64 * 0.25)),
            &[("n", n)],
            (0, 16),
        ),
        probe(
            "sqrt",
            chain("f32", 8, |k, v| format!("sqrt ({v} + {:.4})", 1.0 + k as f64 * 0.25)),
            &[("n", n)],
            (0, 16),
        ),
        probe(
            "transcendental",
            "input xs : f32[n]\noutput y = map (\\x -> sin x + cos x + exp x + log (x + 1.0)) xs".into(),
            &[("n", n)],
            (0, 16),
        ),
        probe(
            "transcendental_f64",
            "input xs : f64[n]\noutput y = map (\\x -> sin x + cos x + exp x + log (x + 1.0)) xs".into(),
            &[("n", x(1 << 19))],
            (0, 16),
        ),
        probe(
            "int",
            chain("i64", 48, |k, v| format!("{v} * {} + {}", 2 * k + 3, k + 1)),
            &[("n", x(1 << 20))],
            (0, 1000),
        ),
        probe(
            "compare",
            chain("f32", 48, |k, v| format!("if {v} < {:.4} then 1.0 - {v} else {v}", 0.3 + 0.01 * k as f64)),
            &[("n", n)],
            (0, 16),
        ),
        probe(
            "gather",
            "input t : f32[m]\ninput idx : i64[n]\noutput y = map (\\i -> t[i]) idx".into(),
            // a table larger than a core's cache (16 MiB), read at random
            &[("m", x(1 << 22)), ("n", x(1 << 22))],
            (0, x(1 << 22)),
        ),
        probe(
            "strided",
            "input a : f32[r, c]\noutput t = transpose a".into(),
            &[("r", side(4096)), ("c", side(4096))],
            (0, 16),
        ),
        probe(
            "compact",
            "input xs : f32[n]\noutput k = filter (\\x -> x > 0.5) xs".into(),
            &[("n", x(1 << 22))],
            (0, 16),
        ),
        probe("scan", "input xs : f32[n]\noutput s = scan (+) 0 xs".into(), &[("n", x(1 << 22))], (0, 16)),
        probe(
            "scatter",
            "input z : i64[m]\ninput bins : i64[n]\noutput h = permute (+) z (\\i -> bins[i]) (fill [n] 1)"
                .into(),
            // a target of 512 KiB, within a core's cache: a histogram's
            &[("n", x(1 << 22)), ("m", 1 << 16)],
            (0, 1 << 16),
        ),
    ]
}

/// What one probe measured: its plan's work and its best time.
struct Sample {
    work: Work,
    seconds: f64,
}

/// What the probes measured (rates fitted as [`measure`] fits them) on the machine the
/// defaults were fitted on ([`CostParams::cpu_default`]: the 2-core AVX-512 development
/// machine, 2026-11-30, the mean of two runs). A machine's rate of a term is the default's
/// times its probes' ratio to this one: the defaults carry what the model's sum of memory
/// and operations misses (on most kernels the operations overlap the memory traffic, so the
/// fitted rates of light operations are above the probes' throughputs), the probes carry
/// how much faster or slower this machine is at each kind of work.
const REFERENCE: [(&str, f64); 12] = [
    ("flop", 9.4e10),
    ("div", 6.5e10),
    ("sqrt", 2.0e10),
    ("transcendental", 3.55e9),
    ("transcendental_f64", 8.4e8),
    ("int", 2.68e10),
    ("compare", 3.78e10),
    ("gather", 6.6e8),
    ("strided", 2.4e9),
    ("compact", 4.95e8),
    ("scan", 1.22e9),
    ("scatter", 2.1e9),
];

/// Runs every probe on `target`, fits their rates (`p`'s bandwidth, launch, code size and
/// GEMM rate taken as measured) and sets `p`'s: `target.base`'s rates scaled by the fitted
/// rates' ratio to [`REFERENCE`] when `target.relative`, else the fitted rates themselves. A probe that fails is
/// left out, and a rate the fit cannot find (no probe left for it) is `target.base`'s.
pub fn measure(p: &mut CostParams, target: &Target<'_>, progress: &mut dyn FnMut(&str)) {
    let mut samples = Vec::new();
    for probe in &probes(target.scale) {
        match run(probe, target) {
            Ok(s) => samples.push(s),
            Err(e) => progress(&format!("  probe {} failed ({e}): its rate keeps the default", probe.term)),
        }
    }
    let x = fit(&samples, p);
    for (((term, field), x), ((_, reference), (_, base))) in
        p.rates_mut().into_iter().zip(x).zip(REFERENCE.into_iter().zip(target.base.rates()))
    {
        let rate = if target.relative { base * (1.0 / x) / reference } else { 1.0 / x };
        *field = settle((x > 0.0).then_some(rate), base, RATE_RANGE);
        progress(&format!("  {term:<18} {}", human(*field, rate_unit(term))));
    }
}

/// Optimises and times one probe on `target`.
fn run(probe: &Probe, target: &Target<'_>) -> crate::Result<Sample> {
    let checked = crate::check(&crate::parse(&probe.source)?)?;
    let mut opts = RandomInputs::new(1);
    for (name, v) in &probe.sizes {
        opts = opts.size(name, *v);
    }
    opts.int_range = probe.ints;
    let inputs = random_inputs(&checked, &opts)?;
    let (plan, work) = planned(&checked, probe, &target.base)?;
    let bound = eqfuse_ir::bind::bind_inputs(&checked, &inputs, &eqfuse_ir::Limits::default())?;
    Ok(Sample { work, seconds: (target.time)(&plan, &inputs, &bound.sizes)? })
}

/// The least time of the program `source` at `sizes` (random inputs, integers in `0..16`)
/// on `target`, with the plan `target.base` chooses: a probe of a parameter measured
/// outside the fit (a GPU's bandwidth, launch, GEMM rate).
pub fn time_program(source: &str, sizes: &[(&'static str, i64)], target: &Target<'_>) -> crate::Result<f64> {
    let probe = Probe { term: "", source: source.to_string(), sizes: sizes.to_vec(), ints: (0, 16) };
    Ok(run(&probe, target)?.seconds)
}

/// The plan `eqfuse run` chooses for a probe with `base`, and its work at the probe's sizes.
fn planned(checked: &crate::Checked, probe: &Probe, base: &CostParams) -> crate::Result<(Plan, Work)> {
    let defaults = crate::OptimizeOptions::default();
    let oopts = crate::OptimizeOptions {
        cost: eqfuse_lower::dag::CostContext { params: base.clone(), ..defaults.cost.clone() },
        ..defaults
    };
    let plan = crate::optimize_checked(checked.clone(), &oopts)?.result.plan;
    let sizes: HashMap<String, u64> = probe.sizes.iter().map(|(k, v)| (k.to_string(), *v as u64)).collect();
    let inputs = eqfuse_lower::model::input_extents(&checked.inputs, &sizes);
    let work = plan_cost(&plan, base, Extents { sizes: &sizes, inputs: &inputs }).work;
    Ok((plan, work))
}

/// The least seconds of runs of `f` after one untimed run (which compiles or loads the
/// code and faults the pages in): runs for about [`PROBE_TIME`], at most [`PROBE_RUNS`].
pub fn least_time(mut f: impl FnMut() -> crate::Result<()>) -> crate::Result<f64> {
    f()?;
    let start = Instant::now();
    let mut best = f64::INFINITY;
    for _ in 0..PROBE_RUNS {
        let t0 = Instant::now();
        f()?;
        best = best.min(t0.elapsed().as_secs_f64());
        if start.elapsed() > PROBE_TIME {
            break;
        }
    }
    Ok(best)
}

/// Times a plan on the CPU backend, its code compiled once (a [`Target::time`]).
pub fn time_cpu(plan: &Plan, inputs: &Arrays, sizes: &IndexMap<String, i64>) -> crate::Result<f64> {
    let compiled = eqfuse_exec_cpu::CompiledPlan::new(plan.clone(), &eqfuse_exec_cpu::RunOptions::default());
    least_time(|| compiled.run(inputs, sizes).map(|out| drop(std::hint::black_box(out))))
}

/// The seconds per unit of each term of [`Work::rated`] (0: free, or not found) that best
/// explain the samples' times, the other terms priced with `p`: non-negative least squares
/// of the relative error, by coordinate descent on the normal equations (a convex problem:
/// it converges to its minimum).
fn fit(samples: &[Sample], p: &CostParams) -> Vec<f64> {
    // each row divided by its measured time: relative errors
    let rows: Vec<(Vec<f64>, f64)> = samples
        .iter()
        .filter(|s| s.seconds > 0.0 && s.seconds.is_finite())
        .map(|s| {
            let counts: Vec<f64> = s.work.rated().iter().map(|(_, c)| *c).collect();
            // what the terms measured apart (bandwidth, launch, GEMM, code) account for
            let known = s.work.unrated_seconds(p);
            (counts.iter().map(|c| c / s.seconds).collect(), 1.0 - known / s.seconds)
        })
        .collect();
    let n = p.rates().len();
    let g: Vec<Vec<f64>> =
        (0..n).map(|i| (0..n).map(|j| rows.iter().map(|(a, _)| a[i] * a[j]).sum()).collect()).collect();
    let b: Vec<f64> = (0..n).map(|i| rows.iter().map(|(a, t)| a[i] * t).sum()).collect();
    let mut x = vec![0.0; n];
    for _ in 0..10_000 {
        let mut moved = 0.0f64;
        for i in 0..n {
            if g[i][i] <= 0.0 {
                continue;
            }
            let rest: f64 = (0..n).filter(|&j| j != i).map(|j| g[i][j] * x[j]).sum();
            let new = ((b[i] - rest) / g[i][i]).max(0.0);
            moved = moved.max((new - x[i]).abs() / (x[i].abs() + 1e-30));
            x[i] = new;
        }
        if moved < 1e-10 {
            break;
        }
    }
    x
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// The work of a probe's plan, counted at its sizes, as [`run`] counts it.
    fn work(probe: &Probe, base: &CostParams) -> Work {
        let checked = crate::check(&crate::parse(&probe.source).unwrap()).unwrap();
        planned(&checked, probe, base).unwrap().1
    }

    #[test]
    fn every_probe_exercises_its_term_and_every_term_has_a_probe() {
        let d = CostParams::cpu_default();
        let names: Vec<&str> = d.rates().iter().map(|(t, _)| *t).collect();
        assert_eq!(REFERENCE.map(|(t, _)| t).to_vec(), names, "REFERENCE in the order of the rates");
        let all = probes(1);
        for (term, _) in d.rates() {
            assert!(all.iter().any(|p| p.term == term), "no probe for {term}");
        }
        for probe in &all {
            let w = work(probe, &d);
            let own = w.rated().iter().find(|(t, _)| *t == probe.term).map(|(_, c)| *c).unwrap();
            assert!(own > 0.0, "probe {} counts none of its term: {w:?}", probe.term);
            // at the default rates its own term is a good part of the predicted time
            let own_s = own / d.rates().iter().find(|(t, _)| *t == probe.term).unwrap().1;
            assert!(
                own_s >= 0.1 * w.seconds(&d),
                "probe {}: {own_s} of {} s: {w:?}",
                probe.term,
                w.seconds(&d)
            );
        }
    }

    #[test]
    fn the_fit_finds_the_rates_that_made_the_times() {
        // times made by the model itself with known rates: the fit gives them back, for
        // the CPU's probes and the GPU's
        for (base, scale) in [(CostParams::cpu_default(), 1), (CostParams::gpu_default(), 32)] {
            let mut truth = base.clone();
            for (k, (_, r)) in truth.rates_mut().into_iter().enumerate() {
                *r *= 0.5 + 0.25 * k as f64;
            }
            let samples: Vec<Sample> = probes(scale)
                .iter()
                .map(|p| {
                    let work = work(p, &base);
                    Sample { seconds: work.seconds(&truth), work }
                })
                .collect();
            let x = fit(&samples, &truth);
            for ((term, rate), x) in truth.rates().into_iter().zip(x) {
                let got = 1.0 / x;
                assert!(
                    (got - rate).abs() <= 1e-3 * rate,
                    "{term}: fitted {got}, made with {rate} ({})",
                    base.name
                );
            }
        }
    }
}
