//! Values as `eqfuse run` prints them, as NumPy would: a scalar as itself; an array of up
//! to [`WHOLE`] elements whole, a matrix by rows with its columns aligned; a bigger array
//! as a summary that keeps the first and last [`EDGE`] entries of every long dimension.

use eqfuse::{Scalar, Value};
use std::collections::HashMap;

/// Arrays with at most this many elements print whole.
const WHOLE: usize = 1000;

/// In a summary, the entries kept at each end of a dimension longer than `2 * EDGE`.
const EDGE: usize = 3;

/// `f32[3] [1.0, 2.0, 3.0]`; a matrix as `f32[2, 2]` and its rows on the next lines; a
/// scalar as `1.5 (f32)`.
pub fn summary(v: &Value) -> String {
    let shape = v.shape();
    if shape.is_empty() {
        return match v.get_flat(0) {
            Some(s) => format!("{s} ({})", v.elem_type()),
            None => String::from("?"),
        };
    }
    let dims: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
    let head = format!("{}[{}]", v.elem_type(), dims.join(", "));
    if v.is_empty() {
        return format!("{head} []");
    }
    let whole = v.len() <= WHOLE;
    // only the entries shown are formatted: a summary of a big array costs nothing
    let texts: HashMap<usize, String> = shown(shape, whole)
        .into_iter()
        .map(|i| (i, v.get_flat(i).as_ref().map_or_else(|| "?".to_string(), Scalar::to_string)))
        .collect();
    if shape.len() == 1 {
        return format!("{head} {}", nested(shape, &texts, 0, 0, whole, 0));
    }
    // the width of the widest entry shown aligns the columns
    let width = texts.values().map(|t| t.chars().count()).max().unwrap_or(0);
    format!("{head}\n{}", nested(shape, &texts, 0, 0, whole, width))
}

/// The flat indices of the entries a (summarised unless `whole`) print shows.
fn shown(shape: &[usize], whole: bool) -> Vec<usize> {
    let mut out = vec![0usize];
    for &d in shape {
        let keep = kept(d, whole);
        out = out.iter().flat_map(|base| keep.iter().map(move |k| base * d + k)).collect();
    }
    out
}

/// The indices of a dimension of length `d` that are shown.
fn kept(d: usize, whole: bool) -> Vec<usize> {
    if whole || d <= 2 * EDGE {
        (0..d).collect()
    } else {
        (0..EDGE).chain(d - EDGE..d).collect()
    }
}

/// The sub-array at flat offset `base` of dimension `depth`, as nested brackets; rows of a
/// matrix go on lines of their own, indented by their depth, padded to `width`.
fn nested(
    shape: &[usize],
    texts: &HashMap<usize, String>,
    depth: usize,
    base: usize,
    whole: bool,
    width: usize,
) -> String {
    let d = shape[depth];
    let keep = kept(d, whole);
    let stride: usize = shape[depth + 1..].iter().product();
    let mut parts = Vec::with_capacity(keep.len() + 1);
    for (n, &k) in keep.iter().enumerate() {
        if n > 0 && keep[n - 1] + 1 != k {
            parts.push("...".to_string());
        }
        let at = base + k * stride;
        parts.push(if depth + 1 == shape.len() {
            format!("{:>width$}", texts.get(&at).map_or("?", String::as_str))
        } else {
            nested(shape, texts, depth + 1, at, whole, width)
        });
    }
    if depth + 1 == shape.len() {
        return format!("[{}]", parts.join(", "));
    }
    // one line per row; a blank line between the blocks of a rank-3 array and beyond
    let gap = "\n".repeat(shape.len() - depth - 1);
    let sep = format!(",{gap}{}", " ".repeat(depth + 1));
    format!("[{}]", parts.join(&sep))
}

#[cfg(test)]
mod tests {
    use super::summary;
    use eqfuse::Value;
    use ndarray::{ArrayD, IxDyn};

    fn f32s(shape: &[usize]) -> Value {
        let n: usize = shape.iter().product();
        let v: Vec<f32> = (0..n).map(|i| i as f32 * 0.5).collect();
        Value::from(ArrayD::from_shape_vec(IxDyn(shape), v).expect("shape"))
    }

    #[test]
    fn small_arrays_print_whole_by_rows() {
        assert_eq!(summary(&f32s(&[4])), "f32[4] [0.0, 0.5, 1.0, 1.5]");
        assert_eq!(
            summary(&f32s(&[3, 4])),
            "f32[3, 4]\n[[0.0, 0.5, 1.0, 1.5],\n [2.0, 2.5, 3.0, 3.5],\n [4.0, 4.5, 5.0, 5.5]]"
        );
        assert_eq!(
            summary(&f32s(&[2, 2, 2])),
            "f32[2, 2, 2]\n[[[0.0, 0.5],\n  [1.0, 1.5]],\n\n [[2.0, 2.5],\n  [3.0, 3.5]]]"
        );
        assert_eq!(summary(&f32s(&[2, 0])), "f32[2, 0] []");
        let wide = summary(&f32s(&[2, 21]));
        assert!(wide.starts_with("f32[2, 21]\n[[ 0.0,  0.5,"), "{wide}");
        assert_eq!(summary(&f32s(&[1000])).matches(", ").count(), 999);
    }

    #[test]
    fn big_arrays_print_a_summary() {
        assert_eq!(summary(&f32s(&[1001])), "f32[1001] [0.0, 0.5, 1.0, ..., 499.0, 499.5, 500.0]");
        assert_eq!(
            summary(&f32s(&[100, 100])),
            "f32[100, 100]\n[[   0.0,    0.5,    1.0, ...,   48.5,   49.0,   49.5],\n \
             [  50.0,   50.5,   51.0, ...,   98.5,   99.0,   99.5],\n \
             [ 100.0,  100.5,  101.0, ...,  148.5,  149.0,  149.5],\n \
             ...,\n \
             [4850.0, 4850.5, 4851.0, ..., 4898.5, 4899.0, 4899.5],\n \
             [4900.0, 4900.5, 4901.0, ..., 4948.5, 4949.0, 4949.5],\n \
             [4950.0, 4950.5, 4951.0, ..., 4998.5, 4999.0, 4999.5]]"
        );
    }
}
