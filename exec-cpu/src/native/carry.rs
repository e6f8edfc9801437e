//! A scan's partials and carries, by component: a scan over a group of `w` components keeps
//! `w` columns of each (components in separate arrays), and its entry points take one
//! pointer per component ([`eqfuse_codegen::c::abi::FOLD`] and its siblings).

use super::ffi::col_ptr;
use crate::col::Col;
use crate::ptr::Ptr;
use eqfuse_ir::types::ElemType;

/// `n` partial results and `n` carries of a scan whose components have the types given to
/// [`Carries::new`].
pub(crate) struct Carries {
    /// Per component: its `n` partials, then its `n` carries. They own the memory the
    /// pointers below point into.
    cols: Vec<(Col, Col)>,
    /// Per component: its partials' and its carries' first element, and its element size.
    at: Vec<(Ptr, Ptr, usize)>,
}

impl Carries {
    /// Room for `n` partials and `n` carries of each component of types `tys` (zeros).
    pub(crate) fn new(tys: &[ElemType], n: usize) -> Carries {
        let mut cols: Vec<(Col, Col)> = tys.iter().map(|&t| (Col::zeros(t, n), Col::zeros(t, n))).collect();
        let at = cols
            .iter_mut()
            .zip(tys)
            .map(|((p, c), t)| (Ptr(col_ptr(p) as *mut u8), Ptr(col_ptr(c) as *mut u8), t.size_bytes()))
            .collect();
        Carries { cols, at }
    }

    /// Partial slot `t` of each component (`t < n`), to be written.
    pub(crate) fn parts_at(&self, t: usize) -> Vec<*mut u8> {
        self.at.iter().map(|(p, _, sz)| p.get().wrapping_add(t * sz)).collect()
    }

    /// The partials from slot `t` on, of each component, to be read.
    pub(crate) fn parts_read(&self, t: usize) -> Vec<*const u8> {
        self.at.iter().map(|(p, _, sz)| p.get().wrapping_add(t * sz) as *const u8).collect()
    }

    /// The carries from slot `t` on, of each component, to be written.
    pub(crate) fn carries_at(&self, t: usize) -> Vec<*mut u8> {
        self.at.iter().map(|(_, c, sz)| c.get().wrapping_add(t * sz)).collect()
    }

    /// Carry `t` of each component, to be read.
    pub(crate) fn carry_at(&self, t: usize) -> Vec<*const u8> {
        self.at.iter().map(|(_, c, sz)| c.get().wrapping_add(t * sz) as *const u8).collect()
    }

    /// Frees the columns once no call uses their pointers.
    pub(crate) fn release(self) {
        drop(self.cols);
    }
}
