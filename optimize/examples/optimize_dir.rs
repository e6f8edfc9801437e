//! Optimises every `program.eqf` under a directory and prints the stop reason, the e-graph
//! size, the time and the optimised program: `cargo run --release -p eqfuse-rules
//! --example optimize_dir -- tests/conformance`.

fn main() {
    let dir = std::env::args().nth(1).unwrap_or_else(|| "tests/conformance".into());
    let mut dirs: Vec<_> = std::fs::read_dir(&dir)
        .map(|rd| rd.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default();
    dirs.sort();
    for d in dirs {
        let Ok(src) = std::fs::read_to_string(d.join("program.eqf")) else { continue };
        let Ok(p) = eqfuse_ir::parse::parse(&src) else { continue };
        let Ok(c) = eqfuse_ir::check::check(&p) else { continue };
        let name = d.file_name().map(|s| s.to_string_lossy().to_string()).unwrap_or_default();
        match eqfuse_optimize::optimize(&c, &Default::default()) {
            Ok(o) => {
                let (n, cl, it) = o.egraph_size();
                let kernels: Vec<String> = o
                    .plan
                    .steps
                    .iter()
                    .filter_map(|s| match s {
                        eqfuse_ir::plan::Step::Kernel(k) => Some(format!(
                            "{}->{}",
                            k.kind,
                            k.writes()
                                .iter()
                                .map(|v| o.plan.values[*v].name.clone())
                                .collect::<Vec<_>>()
                                .join(",")
                        )),
                        _ => None,
                    })
                    .collect();
                for p in &o.phases {
                    println!("   phase {}: {:.1} ms, {} nodes", p.name, p.seconds * 1e3, p.nodes);
                }
                println!(
                    "== {name}: {:.1} ms, {} , {n} nodes, {cl} classes, {it} iterations\n   plan: {} kernels [{}], predicted {:.3e} s (unfused {:.3e} s)\n{:?}\n{}",
                    o.optimize_ms,
                    o.stop_reason,
                    kernels.len(),
                    kernels.join(" "),
                    o.cost.total,
                    o.unfused_cost.total,
                    o.rules_fired,
                    eqfuse_ir::print::print_program(&o.program)
                );
            }
            Err(e) => println!("== {name}: error {e}"),
        }
    }
}
