//! Binding a program's inputs: the checks every backend makes before it runs.
//!
//! [`bind_inputs`] checks that every declared input is given and nothing else is, that each
//! has the declared element type and rank, that literal dimensions match, and binds every
//! size name from the inputs' shapes, requiring inputs that share a size name to agree. A
//! dimension `k * n + c` (`i64[m + 1]`, `f32[2 * n]`) binds `n` where the input's size gives a
//! non-negative integer, else `E-SHAPE`.

use crate::ast::Limits;
use crate::checked::Checked;
use crate::error::{Code, Error, Result};
use crate::types::{Dim, Type};
use crate::value::AsValueView;
use indexmap::IndexMap;

/// What binding the inputs established.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Bindings {
    /// Every size name with its value, in order of first appearance in the declarations.
    pub sizes: IndexMap<String, i64>,
}

/// Checks `inputs` against the program's declared inputs and binds the size names.
///
/// Errors: a declared input not given, or a name given that the program does not declare,
/// or an input of the wrong element type or rank, is `E-INPUT`; a literal dimension that
/// differs, or a size name bound to two different values, is `E-SHAPE`; a dimension above
/// `i64::MAX`, or an input whose bytes exceed `limits.max_array_bytes`, is `E-LIMIT`.
pub fn bind_inputs<V: AsValueView>(
    checked: &Checked,
    inputs: &IndexMap<String, V>,
    limits: &Limits,
) -> Result<Bindings> {
    let declared = &checked.inputs;
    for (name, ty) in declared {
        if !inputs.contains_key(name) {
            let mut err = Error::input(format!("missing input `{name}` ({ty})"));
            let unknown: Vec<String> =
                inputs.keys().filter(|k| !declared.contains_key(*k)).map(|k| format!("`{k}`")).collect();
            if !unknown.is_empty() {
                err = err.with_note(format!("given but not declared: {}", unknown.join(", ")));
            }
            return Err(err);
        }
    }
    if let Some(name) = inputs.keys().find(|k| !declared.contains_key(*k)) {
        let known: Vec<String> = declared.keys().map(|k| format!("`{k}`")).collect();
        let list = if known.is_empty() {
            "the program has no inputs".to_string()
        } else {
            format!("the program's inputs are {}", known.join(", "))
        };
        return Err(Error::input(format!("unknown input `{name}`; {list}")));
    }

    let mut sizes: IndexMap<String, i64> = IndexMap::new();
    // Which input first bound each size name, for the disagreement message.
    let mut bound_by: IndexMap<String, String> = IndexMap::new();
    for (name, ty) in declared {
        let Some(value) = inputs.get(name) else { continue };
        let value = value.as_view();
        let (elem, dims): (_, &[Dim]) = match ty {
            Type::Scalar(e) => (*e, &[]),
            Type::Array { elem, shape } => (*elem, shape),
            other => return Err(Error::input(format!("input `{name}` is declared with type {other}"))),
        };
        if value.elem_type() != elem {
            return Err(Error::input(format!(
                "input `{name}` is {}, the program declares {ty}",
                value.elem_type()
            )));
        }
        let shape = value.shape();
        if shape.len() != dims.len() {
            let given = if shape.is_empty() {
                "a scalar".to_string()
            } else {
                format!("of rank {} (shape {})", shape.len(), fmt_shape(shape))
            };
            return Err(Error::input(format!(
                "input `{name}` is {given}, the program declares {ty} of rank {}",
                dims.len()
            )));
        }
        let bytes = (value.len() as u128) * (elem.size_bytes() as u128);
        if bytes > u128::from(limits.max_array_bytes) {
            return Err(Error::limit(format!(
                "input `{name}` has {bytes} bytes, over the limit of {} bytes",
                limits.max_array_bytes
            )));
        }
        for (k, (dim, &actual)) in dims.iter().zip(shape).enumerate() {
            let Ok(actual) = i64::try_from(actual) else {
                return Err(Error::limit(format!(
                    "input `{name}`: dimension {k} of size {actual} overflows i64"
                )));
            };
            match dim {
                Dim::Known(want) => {
                    if *want != actual {
                        return Err(Error::new(
                            Code::Shape,
                            format!(
                                "input `{name}` has shape {}, the program declares {ty}: dimension {k} is {actual}, not {want}",
                                fmt_shape(shape)
                            ),
                        ));
                    }
                }
                Dim::Size(size) => bind_size(&mut sizes, &mut bound_by, size, actual, name)?,
                Dim::Affine { name: size, mul, add } => {
                    let value = affine_size(*mul, *add, actual).ok_or_else(|| {
                        Error::new(
                            Code::Shape,
                            format!(
                                "input `{name}` has shape {}, the program declares {ty}: dimension {k} is {actual}, \
                                 and no non-negative integer `{size}` gives {dim} = {actual}",
                                fmt_shape(shape)
                            ),
                        )
                    })?;
                    bind_size(&mut sizes, &mut bound_by, size, value, name)?;
                    // the plain size the optimiser's program names this dimension by
                    sizes.entry(Dim::affine_stand_in(size, *mul, *add)).or_insert(actual);
                }
                other => {
                    return Err(Error::input(format!(
                        "input `{name}` declares dimension {k} as `{other}`, which inputs cannot"
                    )))
                }
            }
        }
    }
    // Keep the checker's order of size names where it lists them.
    let mut ordered = IndexMap::new();
    for s in &checked.sizes {
        if let Some(v) = sizes.get(s) {
            ordered.insert(s.clone(), *v);
        }
    }
    for (s, v) in sizes {
        ordered.entry(s).or_insert(v);
    }
    Ok(Bindings { sizes: ordered })
}

/// The `n >= 0` with `mul * n + add == actual`, if there is one.
fn affine_size(mul: i64, add: i64, actual: i64) -> Option<i64> {
    if mul < 1 {
        return None;
    }
    let rest = actual.checked_sub(add)?;
    (rest >= 0 && rest % mul == 0).then_some(rest / mul)
}

/// Binds the size name `size` to `value` from input `name`, or `E-SHAPE` naming both inputs
/// where an earlier input bound it to another value.
fn bind_size(
    sizes: &mut IndexMap<String, i64>,
    bound_by: &mut IndexMap<String, String>,
    size: &str,
    value: i64,
    name: &str,
) -> Result<()> {
    match sizes.get(size) {
        Some(&prev) if prev != value => {
            let first = bound_by.get(size).map(String::as_str).unwrap_or("another input");
            Err(Error::new(
                Code::Shape,
                format!("size `{size}` is {prev} from `{first}` but {value} from `{name}`"),
            ))
        }
        Some(_) => Ok(()),
        None => {
            sizes.insert(size.to_string(), value);
            bound_by.insert(size.to_string(), name.to_string());
            Ok(())
        }
    }
}

/// Formats a shape as `[3, 4]`.
fn fmt_shape(shape: &[usize]) -> String {
    let parts: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
    format!("[{}]", parts.join(", "))
}
