//! The optimiser's phases in the order the driver (`eqfuse-optimize`) runs them
//! ([`PHASES`]), each with its stages, whether it repeats until its term settles, whether it
//! spends the fusion budget and when it is skipped. A stage names no rule: it picks the rules
//! whose table entries name its phase ([`Pick`]), so which rules run where is declared once,
//! in the entries. [`rules_of`] turns a phase's stages into the rewrites a saturation runs.

use crate::phase::Phase;
use crate::rule::Rule;
use crate::Rewrite;

/// Which rules of the catalogue one stage takes, in the catalogue's order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pick {
    /// Every rule whose entry names the phase.
    Named(Phase),
    /// The rules whose entry names the phase and no other.
    Only(Phase),
    /// The rules whose entry names the phase and another one too.
    Shared(Phase),
}

impl Pick {
    /// Whether `rule` is one this pick takes.
    pub fn takes(self, rule: &Rule) -> bool {
        match self {
            Pick::Named(p) => rule.runs_in(p),
            Pick::Only(p) => rule.runs_in(p) && rule.in_phases.len() == 1,
            Pick::Shared(p) => rule.runs_in(p) && rule.in_phases.len() > 1,
        }
    }
}

/// One phase as the driver runs it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PhaseSpec {
    /// The phase.
    pub phase: Phase,
    /// Its stages, run one after the other on one e-graph, each saturating what the one
    /// before left; a stage runs the rules its picks take, in pick order then catalogue
    /// order, each rule once.
    pub stages: &'static [&'static [Pick]],
    /// Whether it repeats, each run from the term the one before extracted, until its term
    /// settles (a run that changes nothing).
    pub repeats: bool,
    /// Whether its rules spend the fusion budget (`--fuse-gas`). Where they do not, a rule
    /// that would spend it runs without it, named `<phase>-<rule>` so its count stays apart.
    pub spends_budget: bool,
    /// Whether it fuses: skipped when fusion is off (`--no-fusion`).
    pub fuses: bool,
    /// Whether the merged variant (`Variant::merge_phases`, which the confluence properties
    /// compare) skips it when fusion is on, a later phase running its rules too.
    pub merged_away: bool,
}

/// The phases, in the order the driver runs them: simplify → fuse (repeated until its term
/// settles) → loops → horizontal. The horizontal phase has two stages: first every map gets
/// its index form and the beta rule finishes it (the rules it shares with the fuse phase),
/// then the kernels are grouped, so the groups do not depend on whether a map was recast
/// before or after the grouping rule fired.
pub const PHASES: [PhaseSpec; 4] = [
    PhaseSpec {
        phase: Phase::Simplify,
        stages: &[&[Pick::Named(Phase::Simplify)]],
        repeats: false,
        spends_budget: true,
        fuses: false,
        merged_away: true,
    },
    PhaseSpec {
        phase: Phase::Fuse,
        stages: &[&[Pick::Named(Phase::Simplify), Pick::Named(Phase::Fuse)]],
        repeats: true,
        spends_budget: true,
        fuses: true,
        merged_away: false,
    },
    PhaseSpec {
        phase: Phase::Loops,
        stages: &[&[Pick::Named(Phase::Loops)]],
        repeats: false,
        spends_budget: true,
        fuses: true,
        merged_away: false,
    },
    PhaseSpec {
        phase: Phase::Horizontal,
        stages: &[
            &[Pick::Shared(Phase::Horizontal)],
            &[Pick::Only(Phase::Horizontal), Pick::Shared(Phase::Horizontal)],
        ],
        repeats: false,
        spends_budget: false,
        fuses: true,
        merged_away: false,
    },
];

/// The phases one optimisation runs: all of [`PHASES`], less those fusion off (`fusion`
/// false) or the merged variant (`merged`) skips.
pub fn run_list(fusion: bool, merged: bool) -> Vec<PhaseSpec> {
    PHASES.iter().filter(|s| if fusion { !(merged && s.merged_away) } else { !s.fuses }).copied().collect()
}

/// The rewrites of each stage of `spec`, taken from `budgeted` (the catalogue with the fusion
/// budget) or, for a phase that does not spend it, from `free` (the catalogue with an
/// unlimited budget), the rules that would spend it renamed `<phase>-<rule>`.
pub fn rules_of(spec: &PhaseSpec, budgeted: &[Rule], free: &[Rule]) -> Vec<Vec<Rewrite>> {
    let table = if spec.spends_budget { budgeted } else { free };
    spec.stages
        .iter()
        .map(|picks| {
            let mut taken: Vec<&Rule> = Vec::new();
            for pick in picks.iter() {
                for r in table.iter().filter(|r| pick.takes(r)) {
                    if !taken.iter().any(|t| t.name() == r.name()) {
                        taken.push(r);
                    }
                }
            }
            taken
                .into_iter()
                .map(|r| {
                    let mut rewrite = r.rewrite.clone();
                    if r.spends_gas && !spec.spends_budget {
                        rewrite.name = format!("{}-{}", spec.phase.as_str(), r.name()).into();
                    }
                    rewrite
                })
                .collect()
        })
        .collect()
}

/// The phases whose stages run `rule` (what its entry should name).
pub fn running(rule: &Rule) -> Vec<Phase> {
    PHASES
        .iter()
        .filter(|s| s.stages.iter().any(|picks| picks.iter().any(|p| p.takes(rule))))
        .map(|s| s.phase)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{catalogue, Gas, RuleSets};

    fn names(v: &[Rewrite]) -> Vec<String> {
        v.iter().map(|r| r.name.to_string()).collect()
    }

    #[test]
    fn every_rule_runs_in_exactly_the_phases_its_entry_names() {
        for r in catalogue::listed() {
            assert!(!r.in_phases.is_empty(), "{} names no phase", r.name());
            assert_eq!(running(&r), r.in_phases, "{}", r.name());
        }
    }

    #[test]
    fn the_horizontal_phase_first_recasts_maps_without_the_budget_then_groups() {
        let sets = RuleSets { fast_math: false };
        let budgeted = catalogue::table(sets, &Gas::limited(0));
        let free = catalogue::table(sets, &Gas::unlimited());
        let horizontal = PHASES.iter().find(|s| s.phase == Phase::Horizontal).expect("a horizontal phase");
        let stages = rules_of(horizontal, &budgeted, &free);
        assert_eq!(stages.len(), 2);
        assert_eq!(names(&stages[0]), ["horizontal-recast-map", "fuse-beta"]);
        let grouping: Vec<String> = crate::horizontal::rules().iter().map(|r| r.name.to_string()).collect();
        assert_eq!(names(&stages[1]), [grouping, names(&stages[0])].concat());
    }

    #[test]
    fn the_fuse_phase_runs_the_simplification_rules_first_then_fusion() {
        let sets = RuleSets { fast_math: true };
        let gas = Gas::unlimited();
        let table = catalogue::table(sets, &gas);
        let fuse = PHASES.iter().find(|s| s.phase == Phase::Fuse).expect("a fuse phase");
        let simplify = PHASES.iter().find(|s| s.phase == Phase::Simplify).expect("a simplify phase");
        let [fuse_rules] = rules_of(fuse, &table, &table).try_into().expect("one stage");
        let [simplify_rules] = rules_of(simplify, &table, &table).try_into().expect("one stage");
        let of = |t: Vec<crate::rule::Rule>| t.into_iter().map(|r| r.name().to_string()).collect::<Vec<_>>();
        let mut want = names(&crate::scalar::rules());
        want.extend(names(&crate::index::rules()));
        want.extend(of(crate::selects::table()));
        want.extend(names(&crate::fast_math::rules()));
        assert_eq!(names(&simplify_rules), want);
        want.extend(names(&crate::fusion::rules(&gas)));
        want.extend(of(crate::filters::table(&gas)));
        want.extend(of(crate::scans::table(&gas)));
        want.extend(of(crate::hoist::table(&gas)));
        assert_eq!(names(&fuse_rules), want);
    }

    #[test]
    fn the_run_list_follows_fusion_and_the_merged_variant() {
        let of =
            |fusion, merged| run_list(fusion, merged).iter().map(|s| s.phase.as_str()).collect::<Vec<_>>();
        assert_eq!(of(true, false), ["simplify", "fuse", "loops", "horizontal"]);
        assert_eq!(of(true, true), ["fuse", "loops", "horizontal"]);
        assert_eq!(of(false, false), ["simplify"]);
        assert_eq!(of(false, true), ["simplify"]);
    }
}
