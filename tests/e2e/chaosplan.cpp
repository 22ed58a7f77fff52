// make_chaos_plan (chaosplan.h): one std::mt19937_64 stream, drawn in a fixed order, so a seed replays the plan.
#include "chaosplan.h"

#include <algorithm>
#include <random>
#include <sstream>

namespace traindeck::test {

const char* target_name(ChaosTarget target) {
    switch (target) {
    case ChaosTarget::trainer:
        return "trainer";
    case ChaosTarget::worker:
        return "worker";
    case ChaosTarget::console:
        return "console";
    }
    return "?";
}

int ChaosPlan::count(ChaosTarget target) const {
    return static_cast<int>(
        std::count_if(kills.begin(), kills.end(), [&](const ChaosKill& k) { return k.target == target; }));
}

std::string ChaosPlan::describe() const {
    std::ostringstream out;
    for (size_t i = 0; i < kills.size(); ++i) {
        const ChaosKill& k = kills[i];
        out << (i ? ", " : "") << target_name(k.target) << "@" << k.trigger_step;
        if (k.gate_step != k.trigger_step)
            out << ".." << k.gate_step;
        if (k.resume_step >= 0)
            out << "(ckpt " << k.resume_step << ")";
    }
    return out.str();
}

ChaosPlan make_chaos_plan(uint64_t seed, long total_steps, long steps_per_epoch, long checkpoint_every, int kills,
                          int min_each, long tail) {
    ChaosPlan plan;
    plan.seed = seed;
    if (kills < 3 * min_each || checkpoint_every < 2 || steps_per_epoch < 1) {
        plan.error = "a plan needs at least 3 × min_each kills and checkpoints at least 2 steps apart";
        return plan;
    }
    std::mt19937_64 rng(seed);
    auto uniform = [&](long low, long high) { return std::uniform_int_distribution<long>(low, high)(rng); };

    std::vector<ChaosTarget> targets;
    for (ChaosTarget t : {ChaosTarget::trainer, ChaosTarget::worker, ChaosTarget::console})
        targets.insert(targets.end(), min_each, t);
    while (static_cast<int>(targets.size()) < kills)
        targets.push_back(static_cast<ChaosTarget>(uniform(0, 2)));
    std::shuffle(targets.begin(), targets.end(), rng);

    // The kills spread over the whole job, the epoch end and the second epoch included: kill i lands in the i-th
    // of `kills` equal stretches of steps, so each is done (and its gate released) before the next one's stretch.
    const long first = 3, last = total_steps - tail; // a few steps in: the job is surely training by then
    const long stretch = (last - first + 1) / kills;
    if (stretch < 3 * checkpoint_every) {
        std::ostringstream why;
        why << kills << " kills need " << 3 * checkpoint_every << " steps each, the job has " << total_steps
            << " in all; train on more samples";
        plan.error = why.str();
        return plan;
    }
    bool between_drawn = false;
    for (int i = 0; i < kills; ++i) {
        const long low = first + i * stretch, high = low + stretch - 1;
        ChaosKill kill;
        kill.target = targets[i];
        // The first trainer kill always lands between checkpoints; the others do so half the time.
        const bool between = kill.target == ChaosTarget::trainer && (!between_drawn || uniform(0, 1) == 1);
        // A checkpoint interval (c, c + every) inside the stretch with no epoch end in it (a checkpoint is written
        // at every multiple of checkpoint_every and at every epoch end). Three intervals fit in every stretch and an
        // epoch end rules out one at most, so there is always a choice.
        std::vector<long> candidates;
        if (between) {
            for (long c = (low - 1 + checkpoint_every - 1) / checkpoint_every * checkpoint_every;
                 c + checkpoint_every - 1 <= high; c += checkpoint_every) {
                bool epoch_end_inside = false;
                for (long end = steps_per_epoch; end < c + checkpoint_every; end += steps_per_epoch)
                    epoch_end_inside |= end > c;
                if (!epoch_end_inside)
                    candidates.push_back(c);
            }
        }
        if (!candidates.empty()) {
            const long checkpoint =
                candidates[static_cast<size_t>(uniform(0, static_cast<long>(candidates.size()) - 1))];
            between_drawn = true;
            kill.resume_step = checkpoint;
            kill.trigger_step = checkpoint + uniform(1, checkpoint_every - 1);
            kill.gate_step = kill.trigger_step + uniform(0, checkpoint + checkpoint_every - 1 - kill.trigger_step);
        } else {
            kill.trigger_step = uniform(low, high);
            kill.gate_step = kill.trigger_step + uniform(0, std::min(8L, high - kill.trigger_step));
        }
        kill.jitter_us = static_cast<int>(uniform(0, 20000));
        plan.kills.push_back(kill);
    }
    return plan;
}

} // namespace traindeck::test
