//! Running a [`ChunkPlan`] block after block in this process: the same steps `eqfuse.dask`
//! hands to Dask, here the oracle that tests the split against the whole program.

use super::ChunkPlan;
use crate::{Arrays, Backend, Checked, Error, Result, Scalar, Value};
use eqfuse_ir::with_array;
use ndarray::{Axis, Slice};

/// A sub-program, checked once.
fn load(source: &str) -> Result<Checked> {
    crate::check(&crate::parse(source)?)
}

/// Runs `checked` on the inputs it declares, taken from `env`.
fn run_on(checked: &Checked, env: &Arrays, backend: Backend) -> Result<Arrays> {
    let mut inputs = Arrays::new();
    for name in checked.inputs.keys() {
        let v = env.get(name).ok_or_else(|| eqfuse_ir::error::internal(format!("no value for `{name}`")))?;
        inputs.insert(name.clone(), v.clone());
    }
    crate::run(checked, backend, &inputs)
}

fn rows(v: &Value, lo: usize, hi: usize) -> Value {
    with_array!(v, a => Value::from(a.slice_axis(Axis(0), Slice::from(lo..hi)).to_owned()))
}

fn concat_rows(parts: &[Value]) -> Result<Value> {
    macro_rules! cat {
        ($variant:ident) => {{
            let views = parts
                .iter()
                .map(|p| match p {
                    Value::$variant(a) => Ok(a.view()),
                    _ => Err(eqfuse_ir::error::internal("blocks of one output differ in type")),
                })
                .collect::<Result<Vec<_>>>()?;
            ndarray::concatenate(Axis(0), &views).map(Value::from).map_err(|e| {
                Error::new(crate::Code::Shape, format!("the blocks of an output do not join: {e}"))
            })
        }};
    }
    match parts.first() {
        Some(Value::Bool(_)) => cat!(Bool),
        Some(Value::I32(_)) => cat!(I32),
        Some(Value::I64(_)) => cat!(I64),
        Some(Value::I8(_)) => cat!(I8),
        Some(Value::I16(_)) => cat!(I16),
        Some(Value::U8(_)) => cat!(U8),
        Some(Value::U16(_)) => cat!(U16),
        Some(Value::U32(_)) => cat!(U32),
        Some(Value::U64(_)) => cat!(U64),
        Some(Value::F32(_)) => cat!(F32),
        Some(Value::F64(_)) => cat!(F64),
        None => Err(eqfuse_ir::error::internal("an output with no blocks")),
    }
}

/// Runs `plan` (made from `checked` by [`super::split`]) on `inputs`, with the chunked
/// inputs cut into blocks of at most `block_rows` rows, every sub-program on `backend`.
///
/// ```
/// use eqfuse::{Arrays, Backend, Value};
/// let checked = eqfuse::check(&eqfuse::parse("
///     input xs : f64[n]
///     output total = reduce (+) 0 xs
///     output running = scan (+) 0 xs
/// ")?)?;
/// let plan = eqfuse::chunks::split(&checked, "n")?;
/// let mut inputs = Arrays::new();
/// inputs.insert("xs".into(), Value::from(ndarray::arr1(&[1.0, 2.0, 3.0, 4.0, 5.0]).into_dyn()));
/// let out = eqfuse::chunks::run_in_blocks(&checked, &plan, &inputs, 2, Backend::Cpu)?;
/// assert_eq!(out, eqfuse::run(&checked, Backend::Reference, &inputs)?);
/// # Ok::<(), eqfuse::Error>(())
/// ```
pub fn run_in_blocks(
    checked: &Checked,
    plan: &ChunkPlan,
    inputs: &Arrays,
    block_rows: usize,
    backend: Backend,
) -> Result<Arrays> {
    let bound = eqfuse_ir::bind::bind_inputs(checked, inputs, &Default::default())?;
    let mut whole = Arrays::new();
    for (name, v) in &bound.sizes {
        whole.insert(name.clone(), Value::scalar(Scalar::I64(*v)));
    }
    for (name, v) in inputs {
        if !plan.chunked.contains(name) {
            whole.insert(name.clone(), v.clone());
        }
    }
    let total = bound.sizes.get(&plan.axis).copied().unwrap_or(0).max(0) as usize;
    let step = block_rows.max(1);
    let bounds: Vec<(usize, usize)> = if total == 0 {
        vec![(0, 0)]
    } else {
        (0..total).step_by(step).map(|lo| (lo, (lo + step).min(total))).collect()
    };
    let mut blocks: Vec<Arrays> = bounds
        .iter()
        .map(|&(lo, hi)| {
            let mut env = whole.clone();
            env.insert(super::BLOCK_OFFSET.into(), Value::scalar(Scalar::I64(lo as i64)));
            env.insert(super::BLOCK_ROWS.into(), Value::scalar(Scalar::I64((hi - lo) as i64)));
            for name in &plan.chunked {
                if let Some(v) = inputs.get(name) {
                    env.insert(name.clone(), rows(v, lo, hi));
                }
            }
            env
        })
        .collect();
    for pass in &plan.passes {
        let program = load(&pass.source)?;
        let results = blocks.iter().map(|env| run_on(&program, env, backend)).collect::<Result<Vec<_>>>()?;
        for c in &pass.combine {
            // each block's partial (a scalar, or a row of a column reduction), stacked
            let parts = results
                .iter()
                .map(|r| {
                    r.get(&c.name)
                        .map(|v| with_array!(v, a => Value::from(a.clone().insert_axis(Axis(0)))))
                        .ok_or_else(|| eqfuse_ir::error::internal("a pass without its partial"))
                })
                .collect::<Result<Vec<_>>>()?;
            let parts = concat_rows(&parts)?;
            let mut env = Arrays::new();
            env.insert("parts".into(), parts);
            let out = run_on(&load(&c.source)?, &env, backend)?;
            match &c.carry {
                None => {
                    let v = out
                        .get("value")
                        .cloned()
                        .ok_or_else(|| eqfuse_ir::error::internal("no combined value"))?;
                    whole.insert(c.name.clone(), v.clone());
                    for env in &mut blocks {
                        env.insert(c.name.clone(), v.clone());
                    }
                }
                Some(carry) => {
                    let carries =
                        out.get("carries").ok_or_else(|| eqfuse_ir::error::internal("no carries"))?;
                    for (k, env) in blocks.iter_mut().enumerate() {
                        let s =
                            carries.get_flat(k).ok_or_else(|| eqfuse_ir::error::internal("a carry short"))?;
                        env.insert(carry.clone(), Value::scalar(s));
                    }
                }
            }
        }
    }
    let globals = match &plan.globals {
        Some(src) => run_on(&load(src)?, &whole, backend)?,
        None => Arrays::new(),
    };
    let mut row_parts: indexmap::IndexMap<String, Vec<Value>> = indexmap::IndexMap::new();
    if let Some(src) = &plan.rows {
        let program = load(src)?;
        for env in &blocks {
            for (name, v) in run_on(&program, env, backend)? {
                row_parts.entry(name).or_default().push(v);
            }
        }
    }
    let mut out = Arrays::new();
    for (name, from_rows) in &plan.outputs {
        let v = if *from_rows {
            concat_rows(row_parts.get(name).map_or(&[][..], Vec::as_slice))?
        } else {
            globals
                .get(name)
                .cloned()
                .ok_or_else(|| eqfuse_ir::error::internal(format!("no output `{name}`")))?
        };
        out.insert(name.clone(), v);
    }
    Ok(out)
}
