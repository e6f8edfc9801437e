//! `eqfuse._eqfuse`: the Rust half of the Python package (the Python half, `python/eqfuse`,
//! is the API users call: argument conversion, error classes, `eqfuse.dask`).
//!
//! What crosses here, and how:
//! - `compile(source, file, fast_math, backend)` parses, checks and optimises once (on a
//!   thread with the command line's stack, with the GIL released) and returns a `Program`.
//! - `Program.run(inputs)` takes NumPy arrays that the Python half has already made
//!   C-contiguous and of the declared dtype, borrows them as [`ValueView`]s (no copy), releases
//!   the GIL, runs the plan (on the CPU, compiled to native code once, at `compile`), and
//!   hands each result's buffer to NumPy (no copy either).
//! - Errors are `RawError(code, message, rendered)`; the Python half raises the
//!   `eqfuse.Error` subclass of the code.

use eqfuse::{Backend, ElemType, Error, Optimized, Type, Value, ValueView};
use indexmap::IndexMap;
use numpy::{PyArrayDyn, PyArrayMethods, PyReadonlyArrayDyn};
use pyo3::exceptions::{PyException, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

/// The module's allocator, as the command line's (docs/design-decisions.md, 12): results
/// handed to NumPy are freed through it when their arrays go, and the next run's results
/// reuse that memory instead of asking the system for fresh pages.
#[global_allocator]
static ALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;

pyo3::create_exception!(
    _eqfuse,
    RawError,
    PyException,
    "An eqfuse error: args are (code, message, rendered)."
);

/// A compiled program: the optimised plan, the backend it runs on and its source text (for
/// error messages that quote it).
#[pyclass(frozen, module = "eqfuse._eqfuse")]
struct Program {
    /// The optimised program; `None` where the optimiser cannot take one of its forms yet
    /// (`interpreted` says which), and the reference interpreter runs it.
    opt: Option<Optimized>,
    /// The checked source program.
    checked: eqfuse::Checked,
    /// Why the program runs on the reference interpreter (`None`: it does not).
    interpreted: Option<String>,
    backend: Backend,
    file: String,
    source: String,
    run_opts: eqfuse_exec_cpu::RunOptions,
    /// The CPU plan with its native code, made at compile time (no call makes it again).
    compiled: Option<eqfuse_exec_cpu::CompiledPlan>,
}

fn raise(e: &Error, file: &str, source: &str) -> PyErr {
    RawError::new_err((e.code.as_str(), e.message.clone(), e.render(file, source, false)))
}

/// Runs `f` on a thread with the stack the command line gives a request (the optimiser
/// recurses over the program); `None` where `f` panicked (a bug in eqfuse).
fn on_big_stack<T: Send>(f: impl Fn() -> T + Sync) -> Option<T> {
    let stack = eqfuse::ir::stack::REQUEST_STACK_BYTES;
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        eqfuse::ir::stack::with_stack("eqfuse-compile", stack, &f)
    }))
    .ok()
}

/// Parses, checks and optimises `source` (`file` names it in messages).
#[pyfunction]
#[pyo3(signature = (source, file, fast_math = false, backend = "auto"))]
fn compile(
    py: Python<'_>,
    source: String,
    file: String,
    fast_math: bool,
    backend: &str,
) -> PyResult<Program> {
    // an unknown name is a wrong argument (`ValueError`, listing the names); a known backend
    // that cannot run here (`cuda` with no GPU) is `E-DEVICE`, before any work
    let backend: Backend = backend.parse().map_err(|e: Error| PyValueError::new_err(e.message))?;
    backend.check_available().map_err(|e| raise(&e, &file, &source))?;
    let started = std::time::Instant::now();
    let result = py.detach(|| {
        on_big_stack(|| {
            let program = eqfuse::parse(&source)?;
            let checked = eqfuse::check(&program)?;
            // the plan `eqfuse run` and `eqfuse bench` choose ([`eqfuse::plan_options`])
            let opts =
                eqfuse::plan_options(backend, eqfuse::OptimizeOptions { fast_math, ..Default::default() });
            match eqfuse::optimize_checked(checked.clone(), &opts) {
                Ok(opt) => Ok((Some(opt), checked, None)),
                Err(e) if eqfuse_optimize::is_unsupported(&e) => {
                    eqfuse::backend::say_interpreted(&e, backend);
                    let what = e.message.strip_prefix(eqfuse_optimize::UNSUPPORTED).unwrap_or(&e.message);
                    Ok((None, checked, Some(what.to_string())))
                }
                Err(e) => Err(e),
            }
        })
    });
    let (opt, checked, interpreted) = match result {
        Some(Ok(opt)) => opt,
        Some(Err(e)) => return Err(raise(&e, &file, &source)),
        None => {
            let e = Error::new(eqfuse::Code::Limit, "the optimiser could not start or finish its thread");
            return Err(raise(&e, &file, &source));
        }
    };
    let run_opts = eqfuse_exec_cpu::RunOptions::default();
    // one deadline for optimising and compiling, as `eqfuse run` has (docs/cpu-backend.md)
    let deadline = started.checked_add(eqfuse::OptimizeOptions::default().time_limit);
    let compile_opts = eqfuse_exec_cpu::RunOptions { compile_deadline: deadline, ..run_opts.clone() };
    let compiled = match &opt {
        Some(opt) if backend == Backend::Cpu => {
            Some(py.detach(|| eqfuse_exec_cpu::CompiledPlan::new(opt.result.plan.clone(), &compile_opts)))
        }
        _ => None,
    };
    Ok(Program { opt, checked, interpreted, backend, file, source, run_opts, compiled })
}

/// A declared type as `(dtype, shape)`: the NumPy dtype name and one entry per dimension, an
/// `int` for a literal size, a `str` for a size name or size expression, `None` for a size
/// known only at run time.
fn type_tuple<'py>(py: Python<'py>, ty: &Type) -> PyResult<Bound<'py, PyAny>> {
    let (elem, shape): (ElemType, Vec<Bound<'py, PyAny>>) = match ty {
        Type::Scalar(e) => (*e, Vec::new()),
        Type::Array { elem, shape } => {
            let dims = shape
                .iter()
                .map(|d| match d {
                    eqfuse::Dim::Known(n) => n.into_pyobject(py).map(|v| v.into_any()).map_err(PyErr::from),
                    eqfuse::Dim::Size(s) => Ok(s.into_pyobject(py)?.into_any()),
                    eqfuse::Dim::Expr(e) => Ok(e.into_pyobject(py)?.into_any()),
                    eqfuse::Dim::Dynamic => Ok(py.None().into_bound(py)),
                    affine @ eqfuse::Dim::Affine { .. } => {
                        Ok(affine.to_string().into_pyobject(py)?.into_any())
                    }
                })
                .collect::<PyResult<Vec<_>>>()?;
            (*elem, dims)
        }
        other => (ElemType::F64, vec![other.to_string().into_pyobject(py)?.into_any()]),
    };
    (dtype_name(elem), PyList::new(py, shape)?).into_pyobject(py).map(|t| t.into_any())
}

fn dtype_name(e: ElemType) -> &'static str {
    match e {
        ElemType::Bool => "bool",
        ElemType::I8 => "int8",
        ElemType::I16 => "int16",
        ElemType::I32 => "int32",
        ElemType::I64 => "int64",
        ElemType::U8 => "uint8",
        ElemType::U16 => "uint16",
        ElemType::U32 => "uint32",
        ElemType::U64 => "uint64",
        ElemType::F32 => "float32",
        ElemType::F64 => "float64",
    }
}

/// Borrows a NumPy array of one of the five dtypes as a [`ValueView`]: `None` for any other
/// dtype (the Python half converts or refuses before this).
fn borrow<'py>(a: &Bound<'py, PyAny>) -> PyResult<Option<Kept<'py>>> {
    macro_rules! try_dtype {
        ($t:ty, $variant:ident) => {
            if let Ok(arr) = a.cast::<PyArrayDyn<$t>>() {
                return Ok(Some(Kept::$variant(arr.try_readonly()?)));
            }
        };
    }
    try_dtype!(bool, Bool);
    try_dtype!(i8, I8);
    try_dtype!(i16, I16);
    try_dtype!(i32, I32);
    try_dtype!(i64, I64);
    try_dtype!(u8, U8);
    try_dtype!(u16, U16);
    try_dtype!(u32, U32);
    try_dtype!(u64, U64);
    try_dtype!(f32, F32);
    try_dtype!(f64, F64);
    Ok(None)
}

/// A read-only borrow of a NumPy array, held while the plan runs.
enum Kept<'py> {
    Bool(PyReadonlyArrayDyn<'py, bool>),
    I8(PyReadonlyArrayDyn<'py, i8>),
    I16(PyReadonlyArrayDyn<'py, i16>),
    I32(PyReadonlyArrayDyn<'py, i32>),
    I64(PyReadonlyArrayDyn<'py, i64>),
    U8(PyReadonlyArrayDyn<'py, u8>),
    U16(PyReadonlyArrayDyn<'py, u16>),
    U32(PyReadonlyArrayDyn<'py, u32>),
    U64(PyReadonlyArrayDyn<'py, u64>),
    F32(PyReadonlyArrayDyn<'py, f32>),
    F64(PyReadonlyArrayDyn<'py, f64>),
}

impl Kept<'_> {
    fn view(&self) -> ValueView<'_> {
        match self {
            Kept::Bool(a) => ValueView::Bool(a.as_array()),
            Kept::I8(a) => ValueView::I8(a.as_array()),
            Kept::I16(a) => ValueView::I16(a.as_array()),
            Kept::I32(a) => ValueView::I32(a.as_array()),
            Kept::I64(a) => ValueView::I64(a.as_array()),
            Kept::U8(a) => ValueView::U8(a.as_array()),
            Kept::U16(a) => ValueView::U16(a.as_array()),
            Kept::U32(a) => ValueView::U32(a.as_array()),
            Kept::U64(a) => ValueView::U64(a.as_array()),
            Kept::F32(a) => ValueView::F32(a.as_array()),
            Kept::F64(a) => ValueView::F64(a.as_array()),
        }
    }
}

/// How long the calling thread waits, without the GIL, between two looks at Python's
/// signals while a plan runs: Ctrl-C stops a run within this and one block's time.
const SIGNAL_POLL: std::time::Duration = std::time::Duration::from_millis(20);

/// Runs `run` on a worker thread while the calling thread, the GIL released, waits for it
/// in slices of [`SIGNAL_POLL`] and between them runs Python's signal handlers
/// (`check_signals`). When a handler raises (`KeyboardInterrupt` for Ctrl-C), `cancel` is
/// set, the worker stops at its next poll (between blocks of elements), is joined, and the
/// handler's exception is returned. A worker that panicked (a bug) is `E-LIMIT`.
fn run_interruptible<T: Send>(
    py: Python<'_>,
    run: impl FnOnce() -> eqfuse::Result<T> + Send,
    cancel: &eqfuse_exec_cpu::Cancel,
) -> PyResult<eqfuse::Result<T>> {
    std::thread::scope(|s| {
        let (tx, rx) = std::sync::mpsc::channel();
        // the stack every request runs on (the reference backend's passes recurse)
        let stack = eqfuse::ir::stack::REQUEST_STACK_BYTES;
        let worker = std::thread::Builder::new().name("eqfuse-run".into()).stack_size(stack).spawn_scoped(
            s,
            move || {
                // the receiver is gone only once the caller stopped waiting
                let _ = tx.send(run());
            },
        );
        let Ok(worker) = worker else {
            return Ok(Err(Error::new(eqfuse::Code::Limit, "cannot start the thread that runs the plan")));
        };
        let mut rx = rx;
        loop {
            // the receiver goes to the wait without the GIL and comes back (it is `Send`, not
            // `Sync`)
            let (got, back) = py.detach(move || (rx.recv_timeout(SIGNAL_POLL), rx));
            rx = back;
            match got {
                Ok(out) => {
                    let _ = worker.join();
                    return Ok(out);
                }
                Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                    let _ = worker.join();
                    return Ok(Err(Error::new(
                        eqfuse::Code::Limit,
                        "the run's thread stopped (a bug in eqfuse)",
                    )));
                }
                Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                    if let Err(interrupt) = py.check_signals() {
                        cancel.cancel();
                        // the worker stops within a block; its result (`interrupted`) is dropped
                        py.detach(|| {
                            let _ = worker.join();
                        });
                        return Err(interrupt);
                    }
                }
            }
        }
    })
}

/// Hands a result's buffer to NumPy (no copy: NumPy owns the `Vec` from now on).
fn to_numpy<'py>(py: Python<'py>, v: Value) -> Bound<'py, PyAny> {
    match v {
        Value::Bool(a) => PyArrayDyn::from_owned_array(py, a).into_any(),
        Value::I8(a) => PyArrayDyn::from_owned_array(py, a).into_any(),
        Value::I16(a) => PyArrayDyn::from_owned_array(py, a).into_any(),
        Value::I32(a) => PyArrayDyn::from_owned_array(py, a).into_any(),
        Value::I64(a) => PyArrayDyn::from_owned_array(py, a).into_any(),
        Value::U8(a) => PyArrayDyn::from_owned_array(py, a).into_any(),
        Value::U16(a) => PyArrayDyn::from_owned_array(py, a).into_any(),
        Value::U32(a) => PyArrayDyn::from_owned_array(py, a).into_any(),
        Value::U64(a) => PyArrayDyn::from_owned_array(py, a).into_any(),
        Value::F32(a) => PyArrayDyn::from_owned_array(py, a).into_any(),
        Value::F64(a) => PyArrayDyn::from_owned_array(py, a).into_any(),
    }
}

#[pymethods]
impl Program {
    /// Runs the plan on `inputs` (a dict from input name to a C-contiguous NumPy array of the
    /// declared dtype) and returns a dict from output name to a NumPy array.
    fn run<'py>(&self, py: Python<'py>, inputs: &Bound<'py, PyDict>) -> PyResult<Bound<'py, PyDict>> {
        let items: Vec<(String, Bound<'py, PyAny>)> =
            inputs.iter().map(|(k, v)| Ok((k.extract::<String>()?, v))).collect::<PyResult<_>>()?;
        let mut kept: Vec<Kept<'_>> = Vec::with_capacity(items.len());
        let mut names = Vec::with_capacity(items.len());
        for (name, value) in &items {
            let Some(k) = borrow(value)? else {
                let e = Error::input(format!(
                    "input `{name}` is not a NumPy array of bool, int32, int64, float32 or float64"
                ));
                return Err(raise(&e, &self.file, &self.source));
            };
            kept.push(k);
            names.push(name.clone());
        }
        let views: IndexMap<String, ValueView<'_>> =
            names.into_iter().zip(kept.iter().map(Kept::view)).collect();
        let checked = &self.checked;
        let cancel = eqfuse_exec_cpu::Cancel::new();
        let run = || match (&self.compiled, &self.opt) {
            (_, None) => {
                let owned: eqfuse::Arrays = views.iter().map(|(k, v)| (k.clone(), v.to_value())).collect();
                let limits =
                    eqfuse::Limits { max_array_bytes: self.run_opts.max_array_bytes, ..Default::default() };
                eqfuse_ir::interp::interpret_with(checked, &owned, &limits)
            }
            (Some(c), _) => eqfuse::backend::run_compiled_views(
                c,
                checked,
                &views,
                self.run_opts.max_array_bytes,
                &cancel,
            ),
            (None, Some(opt)) => {
                let opts = eqfuse_exec_cpu::RunOptions { cancel: cancel.clone(), ..self.run_opts.clone() };
                eqfuse::backend::run_plan_views(&opt.result.plan, checked, self.backend, &views, &opts)
            }
        };
        let out = run_interruptible(py, run, &cancel);
        drop(views);
        drop(kept);
        let out = out?.map_err(|e| raise(&e, &self.file, &self.source))?;
        let dict = PyDict::new(py);
        for (name, value) in out {
            dict.set_item(name, to_numpy(py, value))?;
        }
        Ok(dict)
    }

    /// `eqfuse explain --json` for this program, as JSON text.
    fn explain_json(&self) -> String {
        match (&self.opt, &self.interpreted) {
            (Some(opt), _) => opt.explain_json().to_string(),
            (None, what) => serde_json::json!({ "interpreted": what }).to_string(),
        }
    }

    /// `eqfuse explain` for this program, as text.
    fn explain_text(&self) -> String {
        match (&self.opt, &self.interpreted) {
            (Some(opt), _) => opt.explain_with(true),
            (None, what) => {
                format!(
                    "runs on the reference interpreter: {} is not compiled yet\n",
                    what.as_deref().unwrap_or("?")
                )
            }
        }
    }

    /// The inputs as `[(name, dtype, shape)]` in declaration order.
    fn inputs<'py>(&self, py: Python<'py>) -> PyResult<Vec<(String, Bound<'py, PyAny>)>> {
        self.checked.inputs.iter().map(|(n, t)| Ok((n.clone(), type_tuple(py, t)?))).collect()
    }

    /// The outputs as `[(name, dtype, shape)]` in program order.
    fn outputs<'py>(&self, py: Python<'py>) -> PyResult<Vec<(String, Bound<'py, PyAny>)>> {
        self.checked.outputs.iter().map(|(n, t)| Ok((n.clone(), type_tuple(py, t)?))).collect()
    }

    /// The program split for inputs in blocks of rows along the size name `axis`
    /// (`eqfuse::chunks::split`), as JSON text: what `eqfuse.dask` runs.
    fn chunk_plan(&self, axis: &str) -> PyResult<String> {
        let plan =
            eqfuse::chunks::split(&self.checked, axis).map_err(|e| raise(&e, &self.file, &self.source))?;
        serde_json::to_string(&plan)
            .map_err(|e| raise(&eqfuse::ir::error::internal(e), &self.file, &self.source))
    }

    /// Whether the program runs block by block with halos for inputs chunked along the size
    /// names `sizes`, and with what halo per size (`eqfuse::chunks::halo_plan`), as JSON text.
    fn halo_plan(&self, sizes: Vec<String>) -> PyResult<String> {
        let plan = eqfuse::chunks::halo_plan(&self.checked, &sizes)
            .map_err(|e| raise(&e, &self.file, &self.source))?;
        serde_json::to_string(&plan)
            .map_err(|e| raise(&eqfuse::ir::error::internal(e), &self.file, &self.source))
    }

    /// The backend the plan runs on (`cpu`, `cuda` or `reference`).
    #[getter]
    fn backend(&self) -> &'static str {
        self.backend.name()
    }

    /// The program's source text.
    #[getter]
    fn source(&self) -> &str {
        &self.source
    }
}

/// How many inputs the CPU executor has copied in this process because they were not
/// row-major and contiguous (tests check that NumPy inputs are read in place).
#[pyfunction]
fn _input_copies() -> usize {
    eqfuse_exec_cpu::input_copies()
}

#[pymodule]
fn _eqfuse(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Program>()?;
    m.add_function(wrap_pyfunction!(compile, m)?)?;
    m.add_function(wrap_pyfunction!(_input_copies, m)?)?;
    m.add("RawError", m.py().get_type::<RawError>())?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
