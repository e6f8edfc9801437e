//! A raw pointer that rayon tasks may share: what each task writes through it is disjoint
//! (the native entry points' contract, or the distinct panels and batch points of a GEMM),
//! and the buffer outlives the parallel loop that uses it. The users say why at each use.

#![allow(unsafe_code)]

/// A pointer that may cross threads.
#[derive(Clone, Copy)]
pub(crate) struct Ptr<T = u8>(pub(crate) *mut T);

impl<T> Ptr<T> {
    /// The pointer (a method, so that a closure captures the whole `Ptr`, which is `Sync`).
    pub(crate) fn get(self) -> *mut T {
        self.0
    }
}

// SAFETY: see the module's documentation: concurrent tasks write disjoint elements.
unsafe impl<T> Send for Ptr<T> {}
// SAFETY: as above.
unsafe impl<T> Sync for Ptr<T> {}
