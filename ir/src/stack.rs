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

/// Runs `f` on a thread named `name` with a stack of at least `bytes`, and returns its
/// result. A thread this function made with at least twice `bytes` runs `f` itself (half its
/// stack is left to the frames already on it): a request runs on one large stack, and the
/// passes inside it make no thread of their own. Otherwise `f` runs on a new thread, or, where
/// no thread can be made, on the caller's. A panic in `f` (a bug in eqfuse, never a user
/// error) is passed on to the caller unchanged.
///
/// ```
/// let depth = eqfuse_ir::stack::with_stack("deep", 64 << 20, || 42);
/// assert_eq!(depth, 42);
/// ```
pub fn with_stack<T: Send>(name: &str, bytes: usize, f: impl Fn() -> T + Sync) -> T {
    if THREAD_STACK.with(|s| s.get()) / 2 >= bytes {
        return f();
    }
    std::thread::scope(|scope| {
        let spawned =
            std::thread::Builder::new().name(name.into()).stack_size(bytes).spawn_scoped(scope, || {
                THREAD_STACK.with(|s| s.set(bytes));
                f()
            });
        match spawned {
            Ok(handle) => handle.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic)),
            Err(_) => f(),
        }
    })
}

thread_local! {
    /// The stack size of a thread [`with_stack`] made (0: another thread, size unknown).
    static THREAD_STACK: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pass_inside_a_request_runs_on_the_request_stack() {
        let outer = std::thread::current().id();
        let (request, inner) = with_stack("request", 64 << 20, || {
            let request = std::thread::current().id();
            (request, with_stack("pass", 32 << 20, || std::thread::current().id()))
        });
        assert_ne!(request, outer);
        assert_eq!(inner, request);
        // a pass that needs more than half the stack gets a thread of its own
        let (request, inner) = with_stack("request", 64 << 20, || {
            (std::thread::current().id(), with_stack("pass", 33 << 20, || std::thread::current().id()))
        });
        assert_ne!(inner, request);
    }
}
