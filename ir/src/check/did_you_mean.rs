//! "Did you mean" for a misspelt name: the nearest name in scope or builtin by edit distance.

/// The Levenshtein distance between `a` and `b` (characters), or `None` once it exceeds
/// `cap` (long names are never compared in full).
fn distance(a: &str, b: &str, cap: usize) -> Option<usize> {
    let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    if a.len().abs_diff(b.len()) > cap || a.len() > 64 || b.len() > 64 {
        return None;
    }
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.iter().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            let sub = prev[j] + usize::from(ca != cb);
            cur[j + 1] = sub.min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        if cur.iter().min().copied().unwrap_or(0) > cap {
            return None;
        }
        prev = cur;
    }
    prev.last().copied().filter(|d| *d <= cap)
}

/// The candidate nearest to `name`: within 1 edit for names of up to 4 characters, 2
/// otherwise; among equally near ones, one that starts as `name` does, then the first
/// (names in scope come before builtins).
pub(crate) fn nearest<'a>(name: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let cap = if name.chars().count() <= 4 { 1 } else { 2 };
    let first = name.chars().next();
    let mut best: Option<((usize, bool), &str)> = None;
    for c in candidates {
        if c == name {
            continue;
        }
        if let Some(d) = distance(name, c, cap) {
            let key = (d, c.chars().next() != first);
            if best.is_none_or(|(bk, _)| key < bk) {
                best = Some((key, c));
            }
        }
    }
    best.map(|(_, c)| c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_names() {
        assert_eq!(nearest("ys", ["xs", "yss"]), Some("yss"));
        assert_eq!(nearest("ys", ["xs"]), Some("xs"));
        assert_eq!(nearest("mapp", ["map", "maps"]), Some("map"));
        assert_eq!(nearest("reduse", ["reduce", "reverse"]), Some("reduce"));
        assert_eq!(nearest("zzzz", ["map"]), None);
        assert_eq!(distance("kitten", "sitting", 5), Some(3));
    }
}
