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
    I8(Vec<i8>),
    I16(Vec<i16>),
    I32(Vec<i32>),
    I64(Vec<i64>),
    U8(Vec<u8>),
    U16(Vec<u16>),
    U32(Vec<u32>),
    U64(Vec<u64>),
    F32(Vec<f32>),
    F64(Vec<f64>),
}

/// A typed mutable slice (a block's part of an output).
#[derive(Debug)]
pub(crate) enum ColMut<'a> {
    Bool(&'a mut [bool]),
    I8(&'a mut [i8]),
    I16(&'a mut [i16]),
    I32(&'a mut [i32]),
    I64(&'a mut [i64]),
    U8(&'a mut [u8]),
    U16(&'a mut [u16]),
    U32(&'a mut [u32]),
    U64(&'a mut [u64]),
    F32(&'a mut [f32]),
    F64(&'a mut [f64]),
}

/// A typed shared slice (an array a kernel reads).
#[derive(Clone, Copy, Debug)]
pub(crate) enum ColRef<'a> {
    Bool(&'a [bool]),
    I8(&'a [i8]),
    I16(&'a [i16]),
    I32(&'a [i32]),
    I64(&'a [i64]),
    U8(&'a [u8]),
    U16(&'a [u16]),
    U32(&'a [u32]),
    U64(&'a [u64]),
    F32(&'a [f32]),
    F64(&'a [f64]),
}

/// The elements of a materialised value: borrowed from an input, or owned.
#[derive(Clone, Debug)]
pub(crate) enum Data<'a> {
    Bool(Cow<'a, [bool]>),
    I8(Cow<'a, [i8]>),
    I16(Cow<'a, [i16]>),
    I32(Cow<'a, [i32]>),
    I64(Cow<'a, [i64]>),
    U8(Cow<'a, [u8]>),
    U16(Cow<'a, [u16]>),
    U32(Cow<'a, [u32]>),
    U64(Cow<'a, [u64]>),
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
            eqfuse_ir::types::ElemType::I8 => {
                type $T = i8;
                $body
            }
            eqfuse_ir::types::ElemType::I16 => {
                type $T = i16;
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
            eqfuse_ir::types::ElemType::U8 => {
                type $T = u8;
                $body
            }
            eqfuse_ir::types::ElemType::U16 => {
                type $T = u16;
                $body
            }
            eqfuse_ir::types::ElemType::U32 => {
                type $T = u32;
                $body
            }
            eqfuse_ir::types::ElemType::U64 => {
                type $T = u64;
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

/// Applies `$body` with `$T` bound to the Rust type of integer type `$ty`; `None` for the
/// other types (so `$body` is an `Option`).
macro_rules! with_int {
    ($ty:expr, $T:ident => $body:expr) => {
        match $ty {
            eqfuse_ir::types::ElemType::I8 => {
                type $T = i8;
                $body
            }
            eqfuse_ir::types::ElemType::I16 => {
                type $T = i16;
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
            eqfuse_ir::types::ElemType::U8 => {
                type $T = u8;
                $body
            }
            eqfuse_ir::types::ElemType::U16 => {
                type $T = u16;
                $body
            }
            eqfuse_ir::types::ElemType::U32 => {
                type $T = u32;
                $body
            }
            eqfuse_ir::types::ElemType::U64 => {
                type $T = u64;
                $body
            }
            _ => None,
        }
    };
}
pub(crate) use with_int;

/// Applies `$body` to the payload `$x` of a value of one of the typed enums (`Col`,
/// `ColMut`, `ColRef`, `Data`), whatever its variant: the body is generic over [`Elem`].
macro_rules! each {
    ($e:expr, $E:ident, $x:ident => $body:expr) => {
        match $e {
            $E::Bool($x) => $body,
            $E::I8($x) => $body,
            $E::I16($x) => $body,
            $E::I32($x) => $body,
            $E::I64($x) => $body,
            $E::U8($x) => $body,
            $E::U16($x) => $body,
            $E::U32($x) => $body,
            $E::U64($x) => $body,
            $E::F32($x) => $body,
            $E::F64($x) => $body,
        }
    };
}
pub(crate) use each;

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
    /// A shared slice of this type.
    fn wrap_ref(s: &[Self]) -> ColRef<'_>;
    /// Data of this type.
    fn wrap_data(d: Cow<'_, [Self]>) -> Data<'_>;
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
            fn wrap_ref(s: &[Self]) -> ColRef<'_> {
                ColRef::$v(s)
            }
            fn wrap_data(d: Cow<'_, [Self]>) -> Data<'_> {
                Data::$v(d)
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
elem_impl!(i8, I8, |a, b| a == b);
elem_impl!(i16, I16, |a, b| a == b);
elem_impl!(i32, I32, |a, b| a == b);
elem_impl!(i64, I64, |a, b| a == b);
elem_impl!(u8, U8, |a, b| a == b);
elem_impl!(u16, U16, |a, b| a == b);
elem_impl!(u32, U32, |a, b| a == b);
elem_impl!(u64, U64, |a, b| a == b);
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
            Scalar::F32(x) => x.to_bits() == 0,
            Scalar::F64(x) => x.to_bits() == 0,
            other => other.as_i128() == Some(0),
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
        fn of<T: Elem>(_: &Vec<T>) -> ElemType {
            T::TY
        }
        each!(self, Col, v => of(v))
    }

    /// How many elements it has room for.
    pub(crate) fn capacity(&self) -> usize {
        each!(self, Col, v => v.capacity())
    }

    /// Its length.
    pub(crate) fn len(&self) -> usize {
        each!(self, Col, v => v.len())
    }

    /// Element `k`.
    pub(crate) fn get(&self, k: usize) -> Option<Scalar> {
        each!(self, Col, v => v.get(k).map(|x| x.scalar()))
    }

    /// Appends `s`; `false` when it is of another type.
    pub(crate) fn push(&mut self, s: Scalar) -> bool {
        fn go<T: Elem>(v: &mut Vec<T>, s: Scalar) -> bool {
            match T::of_scalar(s) {
                Some(x) => {
                    v.push(x);
                    true
                }
                None => false,
            }
        }
        each!(self, Col, v => go(v, s))
    }

    /// Empties it (keeping the capacity).
    pub(crate) fn clear(&mut self) {
        each!(self, Col, v => v.clear())
    }

    /// Room for `n` elements in memory it already has: none written (`unwritten`, as
    /// [`Col::unwritten`]), else `n` default elements (as [`Col::zeros`]).
    pub(crate) fn reuse(&mut self, n: usize, unwritten: bool) {
        self.clear();
        if !unwritten {
            each!(self, Col, v => v.resize(n, Default::default()))
        }
    }

    /// Appends all of `other` (of the same type; `false` otherwise).
    pub(crate) fn extend_from(&mut self, other: &Col) -> bool {
        fn go<T: Elem>(v: &mut Vec<T>, other: &Col) -> bool {
            match T::vec(other) {
                Some(o) => {
                    v.extend_from_slice(o);
                    true
                }
                None => false,
            }
        }
        each!(self, Col, v => go(v, other))
    }

    /// A mutable view of all of it.
    pub(crate) fn as_mut(&mut self) -> ColMut<'_> {
        each!(self, Col, v => Elem::wrap_mut(v.as_mut_slice()))
    }

    /// Into owned data.
    pub(crate) fn into_data(self) -> Data<'static> {
        each!(self, Col, v => Elem::wrap_data(Cow::Owned(v)))
    }
}

impl<'a> ColMut<'a> {
    /// Its length.
    pub(crate) fn len(&self) -> usize {
        each!(self, ColMut, v => v.len())
    }

    /// Sets element `k` to `s` (`false` when out of range or of another type).
    pub(crate) fn set(&mut self, k: usize, s: Scalar) -> bool {
        fn put<T: Elem>(v: &mut [T], k: usize, s: Scalar) -> bool {
            match (v.get_mut(k), T::of_scalar(s)) {
                (Some(slot), Some(x)) => {
                    *slot = x;
                    true
                }
                _ => false,
            }
        }
        each!(self, ColMut, v => put(v, k, s))
    }

    /// Element `k`.
    pub(crate) fn get(&self, k: usize) -> Option<Scalar> {
        each!(self, ColMut, v => v.get(k).map(|x| x.scalar()))
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
        each!(self, ColMut, v => go(v, lens))
    }
}

impl<'a> Data<'a> {
    /// A shared view.
    pub(crate) fn as_ref(&self) -> ColRef<'_> {
        each!(self, Data, v => Elem::wrap_ref(&v[..]))
    }

    /// Its element type.
    pub(crate) fn ty(&self) -> ElemType {
        self.as_ref().ty()
    }

    /// Its length.
    pub(crate) fn len(&self) -> usize {
        each!(self, Data, v => v.len())
    }

    /// An owned copy ([`copied`]).
    pub(crate) fn copied(&self) -> Data<'static> {
        each!(self, Data, v => Elem::wrap_data(Cow::Owned(copied(&v[..]))))
    }

    /// An owned copy, as a column.
    pub(crate) fn to_col(&self) -> Col {
        each!(self, Data, v => Elem::wrap(v.to_vec()))
    }

    /// Whether it owns its elements (a kernel's result; not an input's, borrowed).
    pub(crate) fn is_owned(&self) -> bool {
        each!(self, Data, v => matches!(v, Cow::Owned(_)))
    }

    /// The column it owns, without a copy; `None` for elements it borrows (an input's).
    pub(crate) fn into_col(self) -> Option<Col> {
        each!(self, Data, v => match v {
            Cow::Owned(v) => Some(Elem::wrap(v)),
            Cow::Borrowed(_) => None,
        })
    }
}

/// Copies of at least this many bytes are made by the pool's threads: one thread's copy
/// reaches about half the bandwidth of two (an output that is another output, or an input,
/// is copied out of the run).
const PARALLEL_COPY_BYTES: usize = 1 << 20;

/// Elements per task of a parallel copy.
const COPY_CHUNK: usize = 1 << 16;

/// A copy of `s`, by the pool's threads when it is large ([`crate::pages::parallel_copy`]).
pub(crate) fn copied<T: Elem>(s: &[T]) -> Vec<T> {
    if std::mem::size_of_val(s) < PARALLEL_COPY_BYTES {
        return s.to_vec();
    }
    crate::pages::parallel_copy(s, COPY_CHUNK)
}

/// The elements of `c`, owned: its own vector, or a copy ([`copied`]) of what it borrows.
pub(crate) fn owned<T: Elem>(c: Cow<'_, [T]>) -> Vec<T> {
    match c {
        Cow::Owned(v) => v,
        Cow::Borrowed(s) => copied(s),
    }
}

impl ColRef<'_> {
    /// Element `k`.
    pub(crate) fn get(&self, k: usize) -> Option<Scalar> {
        each!(self, ColRef, v => v.get(k).map(|x| x.scalar()))
    }

    /// Its element type.
    pub(crate) fn ty(&self) -> ElemType {
        fn of<T: Elem>(_: &[T]) -> ElemType {
            T::TY
        }
        each!(self, ColRef, v => of(v))
    }
}

#[cfg(test)]
mod copy_tests {
    use super::*;

    #[test]
    fn a_copy_is_the_slice_at_every_size() {
        // below the parallel threshold, at it, and a large one whose last chunk is partial
        for n in [0usize, 5, PARALLEL_COPY_BYTES / 4, 3 * COPY_CHUNK + 17, (1 << 21) + 3] {
            let s: Vec<f32> = (0..n).map(|k| k as f32 * 0.5 - 7.0).collect();
            assert_eq!(copied(&s), s, "{n} elements");
            let b: Vec<bool> = (0..n).map(|k| k % 3 == 0).collect();
            assert_eq!(owned(Cow::Borrowed(&b[..])), b, "{n} booleans");
        }
    }
}
