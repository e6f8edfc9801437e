//! `eqfuse demo`: a few built-in programs on generated inputs, optimised, run on the best
//! backend present, each result checked against the reference interpreter; what fused, and
//! how fast the optimised plan ran against the unfused one.

use super::{show, CmdResult};
use eqfuse::bench::{median, setup, BenchOptions, PROGRAMS};
use eqfuse::{Backend, Code, Error, OptimizeOptions};
use std::time::Duration;

/// The programs shown, and the scale of `eqfuse bench`'s sizes they run at.
const SHOWN: [&str; 5] = ["dotp", "map_chain", "softmax_rows", "blackscholes", "nbody"];
const SCALE: f64 = 1.0 / 8.0;

/// The most lines of a program the demo lists.
const LISTED: usize = 8;

/// Runs the demo programs.
pub fn demo() -> CmdResult {
    let backend = Backend::auto();
    println!("eqfuse demo: built-in programs, optimised, run on generated inputs on backend `{backend}`,");
    println!("each result checked against the reference interpreter\n");
    let timing = BenchOptions {
        scale: SCALE,
        min_time: Duration::from_millis(200),
        min_runs: 3,
        ..BenchOptions::default()
    };
    for name in SHOWN {
        let Some(p) = PROGRAMS.iter().find(|p| p.name == name) else { continue };
        let checked = eqfuse::check(&eqfuse::parse(p.source)?)?;
        let (inputs, elements, _) = setup(p.name, SCALE)?;
        println!("== {name} ({elements} elements)");
        print!("{}", listing(p.source));
        let opt = eqfuse::optimize_checked(
            checked.clone(),
            &eqfuse::plan_options(backend, OptimizeOptions::default()),
        )?;
        println!(
            "   optimised in {:.1} ms: {} kernel(s) instead of {}; materialised: {}",
            opt.result.optimize_ms,
            eqfuse::kernel_count(&opt.result.plan),
            eqfuse::kernel_count(&opt.result.unfused_plan),
            if opt.kernels.materialized.is_empty() {
                "nothing".to_string()
            } else {
                opt.kernels.materialized.join(", ")
            }
        );
        for k in &opt.kernels.kernels {
            let loops = if k.loops > 0 { format!(", {} loop(s)", k.loops) } else { String::new() };
            println!(
                "     {} over [{}]: reads {} -> writes {}{loops}",
                k.kind,
                k.space,
                k.reads.join(", "),
                k.writes.join(", ")
            );
        }
        let got = opt.run(backend, &inputs)?;
        let want = eqfuse::run(&checked, Backend::Reference, &inputs)?;
        let tol = eqfuse::ir::value::Tolerance { rtol: 1e-3, atol: 1e-3, mismatch_fraction: 1e-3 };
        for (k, w) in &want {
            let g =
                got.get(k).ok_or_else(|| Error::new(Code::Limit, format!("demo {name}: no output `{k}`")))?;
            eqfuse::ir::value::compare(g, w, &tol).map_err(|m| {
                Error::new(
                    Code::Limit,
                    format!("demo {name}: `{k}` differs from the reference interpreter: {m}"),
                )
            })?;
            println!("   {k} = {}", show::summary(g));
        }
        let fused = median(&timing, || opt.run(backend, &inputs));
        let unfused = median(&timing, || {
            eqfuse::backend::run_plan(&opt.result.unfused_plan, &checked, backend, &inputs)
        });
        println!(
            "   matches the reference interpreter; fused {:.2} ms, unfused {:.2} ms: {:.1}x\n",
            fused * 1e3,
            unfused * 1e3,
            unfused / fused
        );
    }
    Ok(())
}

/// The lines of a program's listing the demo shows: at most [`LISTED`] lines of code
/// (comments and blank lines left out), then `   …` when there are more.
fn listing(source: &str) -> String {
    let code: Vec<&str> = source.lines().filter(|l| !l.trim().is_empty() && !l.starts_with("--")).collect();
    let mut s: String = code.iter().take(LISTED).map(|l| format!("   {l}\n")).collect();
    if code.len() > LISTED {
        s.push_str("   …\n");
    }
    s
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_cut_listing_ends_with_an_ellipsis() {
        let long: String = (0..10).map(|i| format!("let a{i} = {i}\n")).collect();
        let shown = super::listing(&long);
        assert_eq!(shown.lines().count(), super::LISTED + 1, "{shown}");
        assert!(shown.ends_with("   …\n"), "{shown}");
        let short = super::listing("-- a comment\ninput xs : f32[n]\noutput y = xs\n");
        assert_eq!(short, "   input xs : f32[n]\n   output y = xs\n");
    }
}
