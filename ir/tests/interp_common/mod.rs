//! Helpers shared by the interpreter tests (`mod interp_common;`).
#![allow(dead_code, clippy::unwrap_used)]

use eqfuse_ir::check::check;
use eqfuse_ir::error::{Code, Error, Result};
use eqfuse_ir::interp::{interpret, interpret_with};
use eqfuse_ir::parse::parse;
use eqfuse_ir::{Limits, Scalar, Value};
use indexmap::IndexMap;
use ndarray::{ArrayD, IxDyn};

/// Parses, checks and interprets `src` on `inputs`.
pub fn run(src: &str, inputs: Vec<(&str, Value)>) -> Result<IndexMap<String, Value>> {
    run_with(src, inputs, &Limits::default())
}

/// Parses, checks and interprets `src` on `inputs` under `limits`.
pub fn run_with(src: &str, inputs: Vec<(&str, Value)>, limits: &Limits) -> Result<IndexMap<String, Value>> {
    let prog = parse(src).unwrap_or_else(|e| panic!("parse failed: {e}\n{src}"));
    let checked = check(&prog).unwrap_or_else(|e| panic!("check failed: {e}\n{src}"));
    let inputs: IndexMap<String, Value> = inputs.into_iter().map(|(k, v)| (k.to_string(), v)).collect();
    if limits.max_array_bytes == Limits::default().max_array_bytes {
        interpret(&checked, &inputs)
    } else {
        interpret_with(&checked, &inputs, limits)
    }
}

/// Runs and returns the single output named `name`.
pub fn out(src: &str, inputs: Vec<(&str, Value)>, name: &str) -> Value {
    let outs = run(src, inputs).unwrap_or_else(|e| panic!("run failed: {e}\n{src}"));
    outs.get(name).cloned().unwrap_or_else(|| panic!("no output `{name}`"))
}

/// Runs and returns the error, which must have code `code`.
pub fn err(src: &str, inputs: Vec<(&str, Value)>, code: Code) -> Error {
    match run(src, inputs) {
        Ok(v) => panic!("expected {code}, got {v:?}\n{src}"),
        Err(e) => {
            assert_eq!(e.code, code, "wrong code: {e}\n{src}");
            e
        }
    }
}

/// Runs and returns the scalar output `name`.
pub fn scalar_out(src: &str, inputs: Vec<(&str, Value)>, name: &str) -> Scalar {
    let v = out(src, inputs, name);
    assert!(v.shape().is_empty(), "output `{name}` is not a scalar: {v:?}");
    v.get_flat(0).unwrap()
}

pub fn f32s(v: &[f32]) -> Value {
    Value::F32(ArrayD::from_shape_vec(IxDyn(&[v.len()]), v.to_vec()).unwrap())
}
pub fn f64s(v: &[f64]) -> Value {
    Value::F64(ArrayD::from_shape_vec(IxDyn(&[v.len()]), v.to_vec()).unwrap())
}
pub fn i64s(v: &[i64]) -> Value {
    Value::I64(ArrayD::from_shape_vec(IxDyn(&[v.len()]), v.to_vec()).unwrap())
}
pub fn i32s(v: &[i32]) -> Value {
    Value::I32(ArrayD::from_shape_vec(IxDyn(&[v.len()]), v.to_vec()).unwrap())
}
pub fn i64m(r: usize, c: usize, v: &[i64]) -> Value {
    Value::I64(ArrayD::from_shape_vec(IxDyn(&[r, c]), v.to_vec()).unwrap())
}
pub fn f32m(r: usize, c: usize, v: &[f32]) -> Value {
    Value::F32(ArrayD::from_shape_vec(IxDyn(&[r, c]), v.to_vec()).unwrap())
}
pub fn s(x: Scalar) -> Value {
    Value::scalar(x)
}

/// The elements of an `i64` value.
pub fn as_i64(v: &Value) -> Vec<i64> {
    match v {
        Value::I64(a) => a.iter().copied().collect(),
        other => panic!("not i64: {other:?}"),
    }
}
/// The elements of an `f32` value.
pub fn as_f32(v: &Value) -> Vec<f32> {
    match v {
        Value::F32(a) => a.iter().copied().collect(),
        other => panic!("not f32: {other:?}"),
    }
}
/// The elements of an `f64` value.
pub fn as_f64(v: &Value) -> Vec<f64> {
    match v {
        Value::F64(a) => a.iter().copied().collect(),
        other => panic!("not f64: {other:?}"),
    }
}
/// The elements of a `bool` value.
pub fn as_bool(v: &Value) -> Vec<bool> {
    match v {
        Value::Bool(a) => a.iter().copied().collect(),
        other => panic!("not bool: {other:?}"),
    }
}
