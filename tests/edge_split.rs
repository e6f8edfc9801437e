//! Index-set splitting (`ir::plan::EdgeSplit`): a kernel whose element tests its indices
//! against the edges of the space (a stencil's boundary) runs the interior with those tests
//! answered and its reads within the margins unchecked. The plan's kernels have such a split,
//! and the CPU's results equal the reference interpreter's at every small shape (where the
//! edges overlap or there is no interior) and at random ones (the seed is printed); a read
//! beyond the margins (`t[i, j + 3]`, guarded otherwise) keeps its check.

#![allow(clippy::unwrap_used)]

mod common;

use common::rng;
use eqfuse::{Arrays, Backend, OptimizeOptions, Value};

const STENCILS: &str = "input t : f32[h, w]
output jacobi = generate [h, w] (\\i j ->
  if i == 0 || j == 0 || i == h - 1 || j == w - 1 then t[i, j]
  else 0.25 * (t[i - 1, j] + t[i + 1, j] + t[i, j - 1] + t[i, j + 1]))
output wide = generate [h, w] (\\i j ->
  if j < 2 || j >= w - 2 then 0.0 else t[i, j - 2] - t[i, j + 2])
output edge = generate [h, w] (\\i j -> if j != 0 then t[i, j] else -1.0)
output beyond = generate [h, w] (\\i j -> if j == 0 || j + 3 >= w then 0.0 else t[i, j + 3] - t[i, j - 1])
output cube = generate [h, 2, w] (\\i p j -> if i == 0 || j == w - 1 then 0.0 else t[i - 1, j + 1] * f32 p)
";

#[test]
fn stencil_edges_split_and_agree_with_the_reference_at_every_small_shape() {
    let p = eqfuse::parse(STENCILS).unwrap();
    let opt = eqfuse::optimize(&p, &OptimizeOptions::default()).unwrap();
    let ks: Vec<&eqfuse::ir::plan::Kernel> = opt
        .result
        .plan
        .steps
        .iter()
        .flat_map(|s| match s {
            eqfuse::ir::plan::Step::Kernel(k) => vec![k],
            eqfuse::ir::plan::Step::RowBlock { kernels, .. } => kernels.iter().collect(),
            _ => Vec::new(),
        })
        .collect();
    assert!(!ks.is_empty(), "{}", opt.result.plan);
    for k in ks {
        assert!(k.elem.edge_split(&k.space).is_some(), "not split:\n{}", opt.result.plan);
    }
    let checked = eqfuse::check(&p).unwrap();
    let (seed, mut next) = rng();
    let mut shapes: Vec<(usize, usize)> = (1..6).flat_map(|h| (1..7).map(move |w| (h, w))).collect();
    shapes.extend((0..4).map(|_| (1 + (next() % 40) as usize, 1 + (next() % 3000) as usize)));
    for (h, w) in shapes {
        let v: Vec<f32> = (0..h * w).map(|_| (next() % 1000) as f32 / 8.0).collect();
        let mut inputs = Arrays::new();
        inputs.insert(
            "t".into(),
            Value::from(ndarray::Array::from_shape_vec(vec![h, w], v).unwrap().into_dyn()),
        );
        let want = eqfuse::run(&checked, Backend::Reference, &inputs).unwrap();
        let got = eqfuse::run(&checked, Backend::Cpu, &inputs).unwrap();
        assert_eq!(got, want, "seed {seed}: shape [{h}, {w}]");
    }
}
