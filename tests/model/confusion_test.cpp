// The Results view's numbers from a confusion matrix, against counts made directly from labelled predictions.
#include "confusion.h"

#include <gtest/gtest.h>

#include <random>

using namespace traindeck;

TEST(Confusion, ScoresAreThoseCountedDirectlyFromThePredictions) {
    // 2,000 labelled predictions over 5 classes, one class never predicted and one with no samples.
    std::mt19937 random(3);
    const int classes = 5;
    std::vector<std::pair<int, int>> predictions; // (truth, predicted)
    for (int i = 0; i < 2000; ++i) {
        const int truth = static_cast<int>(random() % 4); // class 4 has no samples
        int predicted = random() % 10 < 7 ? truth : static_cast<int>(random() % 4);
        if (predicted == 2)
            predicted = 1; // class 2 is never predicted
        predictions.emplace_back(truth, predicted);
    }
    std::vector<std::vector<int64_t>> matrix(classes, std::vector<int64_t>(classes, 0));
    for (const auto& [truth, predicted] : predictions)
        ++matrix[truth][predicted];

    const ConfusionSummary s = summarize_confusion(matrix, 3);
    EXPECT_EQ(s.total, 2000);
    double f1_sum = 0;
    int counted = 0;
    for (int c = 0; c < classes; ++c) {
        int64_t tp = 0, fp = 0, fn = 0;
        for (const auto& [truth, predicted] : predictions) {
            tp += truth == c && predicted == c;
            fp += truth != c && predicted == c;
            fn += truth == c && predicted != c;
        }
        const double precision = tp + fp ? double(tp) / double(tp + fp) : 0.0;
        const double recall = tp + fn ? double(tp) / double(tp + fn) : 0.0;
        const double f1 = precision + recall > 0 ? 2 * precision * recall / (precision + recall) : 0.0;
        EXPECT_DOUBLE_EQ(s.classes[c].precision, precision) << c;
        EXPECT_DOUBLE_EQ(s.classes[c].recall, recall) << c;
        EXPECT_DOUBLE_EQ(s.classes[c].f1, f1) << c;
        EXPECT_EQ(s.classes[c].support, tp + fn) << c;
        if (tp + fn > 0) {
            f1_sum += f1;
            ++counted;
        }
    }
    EXPECT_EQ(s.classes[2].predicted, 0);
    EXPECT_EQ(s.classes[2].precision, 0.0) << "never predicted: no precision, not NaN";
    EXPECT_EQ(s.classes[4].support, 0);
    EXPECT_DOUBLE_EQ(s.macro_f1, f1_sum / counted) << "macro F1 over the classes that have samples";
    int64_t correct = 0;
    for (const auto& [truth, predicted] : predictions)
        correct += truth == predicted;
    EXPECT_DOUBLE_EQ(s.accuracy, correct / 2000.0);
    ASSERT_EQ(s.most_confused.size(), 3u);
    for (size_t i = 0; i < s.most_confused.size(); ++i) {
        const auto& pair = s.most_confused[i];
        EXPECT_NE(pair.truth, pair.predicted);
        EXPECT_EQ(pair.count, matrix[pair.truth][pair.predicted]);
        if (i > 0) {
            EXPECT_LE(pair.count, s.most_confused[i - 1].count);
        }
    }
    // No off-diagonal cell is larger than the first of them.
    for (int t = 0; t < classes; ++t)
        for (int p = 0; p < classes; ++p) {
            if (t != p) {
                EXPECT_LE(matrix[t][p], s.most_confused.front().count);
            }
        }

    const ConfusionSummary empty = summarize_confusion({});
    EXPECT_EQ(empty.total, 0);
    EXPECT_EQ(empty.accuracy, 0.0);
}
