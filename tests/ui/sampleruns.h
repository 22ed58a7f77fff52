#pragma once
// Runs as a sweep produces them, for the widget tests and their screenshots: a grid of configurations × seeds with
// plausible curves' summaries, and a large random search (thousands of runs) over learning rate, batch size,
// optimizer, dropout and width, some runs without weight decay. Deterministic (fixed seeds).
#include "runrecord.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

namespace traindeck::test {

inline ConfigValue number_value(double number) {
    // The shortest text that reads back as the number ("500", "0.001"), as the catalog keeps it.
    char text[32];
    const auto end = std::to_chars(text, text + sizeof text, number).ptr;
    return ConfigValue{std::string(text, end), number};
}
inline ConfigValue text_value(std::string text) { return ConfigValue{std::move(text), NAN}; }

inline MetricSummary summary(double last, double min, double max, MetricGoal goal, int64_t steps = 10000) {
    MetricSummary s;
    s.last = last;
    s.min = min;
    s.max = max;
    s.goal = goal;
    s.best = goal == MetricGoal::maximize ? max : goal == MetricGoal::minimize ? min : NAN;
    s.last_step = steps;
    s.count = steps / 10;
    return s;
}

// configs (up to 3) × seeds: cnn at lr 1e-3 and 3e-3 (wider) and an mlp at 1e-2, Fashion-MNIST-like numbers.
inline std::vector<RunRecord> sweep_runs(int seeds = 5) {
    struct Config {
        const char* model;
        double lr, dropout;
        int hidden;
        double accuracy, loss;
    };
    const Config configs[] = {{"cnn", 0.001, 0.1, 128, 0.905, 0.262},
                              {"cnn", 0.003, 0.25, 256, 0.918, 0.231},
                              {"mlp", 0.01, 0.1, 512, 0.874, 0.351}};
    std::mt19937 random(7);
    std::normal_distribution<double> noise(0, 1);
    std::vector<RunRecord> runs;
    int64_t id = 100;
    for (const Config& c : configs)
        for (int seed = 1; seed <= seeds; ++seed) {
            RunRecord run;
            run.id = id++;
            run.name = std::string(c.model) + "-lr" + number_value(c.lr).text + "-s" + std::to_string(seed);
            run.state = "finished";
            run.config["model"] = text_value(c.model);
            run.config["optimizer.name"] = text_value("adam");
            run.config["optimizer.lr"] = number_value(c.lr);
            run.config["hidden[0]"] = number_value(c.hidden);
            run.config["dropout"] = number_value(c.dropout);
            run.config["batch_size"] = number_value(128);
            run.config["epochs"] = number_value(10);
            run.config["seed"] = number_value(seed);
            const double accuracy = c.accuracy + 0.004 * noise(random);
            const double best_accuracy = accuracy + 0.002 + 0.001 * std::abs(noise(random));
            const double loss = c.loss * (1 + 0.03 * noise(random));
            run.summaries["val/accuracy"] = summary(accuracy, 0.1, best_accuracy, MetricGoal::maximize);
            run.summaries["val/loss"] = summary(loss * 1.12, loss * 1.08, 2.31, MetricGoal::minimize);
            run.summaries["loss"] = summary(loss * 0.9, loss * 0.8, 2.30, MetricGoal::minimize);
            run.summaries["spend"] = summary(0.042 + 0.003 * noise(random), 0, 0.05, MetricGoal::none);
            runs.push_back(std::move(run));
        }
    return runs;
}

// A random search of `count` runs: accuracy peaks near lr 3e-3 and with adam/adamw, falls with heavy dropout.
inline std::vector<RunRecord> search_runs(int count, unsigned seed = 11) {
    std::mt19937 random(seed);
    std::uniform_real_distribution<double> uniform(0, 1);
    std::normal_distribution<double> noise(0, 1);
    const char* optimizers[] = {"adam", "adamw", "sgd"};
    const int batches[] = {32, 64, 128, 256};
    const int widths[] = {64, 128, 256, 512, 1024};
    std::vector<RunRecord> runs;
    runs.reserve(count);
    for (int i = 0; i < count; ++i) {
        RunRecord run;
        run.id = 1000 + i;
        run.name = "search-" + std::to_string(i);
        const double log_lr = -5 + 4 * uniform(random);
        const double lr = std::pow(10, log_lr);
        const char* optimizer = optimizers[random() % 3];
        const int batch = batches[random() % 4];
        const int width = widths[random() % 5];
        const double dropout = 0.5 * uniform(random);
        run.config["optimizer.lr"] = number_value(lr);
        run.config["optimizer.name"] = text_value(optimizer);
        run.config["batch_size"] = number_value(batch);
        run.config["hidden[0]"] = number_value(width);
        run.config["dropout"] = number_value(dropout);
        if (uniform(random) > 0.1)
            run.config["optimizer.weight_decay"] = number_value(std::pow(10, -6 + 3 * uniform(random)));
        double accuracy = 0.91 - 0.035 * std::pow(log_lr + 2.5, 2) - (optimizer[0] == 's' ? 0.03 : 0) -
                          0.08 * dropout * dropout + 0.004 * std::log2(width / 64.0) + 0.01 * noise(random);
        accuracy = std::clamp(accuracy, 0.1, 0.95);
        run.summaries["val/accuracy"] = summary(accuracy - 0.003, 0.1, accuracy, MetricGoal::maximize);
        run.summaries["loss"] = summary(2.3 * (1 - accuracy), 2 * (1 - accuracy), 2.31, MetricGoal::minimize);
        runs.push_back(std::move(run));
    }
    return runs;
}

} // namespace traindeck::test
