//! Maps over several dimensions whose element reads only at its own point run as one flat
//! run of points on the device (`codegen::flat`: index `(0, .., 0, f)`, 16-byte tiles over
//! the flattened space), and fall back to dividing the flat index where an array is wider
//! than the space; either way they agree with the plan interpreter.

use super::{agrees, emu};
use crate::CudaOptions;
use eqfuse_ir::check::check;
use eqfuse_ir::parse::parse;
use eqfuse_ir::value::Value;
use eqfuse_optimize::{optimize, OptimizeOptions};
use indexmap::IndexMap;

fn f32s(shape: &[usize], salt: usize) -> Value {
    let n: usize = shape.iter().product();
    let v: Vec<f32> = (0..n).map(|k| ((k * 37 + salt) % 101) as f32 / 8.0 + 0.125).collect();
    Value::F32(ndarray::Array::from_shape_vec(shape.to_vec(), v).unwrap().into_dyn())
}

#[test]
fn flat_maps_agree_with_the_interpreter() {
    let Some(emu) = emu() else { return };
    let flat =
        "input p : f32[a, b, c]\ninput q : f32[a, b, c]\noutput o = map (\\x y -> sqrt (x * x + y)) p q";
    let checked = check(&parse(flat).unwrap()).unwrap();
    let plan = optimize(&checked, &OptimizeOptions::default()).unwrap().plan;
    let src = crate::kernel_sources(&plan, &CudaOptions::default());
    assert!(src.iter().any(|(_, t)| t.contains("eq_elem_v(A, f, 0, 0, f")), "no flat tile");
    let wider = "input t : f32[h, v]\ninput b : f32[w]\noutput o = generate [h, w] (\\i j -> t[i, j] * 2.0)";
    let opts = CudaOptions { block_size: 32, disk_cache: false, ..CudaOptions::default() };
    let mut problems = Vec::new();
    for s in [[1, 1, 1], [2, 5, 3], [7, 1, 2], [33, 3, 5], [0, 2, 2]] {
        let mut inputs = IndexMap::new();
        inputs.insert("p".to_string(), f32s(&s, 1));
        inputs.insert("q".to_string(), f32s(&s, 2));
        problems.extend(agrees(&emu, &opts, &format!("flat {s:?}"), flat, Some(inputs), false));
    }
    for (h, v, w) in [(3, 5, 5), (3, 9, 5), (17, 130, 129)] {
        let mut inputs = IndexMap::new();
        inputs.insert("t".to_string(), f32s(&[h, v], 3));
        inputs.insert("b".to_string(), f32s(&[w], 4));
        problems.extend(agrees(
            &emu,
            &opts,
            &format!("wider t [{h}, {v}], space [{h}, {w}]"),
            wider,
            Some(inputs),
            false,
        ));
    }
    assert!(problems.is_empty(), "{} problems:\n{}", problems.len(), problems.join("\n"));
}
