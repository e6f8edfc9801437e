//! A contraction (a matrix product) as GEMM calls of the device's BLAS library.

use super::{internal, Gpu, Run, Val};
use crate::blas;
use eqfuse_ir::error::Result;
use eqfuse_ir::plan::contract::Contraction;
use eqfuse_ir::plan::Kernel;
use std::sync::Arc;

impl<G: Gpu> Run<'_, G> {
    /// Runs kernel `k`, a contraction, as GEMM calls; `Ok(false)` when it must run as its
    /// kernel instead: GEMM turned off, a read out of bounds (the kernel reports it), a
    /// layout cuBLAS cannot take as it is, or no BLAS library.
    pub(super) fn contract(&mut self, k: &Kernel, c: &Contraction) -> Result<bool> {
        if !self.opts.gemm {
            return Ok(false);
        }
        let (space, _) = self.space(k)?;
        let (a, b) = (self.val(c.a.array)?.clone(), self.val(c.b.array)?.clone());
        let (oa, ob) = c.offsets(|v| self.host_scalar(v))?;
        let Some(layout) = c.layout(&space, (&a.shape, &oa), (&b.shape, &ob)) else { return Ok(false) };
        let dst = k.lanes.first().ok_or_else(|| internal("a contraction with no lane"))?.dst;
        let elem = self.plan.values.get(dst).ok_or_else(|| internal(format!("no value v{dst}")))?.elem;
        let shape = space[..space.len().saturating_sub(1)].to_vec();
        let count: usize = shape.iter().product();
        self.check_alloc(k.kind.as_str(), elem, count)?;
        let bytes = count * elem.size_bytes();
        let alpha = c.alpha(elem, |v| self.host_scalar(v))?;
        let Some(calls) = blas::calls(&layout, alpha) else { return Ok(false) };
        let out = if count == 0 || layout.k == 0 {
            // no products: every element is the neutral element, +0.0
            self.alloc_zeroed(bytes)?
        } else {
            let (x, y) = (self.device_buf(c.b.array)?, self.device_buf(c.a.array)?);
            let mut out = self.alloc(bytes)?;
            for g in &calls {
                // the library reads and writes no element outside the three buffers
                let fits =
                    g.needs().is_some_and(|(nx, ny, nc)| nx <= b.count() && ny <= a.count() && nc <= count);
                if !fits {
                    return Err(internal(format!("a GEMM call outside its operands: {g:?}")));
                }
                if !self.gpu.gemm(g, &x, &y, &mut out)? {
                    return Ok(false);
                }
            }
            out
        };
        self.put(dst, Val { elem, shape, host: None, dev: Some(Arc::new(out)) })?;
        Ok(true)
    }
}
