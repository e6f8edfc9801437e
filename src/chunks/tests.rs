//! Column reductions over the chunked rows (`reduce` of a rank-2 array whose inner dimension
//! is the axis): each block's row of partials, combined element by element, against the
//! whole program.

use super::{run_in_blocks, split};
use crate::{Arrays, Backend, Value};

fn checked(src: &str) -> crate::Checked {
    crate::check(&crate::parse(src).unwrap_or_else(|e| panic!("{e}"))).unwrap_or_else(|e| panic!("{e}"))
}

fn matrix(r: usize, c: usize) -> Value {
    Value::from(
        ndarray::Array2::from_shape_fn((r, c), |(i, j)| ((i * 7 + j * 3) % 11) as f64 - 4.5).into_dyn(),
    )
}

/// The program split along `n`, run in blocks of every size from 1 to past the rows, equals
/// the whole run.
fn same_in_blocks(src: &str, inputs: &Arrays, rows: usize) {
    let c = checked(src);
    let inputs: Arrays = inputs
        .iter()
        .filter(|(k, _)| c.inputs.contains_key(*k))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let inputs = &inputs;
    let plan = split(&c, "n").unwrap_or_else(|e| panic!("{src}: {e}"));
    let want = crate::run(&c, Backend::Reference, inputs).expect("the whole run");
    for block in 1..=rows + 1 {
        let got = run_in_blocks(&c, &plan, inputs, block, Backend::Reference).expect("the run in blocks");
        assert_eq!(got, want, "{src} in blocks of {block}");
    }
}

#[test]
fn column_sums_and_a_transposed_times_x_combine_rows_of_partials() {
    let mut inputs = Arrays::new();
    inputs.insert("m".into(), matrix(9, 4));
    inputs.insert("x".into(), Value::from(ndarray::Array1::from_shape_fn(9, |i| i as f64 - 3.0).into_dyn()));
    inputs.insert("y".into(), Value::from(ndarray::Array1::from_shape_fn(4, |j| j as f64).into_dyn()));
    for src in [
        "input m : f64[n, c]\noutput cols = reduce (+) 0 (transpose m)\noutput rows = reduce (+) 0 m",
        "input m : f64[n, c]\ninput x : f64[n]\noutput atx = reduce (+) 0 (generate [c, n] (\\j i -> m[i, j] * x[i]))",
        // the column maxima, then the rows less them: a second pass reads the first's row
        "input m : f64[n, c]\nlet top = reduce max (-inf) (transpose (map abs m))\n\
         output scaled = generate [n, c] (\\i j -> m[i, j] / top[j])\noutput t = top",
        // the row index as a number, and a whole input read by the columns' index
        "input m : f64[n, c]\ninput y : f64[c]\n\
         output w = reduce (+) 0 (generate [c, n] (\\j i -> m[i, j] * f64 i + y[j]))",
    ] {
        same_in_blocks(src, &inputs, 9);
    }
}

#[test]
fn a_scan_along_the_rows_of_every_column_is_refused() {
    let c = checked("input m : f64[n, c]\noutput s = reduce (+) 0 (scan (+) 0 (transpose m))");
    let e = split(&c, "n").expect_err("refused");
    assert!(e.message.contains("for every column"), "{}", e.message);
}
