//! Short human-readable summaries of values.

use eqfuse::Value;

/// `f32[3] [1.0, 2.0, 3.0]`, eliding the middle of long arrays; a scalar prints as itself.
pub fn summary(v: &Value) -> String {
    let elems = v.to_scalars();
    if v.shape().is_empty() {
        return match elems.first() {
            Some(s) => format!("{s} ({})", v.elem_type()),
            None => String::from("?"),
        };
    }
    let dims: Vec<String> = v.shape().iter().map(|d| d.to_string()).collect();
    let shown: Vec<String> = if elems.len() <= 8 {
        elems.iter().map(|s| s.to_string()).collect()
    } else {
        let mut s: Vec<String> = elems[..4].iter().map(|s| s.to_string()).collect();
        s.push("...".into());
        s.extend(elems[elems.len() - 3..].iter().map(|s| s.to_string()));
        s
    };
    format!("{}[{}] [{}]", v.elem_type(), dims.join(", "), shown.join(", "))
}
