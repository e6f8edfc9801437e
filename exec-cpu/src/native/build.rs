//! Running the system C compiler on a plan's source under a deadline.
//!
//! [`build`] compiles a plan's C source into a shared object. A large source is cut into
//! translation units at kernel boundaries (`eqfuse_codegen::c::split`), compiled to objects
//! at the same time (as many at once as the machine has cores) and linked into the one
//! shared object; a plan with more than [`CHEAP_BYTES`] of kernel text is compiled at `-O1`
//! instead of `-O3` (`-O3` costs four times as long; such a plan has thousands of kernels,
//! each a simple loop that `-O1` compiles nearly as well).
//! Both choices depend on the source alone, so the cache key of the whole source still
//! names one shared object.
//!
//! Each compiler runs in a process group of its own (the driver and the `cc1`, `as` and
//! `ld` it starts), polled until it ends: at the deadline the whole group is killed
//! (`SIGKILL`), and [`build`] returns an error that starts with [`DEADLINE`]. Every
//! temporary file (the units' sources, objects, the compilers' messages, the shared object
//! before it is renamed into place) is removed on every path: success, failure, deadline.
//! A process-global registry holds the live groups and temporary files, so that an early
//! exit (`--timeout`'s watchdog) can kill and remove them first ([`abort_compilers`]).

#![allow(unsafe_code)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

/// Kernel text per translation unit at least (the last may be shorter): a plan with more
/// is compiled in several units at once. 128 KiB of kernel text compiles in about a second
/// at `-O3`.
pub(crate) const PIECE_BYTES: usize = 128 * 1024;

/// Kernel text of a plan above which its units are compiled at `-O1` (see the module's
/// comment). gcc 12 compiles about 50 KiB of kernel text a second at `-O3` and 200 KiB at
/// `-O1`: past 256 KiB, `-O3` would take more than the default time limit on two cores.
pub(crate) const CHEAP_BYTES: usize = 256 * 1024;

/// How an error from the deadline starts.
pub(crate) const DEADLINE: &str = "the C compiler did not finish by the deadline";

/// How [`build`] splits and bounds a compilation.
#[derive(Clone, Debug)]
pub(crate) struct Options {
    /// When to kill the compilers and give up (`None`: never).
    pub deadline: Option<Instant>,
    /// Kernel text per translation unit ([`PIECE_BYTES`]).
    pub piece_bytes: usize,
    /// Kernel text above which a plan is compiled at `-O1` ([`CHEAP_BYTES`]).
    pub cheap_bytes: usize,
    /// Compilers run at once (at least 1).
    pub jobs: usize,
}

impl Options {
    /// The defaults, with `deadline`.
    pub(crate) fn new(deadline: Option<Instant>) -> Options {
        let jobs = std::thread::available_parallelism().map_or(1, |n| n.get());
        Options { deadline, piece_bytes: PIECE_BYTES, cheap_bytes: CHEAP_BYTES, jobs }
    }
}

/// The live compilers' process groups and the temporary files of every build in progress.
#[derive(Default)]
struct Registry {
    groups: Vec<i32>,
    files: Vec<PathBuf>,
    /// The directories builds in progress write into (removed by an abort when empty).
    dirs: Vec<PathBuf>,
    /// Set by [`abort_compilers`]: no compiler starts after it.
    aborted: bool,
}

fn registry() -> MutexGuard<'static, Registry> {
    static REG: OnceLock<Mutex<Registry>> = OnceLock::new();
    REG.get_or_init(Default::default).lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Kills every compiler this process has running (each whole process group) and removes the
/// temporary files of every build in progress; no compiler starts afterwards, and a thread
/// whose compile this stopped (or that would start one) waits for the exit instead of going
/// on. For a process about to exit early (the `--timeout` watchdog, Ctrl-C on the command
/// line), which would otherwise leave the compilers running and their files behind, or
/// finish its command while the exit is on its way.
pub fn abort_compilers() {
    let (groups, files, dirs) = {
        let mut reg = registry();
        reg.aborted = true;
        (std::mem::take(&mut reg.groups), std::mem::take(&mut reg.files), std::mem::take(&mut reg.dirs))
    };
    for &g in &groups {
        kill_group(g);
    }
    if !groups.is_empty() {
        // a compiler killed inside a system call may still finish it (a file it was
        // creating): a moment for the kills to land before the files go
        std::thread::sleep(Duration::from_millis(20));
    }
    for f in &files {
        let _ = std::fs::remove_file(f);
    }
    for d in &dirs {
        let _ = std::fs::remove_dir(d);
    }
}

/// Waits for the exit that [`abort_compilers`] announced: the thread that would have
/// compiled goes no further, so that it cannot finish the command (and exit with its status)
/// before the thread that aborted exits with its own.
fn exiting() -> ! {
    loop {
        std::thread::park();
    }
}

/// A number unique in this process (for the names of a build's files).
fn unique() -> u64 {
    static N: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    N.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

/// Sends `SIGKILL` to process group `pgid`.
fn kill_group(pgid: i32) {
    if pgid > 1 {
        // SAFETY: kill(2) takes plain integers and touches no memory of this process; a
        // negative pid names the process group, whose leader (a child not yet waited for,
        // or the registry's entry removed before it was) still holds the id.
        unsafe {
            libc::kill(-pgid, libc::SIGKILL);
        }
    }
}

/// A build's temporary files in its directory, removed (and forgotten by the registry) when
/// dropped.
struct Temps(Vec<PathBuf>, PathBuf);

impl Temps {
    /// The temporary files of a build in `dir` (none yet).
    fn new(dir: &Path) -> Temps {
        registry().dirs.push(dir.to_path_buf());
        Temps(Vec::new(), dir.to_path_buf())
    }

    /// A new temporary path in `dir`, registered before anything is written there.
    fn path(&mut self, dir: &Path, name: String) -> PathBuf {
        let p = dir.join(name);
        registry().files.push(p.clone());
        self.0.push(p.clone());
        p
    }
}

impl Drop for Temps {
    fn drop(&mut self) {
        for f in &self.0 {
            let _ = std::fs::remove_file(f);
        }
        let mut reg = registry();
        reg.files.retain(|f| !self.0.contains(f));
        if let Some(i) = reg.dirs.iter().position(|d| *d == self.1) {
            reg.dirs.swap_remove(i);
        }
    }
}

/// A compiler started in a process group of its own, killed (the whole group) when dropped
/// before it was seen to end.
struct Job {
    child: Child,
    /// Its messages (standard error), read when it fails.
    messages: PathBuf,
    done: bool,
}

impl Job {
    /// Starts `cmd` (its standard error into `messages`) in a new process group, unless
    /// [`abort_compilers`] ran.
    fn start(mut cmd: Command, messages: PathBuf) -> Result<Job, String> {
        use std::os::unix::process::CommandExt;
        let err = std::fs::File::create(&messages)
            .map_err(|e| format!("cannot write {}: {e}", messages.display()))?;
        cmd.process_group(0).stdin(Stdio::null()).stdout(Stdio::null()).stderr(err);
        // started and registered under the lock, so that an abort sees every group
        let mut reg = registry();
        if reg.aborted {
            drop(reg);
            exiting();
        }
        let child = cmd.spawn().map_err(|e| format!("cannot run `{:?}`: {e}", cmd.get_program()))?;
        reg.groups.push(child.id() as i32);
        Ok(Job { child, messages, done: false })
    }

    /// `Some(Ok(()))` when it ended well, `Some(Err(..))` when it failed, `None` while it
    /// runs.
    fn poll(&mut self, cc: &str) -> Option<Result<(), String>> {
        let status = match self.child.try_wait() {
            Ok(None) => return None,
            Ok(Some(s)) => s,
            Err(e) => return Some(Err(format!("cannot wait for `{cc}`: {e}"))),
        };
        self.done = true;
        let pgid = self.child.id() as i32;
        registry().groups.retain(|&g| g != pgid);
        if status.success() {
            return Some(Ok(()));
        }
        if registry().aborted {
            // killed by `abort_compilers`: the process is about to exit
            exiting();
        }
        let text = std::fs::read_to_string(&self.messages).unwrap_or_default();
        let first: Vec<&str> = text.lines().take(4).collect();
        Some(Err(format!("`{cc}` failed on the generated C ({status}): {}", first.join(" | "))))
    }
}

impl Drop for Job {
    fn drop(&mut self) {
        if !self.done {
            let pgid = self.child.id() as i32;
            kill_group(pgid);
            let _ = self.child.wait();
            registry().groups.retain(|&g| g != pgid);
        }
    }
}

/// The error of a build the deadline stopped.
fn deadline_error() -> String {
    format!("{DEADLINE} (the optimiser's time limit, `--time-limit-ms`, covers compilation); it was stopped")
}

/// Runs the commands of `cmds` (each with its messages file), at most `jobs` at once, until
/// all have ended well, one fails, or the deadline passes (every compiler still running is
/// then killed).
fn run_all(
    cc: &str,
    cmds: Vec<(Command, PathBuf)>,
    jobs: usize,
    deadline: Option<Instant>,
) -> Result<(), String> {
    let mut waiting = cmds.into_iter();
    let mut running: Vec<Job> = Vec::new();
    loop {
        while running.len() < jobs.max(1) {
            let Some((cmd, messages)) = waiting.next() else { break };
            running.push(Job::start(cmd, messages)?);
        }
        if running.is_empty() {
            return Ok(());
        }
        let mut k = 0;
        while k < running.len() {
            match running[k].poll(cc) {
                None => k += 1,
                Some(Ok(())) => {
                    running.swap_remove(k);
                }
                // the others are killed as `running` drops
                Some(Err(e)) => return Err(e),
            }
        }
        if running.is_empty() {
            continue;
        }
        let now = Instant::now();
        if deadline.is_some_and(|d| now >= d) {
            return Err(deadline_error());
        }
        let left = deadline.map_or(Duration::MAX, |d| d - now);
        std::thread::sleep(left.min(Duration::from_millis(2)));
    }
}

/// `flags` for a unit of a plan of `kernel_bytes` of kernel text: `-O1` for `-O3` above
/// `cheap_bytes`, and without `-shared` (and with `-c`) when it is compiled to an object.
fn unit_flags(
    flags: &[&'static str],
    kernel_bytes: usize,
    cheap_bytes: usize,
    object: bool,
) -> Vec<&'static str> {
    let mut out: Vec<&'static str> = flags
        .iter()
        .filter(|f| !(object && **f == "-shared"))
        .map(|f| if *f == "-O3" && kernel_bytes > cheap_bytes { "-O1" } else { *f })
        .collect();
    if object {
        out.push("-c");
    }
    out
}

/// Compiles `source` with `cc` and `flags` (those of a shared object: `-shared`, `-fPIC`)
/// into the shared object `so` (replaced only when the build succeeds), its temporary files
/// in `dir` (removed whatever happens), under `opts`' deadline and split.
pub(crate) fn build(
    cc: &str,
    flags: &[&'static str],
    source: &str,
    so: &Path,
    dir: &Path,
    opts: &Options,
) -> Result<(), String> {
    if opts.deadline.is_some_and(|d| Instant::now() >= d) {
        return Err(deadline_error());
    }
    let stem = format!("eqbuild-{}-{}", std::process::id(), unique());
    let mut temps = Temps::new(dir);
    let tmp_so = temps.path(dir, format!("{stem}.so"));
    let pieces = eqfuse_codegen::c::split(source, opts.piece_bytes);
    let prelude = source.find("\n// ---- kernel k").unwrap_or(source.len());
    // the optimisation level follows the whole plan's size: its compile time is the sum
    let kernel_bytes = source.len() - prelude;
    let write = |path: &Path, text: &str| {
        std::fs::write(path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))
    };
    if let [one] = pieces.as_slice() {
        let c = temps.path(dir, format!("{stem}.c"));
        let messages = temps.path(dir, format!("{stem}.err"));
        write(&c, one)?;
        let mut cmd = Command::new(cc);
        cmd.args(unit_flags(flags, kernel_bytes, opts.cheap_bytes, false));
        cmd.arg("-o").arg(&tmp_so).arg(&c).arg("-lm");
        run_all(cc, vec![(cmd, messages)], 1, opts.deadline)?;
    } else {
        let mut cmds = Vec::new();
        let mut objects = Vec::new();
        for (i, piece) in pieces.iter().enumerate() {
            let c = temps.path(dir, format!("{stem}.{i}.c"));
            let o = temps.path(dir, format!("{stem}.{i}.o"));
            let messages = temps.path(dir, format!("{stem}.{i}.err"));
            write(&c, piece)?;
            let mut cmd = Command::new(cc);
            cmd.args(unit_flags(flags, kernel_bytes, opts.cheap_bytes, true));
            cmd.arg("-o").arg(&o).arg(&c);
            cmds.push((cmd, messages));
            objects.push(o);
        }
        run_all(cc, cmds, opts.jobs, opts.deadline)?;
        let messages = temps.path(dir, format!("{stem}.link.err"));
        let mut link = Command::new(cc);
        link.args(["-shared", "-fPIC"]).arg("-o").arg(&tmp_so).args(&objects).arg("-lm");
        run_all(cc, vec![(link, messages)], 1, opts.deadline)?;
    }
    std::fs::rename(&tmp_so, so).map_err(|e| format!("cannot move the compiled plan into place: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    /// A fresh, empty directory under the system's temporary directory.
    fn fresh_dir(what: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!(
            "eqfuse-build-{what}-{}-{}",
            std::process::id(),
            super::unique()
        ));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).expect("a temporary directory");
        d
    }

    /// The processes of group `pgid` that are not zombies.
    fn live_in_group(pgid: i32) -> Vec<i32> {
        let mut out = Vec::new();
        for e in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
            let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else { continue };
            let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else { continue };
            // after the command's name in parentheses: state, ppid, pgrp
            let Some((_, rest)) = stat.rsplit_once(')') else { continue };
            let f: Vec<&str> = rest.split_whitespace().collect();
            if f.len() > 2 && f[0] != "Z" && f[2].parse::<i32>() == Ok(pgid) {
                out.push(pid);
            }
        }
        out
    }

    #[test]
    fn a_compiler_past_the_deadline_is_killed_with_its_group_and_leaves_no_file() {
        let home = fresh_dir("slow-cc");
        let work = fresh_dir("slow-work");
        let pidfile = home.join("pid");
        let script = home.join("cc.sh");
        // writes its output, starts a child in its group, and sleeps
        let text = format!(
            "#!/bin/sh\nprev=\nfor a in \"$@\"; do if [ \"$prev\" = -o ]; then echo partial > \"$a\"; fi; prev=$a; done\n\
             echo $$ > {}\nsleep 30 &\nsleep 30\n",
            pidfile.display()
        );
        std::fs::write(&script, text).expect("the script");
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        let t0 = Instant::now();
        let opts = Options::new(Some(t0 + Duration::from_millis(300)));
        let so = work.join("out.so");
        let r =
            build(script.to_str().unwrap_or_default(), &["-O3", "-shared"], "int x;\n", &so, &work, &opts);
        let took = t0.elapsed();
        let err = r.expect_err("the deadline stops it");
        assert!(err.starts_with(DEADLINE), "{err}");
        // the script sleeps 30 s: a bound far from both, for a loaded machine
        assert!(took < Duration::from_secs(5), "returned after {took:?}");
        let pgid: i32 = std::fs::read_to_string(&pidfile).unwrap_or_default().trim().parse().unwrap_or(0);
        assert!(pgid > 1, "the script ran");
        // SIGKILL lands asynchronously: a moment for the group's last member to die
        let t1 = Instant::now();
        while !live_in_group(pgid).is_empty() && t1.elapsed() < Duration::from_secs(2) {
            std::thread::sleep(Duration::from_millis(20));
        }
        assert_eq!(live_in_group(pgid), Vec::<i32>::new(), "the group is gone");
        let left: Vec<_> =
            std::fs::read_dir(&work).into_iter().flatten().flatten().map(|e| e.path()).collect();
        assert!(left.is_empty(), "left behind: {left:?}");
        let _ = std::fs::remove_dir_all(&home);
        let _ = std::fs::remove_dir_all(&work);
    }

    #[test]
    fn a_deadline_already_past_starts_no_compiler() {
        let work = fresh_dir("past");
        let opts = Options::new(Some(Instant::now()));
        let r = build("/nonexistent/eqfuse-cc", &["-O3"], "int x;\n", &work.join("a.so"), &work, &opts);
        assert!(r.is_err_and(|e| e.starts_with(DEADLINE)));
        let _ = std::fs::remove_dir_all(&work);
    }

    #[test]
    fn a_failing_compiler_is_an_error_with_its_messages_and_leaves_no_file() {
        let work = fresh_dir("fail");
        let opts = Options::new(None);
        let r = build(
            &crate::native::compiler(),
            crate::native::FLAGS,
            "int x = ;\n",
            &work.join("a.so"),
            &work,
            &opts,
        );
        let err = r.expect_err("a syntax error");
        assert!(err.contains("failed on the generated C"), "{err}");
        let left: Vec<_> =
            std::fs::read_dir(&work).into_iter().flatten().flatten().map(|e| e.path()).collect();
        assert!(left.is_empty(), "left behind: {left:?}");
        let _ = std::fs::remove_dir_all(&work);
    }

    /// A plan of several kernels of every skeleton (maps, reductions, a scan, a filter, a
    /// permute, a gather).
    const MANY_KERNELS: &str = "input x : f64[n]\ninput ix : i64[m]\ninput bins : i64[k]\n\
        output a = map (\\v -> v * 3.0 + 1.0) x\n\
        output s = reduce (+) 0 (map (\\v -> v * v) x)\n\
        output c = scan (+) 0 x\n\
        output f = filter (\\v -> v > 0.5) x\n\
        output g = gather (map (\\v -> sin v) x) ix\n\
        output h = permute (+) (fill [16] 0) (\\i -> bins[i]) (fill [k] 1)\n";

    /// `plan`'s native code built with `piece_bytes` of kernel text per unit: the units
    /// there were, and the loaded plan.
    fn built(plan: &eqfuse_ir::plan::Plan, piece_bytes: usize) -> (usize, crate::native::Prepared) {
        let code = eqfuse_codegen::c::generate(plan);
        let units = eqfuse_codegen::c::split(&code.source, piece_bytes).len();
        let work = fresh_dir("pieces");
        let so = work.join("plan.so");
        let opts = Options { piece_bytes, ..Options::new(None) };
        let r = build(&crate::native::compiler(), crate::native::FLAGS, &code.source, &so, &work, &opts);
        assert_eq!(r, Ok(()));
        let module = crate::native::ffi::Module::load(&so, &code.kernels).expect("the plan loads");
        let _ = std::fs::remove_dir_all(&work);
        let entries = module.entries(&code.kernels);
        (units, crate::native::Prepared { _module: std::sync::Arc::new(module), entries })
    }

    #[test]
    fn a_plan_compiled_in_pieces_gives_the_results_of_one_piece() {
        use eqfuse_ir::value::Value;
        let checked =
            eqfuse_ir::check::check(&eqfuse_ir::parse::parse(MANY_KERNELS).expect("parses")).expect("checks");
        let plan = eqfuse_optimize::optimize(&checked, &Default::default()).expect("optimises").plan;
        let n = 5000;
        // quarters: every sum is exact, whatever the order
        let x: Vec<f64> = (0..n).map(|i| ((i * 37) % 101) as f64 / 4.0).collect();
        let ix: Vec<i64> = (0..300).map(|i| (i * 7) % n as i64).collect();
        let bins: Vec<i64> = (0..700).map(|i| (i * 5) % 16).collect();
        let mut inputs = indexmap::IndexMap::new();
        inputs.insert("x".to_string(), Value::from(ndarray::Array1::from(x).into_dyn()));
        inputs.insert("ix".to_string(), Value::from(ndarray::Array1::from(ix).into_dyn()));
        inputs.insert("bins".to_string(), Value::from(ndarray::Array1::from(bins).into_dyn()));
        let bound = eqfuse_ir::bind::bind_inputs(&checked, &inputs, &eqfuse_ir::Limits::default())
            .expect("the inputs bind");
        let opts = crate::RunOptions { threads: 2, block_size: 512, ..crate::RunOptions::default() };
        let (one, whole) = built(&plan, usize::MAX);
        let (units, pieces) = built(&plan, 1);
        assert_eq!(one, 1);
        let native = pieces.entries.iter().filter(|e| e.is_some()).count();
        assert!(native >= 4 && units == native, "{units} units, {native} native kernels\n{plan}");
        let run = |p: crate::native::Prepared| {
            crate::run_native(&plan, Some(std::sync::Arc::new(p)), &inputs, &bound.sizes, &opts, &opts.cancel)
                .expect("runs")
        };
        let (a, b) = (run(whole), run(pieces));
        let vm = crate::run(
            &plan,
            &inputs,
            &bound.sizes,
            &crate::RunOptions { codegen: crate::Codegen::Vm, ..opts.clone() },
        )
        .expect("runs on the VM");
        assert_eq!(a.keys().count(), 6);
        for (name, v) in &a {
            assert!(
                eqfuse_ir::testgen::identical(v, &b[name]),
                "`{name}`: one unit {v:?}, pieces {:?}",
                b[name]
            );
            assert!(eqfuse_ir::testgen::identical(v, &vm[name]), "`{name}`: native {v:?}, VM {:?}", vm[name]);
        }
    }

    #[test]
    fn units_above_the_size_drop_to_o1_and_objects_are_not_shared() {
        let f = unit_flags(&["-O3", "-shared", "-fPIC"], 10, 5, true);
        assert_eq!(f, vec!["-O1", "-fPIC", "-c"]);
        assert_eq!(unit_flags(&["-O3", "-shared"], 5, 5, false), vec!["-O3", "-shared"]);
    }
}
