//! The plan's values: inputs (borrowed, not copied), sizes and kernel results, with what
//! every kernel runner shares (a lane's result, the allocation limit, host functions run on
//! the VM). The steps that fill it run in [`crate::steps`].

use crate::col::{owned, Col, ColRef, Data};
use crate::compile::compile;
use crate::internal;
use crate::program::{ArrInfo, Env};
use crate::vm::{fmt_shape, Vm};
use eqfuse_ir::error::{Error, Result};
use eqfuse_ir::plan::{Func, Origin, PermuteDest, Plan, ValueId};
use eqfuse_ir::types::ElemType;
use eqfuse_ir::value::{AsValueView, Scalar, Value, ValueView};
use indexmap::IndexMap;
use ndarray::{ArrayD, ArrayViewD, IxDyn};
use std::borrow::Cow;
use std::sync::Arc;

/// A materialised value: its shape and its elements in row-major order. The elements are
/// shared: a `reshape` of a value is a buffer of another shape over the same elements (a
/// view, [`eqfuse_ir::plan::Kernel::view_of`]).
#[derive(Debug)]
pub(crate) struct Buf<'a> {
    pub shape: Vec<usize>,
    pub data: Arc<Data<'a>>,
}

impl<'a> Buf<'a> {
    /// A buffer that owns `data`.
    pub(crate) fn new(shape: Vec<usize>, data: Data<'a>) -> Buf<'a> {
        Buf { shape, data: Arc::new(data) }
    }

    /// Its elements, read.
    pub(crate) fn elems(&self) -> ColRef<'_> {
        self.data.as_ref().as_ref()
    }

    /// Its elements, taken when nothing else shares them, else copied.
    pub(crate) fn into_data(self) -> Data<'a> {
        Arc::try_unwrap(self.data).unwrap_or_else(|shared| shared.copied())
    }
}

/// Every value of the plan, once computed.
pub(crate) struct Store<'a> {
    plan: &'a Plan,
    vals: Vec<Option<Arc<Buf<'a>>>>,
    /// A loop's double buffers: the buffer a state part held before the last iteration,
    /// kept for the kernel that writes the same part next (by the value it writes).
    spare: std::sync::Mutex<std::collections::HashMap<ValueId, Col>>,
}

/// How many result buffers kernels have allocated in this process (a loop's state parts
/// after its first iteration reuse theirs instead): for tests and benchmarks.
pub(crate) static RESULT_ALLOCATIONS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// The store as the compiler's [`Env`].
pub(crate) struct StoreRef<'s, 'a>(pub &'s Store<'a>);

impl<'s> Env<'s> for StoreRef<'s, '_> {
    fn array(&self, v: ValueId) -> Result<ArrInfo<'s>> {
        let b = self.0.get(v)?;
        let mut strides = vec![1usize; b.shape.len()];
        let mut acc = 1usize;
        for (s, &d) in strides.iter_mut().zip(&b.shape).rev() {
            *s = acc;
            acc = acc.saturating_mul(d);
        }
        Ok(ArrInfo { name: self.0.name(v), shape: b.shape.clone(), strides, data: b.elems() })
    }

    fn load(&self, v: ValueId) -> Result<Scalar> {
        self.0.load(v)
    }
}

/// Borrows an input's elements when they are in standard (row-major, contiguous) layout;
/// copies them otherwise (and counts the copy in [`INPUT_COPIES`]).
fn input_data(v: ValueView<'_>) -> Data<'_> {
    fn cow<T: Clone>(a: ArrayViewD<'_, T>) -> Cow<'_, [T]> {
        match a.to_slice() {
            Some(s) => Cow::Borrowed(s),
            None => {
                INPUT_COPIES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                Cow::Owned(a.iter().cloned().collect())
            }
        }
    }
    match v {
        ValueView::Bool(a) => Data::Bool(cow(a)),
        ValueView::I8(a) => Data::I8(cow(a)),
        ValueView::I16(a) => Data::I16(cow(a)),
        ValueView::I32(a) => Data::I32(cow(a)),
        ValueView::I64(a) => Data::I64(cow(a)),
        ValueView::U8(a) => Data::U8(cow(a)),
        ValueView::U16(a) => Data::U16(cow(a)),
        ValueView::U32(a) => Data::U32(cow(a)),
        ValueView::U64(a) => Data::U64(cow(a)),
        ValueView::F32(a) => Data::F32(cow(a)),
        ValueView::F64(a) => Data::F64(cow(a)),
    }
}

/// Inputs this process has copied because they were not row-major and contiguous: for tests
/// that check an input is read in place ([`crate::input_copies`]).
pub(crate) static INPUT_COPIES: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

impl<'a> Store<'a> {
    pub(crate) fn new<V: AsValueView>(
        plan: &'a Plan,
        inputs: &'a IndexMap<String, V>,
        sizes: &IndexMap<String, i64>,
    ) -> Result<Self> {
        let mut vals = Vec::with_capacity(plan.values.len());
        for info in &plan.values {
            let name = &info.name;
            let v = match info.origin {
                Origin::Input => {
                    let v = inputs
                        .get(name)
                        .ok_or_else(|| Error::input(format!("missing input `{name}`")))?
                        .as_view();
                    if v.elem_type() != info.elem || v.shape().len() != info.rank {
                        return Err(Error::input(format!(
                            "input `{name}` is {} of rank {}, the plan expects {} of rank {}",
                            v.elem_type(),
                            v.shape().len(),
                            info.elem,
                            info.rank
                        )));
                    }
                    Some(Arc::new(Buf::new(v.shape().to_vec(), input_data(v))))
                }
                Origin::Size => {
                    let n = sizes
                        .get(name)
                        .ok_or_else(|| Error::input(format!("size `{name}` is not bound by the inputs")))?;
                    if info.elem != ElemType::I64 || info.rank != 0 {
                        return Err(internal(format!("size `{name}` is not a 0-d i64 value")));
                    }
                    Some(Arc::new(Buf::new(Vec::new(), Data::I64(Cow::Owned(vec![*n])))))
                }
                Origin::Computed => None,
            };
            vals.push(v);
        }
        Ok(Store { plan, vals, spare: Default::default() })
    }

    /// Value `v`'s name, for messages.
    pub(crate) fn name(&self, v: ValueId) -> String {
        self.plan.values.get(v).map_or_else(|| format!("v{v}"), |i| i.name.clone())
    }

    /// Value `v`'s element type.
    pub(crate) fn elem(&self, v: ValueId) -> Result<ElemType> {
        self.plan.values.get(v).map(|i| i.elem).ok_or_else(|| internal(format!("no value v{v}")))
    }

    pub(crate) fn get_arc(&self, v: ValueId) -> Result<&Arc<Buf<'a>>> {
        match self.vals.get(v) {
            Some(Some(b)) => Ok(b),
            Some(None) => Err(internal(format!("value `{}` read before it is computed", self.name(v)))),
            None => Err(internal(format!("no value v{v}"))),
        }
    }

    /// The materialised value `v`.
    pub(crate) fn get(&self, v: ValueId) -> Result<&Buf<'a>> {
        self.get_arc(v).map(|b| &**b)
    }

    /// A 0-d value.
    pub(crate) fn load(&self, v: ValueId) -> Result<Scalar> {
        let b = self.get(v)?;
        match (b.shape.is_empty(), b.elems().get(0)) {
            (true, Some(s)) => Ok(s),
            _ => Err(internal(format!(
                "`{}` of shape {} loaded as a scalar",
                self.name(v),
                fmt_shape(&b.shape)
            ))),
        }
    }

    /// Stores a computed value, checking its rank and element type against the plan.
    /// Forgets value `v` (a loop's next iteration writes it again).
    pub(crate) fn forget(&mut self, v: ValueId) {
        if let Some(slot) = self.vals.get_mut(v) {
            *slot = None;
        }
    }

    /// Every `dst[k]` becomes the value `src[k]` is, all at once (see
    /// `Executor::rebind`). With `spares` (a loop's state taking an iteration's results),
    /// the buffer `dst[k]` held is kept for the kernel that writes `src[k]` next time where
    /// nothing else holds it, else a buffer of its size is made now: no later iteration
    /// allocates.
    pub(crate) fn rebind(&mut self, dst: &[ValueId], src: &[ValueId], spares: bool) -> Result<()> {
        let got: Vec<Arc<Buf<'a>>> =
            src.iter().map(|s| self.get_arc(*s).map(Arc::clone)).collect::<Result<_>>()?;
        for ((d, s), b) in dst.iter().zip(src).zip(got) {
            let old = self.vals.get_mut(*d).and_then(Option::take);
            let (ty, len, owned) = (b.data.ty(), b.data.len(), b.data.is_owned());
            self.put(*d, b)?;
            if !spares || d == s || !owned || dst.contains(s) {
                continue;
            }
            let kept = old
                .and_then(|o| Arc::try_unwrap(o).ok())
                .and_then(|buf| Arc::try_unwrap(buf.data).ok())
                .and_then(Data::into_col);
            let col = match kept {
                Some(c) if c.ty() == ty && c.capacity() >= len => c,
                _ => {
                    RESULT_ALLOCATIONS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    Col::unwritten(ty, len)
                }
            };
            self.spare.lock().unwrap_or_else(std::sync::PoisonError::into_inner).insert(*s, col);
        }
        Ok(())
    }

    /// The buffer kept for the kernel that writes `v` ([`Store::rebind`]), when it is of
    /// type `ty` with room for `len` elements.
    pub(crate) fn take_spare(&self, v: ValueId, ty: ElemType, len: usize) -> Option<Col> {
        let mut spare = self.spare.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        match spare.get(&v) {
            Some(c) if c.ty() == ty && c.capacity() >= len => spare.remove(&v),
            _ => None,
        }
    }

    pub(crate) fn put(&mut self, v: ValueId, buf: Arc<Buf<'a>>) -> Result<()> {
        let name = self.name(v);
        let info = self.plan.values.get(v).ok_or_else(|| internal(format!("no value v{v}")))?;
        if info.origin != Origin::Computed {
            return Err(internal(format!("a step writes `{name}`, which is not a computed value")));
        }
        if info.rank != buf.shape.len() {
            return Err(internal(format!(
                "`{name}` is declared of rank {} but computed of shape {}",
                info.rank,
                fmt_shape(&buf.shape)
            )));
        }
        if info.elem != buf.data.ty() {
            return Err(internal(format!(
                "`{name}` is declared {} but holds {} elements",
                info.elem,
                buf.data.ty()
            )));
        }
        let count = buf.shape.iter().try_fold(1usize, |a, &d| a.checked_mul(d));
        if count != Some(buf.data.len()) {
            return Err(internal(format!(
                "`{name}` of shape {} holds {} elements",
                fmt_shape(&buf.shape),
                buf.data.len()
            )));
        }
        match self.vals.get_mut(v) {
            Some(slot @ None) => {
                *slot = Some(buf);
                Ok(())
            }
            Some(Some(_)) => Err(internal(format!("`{name}` is written twice"))),
            None => Err(internal(format!("no value v{v}"))),
        }
    }
}

/// Runs a host function of no parameters (a `Step::Scalar` body, an assert's condition).
pub(crate) fn host(store: &Store<'_>, f: &Func) -> Result<Scalar> {
    let p = compile(f, &StoreRef(store), None)?;
    let mut vm = Vm::new(&p);
    vm.call1(&p, &[]).map_err(|e| e.err)
}

/// A buffer as an output value.
pub(crate) fn to_value(buf: Buf<'_>) -> Result<Value> {
    let sh = IxDyn(&buf.shape);
    let bad = |e: ndarray::ShapeError| internal(format!("an output does not fill its shape: {e}"));
    Ok(match buf.into_data() {
        Data::Bool(v) => Value::Bool(ArrayD::from_shape_vec(sh, owned(v)).map_err(bad)?),
        Data::I8(v) => Value::I8(ArrayD::from_shape_vec(sh, owned(v)).map_err(bad)?),
        Data::I16(v) => Value::I16(ArrayD::from_shape_vec(sh, owned(v)).map_err(bad)?),
        Data::I32(v) => Value::I32(ArrayD::from_shape_vec(sh, owned(v)).map_err(bad)?),
        Data::I64(v) => Value::I64(ArrayD::from_shape_vec(sh, owned(v)).map_err(bad)?),
        Data::U8(v) => Value::U8(ArrayD::from_shape_vec(sh, owned(v)).map_err(bad)?),
        Data::U16(v) => Value::U16(ArrayD::from_shape_vec(sh, owned(v)).map_err(bad)?),
        Data::U32(v) => Value::U32(ArrayD::from_shape_vec(sh, owned(v)).map_err(bad)?),
        Data::U64(v) => Value::U64(ArrayD::from_shape_vec(sh, owned(v)).map_err(bad)?),
        Data::F32(v) => Value::F32(ArrayD::from_shape_vec(sh, owned(v)).map_err(bad)?),
        Data::F64(v) => Value::F64(ArrayD::from_shape_vec(sh, owned(v)).map_err(bad)?),
    })
}

/// A 0-d buffer.
pub(crate) fn scalar_buf(s: Scalar) -> Buf<'static> {
    let mut col = Col::new(s.elem_type());
    col.push(s);
    Buf::new(Vec::new(), col.into_data())
}

/// One result per lane: its shape and elements.
pub(crate) type Results = Vec<(Vec<usize>, Col)>;

/// What a permute's result starts as, of element type `ty`, and its shape: a copy of the
/// destination array, or the destination's fill made here (a fill's negative extent is the
/// `E-SHAPE` its own kernel would have given). Both executors of the CPU backend start here,
/// so they refuse alike (`E-LIMIT` over `max_bytes`).
pub(crate) fn permute_start(
    store: &Store<'_>,
    kind: &str,
    ty: ElemType,
    dest: &PermuteDest,
    max_bytes: u64,
) -> Result<(Vec<usize>, Col)> {
    match dest {
        PermuteDest::Array(v) => {
            let d = store.get(*v)?;
            if d.data.ty() != ty {
                return Err(internal(format!(
                    "a permute of {ty} into `{}` of {}",
                    store.name(*v),
                    d.data.ty()
                )));
            }
            check_alloc(kind, ty, d.data.len(), max_bytes)?;
            Ok((d.shape.clone(), d.data.to_col()))
        }
        PermuteDest::Fill { shape, value, span } => {
            let (shape, n) = PermuteDest::fill_shape(shape, *span, |v| store.load(v), |v| store.name(v))?;
            check_alloc(kind, ty, n, max_bytes)?;
            let col = Col::filled(ty, n, *value)
                .ok_or_else(|| internal(format!("a permute of {ty} into a fill of {}", value.elem_type())))?;
            Ok((shape, col))
        }
    }
}

/// Refuses an array of `count` elements of `elem` over the limit (before allocating).
pub(crate) fn check_alloc(kind: &str, elem: ElemType, count: usize, max_bytes: u64) -> Result<()> {
    if i64::try_from(count).is_err() {
        return Err(Error::limit(format!("`{kind}`: the array size overflows i64")));
    }
    let bytes = (count as u128) * (elem.size_bytes() as u128);
    if bytes > u128::from(max_bytes) {
        return Err(Error::limit(format!(
            "`{kind}` would allocate {count} elements of {elem} ({bytes} bytes), over the limit of {max_bytes} bytes"
        )));
    }
    Ok(())
}

impl ColRef<'_> {
    /// Its length.
    #[allow(dead_code)]
    pub(crate) fn len(&self) -> usize {
        crate::col::each!(self, ColRef, v => v.len())
    }
}
