//! The run as an [`Executor`]: the step walker ([`eqfuse_ir::plan::exec::run_steps`]) runs
//! the host steps and hands each kernel and block here; host functions read the run's
//! values through [`Env`] (downloading what they must).

use super::{fmt_shape, internal, scalar_from_bytes, Gpu, Run, Val};
use crate::host;
use eqfuse_ir::error::{Code, Error, Result, Span};
use eqfuse_ir::plan::exec::{Executor, KernelId, Phases};
use eqfuse_ir::plan::{Func, Kernel, ValueId};
use eqfuse_ir::value::Scalar;

impl<G: Gpu> Executor for Run<'_, G> {
    /// Runs kernel `k`; its errors at its position (a device error as it is).
    fn launch(&mut self, id: KernelId, k: &Kernel) -> Result<()> {
        self.kernel(id, k).map_err(|e| if e.code == Code::Device { e } else { e.or_at(k.span) })
    }

    /// One kernel, a block per row, where it can be; else the phases one after the other.
    fn row_block(&mut self, phases: Phases<'_>) -> Result<()> {
        if self.row_block_kernel(phases)? {
            return Ok(());
        }
        phases.iter().try_for_each(|(id, k)| self.launch(id, k))
    }

    // a segment block: the phases one after the other (the default; what it keeps per
    // segment is written whole): the GPU has no scan–scatter kernel yet

    /// Runs `f` on the host, after reading the error record (a kernel's error comes first).
    fn host(&mut self, f: &Func) -> Result<Scalar> {
        self.check_errors()?;
        host::call1(f, &[], &mut Env(self))
    }

    fn load(&mut self, v: ValueId) -> Result<Scalar> {
        self.host_scalar(v)
    }

    fn put_scalar(&mut self, dst: ValueId, s: Scalar) -> Result<()> {
        self.put(dst, Val { elem: s.elem_type(), shape: Vec::new(), host: Some(s), dev: None })
    }

    fn alias(&mut self, dst: ValueId, src: ValueId) -> Result<()> {
        let val = self.val(src)?.clone();
        self.put(dst, val)
    }

    fn shape(&mut self, v: ValueId) -> Result<Vec<usize>> {
        Ok(self.val(v)?.shape.clone())
    }

    fn forget(&mut self, v: ValueId) -> Result<()> {
        self.forget_value(v);
        Ok(())
    }

    fn rebind(&mut self, dst: &[ValueId], src: &[ValueId], _: bool) -> Result<()> {
        let got: Vec<_> = src.iter().map(|s| self.val(*s).cloned()).collect::<Result<_>>()?;
        for (d, v) in dst.iter().zip(got) {
            self.forget_value(*d);
            self.put(*d, v)?;
        }
        Ok(())
    }
}

/// The host steps' view of the run's values.
struct Env<'r, 'p, G: Gpu>(&'r mut Run<'p, G>);

impl<G: Gpu> host::Env for Env<'_, '_, G> {
    fn load(&mut self, v: ValueId) -> Result<Scalar> {
        self.0.host_scalar(v)
    }

    fn read(&mut self, v: ValueId, ix: &[i64]) -> Result<Scalar> {
        let x = self.0.val(v)?.clone();
        let name = self.0.name(v);
        if ix.len() != x.shape.len() {
            return Err(internal(format!(
                "`{name}` of rank {} read with {} indices",
                x.shape.len(),
                ix.len()
            )));
        }
        let mut flat = 0usize;
        let mut ok = true;
        for (&d, &i) in x.shape.iter().zip(ix) {
            match usize::try_from(i).ok().filter(|&i| i < d) {
                Some(i) => flat = flat * d + i,
                None => ok = false,
            }
        }
        if !ok {
            let shown = match ix {
                [i] => format!("index {i}"),
                _ => format!("index {}", fmt_shape(ix)),
            };
            let bounds = match x.shape.as_slice() {
                [n] => format!("of length {n}"),
                _ => format!("of shape {}", fmt_shape(&x.shape)),
            };
            return Err(Error::index(
                Span::default(),
                format!("{shown} out of bounds for `{name}` {bounds}"),
            ));
        }
        if x.shape.is_empty() {
            return self.0.host_scalar(v);
        }
        let buf = x.dev.ok_or_else(|| internal(format!("`{name}` has no data")))?;
        let size = x.elem.size_bytes();
        let b = self.0.download(&buf, flat * size, size)?;
        scalar_from_bytes(x.elem, &b)
    }

    fn dim(&mut self, v: ValueId, axis: i64) -> Result<Scalar> {
        let x = self.0.val(v)?;
        match usize::try_from(axis).ok().and_then(|k| x.shape.get(k)) {
            Some(&d) => {
                Ok(Scalar::I64(i64::try_from(d).map_err(|_| Error::limit("a dimension overflows i64"))?))
            }
            None => Err(Error::index(
                Span::default(),
                format!(
                    "`size`: dimension {axis} out of bounds for `{}` of rank {} (shape {})",
                    self.0.name(v),
                    x.shape.len(),
                    fmt_shape(&x.shape)
                ),
            )),
        }
    }
}
