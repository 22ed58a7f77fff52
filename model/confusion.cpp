#include "confusion.h"

#include <algorithm>

namespace traindeck {

ConfusionSummary summarize_confusion(const std::vector<std::vector<int64_t>>& matrix, size_t pairs) {
    ConfusionSummary summary;
    const size_t n = matrix.size();
    summary.classes.resize(n);
    for (size_t t = 0; t < n; ++t)
        for (size_t p = 0; p < n && p < matrix[t].size(); ++p) {
            const int64_t count = matrix[t][p];
            summary.classes[t].support += count;
            summary.classes[p].predicted += count;
            summary.total += count;
            if (t == p)
                summary.correct += count;
            else if (count > 0)
                summary.most_confused.push_back({static_cast<int>(t), static_cast<int>(p), count});
        }
    double f1_sum = 0;
    int with_samples = 0;
    for (size_t c = 0; c < n; ++c) {
        ClassScores& s = summary.classes[c];
        const int64_t hits = c < matrix[c].size() ? matrix[c][c] : 0;
        s.precision = s.predicted > 0 ? static_cast<double>(hits) / s.predicted : 0.0;
        s.recall = s.support > 0 ? static_cast<double>(hits) / s.support : 0.0;
        s.f1 = s.precision + s.recall > 0 ? 2 * s.precision * s.recall / (s.precision + s.recall) : 0.0;
        if (s.support > 0) {
            f1_sum += s.f1;
            ++with_samples;
        }
    }
    summary.accuracy = summary.total > 0 ? static_cast<double>(summary.correct) / summary.total : 0.0;
    summary.macro_f1 = with_samples > 0 ? f1_sum / with_samples : 0.0;
    std::stable_sort(
        summary.most_confused.begin(), summary.most_confused.end(),
        [](const ConfusionSummary::Pair& a, const ConfusionSummary::Pair& b) { return a.count > b.count; });
    if (summary.most_confused.size() > pairs)
        summary.most_confused.resize(pairs);
    return summary;
}

} // namespace traindeck
