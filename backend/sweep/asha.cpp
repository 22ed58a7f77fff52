// ASHA's rungs and its promotion rule (Li et al. 2020, Algorithm 2), over a snapshot of the trials: no clock, no
// database, so a restarted controller decides exactly what it would have.
//
// Edge cases, decided here once:
//  - rungs: min × eta^k for k = 0, 1, … while below max, then max itself, so (1, 9, 3) is {1, 3, 9} and (1, 10, 3)
//    is {1, 3, 9, 10}: the last rung is always the full budget, even when it is only a little above the one before.
//    A product within a part in 10^9 of max counts as max (0.1 × 3 × 3 is 0.9000000000000001, not a rung of its
//    own below 0.9). Inputs parse_sweep_spec refuses (min <= 0, min >= max, eta <= 1, anything not finite) give
//    {max}: one rung, no early stopping. At most 64 rungs below max, which parse_sweep_spec enforces too.
//  - who counts at rung k: every trial that completed it (objectives.size() > k) and is not stopped. A stopped
//    trial leaves the rung altogether: it does not count in n, so it cannot earn another a place, and it takes no
//    place in the top, so a crashed trial does not hold back the one behind it.
//  - the top: floor(n / eta) of them (a division is correctly rounded, so 6 / 3 is exactly 2), best first by
//    objectives[k]; a NaN objective ranks below every number; ties go to the lower trial index, so the order is
//    total and the same on every restart. Fewer than eta trials at a rung: nobody is in its top yet.
//  - promotable: in the top and paused at k (rung == k and objectives.size() == k + 1). A trial already promoted
//    from k (rung > k), or still running towards k (objectives.size() == k), is not; neither is a trial whose
//    record is inconsistent (rung below its completed rungs).
//  - highest rung first, from the second-to-last down to 0: a trial that completed the last rung is finished and
//    never promoted. Fewer than two rungs: nothing is ever promoted.
#include "asha.h"

#include <algorithm>
#include <cmath>

namespace traindeck::sweep {

namespace {

constexpr size_t kMaxRungsBelowMax = 64; // as parse_sweep_spec refuses more

} // namespace

std::vector<double> asha_rungs(double min_resource, double max_resource, double reduction_factor) {
    std::vector<double> rungs;
    if (std::isfinite(min_resource) && std::isfinite(max_resource) && std::isfinite(reduction_factor) &&
        min_resource > 0 && min_resource < max_resource && reduction_factor > 1)
        for (double resource = min_resource; resource < max_resource * (1 - 1e-9) && rungs.size() < kMaxRungsBelowMax;
             resource *= reduction_factor)
            rungs.push_back(resource);
    rungs.push_back(max_resource);
    return rungs;
}

Promotion asha_promotion(const std::vector<RungTrial>& trials, size_t rung_count, double reduction_factor,
                         bool maximize) {
    if (rung_count < 2 || !(reduction_factor > 1))
        return {};
    for (size_t k = rung_count - 1; k-- > 0;) {
        std::vector<const RungTrial*> completed;
        for (const RungTrial& trial : trials)
            if (!trial.stopped && trial.objectives.size() > k)
                completed.push_back(&trial);
        const auto top = static_cast<size_t>(std::floor(static_cast<double>(completed.size()) / reduction_factor));
        if (top == 0)
            continue;
        // Best first; NaN last; then the lower trial index.
        std::sort(completed.begin(), completed.end(), [k, maximize](const RungTrial* a, const RungTrial* b) {
            const double x = a->objectives[k], y = b->objectives[k];
            if (std::isnan(x) != std::isnan(y))
                return std::isnan(y);
            if (!std::isnan(x) && x != y)
                return maximize ? x > y : x < y;
            return a->trial < b->trial;
        });
        for (size_t i = 0; i < top; ++i) {
            const RungTrial& trial = *completed[i];
            if (trial.rung == static_cast<int>(k) && trial.objectives.size() == k + 1)
                return {trial.trial, static_cast<int>(k + 1)};
        }
    }
    return {};
}

} // namespace traindeck::sweep
