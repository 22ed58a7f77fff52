#pragma once
// Asynchronous successive halving (Li et al. 2020, "A System for Massively Parallel Hyperparameter Tuning",
// Algorithm 2), as pure functions over the trials' rung results, so the controller keeps its state in its
// database and a restart decides the same. A trial trains to its rung's resource, reports its objective there and
// pauses (checkpointed); when a slot is free, get_job promotes the best not-yet-promoted trial of the highest rung
// whose top 1/eta it is in, else a new trial starts at rung 0. Plain C++.
#include <cstddef>
#include <vector>

namespace traindeck::sweep {

// The rungs' resources: min × eta^k for k = 0, 1, … while below max, then max itself (the last rung): (1, 9, 3) is
// {1, 3, 9}, (1, 10, 3) is {1, 3, 9, 10}. asha.cpp says what counts as "below" and what bad inputs give.
std::vector<double> asha_rungs(double min_resource, double max_resource, double reduction_factor);

struct RungTrial {
    int trial = 0;
    std::vector<double> objectives; // its objective at each rung it completed (rung 0 first)
    int rung = 0;                   // the rung it trains towards now (promoted to); == objectives.size() while it runs
    bool stopped = false;           // diverged, failed or cancelled: never promoted
};

struct Promotion {
    int trial = -1; // -1: no promotion, start a new trial
    int rung = 0;   // the rung the trial is promoted to
};

// Algorithm 2's get_job: for the highest rung first, the best trial (by objective) among the top
// floor(n / eta) of the n trials that completed that rung, not yet promoted from it and not stopped. Stopped
// trials, ties, NaN objectives and running trials: asha.cpp's first comment.
Promotion asha_promotion(const std::vector<RungTrial>& trials, size_t rung_count, double reduction_factor,
                         bool maximize);

} // namespace traindeck::sweep
