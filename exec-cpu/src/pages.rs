//! Large buffers backed by huge pages where the system offers them.
//!
//! A fresh buffer of a few megabytes comes from `mmap` (through `calloc`, untouched), and
//! writing it faults one 4 KiB page at a time: on this project's test machine writing a
//! fresh 64 MiB output took 100 ms, against 31 ms with 2 MiB pages (`docs/cpu-backend.md`).
//! Linux's transparent huge pages in `madvise` mode give 2 MiB pages to ranges marked
//! `MADV_HUGEPAGE`, so large columns are marked before anything writes them. Elsewhere, or
//! when the call fails, nothing changes: the hint is only a hint.

#![allow(unsafe_code)]

/// Buffers smaller than this are left alone (a huge page covers only the 2 MiB-aligned
/// part of a range).
pub(crate) const HUGE_MIN_BYTES: usize = 4 << 20;

/// Marks the 2 MiB-aligned part of `[ptr, ptr + bytes)` for huge pages.
#[cfg(target_os = "linux")]
pub(crate) fn advise_huge(ptr: *mut u8, bytes: usize) {
    const HUGE: usize = 2 << 20;
    if bytes < HUGE_MIN_BYTES {
        return;
    }
    let start = (ptr as usize).next_multiple_of(HUGE);
    let end = (ptr as usize).saturating_add(bytes) & !(HUGE - 1);
    if end > start {
        // SAFETY: `[start, end)` lies inside one live allocation of `bytes` bytes at `ptr`
        // (the caller's buffer); `madvise(MADV_HUGEPAGE)` changes only how the kernel backs
        // those pages, never their contents, and its failure is ignored.
        unsafe {
            libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_HUGEPAGE);
        }
    }
}

/// Elsewhere: nothing to do.
#[cfg(not(target_os = "linux"))]
pub(crate) fn advise_huge(_ptr: *mut u8, _bytes: usize) {}

/// A copy of `s`, made by the pool's threads `chunk` elements at a time into a buffer marked
/// as [`advise_huge`] marks and never zeroed first (zeroing memory an allocator hands back
/// would be one more write of every element).
pub(crate) fn parallel_copy<T: Copy + Send + Sync>(s: &[T], chunk: usize) -> Vec<T> {
    use rayon::prelude::*;
    let (n, chunk) = (s.len(), chunk.max(1));
    let mut v: Vec<T> = Vec::with_capacity(n);
    advise_huge(v.as_mut_ptr().cast(), std::mem::size_of_val(s));
    v.spare_capacity_mut()[..n].par_chunks_mut(chunk).zip(s.par_chunks(chunk)).for_each(|(d, s)| {
        for (d, x) in d.iter_mut().zip(s) {
            d.write(*x);
        }
    });
    // SAFETY: the capacity is at least `n`, and the loop above wrote each of the first `n`
    // elements: the chunks of the spare capacity and of `s` pair up one to one, with equal
    // lengths, and cover both.
    unsafe { v.set_len(n) };
    v
}
