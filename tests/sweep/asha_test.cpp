// ASHA's rungs and promotions against decisions worked out by hand: a scripted sweep of nine trials reporting out of
// order, stopped trials, ties and NaN, the highest rung first, and both directions.
#include "asha.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

using namespace traindeck::sweep;

namespace {

// The trials of a sweep with rungs {1, 3, 9} (eta 3), as a controller would keep them.
class Ladder {
public:
    explicit Ladder(bool maximize) : maximize_(maximize) {}

    void start() { trials_.push_back({static_cast<int>(trials_.size()), {}, 0, false}); }
    // The objective at the trial's current rung; minimising, the script's numbers are turned round so that the same
    // trials are the good ones.
    void report(int trial, double objective) {
        trials_[trial].objectives.push_back(maximize_ ? objective : -objective);
    }
    void stop(int trial) { trials_[trial].stopped = true; }
    // A free slot: what asha_promotion says, carried out as the controller would (the trial resumes at the rung).
    Promotion free_slot() {
        const Promotion promotion = asha_promotion(trials_, 3, 3, maximize_);
        if (promotion.trial >= 0)
            trials_[promotion.trial].rung = promotion.rung;
        return promotion;
    }

private:
    bool maximize_;
    std::vector<RungTrial> trials_;
};

void expect_promotion(const Promotion& promotion, int trial, int rung, const char* when) {
    EXPECT_EQ(promotion.trial, trial) << when;
    EXPECT_EQ(promotion.rung, rung) << when;
}

void expect_none(const Promotion& promotion, const char* when) { expect_promotion(promotion, -1, 0, when); }

// Two slots, nine trials; each line's comment is the decision worked out by hand. n_k is how many completed rung k,
// the top is the first floor(n_k / 3) of them by objective.
void run_script(bool maximize) {
    Ladder s(maximize);
    expect_none(s.free_slot(), "nothing yet: start trial 0");
    s.start();
    expect_none(s.free_slot(), "trial 0 is running, nothing completed: start trial 1");
    s.start();
    s.report(1, 0.70);
    expect_none(s.free_slot(), "n0 = 1, top 0: start trial 2");
    s.start();
    s.report(0, 0.50);
    expect_none(s.free_slot(), "n0 = 2, top 0: start trial 3");
    s.start();
    s.report(2, 0.60);
    expect_promotion(s.free_slot(), 1, 1, "n0 = 3 {1: .70, 2: .60, 0: .50}, top 1 = {1}, paused: promote 1");
    s.report(3, 0.40);
    expect_none(s.free_slot(), "n0 = 4, top 1 = {1}, already promoted: start trial 4");
    s.start();
    s.report(4, 0.80);
    expect_promotion(s.free_slot(), 4, 1, "n0 = 5, top 1 = {4: .80}: promote 4");
    s.report(1, 0.78); // trial 1 at rung 1
    expect_none(s.free_slot(), "n1 = 1, top 0; n0 = 5, top 1 = {4}, promoted: start trial 5");
    s.start();
    s.report(5, 0.55);
    expect_none(s.free_slot(), "n0 = 6, top 2 = {4, 1}, both promoted: start trial 6");
    s.start();
    s.report(6, 0.30);
    expect_none(s.free_slot(), "n0 = 7, top 2 = {4, 1}: start trial 7");
    s.start();
    s.report(4, 0.85); // trial 4 at rung 1
    expect_none(s.free_slot(), "n1 = 2, top 0; n0 = 7, top 2 = {4, 1}: start trial 8");
    s.start();
    s.report(8, 0.75);
    expect_promotion(s.free_slot(), 8, 1,
                     "n0 = 8, top 2 = {4: .80, 8: .75}: promote 8 (1 has left the top, its promotion stands)");
    s.report(7, 0.65);
    expect_none(s.free_slot(), "n1 = 2 (8 still running), top 0; n0 = 9, top 3 = {4, 8, 1}, all promoted");
    s.report(8, 0.80); // trial 8 at rung 1
    expect_promotion(s.free_slot(), 4, 2, "n1 = 3 {4: .85, 8: .80, 1: .78}, top 1 = {4}, paused at 1: promote 4");
    expect_none(s.free_slot(), "the other slot: n1 top {4} running, n0 top {4, 8, 1} promoted: nothing");
    s.report(4, 0.90); // trial 4 at rung 2, the last: finished
    expect_none(s.free_slot(), "trial 4 finished, not promoted again from the last rung: nothing");
}

} // namespace

TEST(AshaRungs, GoFromMinByEtaAndEndAtMax) {
    EXPECT_EQ(asha_rungs(1, 9, 3), (std::vector<double>{1, 3, 9}));
    EXPECT_EQ(asha_rungs(1, 10, 3), (std::vector<double>{1, 3, 9, 10})); // the full budget is always the last rung
    EXPECT_EQ(asha_rungs(2, 100, 4), (std::vector<double>{2, 8, 32, 100}));
    EXPECT_EQ(asha_rungs(1, 2.5, 2), (std::vector<double>{1, 2, 2.5}));
    // 0.1 × 3 × 3 is 0.9000000000000001: that is max, not a rung of its own just below it.
    const std::vector<double> fractional = asha_rungs(0.1, 0.9, 3);
    ASSERT_EQ(fractional.size(), 3u);
    EXPECT_DOUBLE_EQ(fractional[1], 0.3);
    EXPECT_EQ(fractional[2], 0.9);
    // What parse_sweep_spec refuses: one rung, the whole budget, no early stopping.
    EXPECT_EQ(asha_rungs(0, 9, 3), (std::vector<double>{9}));
    EXPECT_EQ(asha_rungs(9, 9, 3), (std::vector<double>{9}));
    EXPECT_EQ(asha_rungs(1, 9, 1), (std::vector<double>{9}));
    EXPECT_EQ(asha_rungs(1, 9, NAN), (std::vector<double>{9}));
    EXPECT_EQ(asha_rungs(1e-9, 1e9, 1.01).size(), 65u); // 64 below max at most, then max
}

TEST(AshaPromotion, MatchesTheHandWorkedScriptMaximising) { run_script(true); }

TEST(AshaPromotion, MatchesTheSameScriptMinimising) { run_script(false); }

TEST(AshaPromotion, AStoppedTrialIsNeverPromotedAndLeavesTheRung) {
    // Trial 0 is the best at rung 0 but diverged. Without it n0 = 3, top 1 = {1}. Had it counted, n0 = 4 with top
    // 1 = {0}, and nothing would move.
    std::vector<RungTrial> trials = {
        {0, {0.9}, 0, true}, {1, {0.5}, 0, false}, {2, {0.4}, 0, false}, {3, {0.3}, 0, false}};
    Promotion promotion = asha_promotion(trials, 3, 3, true);
    EXPECT_EQ(promotion.trial, 1);
    EXPECT_EQ(promotion.rung, 1);
    // Only stopped trials at a rung: nobody to promote.
    for (RungTrial& trial : trials)
        trial.stopped = true;
    EXPECT_EQ(asha_promotion(trials, 3, 3, true).trial, -1);
    // Three at rung 0, the best one stopped: n0 = 2, top 0.
    trials = {{0, {0.9}, 0, true}, {1, {0.5}, 0, false}, {2, {0.4}, 0, false}};
    EXPECT_EQ(asha_promotion(trials, 3, 3, true).trial, -1);
}

TEST(AshaPromotion, TiesGoToTheLowerTrialAndNanRanksLast) {
    // Six at rung 0, top 2. Maximising: 0.7 (trial 4), then 0.5 twice: trial 2 before trial 5.
    std::vector<RungTrial> trials = {{0, {NAN}, 0, false}, {1, {0.1}, 0, false}, {2, {0.5}, 0, false},
                                     {3, {0.2}, 0, false}, {4, {0.7}, 1, false}, {5, {0.5}, 0, false}};
    EXPECT_EQ(asha_promotion(trials, 3, 3, true).trial, 2);
    // Minimising: 0.1 (trial 1), then 0.2 (trial 3); the NaN of trial 0 is not the "lowest".
    EXPECT_EQ(asha_promotion(trials, 3, 3, false).trial, 1);
    trials[1].rung = 1;
    EXPECT_EQ(asha_promotion(trials, 3, 3, false).trial, 3);
    trials[3].rung = 1;
    EXPECT_EQ(asha_promotion(trials, 3, 3, false).trial, -1);
    // Trials listed out of order: the same answer.
    std::vector<RungTrial> shuffled = {{5, {0.5}, 0, false}, {2, {0.5}, 0, false}, {4, {0.7}, 1, false},
                                       {1, {0.1}, 0, false}, {3, {0.2}, 0, false}, {0, {NAN}, 0, false}};
    EXPECT_EQ(asha_promotion(shuffled, 3, 3, true).trial, 2);
}

TEST(AshaPromotion, TheHighestRungComesFirst) {
    // Rung 1: three completed, trial 0 best and paused there. Rung 0: six completed (those three among them), top
    // 2 = {6, 7}, both paused at 0. Rung 1's trial goes first, to rung 2.
    std::vector<RungTrial> trials = {{0, {0.5, 0.9}, 1, false}, {1, {0.5, 0.6}, 1, false}, {2, {0.5, 0.7}, 1, false},
                                     {6, {0.8}, 0, false},      {7, {0.7}, 0, false},      {8, {0.1}, 0, false}};
    Promotion promotion = asha_promotion(trials, 3, 3, true);
    EXPECT_EQ(promotion.trial, 0);
    EXPECT_EQ(promotion.rung, 2);
    trials[0].rung = 2;
    promotion = asha_promotion(trials, 3, 3, true);
    EXPECT_EQ(promotion.trial, 6);
    EXPECT_EQ(promotion.rung, 1);
}

TEST(AshaPromotion, RunningAndFinishedTrialsAreNotCandidates) {
    // Trial 0 was promoted to rung 1 and runs towards it (one objective, rung 1); trial 1 finished the last rung.
    std::vector<RungTrial> trials = {{0, {0.9}, 1, false}, {1, {0.8, 0.8}, 1, false}, {2, {0.1}, 0, false}};
    EXPECT_EQ(asha_promotion(trials, 2, 3, true).trial, -1); // rungs {1, max}: n0 = 3, top {0}, already running
    // Fewer than two rungs, or a reduction factor that halves nothing: no promotions at all.
    trials = {{0, {0.9}, 0, false}, {1, {0.8}, 0, false}, {2, {0.1}, 0, false}};
    EXPECT_EQ(asha_promotion(trials, 2, 3, true).trial, 0);
    EXPECT_EQ(asha_promotion(trials, 1, 3, true).trial, -1);
    EXPECT_EQ(asha_promotion(trials, 0, 3, true).trial, -1);
    EXPECT_EQ(asha_promotion(trials, 2, 1, true).trial, -1);
}
