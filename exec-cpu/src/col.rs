//! Typed columns: the registers of the blocked VM and the buffers of the plan's values.
//!
//! A [`Col`] is a vector of one element type. [`Elem`] lets generic code reach the vector of
//! its type, so that every hot loop is written once, generically, and monomorphised per
//! element type: the compiler then sees a plain loop over `&[f32]` or `&[i64]`.

use eqfuse_ir::types::ElemType;
use eqfuse_ir::value::Scalar;
use std::borrow::Cow;

/// A typed vector.
#[derive(Clone, Debug)]
pub(crate) enum Col {
    Bool(Vec<bool>),
    I32(Vec<i32>),
    I64(Vec<i64>),
    F32(Vec<f32>),
    F64(Vec<f64>),
}

/// A typed mutable slice (a block's part of an output).
#[derive(Debug)]
pub(crate) enum ColMut<'a> {
    Bool(&'a mut [bool]),
    I32(&'a mut [i32]),
    I64(&'a mut [i64]),
    F32(&'a mut [f32]),
    F64(&'a mut [f64]),
}

/// A typed shared slice (an array a kernel reads).
#[derive(Clone, Copy, Debug)]
pub(crate) enum ColRef<'a> {
    Bool(&'a [bool]),
    I32(&'a [i32]),
    I64(&'a [i64]),
    F32(&'a [f32]),
    F64(&'a [f64]),
}

/// The elements of a materialised value: borrowed from an input, or owned.
#[derive(Clone, Debug)]
pub(crate) enum Data<'a> {
    Bool(Cow<'a, [bool]>),
    I32(Cow<'a, [i32]>),
    I64(Cow<'a, [i64]>),
    F32(Cow<'a, [f32]>),
    F64(Cow<'a, [f64]>),
}

/// Applies `$body` with `$T` bound to the Rust type of element type `$ty`.
macro_rules! with_type {
    ($ty:expr, $T:ident => $body:expr) => {
        match $ty {
            eqfuse_ir::types::ElemType::Bool => {
                type $T = bool;
                $body
            }
            eqfuse_ir::types::ElemType::I32 => {
                type $T = i32;
                $body
            }
            eqfuse_ir::types::ElemType::I64 => {
                type $T = i64;
                $body
            }
            eqfuse_ir::types::ElemType::F32 => {
                type $T = f32;
                $body
            }
            eqfuse_ir::types::ElemType::F64 => {
                type $T = f64;
                $body
            }
        }
    };
}
pub(crate) use with_type;

/// An element type's Rust type.
pub(crate) trait Elem: Copy + Default + PartialEq + PartialOrd + Send + Sync + 'static {
    /// The element type.
    const TY: ElemType;
    /// The vector of a column of this type.
    fn vec(c: &Col) -> Option<&Vec<Self>>;
    /// The vector of a column of this type, mutably.
    fn vec_mut(c: &mut Col) -> Option<&mut Vec<Self>>;
    /// A column holding `v`.
    fn wrap(v: Vec<Self>) -> Col;
    /// The slice of a shared slice of this type.
    fn of_ref(c: ColRef<'_>) -> Option<&[Self]>;
    /// The slice of a mutable slice of this type.
    fn of_mut<'a, 'b>(c: &'b mut ColMut<'a>) -> Option<&'b mut [Self]>;
    /// A mutable slice of this type.
    fn wrap_mut(s: &mut [Self]) -> ColMut<'_>;
    /// As a scalar.
    fn scalar(self) -> Scalar;
    /// From a scalar of this type.
    fn of_scalar(s: Scalar) -> Option<Self>;
    /// Bit-for-bit equality (`-0.0` and `0.0` differ, a NaN equals the same NaN).
    fn same(self, other: Self) -> bool;
}

macro_rules! elem_impl {
    ($t:ty, $v:ident, $same:expr) => {
        impl Elem for $t {
            const TY: ElemType = ElemType::$v;
            fn vec(c: &Col) -> Option<&Vec<Self>> {
                match c {
                    Col::$v(v) => Some(v),
                    _ => None,
                }
            }
            fn vec_mut(c: &mut Col) -> Option<&mut Vec<Self>> {
                match c {
                    Col::$v(v) => Some(v),
                    _ => None,
                }
            }
            fn wrap(v: Vec<Self>) -> Col {
                Col::$v(v)
            }
            fn of_ref(c: ColRef<'_>) -> Option<&[Self]> {
                match c {
                    ColRef::$v(v) => Some(v),
                    _ => None,
                }
            }
            fn of_mut<'a, 'b>(c: &'b mut ColMut<'a>) -> Option<&'b mut [Self]> {
                match c {
                    ColMut::$v(v) => Some(&mut **v),
                    _ => None,
                }
            }
            fn wrap_mut(s: &mut [Self]) -> ColMut<'_> {
                ColMut::$v(s)
            }
            fn scalar(self) -> Scalar {
                Scalar::$v(self)
            }
            fn of_scalar(s: Scalar) -> Option<Self> {
                match s {
                    Scalar::$v(v) => Some(v),
                    _ => None,
                }
            }
            #[inline(always)]
            fn same(self, other: Self) -> bool {
                let f: fn($t, $t) -> bool = $same;
                f(self, other)
            }
        }
    };
}
elem_impl!(bool, Bool, |a, b| a == b);
elem_impl!(i32, I32, |a, b| a == b);
elem_impl!(i64, I64, |a, b| a == b);
elem_impl!(f32, F32, |a, b| a.to_bits() == b.to_bits());
elem_impl!(f64, F64, |a, b| a.to_bits() == b.to_bits());

/// Takes the vector out of a column of type `T` (a fresh one when the column is of another
/// type), keeping its capacity for reuse.
pub(crate) fn take<T: Elem>(c: &mut Col) -> Vec<T> {
    match T::vec_mut(c) {
        Some(v) => std::mem::take(v),
        None => Vec::new(),
    }
}

impl Col {
    /// An empty column of type `ty`.
    pub(crate) fn new(ty: ElemType) -> Col {
        with_type!(ty, T => T::wrap(Vec::new()))
    }

    /// `n` default elements of type `ty` (zeros, `false`); a large column is backed by huge
    /// pages where the system offers them (`crate::pages`).
    pub(crate) fn zeros(ty: ElemType, n: usize) -> Col {
        with_type!(ty, T => {
            let mut v = vec![T::default(); n];
            crate::pages::advise_huge(v.as_mut_ptr().cast(), std::mem::size_of_val(v.as_slice()));
            T::wrap(v)
        })
    }

    /// Room for `n` elements of type `ty` that native code is about to write, none written
    /// yet: length 0, capacity `n` (backed by huge pages as [`Col::zeros`]). Where the
    /// allocator hands back memory it had before (anything under glibc's `mmap` threshold,
    /// or an allocator that keeps freed blocks), this skips a zeroing pass over the whole
    /// output that the kernel would overwrite anyway. `native::ffi::set_written` makes the
    /// elements visible once the kernel has written every one.
    pub(crate) fn unwritten(ty: ElemType, n: usize) -> Col {
        with_type!(ty, T => {
            let mut v: Vec<T> = Vec::with_capacity(n);
            crate::pages::advise_huge(v.as_mut_ptr().cast(), n * std::mem::size_of::<T>());
            T::wrap(v)
        })
    }

    /// `n` copies of `value` as type `ty` (`None` when `value` is of another type); all-zero
    /// bits take [`Col::zeros`], whose fresh pages the system zeroes lazily, so a zero
    /// fill costs no pass of its own.
    pub(crate) fn filled(ty: ElemType, n: usize, value: Scalar) -> Option<Col> {
        if value.elem_type() != ty {
            return None;
        }
        let zero = match value {
            Scalar::Bool(b) => !b,
            Scalar::I32(x) => x == 0,
            Scalar::I64(x) => x == 0,
            Scalar::F32(x) => x.to_bits() == 0,
            Scalar::F64(x) => x.to_bits() == 0,
        };
        if zero {
            return Some(Col::zeros(ty, n));
        }
        with_type!(ty, T => {
            let x = T::of_scalar(value)?;
            let mut v = vec![x; n];
            crate::pages::advise_huge(v.as_mut_ptr().cast(), std::mem::size_of_val(v.as_slice()));
            Some(T::wrap(v))
        })
    }

    /// Its element type.
    pub(crate) fn ty(&self) -> ElemType {
        match self {
            Col::Bool(_) => ElemType::Bool,
            Col::I32(_) => ElemType::I32,
            Col::I64(_) => ElemType::I64,
            Col::F32(_) => ElemType::F32,
            Col::F64(_) => ElemType::F64,
        }
    }

    /// How many elements it has room for.
    pub(crate) fn capacity(&self) -> usize {
        match self {
            Col::Bool(v) => v.capacity(),
            Col::I32(v) => v.capacity(),
            Col::I64(v) => v.capacity(),
            Col::F32(v) => v.capacity(),
            Col::F64(v) => v.capacity(),
        }
    }

    /// Its length.
    pub(crate) fn len(&self) -> usize {
        match self {
            Col::Bool(v) => v.len(),
            Col::I32(v) => v.len(),
            Col::I64(v) => v.len(),
            Col::F32(v) => v.len(),
            Col::F64(v) => v.len(),
        }
    }

    /// Element `k`.
    pub(crate) fn get(&self, k: usize) -> Option<Scalar> {
        match self {
            Col::Bool(v) => v.get(k).map(|x| Scalar::Bool(*x)),
            Col::I32(v) => v.get(k).map(|x| Scalar::I32(*x)),
            Col::I64(v) => v.get(k).map(|x| Scalar::I64(*x)),
            Col::F32(v) => v.get(k).map(|x| Scalar::F32(*x)),
            Col::F64(v) => v.get(k).map(|x| Scalar::F64(*x)),
        }
    }

    /// Appends `s`; `false` when it is of another type.
    pub(crate) fn push(&mut self, s: Scalar) -> bool {
        match (self, s) {
            (Col::Bool(v), Scalar::Bool(x)) => v.push(x),
            (Col::I32(v), Scalar::I32(x)) => v.push(x),
            (Col::I64(v), Scalar::I64(x)) => v.push(x),
            (Col::F32(v), Scalar::F32(x)) => v.push(x),
            (Col::F64(v), Scalar::F64(x)) => v.push(x),
            _ => return false,
        }
        true
    }

    /// Empties it (keeping the capacity).
    pub(crate) fn clear(&mut self) {
        match self {
            Col::Bool(v) => v.clear(),
            Col::I32(v) => v.clear(),
            Col::I64(v) => v.clear(),
            Col::F32(v) => v.clear(),
            Col::F64(v) => v.clear(),
        }
    }

    /// Appends all of `other` (of the same type; `false` otherwise).
    pub(crate) fn extend_from(&mut self, other: &Col) -> bool {
        match (self, other) {
            (Col::Bool(v), Col::Bool(o)) => v.extend_from_slice(o),
            (Col::I32(v), Col::I32(o)) => v.extend_from_slice(o),
            (Col::I64(v), Col::I64(o)) => v.extend_from_slice(o),
            (Col::F32(v), Col::F32(o)) => v.extend_from_slice(o),
            (Col::F64(v), Col::F64(o)) => v.extend_from_slice(o),
            _ => return false,
        }
        true
    }

    /// A mutable view of all of it.
    pub(crate) fn as_mut(&mut self) -> ColMut<'_> {
        match self {
            Col::Bool(v) => ColMut::Bool(v),
            Col::I32(v) => ColMut::I32(v),
            Col::I64(v) => ColMut::I64(v),
            Col::F32(v) => ColMut::F32(v),
            Col::F64(v) => ColMut::F64(v),
        }
    }

    /// Into owned data.
    pub(crate) fn into_data(self) -> Data<'static> {
        match self {
            Col::Bool(v) => Data::Bool(Cow::Owned(v)),
            Col::I32(v) => Data::I32(Cow::Owned(v)),
            Col::I64(v) => Data::I64(Cow::Owned(v)),
            Col::F32(v) => Data::F32(Cow::Owned(v)),
            Col::F64(v) => Data::F64(Cow::Owned(v)),
        }
    }
}

impl<'a> ColMut<'a> {
    /// Its length.
    pub(crate) fn len(&self) -> usize {
        match self {
            ColMut::Bool(v) => v.len(),
            ColMut::I32(v) => v.len(),
            ColMut::I64(v) => v.len(),
            ColMut::F32(v) => v.len(),
            ColMut::F64(v) => v.len(),
        }
    }

    /// Sets element `k` to `s` (`false` when out of range or of another type).
    pub(crate) fn set(&mut self, k: usize, s: Scalar) -> bool {
        fn put<T: Copy>(v: &mut [T], k: usize, x: T) -> bool {
            match v.get_mut(k) {
                Some(slot) => {
                    *slot = x;
                    true
                }
                None => false,
            }
        }
        match (self, s) {
            (ColMut::Bool(v), Scalar::Bool(x)) => put(v, k, x),
            (ColMut::I32(v), Scalar::I32(x)) => put(v, k, x),
            (ColMut::I64(v), Scalar::I64(x)) => put(v, k, x),
            (ColMut::F32(v), Scalar::F32(x)) => put(v, k, x),
            (ColMut::F64(v), Scalar::F64(x)) => put(v, k, x),
            _ => false,
        }
    }

    /// Element `k`.
    pub(crate) fn get(&self, k: usize) -> Option<Scalar> {
        match self {
            ColMut::Bool(v) => v.get(k).map(|x| Scalar::Bool(*x)),
            ColMut::I32(v) => v.get(k).map(|x| Scalar::I32(*x)),
            ColMut::I64(v) => v.get(k).map(|x| Scalar::I64(*x)),
            ColMut::F32(v) => v.get(k).map(|x| Scalar::F32(*x)),
            ColMut::F64(v) => v.get(k).map(|x| Scalar::F64(*x)),
        }
    }

    /// Splits it into consecutive pieces of the given lengths (`None` when they do not fit).
    pub(crate) fn split(self, lens: impl IntoIterator<Item = usize>) -> Option<Vec<ColMut<'a>>> {
        fn go<'a, T: Elem>(
            mut rest: &'a mut [T],
            lens: impl IntoIterator<Item = usize>,
        ) -> Option<Vec<ColMut<'a>>> {
            let mut out = Vec::new();
            for len in lens {
                let (a, b) = rest.split_at_mut_checked(len)?;
                out.push(T::wrap_mut(a));
                rest = b;
            }
            Some(out)
        }
        match self {
            ColMut::Bool(v) => go(v, lens),
            ColMut::I32(v) => go(v, lens),
            ColMut::I64(v) => go(v, lens),
            ColMut::F32(v) => go(v, lens),
            ColMut::F64(v) => go(v, lens),
        }
    }
}

impl<'a> Data<'a> {
    /// A shared view.
    pub(crate) fn as_ref(&self) -> ColRef<'_> {
        match self {
            Data::Bool(v) => ColRef::Bool(v),
            Data::I32(v) => ColRef::I32(v),
            Data::I64(v) => ColRef::I64(v),
            Data::F32(v) => ColRef::F32(v),
            Data::F64(v) => ColRef::F64(v),
        }
    }

    /// Its element type.
    pub(crate) fn ty(&self) -> ElemType {
        match self {
            Data::Bool(_) => ElemType::Bool,
            Data::I32(_) => ElemType::I32,
            Data::I64(_) => ElemType::I64,
            Data::F32(_) => ElemType::F32,
            Data::F64(_) => ElemType::F64,
        }
    }

    /// Its length.
    pub(crate) fn len(&self) -> usize {
        match self {
            Data::Bool(v) => v.len(),
            Data::I32(v) => v.len(),
            Data::I64(v) => v.len(),
            Data::F32(v) => v.len(),
            Data::F64(v) => v.len(),
        }
    }

    /// An owned copy, as a column.
    pub(crate) fn to_col(&self) -> Col {
        match self {
            Data::Bool(v) => Col::Bool(v.to_vec()),
            Data::I32(v) => Col::I32(v.to_vec()),
            Data::I64(v) => Col::I64(v.to_vec()),
            Data::F32(v) => Col::F32(v.to_vec()),
            Data::F64(v) => Col::F64(v.to_vec()),
        }
    }
}

impl ColRef<'_> {
    /// Element `k`.
    pub(crate) fn get(&self, k: usize) -> Option<Scalar> {
        match self {
            ColRef::Bool(v) => v.get(k).map(|x| Scalar::Bool(*x)),
            ColRef::I32(v) => v.get(k).map(|x| Scalar::I32(*x)),
            ColRef::I64(v) => v.get(k).map(|x| Scalar::I64(*x)),
            ColRef::F32(v) => v.get(k).map(|x| Scalar::F32(*x)),
            ColRef::F64(v) => v.get(k).map(|x| Scalar::F64(*x)),
        }
    }
}
