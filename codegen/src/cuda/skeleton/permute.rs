//! Permutes: a grid-stride loop combining each element at its target, atomically.

use super::{name, Gen};
use crate::cuda::Skeleton;
use crate::{known_op, KnownOp};
use eqfuse_ir::plan::{Func, PermuteDest};
use eqfuse_ir::types::ElemType;
use std::fmt::Write as _;

impl Gen<'_> {
    pub(super) fn permute(
        &mut self,
        op: &Func,
        dest: &PermuteDest,
        target: &Func,
    ) -> Result<Skeleton, String> {
        let ty = self.types[0];
        let drank = dest.rank(self.plan).ok_or_else(|| format!("no destination {dest:?}"))?;
        let dst = self.k.lanes[0].dst;
        let dst_rank = self.plan.values.get(dst).map(|i| i.rank);
        let dest_name = match dest {
            PermuteDest::Array(v) => name(self.plan, *v),
            PermuteDest::Fill { .. } => "a fill".to_string(),
        };
        if dst_rank != Some(drank) || drank == 0 {
            return Err(format!("kernel k{}: a permute into `{dest_name}` of another rank", self.index));
        }
        if let PermuteDest::Fill { value, .. } = dest {
            if value.elem_type() != ty {
                return Err(format!(
                    "kernel k{}: a permute of {ty} into a fill of {}",
                    self.index,
                    value.elem_type()
                ));
            }
        }
        if target.params.len() != self.rank()
            || target.params.iter().any(|t| *t != ElemType::I64)
            || target.ret.len() != drank
            || target.ret.iter().any(|r| target.reg_types.get(*r as usize) != Some(&ElemType::I64))
        {
            return Err(format!(
                "kernel k{}: the permute target is not {} indices to {} indices",
                self.index,
                self.rank(),
                drank
            ));
        }
        self.op_functor(0, op, ty)?;
        self.func("eq_target", target, "the permute target")?;
        let total = self.layout.total();
        let out = self.out(0);
        let plan = self.plan;
        let dims = crate::dest_dims(&mut self.layout, plan, dest);
        let err = self.layout.err();
        let kid = self.layout.kid();
        let unflat = self.unflatten("f", self.rank(), "    ");
        let (decls, call) = self.elem_call("f");
        let mut tcall = String::from("eq_target(A, f");
        for d in 0..self.rank() {
            let _ = write!(tcall, ", i{d}");
        }
        for d in 0..drank {
            let _ = write!(tcall, ", &t{d}");
        }
        tcall.push(')');
        let entry = self.entry("permute");
        let p = "(&".to_string() + &out + "[slot])";
        let combine = match (known_op(op), ty) {
            (Some(KnownOp::Add), ElemType::I32) => format!("atomicAdd((int*){p}, eq_x0);"),
            (Some(KnownOp::Add), ElemType::I64) => {
                format!("atomicAdd((unsigned long long*){p}, (unsigned long long)eq_x0);")
            }
            (Some(KnownOp::Add), ElemType::F32) if self.opts.fast_math => format!("atomicAdd({p}, eq_x0);"),
            (Some(KnownOp::Add), ElemType::F64) => format!(
                "\n#if __CUDA_ARCH__ >= 600\n    atomicAdd({p}, eq_x0);\n#else\n    eq_atomic_cas64({p}, eq_x0, op0);\n#endif"
            ),
            (Some(KnownOp::Min), ElemType::I32) => format!("atomicMin((int*){p}, eq_x0);"),
            (Some(KnownOp::Max), ElemType::I32) => format!("atomicMax((int*){p}, eq_x0);"),
            (Some(k @ (KnownOp::Min | KnownOp::Max)), ElemType::I64) => {
                let f = if k == KnownOp::Min { "atomicMin" } else { "atomicMax" };
                format!(
                    "\n#if __CUDA_ARCH__ >= 350\n    {f}((long long*){p}, eq_x0);\n#else\n    eq_atomic_cas64({p}, eq_x0, op0);\n#endif"
                )
            }
            (Some(KnownOp::Add), ElemType::U32) => format!("atomicAdd((unsigned int*){p}, eq_x0);"),
            (Some(KnownOp::Add), ElemType::U64) => format!("atomicAdd((unsigned long long*){p}, eq_x0);"),
            (_, ElemType::Bool) => format!("eq_atomic_cas_bool({p}, eq_x0, op0);"),
            (_, ElemType::I32 | ElemType::F32 | ElemType::U32) => format!("eq_atomic_cas32({p}, eq_x0, op0);"),
            (_, ElemType::I64 | ElemType::F64 | ElemType::U64) => format!("eq_atomic_cas64({p}, eq_x0, op0);"),
            (_, ElemType::I8 | ElemType::I16 | ElemType::U8 | ElemType::U16) => {
                format!("eq_atomic_cas_small({p}, eq_x0, op0);")
            }
        };
        let mut k = String::new();
        match dest {
            PermuteDest::Array(v) => w!(
                k,
                "  // the output starts as a copy of `{}`; each element is combined at its target",
                name(plan, *v)
            ),
            PermuteDest::Fill { .. } => {
                w!(
                    k,
                    "  // the output starts as a fill the host makes; each element is combined at its target"
                )
            }
        }
        w!(k, "  const EqOp0 op0 = {{&A}};");
        w!(k, "  const long long stride = (long long)gridDim.x * EQ_BLOCK;");
        w!(k, "  for (long long f = (long long)blockIdx.x * EQ_BLOCK + threadIdx.x; f < {total}; f += stride) {{");
        k.push_str(&unflat);
        w!(k, "    {decls}");
        w!(k, "    if (!{call}) continue;");
        let tdecl: Vec<String> = (0..drank).map(|d| format!("t{d} = 0")).collect();
        w!(k, "    long long {};", tdecl.join(", "));
        w!(k, "    if (!{tcall}) continue;");
        if drank == 1 {
            w!(k, "    if (t0 == -1) continue;  // dropped");
        }
        let checks: Vec<String> = dims
            .iter()
            .enumerate()
            .map(|(d, dim)| format!("(unsigned long long)t{d} < (unsigned long long){dim}"))
            .collect();
        let tl: Vec<String> = (0..drank).map(|d| format!("t{d}")).collect();
        w!(k, "    if (!({})) {{", checks.join(" && "));
        w!(k, "      const long long eq_ix[{drank}] = {{{}}};", tl.join(", "));
        w!(k, "      eq_fail({err}, {kid}, EQ_ERR_TARGET, {dst}, f, {drank}, eq_ix);");
        w!(k, "      continue;");
        w!(k, "    }}");
        let mut slot = "t0".to_string();
        for (d, dim) in dims.iter().enumerate().skip(1) {
            slot = format!("({slot} * {dim} + t{d})");
        }
        w!(k, "    const long long slot = {slot};");
        w!(k, "    {combine}");
        w!(k, "  }}");
        w!(k, "}}\n");
        self.kernel_head(&entry);
        self.kernels.push_str(&k);
        Ok(Skeleton::Permute { entry, dest: dest.clone() })
    }
}
