//! Build saxpy and a dot product with the Rust builder API, optimise them, run them on
//! ndarray inputs with the best backend present (the GPU if there is one, else the CPU) and
//! with the reference interpreter, and compare both with a direct loop.
//!
//! ```sh
//! cargo run --release --example builder_saxpy
//! ```

use eqfuse::builder::{map2, reduce, Op};
use eqfuse::{Arrays, Backend, Builder, ElemType, OptimizeOptions, Value};
use ndarray::{Array1, ArrayD, IxDyn};

fn main() {
    if let Err(e) = saxpy_and_dot() {
        eprintln!("{e}");
        std::process::exit(1);
    }
}

fn saxpy_and_dot() -> Result<(), eqfuse::Error> {
    let mut b = Builder::new();
    let alpha = b.input_scalar("alpha", ElemType::F32);
    let xs = b.input_array("xs", ElemType::F32, &["n"]);
    let ys = b.input_array("ys", ElemType::F32, &["n"]);
    let zs = b.let_arr("zs", &map2(|x, y| &alpha * x + y, &xs, &ys));
    b.output_binding("zs");
    b.output("dot", &reduce(Op::Add, 0, &map2(|x, y| x * y, &zs, &ys)));
    let program = b.build()?;
    println!("the program, as .eqf text:\n{program}");

    let n = 10_000;
    let x: Array1<f32> = (0..n).map(|i| (i as f32 * 0.001).sin()).collect();
    let y: Array1<f32> = (0..n).map(|i| (i as f32 * 0.002).cos()).collect();
    let mut inputs = Arrays::new();
    inputs.insert("alpha".into(), Value::from(ArrayD::from_elem(IxDyn(&[]), 2.0f32)));
    inputs.insert("xs".into(), Value::from(x.clone().into_dyn()));
    inputs.insert("ys".into(), Value::from(y.clone().into_dyn()));

    // optimise: the product map fuses into the reduction (2 kernels instead of 3); `zs` is an
    // output, so it is written once and the reduction reads it back
    let opt = eqfuse::optimize(&program, &OptimizeOptions::default())?;
    println!(
        "optimised: {} kernel(s) (unfused: {}), predicted {:.2e} s",
        opt.kernels.kernels.len(),
        opt.unfused.kernels.len(),
        opt.kernels.predicted_s
    );
    let backend = Backend::auto();
    let out = opt.run(backend, &inputs)?;
    println!("ran on {backend}");

    // the oracle: the reference interpreter on the unoptimised program
    let checked = eqfuse::check(&program)?;
    let reference = eqfuse::run(&checked, Backend::Reference, &inputs)?;
    assert_eq!(out["zs"], reference["zs"], "the optimised saxpy differs from the reference");

    let want_z: Vec<f32> = x.iter().zip(&y).map(|(x, y)| 2.0 * x + y).collect();
    let want_dot: f64 = want_z.iter().zip(&y).map(|(z, y)| f64::from(*z) * f64::from(*y)).sum();
    let (Value::F32(z), Value::F32(dot)) = (&out["zs"], &out["dot"]) else {
        return Err(eqfuse::Error::new(eqfuse::Code::Type, "unexpected output types"));
    };
    assert!(z.iter().zip(&want_z).all(|(a, b)| a == b), "saxpy differs from the direct loop");
    let got_dot = dot.iter().next().copied().unwrap_or(f32::NAN);
    println!("zs[..4] = {:?}", z.iter().take(4).collect::<Vec<_>>());
    println!("dot = {got_dot} (direct loop in f64: {want_dot:.3})");
    assert!((f64::from(got_dot) - want_dot).abs() <= 1e-3 * want_dot.abs().max(1.0));
    Ok(())
}
