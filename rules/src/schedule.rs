//! The rule scheduler of the phases: egg's exponential backoff, with a match limit that
//! grows with the e-graph.
//!
//! egg's `BackoffScheduler` bans a rule for a few iterations when one search matches more
//! than its limit (then doubles both): that keeps explosive rules (associativity) from
//! taking the run over. A fixed limit also bans a rule that simply matches once per
//! operation of a long program, and every ban costs whole iterations later (the scheduler
//! does not let the run stop while a rule is banned, and each iteration searches every rule
//! and re-applies the node rules everywhere). Here the limit is the larger of the fixed
//! one and [`PER_NODE`] matches per e-node of the e-graph being searched: for an e-graph of
//! up to `limit / PER_NODE` nodes it is egg's scheduler exactly.

use egg::{Analysis, EGraph, Language, Rewrite, RewriteScheduler, SearchMatches, Symbol};
use std::collections::HashMap;

/// Matches per e-node a search may find before its rule is banned.
pub const PER_NODE: usize = 2;

/// What the scheduler keeps about one rule.
#[derive(Clone, Debug, Default)]
struct RuleStats {
    banned_until: usize,
    times_banned: u32,
    never_ban: bool,
}

/// Exponential backoff with a match limit that grows with the e-graph (see the module
/// docs).
#[derive(Clone, Debug)]
pub struct SizedBackoff {
    match_limit: usize,
    ban_length: usize,
    stats: HashMap<Symbol, RuleStats>,
}

impl SizedBackoff {
    /// A scheduler banning a rule for `ban_length` iterations (doubling) when a search
    /// matches more than `match_limit` (doubling) or [`PER_NODE`] per e-node.
    pub fn new(match_limit: usize, ban_length: usize) -> SizedBackoff {
        SizedBackoff { match_limit, ban_length, stats: HashMap::new() }
    }

    /// Never ban rule `name`.
    pub fn do_not_ban(mut self, name: Symbol) -> SizedBackoff {
        self.stats.entry(name).or_default().never_ban = true;
        self
    }
}

impl<L: Language, N: Analysis<L>> RewriteScheduler<L, N> for SizedBackoff {
    fn can_stop(&mut self, iteration: usize) -> bool {
        // as egg's: with rules banned, fast-forward to the first unban and go on
        let Some(min_ban) =
            self.stats.values().filter(|s| s.banned_until > iteration).map(|s| s.banned_until).min()
        else {
            return true;
        };
        let delta = min_ban - iteration;
        for s in self.stats.values_mut().filter(|s| s.banned_until > iteration) {
            s.banned_until -= delta;
        }
        false
    }

    fn search_rewrite<'a>(
        &mut self,
        iteration: usize,
        egraph: &EGraph<L, N>,
        rewrite: &'a Rewrite<L, N>,
    ) -> Vec<SearchMatches<'a, L>> {
        let stats = self.stats.entry(rewrite.name).or_default();
        if iteration < stats.banned_until {
            return Vec::new();
        }
        if stats.never_ban {
            return rewrite.search(egraph);
        }
        let base = self.match_limit.max(PER_NODE.saturating_mul(egraph.total_number_of_nodes()));
        let threshold = base.saturating_mul(1usize.checked_shl(stats.times_banned).unwrap_or(usize::MAX));
        let matches = rewrite.search_with_limit(egraph, threshold.saturating_add(1));
        let total: usize = matches.iter().map(|m| m.substs.len()).sum();
        if total > threshold {
            let length =
                self.ban_length.saturating_mul(1usize.checked_shl(stats.times_banned).unwrap_or(usize::MAX));
            stats.times_banned += 1;
            stats.banned_until = iteration.saturating_add(length);
            return Vec::new();
        }
        matches
    }
}
