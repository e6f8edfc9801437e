//! Running a recursive pass on a thread with a stack of a chosen size.
//!
//! The checker and the interpreter recurse over the program tree, whose depth is bounded by
//! [`crate::Limits::max_depth`]. They run on a thread of their own, sized for that bound, so
//! that no caller's stack (a 2 MiB test thread, say) decides whether a legal program can be
//! checked or run.

/// The stack a whole request runs on (a command of the command line, a compile from
/// Python): passes over programs recurse (their depth is bounded by
/// [`crate::Limits::max_depth`]), and a generous stack keeps that bound far from danger.
pub const REQUEST_STACK_BYTES: usize = 256 << 20;

/// Runs `f` on a new thread named `name` with a stack of `bytes`, and returns its result.
/// Where no thread can be made, `f` runs on the caller's thread. A panic in `f` (a bug in
/// eqfuse, never a user error) is passed on to the caller unchanged.
///
/// ```
/// let depth = eqfuse_ir::stack::with_stack("deep", 64 << 20, || 42);
/// assert_eq!(depth, 42);
/// ```
pub fn with_stack<T: Send>(name: &str, bytes: usize, f: impl Fn() -> T + Sync) -> T {
    std::thread::scope(|scope| {
        let spawned = std::thread::Builder::new().name(name.into()).stack_size(bytes).spawn_scoped(scope, &f);
        match spawned {
            Ok(handle) => handle.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic)),
            Err(_) => f(),
        }
    })
}
