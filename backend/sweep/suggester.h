#pragma once
// The next configuration of a sweep: grid (each configuration once, in order), random (never the same one twice),
// or TPE (Bergstra et al. 2011: observations split at the gamma quantile of the objective into good and bad; a Parzen
// estimator of each; the candidate with the best ratio l(x)/g(x) of those drawn from l). A pure function of the spec,
// the trial's index and the history: a worker that restarts suggests exactly what it would have. Plain C++.
#include "sweepspec.h"

#include <optional>
#include <vector>

namespace traindeck::sweep {

struct Observation {
    Params params;
    double objective = 0; // the trial's best so far at the highest rung it reached; NaN while it has none
};

// The configuration of trial `index` (0-based) given every earlier trial; nullopt when the method has no more (a
// grid or a finite space exhausted). Random and TPE draw from a generator seeded by (spec.seed, index).
std::optional<Params> suggest(const SweepSpec& spec, int index, const std::vector<Observation>& history);

} // namespace traindeck::sweep
