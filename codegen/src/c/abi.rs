//! The native entry points' ABI, declared once: each entry point's C parameters (from
//! which the skeletons write the header of its definition) and the matching Rust function
//! type (through which `eqfuse-exec-cpu` calls it), side by side, so that the two cannot
//! drift apart unnoticed (a test checks that each Rust type spells the C parameters).
//!
//! Every entry point of kernel `i` is `int eq_k<i>_<name>(const EqArgs_k<i>* restrict A,
//! ...)`: `A` the kernel's argument block (8-byte fields, [`crate::Slot`]), the result 1 when
//! every element succeeded and 0 when one failed (the host then reruns the kernel on the
//! interpreter for the exact error).
//!
//! | kernel | entry points |
//! | --- | --- |
//! | generate and reduce lanes, any rank (maps, gathers, full and row reductions, multi-output kernels) | [`RUN`]: rows `[r0, r1)` of the space (every dimension but the innermost), innermost indices `[j0, j1)`, a reduce lane's result of row `row` to `red[lane][row - r0]` (every component of a reduction over a group to its own lane's); [`COMBINE`]: folds `n` partial results of a reduction (over a group: all its lanes') in order |
//! | a scan (one lane, or a group: its head and its parts), any rank | [`SCAN`], [`FOLD`], [`PREFIX`]: rows in parallel, or a long row as segments: fold each, the carries in order, scan each from its carry; a carry or total is passed by component, one pointer each |
//! | a filter over a 1-d space | [`COUNT`], [`WRITE`]: segments counted in parallel, offsets on the host, then written in parallel |
//! | a permute (one lane), any rank | [`PERMUTE`]: elements `[j0, j1)` combined into `dst` at their targets; [`MERGE`]: a partial merged in; [`SHARED`], where the operator allows it: combined atomically into a result shared by every call (see [`super::PermuteCode`]) |

/// One entry point: its name after the kernel's prefix, and its parameters after the
/// argument block, in C and as the Rust types of [`RunFn`] and its siblings spell them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EntryPoint {
    /// The symbol's suffix: kernel `i`'s entry point is `eq_k<i>_<name>`.
    pub name: &'static str,
    /// The C parameters after `const EqArgs_k<i>* restrict A`.
    pub params: &'static str,
    /// The Rust types of those parameters, as written in the entry point's fn type.
    pub rust: &'static str,
}

impl EntryPoint {
    /// The entry point's symbol for the kernel whose names start with `prefix` (`eq_k<i>`).
    pub fn symbol(&self, prefix: &str) -> String {
        format!("{prefix}_{}", self.name)
    }

    /// The line that opens the entry point's definition for the kernel of symbol prefix
    /// `prefix` and argument block type `args` (without its newline).
    pub fn header(&self, prefix: &str, args: &str) -> String {
        format!("EQ_EXPORT int {prefix}_{}(const {args}* restrict A, {}) {{", self.name, self.params)
    }
}

/// Declares each entry point once: its [`EntryPoint`] constant (the C side) and its Rust
/// fn type, from one parameter list.
macro_rules! entry_points {
    ($($(#[doc = $doc:literal])* $konst:ident, $fnty:ident: $name:literal ($c:literal) ($($rt:ty),*);)*) => {
        $(
            $(#[doc = $doc])*
            pub const $konst: EntryPoint = EntryPoint { name: $name, params: $c, rust: stringify!($($rt),*) };
            $(#[doc = $doc])*
            ///
            /// The Rust type of the entry point (the argument block first, then the parameters).
            pub type $fnty = unsafe extern "C" fn(*const u64, $($rt),*) -> i32;
        )*
        /// Every entry point.
        pub const ALL: &[EntryPoint] = &[$($konst),*];
    };
}

entry_points! {
    /// `run(A, r0, r1, j0, j1, red)`: rows `[r0, r1)`, innermost indices `[j0, j1)` of a
    /// kernel of generate and reduce lanes; a reduce lane's row results to `red[lane]`.
    RUN, RunFn: "run" ("long long r0, long long r1, long long j0, long long j1, void* const* red")
        (i64, i64, i64, i64, *const *mut u8);
    /// `combine(A, lane, parts, n, dst)`: the `n` partial results of the reduction headed
    /// by lane `lane` (`parts[l]`: lane `l`'s, one pointer per lane) folded in order into
    /// `dst[l]` (every component of a reduction over a group); nothing for a
    /// [`eqfuse_ir::plan::LaneOp::Part`] lane (its head's call writes it).
    COMBINE, CombineFn: "combine" ("long long lane, const void* const* parts, long long n, void* const* dst")
        (i64, *const *const u8, i64, *const *mut u8);
    /// `scan(A, r0, r1, j0, j1, carry, stored)`: a scan over rows `[r0, r1)`, innermost
    /// indices `[j0, j1)`, from the carry whose component `l` is `*carry[l]` (the neutral
    /// element where `carry` is null); a scan over a group of `w` components has `w`. With
    /// `stored`, the elements are read from the outputs, where `fold` kept them, instead of
    /// computed again.
    SCAN, ScanFn: "scan" ("long long r0, long long r1, long long j0, long long j1, const void* const* carry, int stored")
        (i64, i64, i64, i64, *const *const u8, i32);
    /// `fold(A, row, j0, j1, part, keep)`: the total of a scan's segment `[j0, j1)` of row
    /// `row`, component `l` to `*part[l]`; with `keep`, each element also written to the
    /// outputs at its place, for `scan` to read.
    FOLD, FoldFn: "fold" ("long long row, long long j0, long long j1, void* const* part, int keep")
        (i64, i64, i64, *const *mut u8, i32);
    /// `prefix(A, parts, n, carries)`: the exclusive prefix of `n` segment totals, in
    /// order (`parts[l]` and `carries[l]`: component `l`'s `n` elements).
    PREFIX, PrefixFn: "prefix" ("const void* const* parts, long long n, void* const* carries")
        (*const *const u8, i64, *const *mut u8);
    /// `count(A, j0, j1, n)`: how many of a filter's elements `[j0, j1)` are kept.
    COUNT, CountFn: "count" ("long long j0, long long j1, long long* n")
        (i64, i64, *mut i64);
    /// `write(A, j0, j1, dst)`: a filter's kept elements of `[j0, j1)`, in order, from `dst` on.
    WRITE, WriteFn: "write" ("long long j0, long long j1, void* dst")
        (i64, i64, *mut u8);
    /// `permute(A, j0, j1, dst, touched)`: a permute's elements `[j0, j1)` combined into
    /// `dst` (a partial where `touched` is not null).
    PERMUTE, PermuteFn: "permute" ("long long j0, long long j1, void* dst, unsigned char* touched")
        (i64, i64, *mut u8, *mut u8);
    /// `merge(A, dst, part, touched, n)`: the touched entries of a permute's partial merged
    /// into `dst`.
    MERGE, MergeFn: "merge" ("void* dst, const void* part, const unsigned char* touched, long long n")
        (*mut u8, *const u8, *const u8, i64);
    /// `shared(A, j0, j1, dst)`: a permute's elements `[j0, j1)` combined atomically into a
    /// `dst` every call shares.
    SHARED, SharedFn: "shared" ("long long j0, long long j1, void* dst")
        (i64, i64, *mut u8);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The Rust type a C parameter type passes as.
    fn rust_of(c: &str) -> &'static str {
        match c {
            "long long" => "i64",
            "int" => "i32",
            "long long*" => "*mut i64",
            "void*" | "unsigned char*" => "*mut u8",
            "const void*" | "const unsigned char*" => "*const u8",
            "void* const*" => "*const *mut u8",
            "const void* const*" => "*const *const u8",
            _ => "?",
        }
    }

    #[test]
    fn each_rust_type_spells_its_c_parameters() {
        for e in ALL {
            let from_c: Vec<&str> =
                e.params.split(", ").map(|p| rust_of(p.rsplit_once(' ').map_or(p, |(ty, _)| ty))).collect();
            assert_eq!(from_c.join(", "), e.rust, "{}", e.name);
        }
    }

    #[test]
    fn names_are_distinct_and_headers_are_c() {
        let mut names: Vec<&str> = ALL.iter().map(|e| e.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), ALL.len());
        assert_eq!(
            COUNT.header("eq_k3", "EqArgs_k3"),
            "EQ_EXPORT int eq_k3_count(const EqArgs_k3* restrict A, long long j0, long long j1, long long* n) {"
        );
        assert_eq!(RUN.symbol("eq_k0"), "eq_k0_run");
    }
}
