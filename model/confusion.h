#pragma once
// What a confusion matrix says, for the Results view: per class its precision, recall, F1 and support; overall
// accuracy and macro F1; and the pairs most often confused. Plain C++ over the [true][predicted] counts a run's
// eval record carried.
#include <cstdint>
#include <string>
#include <vector>

namespace traindeck {

struct ClassScores {
    double precision = 0, recall = 0, f1 = 0; // 0 where undefined (no predictions of the class, no samples of it)
    int64_t support = 0;                      // samples whose true class this is
    int64_t predicted = 0;                    // samples predicted as this class
};

struct ConfusionSummary {
    std::vector<ClassScores> classes;
    int64_t total = 0, correct = 0;
    double accuracy = 0, macro_f1 = 0; // macro F1 over the classes that have samples
    struct Pair {
        int truth = 0, predicted = 0;
        int64_t count = 0;
    };
    std::vector<Pair> most_confused; // off-diagonal cells, largest first (at most `pairs`)
};

// matrix[t][p]: samples of true class t predicted as p; square (the catalog keeps only square ones).
ConfusionSummary summarize_confusion(const std::vector<std::vector<int64_t>>& matrix, size_t pairs = 5);

} // namespace traindeck
