//! Random inputs of the declared types: run a program with no data files
//! (`eqfuse run PROGRAM --random-inputs SEED [--size NAME=N]...`).
//!
//! Every declared input gets an array of its declared element type and shape. A size name
//! (`n` in `f32[n]`) takes the value given in [`RandomInputs::sizes`], else
//! [`RandomInputs::default_size`] (1000); inputs that name the same size therefore always
//! agree. The elements are:
//!
//! - floats (`f32`, `f64`): uniform in [`RandomInputs::float_range`] (default `[0, 1)`, so
//!   that `log`, `sqrt` and divisions by an input stay finite);
//! - integers (`i32`, `i64`): uniform in [`RandomInputs::int_range`] (default `0..16`):
//!   small and non-negative, so that a gather or a permute by an integer input usually
//!   stays in bounds. Where it does not (an index array into an input shorter than 16), the
//!   run reports `E-INDEX`, as it would for any data;
//! - `bool`: `true` or `false` with equal odds.
//!
//! The data depend only on the seed, the input's name, its type and the sizes: the same
//! seed gives the same inputs on every machine and every run, and adding an input to a
//! program does not change the data of the others.
//!
//! ```
//! use eqfuse::random_inputs::{random_inputs, RandomInputs};
//! use eqfuse::Value;
//!
//! let prog = eqfuse::parse("
//!     input m : f32[r, c]
//!     input v : f32[c]
//!     input idx : i64[k]
//!     input flag : bool
//!     output y = reduce (+) 0 (generate [r, c] (\\i j -> m[i, j] * v[j]))
//!     output g = gather v idx
//! ")?;
//! let checked = eqfuse::check(&prog)?;
//! let opts = RandomInputs::new(7).size("r", 3).size("c", 20);   // k takes the default, 1000
//! let inputs = random_inputs(&checked, &opts)?;
//! assert_eq!(inputs["m"].shape(), &[3, 20]);
//! assert_eq!(inputs["v"].shape(), &[20]);       // `c` agrees between `m` and `v`
//! assert_eq!(inputs["idx"].shape(), &[1000]);
//! assert_eq!(inputs["flag"].shape(), &[] as &[usize]);
//! let Value::I64(idx) = &inputs["idx"] else { unreachable!() };
//! assert!(idx.iter().all(|&i| (0..16).contains(&i)));   // a gather into `v` stays in bounds
//!
//! // deterministic for a seed
//! assert_eq!(inputs, random_inputs(&checked, &opts)?);
//! let out = eqfuse::run(&checked, eqfuse::Backend::Cpu, &inputs)?;
//! assert_eq!(out["y"].shape(), &[3]);
//! # Ok::<(), eqfuse::Error>(())
//! ```

use crate::{Arrays, Checked, Dim, ElemType, Error, Result, Type, Value};
use eqfuse_ir::value::Scalar;
use indexmap::IndexMap;
use ndarray::{ArrayD, IxDyn};

/// The size a size name takes when [`RandomInputs::sizes`] does not give one.
pub const DEFAULT_SIZE: i64 = 1000;

/// How [`random_inputs`] fills a program's inputs.
#[derive(Clone, Debug, PartialEq)]
pub struct RandomInputs {
    /// The seed: the same seed gives the same inputs.
    pub seed: u64,
    /// Values of size names (`n` in `input xs : f32[n]`); a size name of the program that is
    /// not here takes [`RandomInputs::default_size`]. A name the program does not declare is
    /// an `E-INPUT` error.
    pub sizes: IndexMap<String, i64>,
    /// The value of every size name not in [`RandomInputs::sizes`] ([`DEFAULT_SIZE`]).
    pub default_size: i64,
    /// Floats are uniform in `[lo, hi)` (`[0, 1)` by default; `f32` values may round to `hi`).
    pub float_range: (f64, f64),
    /// Integers are uniform in `lo..hi` (`0..16` by default).
    pub int_range: (i64, i64),
    /// The most bytes one generated input may take (`E-LIMIT` before allocating it); by
    /// default the machine's physical memory, as for every run.
    pub max_array_bytes: u64,
}

impl RandomInputs {
    /// The defaults with `seed`: sizes of [`DEFAULT_SIZE`], floats in `[0, 1)`, integers in
    /// `0..16`.
    pub fn new(seed: u64) -> RandomInputs {
        RandomInputs {
            seed,
            sizes: IndexMap::new(),
            default_size: DEFAULT_SIZE,
            float_range: (0.0, 1.0),
            int_range: (0, 16),
            max_array_bytes: eqfuse_ir::ast::default_memory_limit(),
        }
    }

    /// Sets the value of the size name `name` (builder style).
    pub fn size(mut self, name: &str, value: i64) -> RandomInputs {
        self.sizes.insert(name.to_string(), value);
        self
    }
}

impl Default for RandomInputs {
    /// [`RandomInputs::new`] with seed 1.
    fn default() -> RandomInputs {
        RandomInputs::new(1)
    }
}

/// The value of every size name of `checked` under `opts`, in the program's order.
///
/// Errors: a size in `opts.sizes` that the program does not declare, or a negative size, is
/// `E-INPUT`.
///
/// ```
/// use eqfuse::random_inputs::{size_values, RandomInputs};
/// let checked = eqfuse::check(&eqfuse::parse("input a : f32[n, m]\noutput b = a")?)?;
/// let sizes = size_values(&checked, &RandomInputs::new(1).size("m", 4))?;
/// assert_eq!(sizes.into_iter().collect::<Vec<_>>(), [("n".to_string(), 1000), ("m".to_string(), 4)]);
/// let err = size_values(&checked, &RandomInputs::new(1).size("k", 4)).unwrap_err();
/// assert_eq!(err.code, eqfuse::Code::Input);
/// # Ok::<(), eqfuse::Error>(())
/// ```
pub fn size_values(checked: &Checked, opts: &RandomInputs) -> Result<IndexMap<String, i64>> {
    for name in opts.sizes.keys() {
        if !checked.sizes.contains(name) {
            let known = if checked.sizes.is_empty() {
                "it has none".to_string()
            } else {
                format!("its sizes are {}", checked.sizes.join(", "))
            };
            return Err(Error::input(format!("the program has no size named `{name}`; {known}")));
        }
    }
    let mut sizes = IndexMap::new();
    for name in &checked.sizes {
        let value = opts.sizes.get(name).copied().unwrap_or(opts.default_size);
        if value < 0 {
            return Err(Error::input(format!("size `{name}` = {value} is negative")));
        }
        sizes.insert(name.clone(), value);
    }
    Ok(sizes)
}

/// Random inputs for every declared input of `checked`, in declaration order, as
/// [`crate::run`] takes them (see the [module docs](self) for the values).
///
/// Errors: those of [`size_values`]; `E-LIMIT` for an input whose element count overflows
/// or whose bytes exceed `opts.max_array_bytes`, before anything is allocated.
pub fn random_inputs(checked: &Checked, opts: &RandomInputs) -> Result<Arrays> {
    let sizes = size_values(checked, opts)?;
    let mut inputs = Arrays::new();
    for (name, ty) in &checked.inputs {
        let (elem, dims): (ElemType, &[Dim]) = match ty {
            Type::Scalar(e) => (*e, &[]),
            Type::Array { elem, shape } => (*elem, shape),
            other => {
                return Err(Error::input(format!("cannot generate input `{name}` of type {other}")));
            }
        };
        let mut shape = Vec::with_capacity(dims.len());
        for d in dims {
            let v = match d {
                Dim::Known(k) => *k,
                Dim::Size(s) => sizes.get(s).copied().unwrap_or(opts.default_size),
                other => {
                    return Err(Error::input(format!(
                        "cannot generate input `{name}`: its dimension `{other}` is not a literal or a size name"
                    )));
                }
            };
            shape.push(
                usize::try_from(v).map_err(|_| Error::input(format!("input `{name}`: negative size {v}")))?,
            );
        }
        let count = shape.iter().try_fold(1u64, |acc, &d| acc.checked_mul(d as u64));
        let bytes = count.and_then(|c| c.checked_mul(elem_bytes(elem)));
        match bytes {
            Some(b) if b <= opts.max_array_bytes && count.is_some_and(|c| c <= i64::MAX as u64) => {}
            _ => {
                return Err(Error::limit(format!(
                    "random input `{name}` of shape {shape:?} would take more than the {} bytes an array may use",
                    opts.max_array_bytes
                )));
            }
        }
        let count = count.unwrap_or(0) as usize;
        let mut rng = Rng::new(opts.seed, name, elem);
        let value = fill(elem, &shape, count, &mut rng, opts);
        inputs.insert(name.clone(), value);
    }
    Ok(inputs)
}

fn elem_bytes(e: ElemType) -> u64 {
    e.size_bytes() as u64
}

fn fill(elem: ElemType, shape: &[usize], count: usize, rng: &mut Rng, opts: &RandomInputs) -> Value {
    let (flo, fhi) = opts.float_range;
    let (ilo, ihi) = opts.int_range;
    let span = ihi.saturating_sub(ilo).max(1) as u64;
    let int = |rng: &mut Rng| ilo.wrapping_add((rng.next() % span) as i64);
    let float = |rng: &mut Rng| flo + (fhi - flo) * rng.unit();
    match elem {
        ElemType::Bool => Value::Bool(array(shape, count, || rng.next() >> 63 == 1)),
        ElemType::I32 => Value::I32(array(shape, count, || int(rng) as i32)),
        ElemType::I64 => Value::I64(array(shape, count, || int(rng))),
        ElemType::F32 => Value::F32(array(shape, count, || float(rng) as f32)),
        ElemType::F64 => Value::F64(array(shape, count, || float(rng))),
        t => {
            // the other integer types: the range, within the type's (else from 0 up)
            let (tlo, thi) = t.int_range().unwrap_or((0, 0));
            let (mut lo, mut hi) = (i128::from(ilo).max(tlo), i128::from(ihi).min(thi));
            if lo > hi {
                (lo, hi) = (tlo.max(0), thi.min(100));
            }
            let span = (hi - lo + 1) as u128;
            let data: Vec<Scalar> = (0..count)
                .map(|_| Scalar::from_i128_wrapping(t, lo + (u128::from(rng.next()) % span) as i128))
                .collect();
            Value::from_scalars(t, shape, &data)
                .unwrap_or_else(|| unreachable!("the element count is the product of the shape"))
        }
    }
}

/// An array of `shape` (whose element count is `count`) filled by `f`, row-major.
fn array<T>(shape: &[usize], count: usize, mut f: impl FnMut() -> T) -> ArrayD<T> {
    let v: Vec<T> = (0..count).map(|_| f()).collect();
    ArrayD::from_shape_vec(IxDyn(shape), v)
        .unwrap_or_else(|_| unreachable!("the element count is the product of the shape"))
}

/// splitmix64, seeded by the seed, the input's name and its element type.
struct Rng(u64);

impl Rng {
    fn new(seed: u64, name: &str, elem: ElemType) -> Rng {
        // FNV-1a over the name, then the element type
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for b in name.bytes().chain([elem_bytes(elem) as u8, elem.is_float() as u8]) {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
        Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ h)
    }

    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `[0, 1)`.
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn checked(src: &str) -> Checked {
        eqfuse_ir::check::check(&eqfuse_ir::parse::parse(src).expect("parses")).expect("checks")
    }

    #[test]
    fn seeds_differ_and_repeat() {
        let c = checked("input xs : f64[n]\noutput y = xs");
        let a = random_inputs(&c, &RandomInputs::new(1)).expect("ok");
        let b = random_inputs(&c, &RandomInputs::new(2)).expect("ok");
        assert_ne!(a, b);
        assert_eq!(a, random_inputs(&c, &RandomInputs::new(1)).expect("ok"));
        let Value::F64(x) = &a["xs"] else { panic!("f64") };
        assert!(x.iter().all(|v| (0.0..1.0).contains(v)));
    }

    #[test]
    fn limits() {
        let c = checked("input xs : f64[n, m]\noutput y = xs");
        let opts = RandomInputs::new(1).size("n", i64::MAX).size("m", 4);
        assert_eq!(random_inputs(&c, &opts).map_err(|e| e.code), Err(eqfuse_ir::Code::Limit));
        let opts = RandomInputs::new(1).size("n", -1);
        assert_eq!(random_inputs(&c, &opts).map_err(|e| e.code), Err(eqfuse_ir::Code::Input));
        let opts = RandomInputs::new(1).size("n", 0);
        assert_eq!(random_inputs(&c, &opts).expect("empty")["xs"].shape(), &[0, 1000]);
    }
}
