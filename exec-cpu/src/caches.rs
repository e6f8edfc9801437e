//! The size of the cache one core has to itself, as the operating system reports it.
//!
//! A row block ([`crate::native`]'s `rowblock.rs`) sizes its blocks of rows to stay in this
//! cache, and `eqfuse calibrate` stores it for the cost model, which prices a row block's
//! later phases as reads from cache only when its rows fit. On Linux the kernel lists each
//! cache of a CPU under `/sys/devices/system/cpu/cpu0/cache/index*/` with its level, type,
//! size and the CPUs that share it: the answer is the largest data (or unified) cache that
//! one CPU does not share (the L2 on current x86 parts; the L3 is shared). Timing reads over
//! growing working sets finds the same knee, but on a small shared machine the measurement
//! is noisy where the OS's figure is exact, so it is read, not timed. Elsewhere, or when
//! the files are missing or odd: `None`, and callers keep their defaults.

use std::sync::OnceLock;

/// Bytes of the largest cache private to one core, when the system says (read once).
pub fn private_cache_bytes() -> Option<usize> {
    static SIZE: OnceLock<Option<usize>> = OnceLock::new();
    *SIZE.get_or_init(|| read_private_cache(std::path::Path::new("/sys/devices/system/cpu/cpu0/cache")))
}

/// [`private_cache_bytes`] from the directory `dir` (one `index*` folder per cache).
pub fn read_private_cache(dir: &std::path::Path) -> Option<usize> {
    let read = |p: std::path::PathBuf| std::fs::read_to_string(p).ok().map(|s| s.trim().to_string());
    let mut best: Option<(u32, usize)> = None;
    for entry in std::fs::read_dir(dir).ok()?.flatten() {
        let d = entry.path();
        if !d.file_name().is_some_and(|n| n.to_string_lossy().starts_with("index")) {
            continue;
        }
        let (Some(level), Some(ty), Some(size), Some(shared)) = (
            read(d.join("level")).and_then(|l| l.parse::<u32>().ok()),
            read(d.join("type")),
            read(d.join("size")).and_then(|s| parse_size(&s)),
            read(d.join("shared_cpu_list")),
        ) else {
            continue;
        };
        // one CPU in the list ("3"): not "0-1" nor "0,8"
        let private = !shared.contains(['-', ',']);
        if private && ty != "Instruction" && best.is_none_or(|(l, _)| level > l) {
            best = Some((level, size));
        }
    }
    best.map(|(_, s)| s)
}

/// `512K`, `32768K`, `2M`, `1048576` as bytes.
fn parse_size(s: &str) -> Option<usize> {
    let (num, mul) = match s.as_bytes().last()? {
        b'K' | b'k' => (&s[..s.len() - 1], 1usize << 10),
        b'M' | b'm' => (&s[..s.len() - 1], 1 << 20),
        b'G' | b'g' => (&s[..s.len() - 1], 1 << 30),
        _ => (s, 1),
    };
    num.parse::<usize>().ok()?.checked_mul(mul).filter(|&b| b > 0)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn cache(dir: &std::path::Path, i: usize, level: &str, ty: &str, size: &str, shared: &str) {
        let d = dir.join(format!("index{i}"));
        std::fs::create_dir_all(&d).unwrap();
        for (f, v) in [("level", level), ("type", ty), ("size", size), ("shared_cpu_list", shared)] {
            std::fs::write(d.join(f), format!("{v}\n")).unwrap();
        }
    }

    #[test]
    fn the_largest_cache_one_cpu_keeps_to_itself() {
        let dir = std::env::temp_dir().join(format!("eqfuse-caches-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        cache(&dir, 0, "1", "Data", "48K", "0");
        cache(&dir, 1, "1", "Instruction", "32K", "0");
        cache(&dir, 2, "2", "Unified", "2048K", "0");
        cache(&dir, 3, "3", "Unified", "32768K", "0-15");
        assert_eq!(read_private_cache(&dir), Some(2 << 20));
        // an L2 shared by two hyperthreads: the L1 is the private one
        cache(&dir, 2, "2", "Unified", "1M", "0,8");
        assert_eq!(read_private_cache(&dir), Some(48 << 10));
        let _ = std::fs::remove_dir_all(&dir);
        assert_eq!(read_private_cache(&dir), None);
        assert_eq!(parse_size("junk"), None);
        assert_eq!(parse_size("0K"), None);
    }
}
