//! A kernel's argument block: the 8-byte fields (pointers, extents, dimensions, host
//! scalars) its generated code reads, in the order the host fills them.
//!
//! Both dialects pass one block of 8-byte fields: CUDA by value as the entry point's only
//! parameter, C by pointer. The field list is built while the code is emitted: asking for a
//! field the first time declares it.

use crate::{cty, scalar_member, Dialect};
use eqfuse_ir::plan::{Plan, ValueId};
use eqfuse_ir::types::ElemType;
use std::fmt::Write as _;

/// What the runtime writes into one 8-byte field of a kernel's argument block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Slot {
    /// The error record (device pointer).
    ErrRecord,
    /// The launch's number, for the error record (`i64`).
    KernelId,
    /// Extent `k` of the space (`i64`).
    Extent(usize),
    /// The number of elements of the space (`i64`).
    Total,
    /// The product of every extent but the innermost (`i64`).
    Rows,
    /// 1 when every extent, the number of elements and the number of rows are below 2^32
    /// (indices can be computed in 32 bits), else 0.
    Narrow,
    /// Value `v`'s device buffer.
    Array(ValueId),
    /// Dimension `k` of value `v` (`i64`).
    Dim(ValueId, usize),
    /// A 0-d value known on the host, passed by value (its bytes, little-endian, in the low
    /// bytes of the field).
    HostScalar(ValueId),
    /// Lane `k`'s output buffer.
    Out(usize),
    /// Scratch buffer `k` of [`crate::cuda::KernelCode::scratch`].
    Scratch(usize),
}

/// The fields of an argument block, in order, with their C declarations.
#[derive(Debug)]
pub struct Layout {
    dialect: Dialect,
    /// The argument block's C type name.
    name: String,
    fields: Vec<(Slot, String, String)>,
    /// Values the kernel writes as well as reads (the results of a row block's phases):
    /// their fields are plain pointers, not `const __restrict__` ones, so that a read after
    /// the write (behind a barrier) sees it.
    written: Vec<ValueId>,
}

impl Layout {
    /// An empty argument block for `dialect` (fields are read as `A.x` in CUDA, where the
    /// block is passed by value, and `A->x` in C, where it is passed by pointer).
    pub fn new(dialect: Dialect) -> Layout {
        Layout::named(dialect, "EqArgs")
    }

    /// An empty argument block whose C type is `name` (one per kernel when a translation
    /// unit holds several kernels).
    pub fn named(dialect: Dialect, name: &str) -> Layout {
        Layout { dialect, name: name.to_string(), fields: Vec::new(), written: Vec::new() }
    }

    /// The argument block's C type name.
    pub fn type_name(&self) -> &str {
        &self.name
    }

    /// The dialect the fields are spelled for.
    pub fn dialect(&self) -> Dialect {
        self.dialect
    }

    /// The field for `slot` (declared `decl name;` the first time), as `A.name`.
    fn field(&mut self, slot: Slot, decl: impl FnOnce() -> (String, String)) -> String {
        let access = match self.dialect {
            Dialect::Cuda => "A.",
            Dialect::C => "A->",
        };
        if let Some((_, _, name)) = self.fields.iter().find(|(s, _, _)| *s == slot) {
            return format!("{access}{name}");
        }
        let (ty, name) = decl();
        let out = format!("{access}{name}");
        self.fields.push((slot, ty, name));
        out
    }

    pub fn err(&mut self) -> String {
        self.field(Slot::ErrRecord, || ("long long*".into(), "err".into()))
    }
    pub fn kid(&mut self) -> String {
        self.field(Slot::KernelId, || ("long long".into(), "kid".into()))
    }
    pub fn extent(&mut self, k: usize) -> String {
        self.field(Slot::Extent(k), || ("long long".into(), format!("ext{k}")))
    }
    pub fn total(&mut self) -> String {
        self.field(Slot::Total, || ("long long".into(), "total".into()))
    }
    pub fn rows(&mut self) -> String {
        self.field(Slot::Rows, || ("long long".into(), "rows".into()))
    }
    pub fn narrow(&mut self) -> String {
        self.field(Slot::Narrow, || ("long long".into(), "narrow".into()))
    }
    /// Marks values the kernel writes through their [`Slot::Array`] fields (before any of
    /// them is asked for).
    pub fn set_written(&mut self, vs: &[ValueId]) {
        self.written = vs.to_vec();
    }

    /// Whether [`Layout::set_written`] named `v`.
    pub fn written(&self, v: ValueId) -> bool {
        self.written.contains(&v)
    }

    /// Value `v`'s buffer: read-only, unless [`Layout::set_written`] named it.
    pub fn array(&mut self, plan: &Plan, v: ValueId) -> String {
        let (ty, name) = value_type_name(plan, v);
        let decl = if self.written.contains(&v) {
            format!("{ty}* /* {name} */")
        } else {
            format!("const {ty}* __restrict__ /* {name} */")
        };
        self.field(Slot::Array(v), || (decl, format!("v{v}")))
    }
    pub fn dim(&mut self, plan: &Plan, v: ValueId, k: usize) -> String {
        let (_, name) = value_type_name(plan, v);
        self.field(Slot::Dim(v, k), || (format!("long long /* {name} dim {k} */"), format!("v{v}_d{k}")))
    }
    pub fn host_scalar(&mut self, plan: &Plan, v: ValueId) -> String {
        let (ty, name) = value_type_name(plan, v);
        let member = plan.values.get(v).map(|i| scalar_member(i.elem)).unwrap_or("i64");
        let base =
            self.field(Slot::HostScalar(v), || (format!("EqScalar /* {name}: {ty} */"), format!("s{v}")));
        format!("{base}.{member}")
    }
    pub fn out(&mut self, k: usize, ty: ElemType, name: &str) -> String {
        self.field(Slot::Out(k), || (format!("{}* __restrict__ /* {name} */", cty(ty)), format!("out{k}")))
    }
    pub fn scratch(&mut self, k: usize, ty: &str, name: &str) -> String {
        self.field(Slot::Scratch(k), || (format!("{ty}*"), name.to_string()))
    }

    /// `struct EqArgs { ... };` (in C, a `typedef struct NAME { ... } NAME;`).
    pub fn declaration(&self) -> String {
        let mut s = String::from(
            "// The kernel's argument block: 8-byte fields, filled by the host in this order.\n",
        );
        match self.dialect {
            Dialect::Cuda => s.push_str("struct EqArgs {\n"),
            Dialect::C => {
                let _ = writeln!(s, "typedef struct {} {{", self.name);
            }
        }
        for (_, ty, name) in &self.fields {
            // `T* __restrict__ /* xs */` → `T* __restrict__ v0; // xs`
            let (decl, comment) = match ty.split_once("/*") {
                Some((d, c)) => (d.trim_end().to_string(), Some(c.trim_end_matches("*/").trim().to_string())),
                None => (ty.clone(), None),
            };
            let _ = match comment {
                Some(c) => writeln!(s, "  {decl} {name};  // {c}"),
                None => writeln!(s, "  {decl} {name};"),
            };
        }
        match self.dialect {
            Dialect::Cuda => s.push_str("};\n"),
            Dialect::C => {
                let _ = writeln!(s, "}} {};", self.name);
            }
        }
        s
    }

    pub fn slots(&self) -> Vec<Slot> {
        self.fields.iter().map(|(s, _, _)| *s).collect()
    }
}

/// C type and name of value `v` (for declarations and comments).
fn value_type_name(plan: &Plan, v: ValueId) -> (&'static str, String) {
    match plan.values.get(v) {
        Some(info) => (cty(info.elem), info.name.replace("*/", "* /")),
        None => ("long long", format!("v{v}")),
    }
}

/// A host scalar's bits in the low bytes of an 8-byte field (an `EqScalar`), as the
/// generated code reads a [`Slot::HostScalar`].
pub fn scalar_bits(s: eqfuse_ir::value::Scalar) -> u64 {
    use eqfuse_ir::value::Scalar;
    match s {
        Scalar::Bool(b) => u64::from(b),
        Scalar::I32(v) => u64::from(v as u32),
        Scalar::I64(v) => v as u64,
        Scalar::I8(v) => u64::from(v as u8),
        Scalar::I16(v) => u64::from(v as u16),
        Scalar::U8(v) => u64::from(v),
        Scalar::U16(v) => u64::from(v),
        Scalar::U32(v) => u64::from(v),
        Scalar::U64(v) => v,
        Scalar::F32(v) => u64::from(v.to_bits()),
        Scalar::F64(v) => v.to_bits(),
    }
}
