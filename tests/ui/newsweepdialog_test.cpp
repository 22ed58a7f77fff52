// NewSweepDialog (ui/newsweepdialog.h) on the offscreen platform: a bad space is refused in place with the sweep
// library's message naming the key, and Start is disabled until it is fixed; the preview counts a grid's trials, the
// worst case in epochs and the trials' cost an hour at the backend's prices; the spec it makes is what the worker
// reads (parse_sweep_spec), with a choice's values read as JSON or as words.
#include "newsweepdialog.h"

#include "sweepspec.h"

#include <gtest/gtest.h>

#include <QJsonArray>
#include <QJsonDocument>
#include <QPushButton>
#include <QTableWidget>

using namespace traindeck;

namespace {

QJsonObject grid_spec() {
    const QJsonObject builtin{{"model", "mlp"},
                              {"data", QJsonObject{{"dataset", "fashion-mnist"}, {"limit", 6000}}},
                              {"epochs", 5},
                              {"optimizer", QJsonObject{{"type", "sgd"}, {"lr", 0.05}}}};
    return {{"name", "grid"},
            {"base", QJsonObject{{"builtin", builtin}, {"resources", QJsonObject{{"cpus", 1}}}}},
            {"space", QJsonObject{{"optimizer.lr", QJsonObject{{"choice", QJsonArray{0.1, 0.01, 0.001}}}},
                                  {"batch_size", QJsonObject{{"int", QJsonArray{32, 33}}}}}},
            {"method", "grid"},
            {"max_trials", 20},
            {"max_concurrent", 2}};
}

int row_of(QTableWidget& space, const QString& key) {
    for (int row = 0; row < space.rowCount(); ++row)
        if (space.item(row, NewSweepDialog::KeyColumn)->text() == key)
            return row;
    return -1;
}

void set_cell(QTableWidget& space, int row, int column, const QString& text) { space.item(row, column)->setText(text); }

} // namespace

TEST(NewSweepDialog, ABadSpaceIsSaidInPlaceNamingTheKeyAndStartWaitsForTheFix) {
    NewSweepDialog dialog;
    // The first row it offers (the learning rate, log-uniform) is a valid sweep as it stands.
    EXPECT_EQ(dialog.problem(), QString());
    EXPECT_TRUE(dialog.startButton()->isEnabled());
    QTableWidget& space = dialog.space();
    const int lr = row_of(space, "optimizer.lr");
    ASSERT_GE(lr, 0);

    set_cell(space, lr, NewSweepDialog::LowColumn, "0.5"); // above its high, 0.3
    EXPECT_TRUE(dialog.problem().startsWith("space.optimizer.lr.loguniform")) << dialog.problem().toStdString();
    EXPECT_FALSE(dialog.startButton()->isEnabled());
    EXPECT_TRUE(dialog.preview().contains("fix")) << dialog.preview().toStdString();

    set_cell(space, lr, NewSweepDialog::LowColumn, "fast"); // no number
    EXPECT_TRUE(dialog.problem().contains("space.optimizer.lr")) << dialog.problem().toStdString();
    EXPECT_TRUE(dialog.problem().contains("number")) << dialog.problem().toStdString();
    EXPECT_FALSE(dialog.startButton()->isEnabled());

    set_cell(space, lr, NewSweepDialog::LowColumn, "1e-4");
    EXPECT_EQ(dialog.problem(), QString());
    EXPECT_TRUE(dialog.startButton()->isEnabled());

    // A row with values but no key, and a key given twice, are the dialog's own to say (the JSON would lose them).
    dialog.addDimension({}, "choice", {}, {}, "1, 2");
    EXPECT_TRUE(dialog.problem().contains("row 2")) << dialog.problem().toStdString();
    EXPECT_FALSE(dialog.startButton()->isEnabled());
    set_cell(space, 1, NewSweepDialog::KeyColumn, "optimizer.lr");
    EXPECT_TRUE(dialog.problem().contains("optimizer.lr is given twice")) << dialog.problem().toStdString();
    space.removeRow(1);
    EXPECT_EQ(dialog.problem(), QString());
    EXPECT_TRUE(dialog.startButton()->isEnabled());

    // A base job the New job dialog would refuse is refused here, in its words.
    dialog.load({{"name", "script"},
                 {"base", QJsonObject{{"argv", QJsonArray{}}}},
                 {"space", QJsonObject{{"x", QJsonObject{{"uniform", QJsonArray{0, 1}}}}}}});
    EXPECT_EQ(dialog.problem(), "Base job: Give the command to run.");
    EXPECT_FALSE(dialog.startButton()->isEnabled());
}

TEST(NewSweepDialog, ThePreviewCountsAGridsTrialsTheirEpochsAndTheirCostAnHour) {
    NewSweepDialog dialog;
    dialog.setBackends({"local", "box"});
    dialog.load(grid_spec());
    ASSERT_EQ(dialog.problem(), QString());
    // 3 learning rates × 2 batch sizes (int, both ends included), 5 epochs each.
    EXPECT_TRUE(dialog.preview().startsWith("6 trial(s) (a grid of 6) · at most 30 epochs (6 × 5)"))
        << dialog.preview().toStdString();
    EXPECT_TRUE(dialog.preview().contains("prices of local not known yet")) << dialog.preview().toStdString();
    dialog.setPrices({{"local", QJsonObject{{"base_per_hour", 0.1}, {"cpu_per_hour", 0.15}}}});
    // (0.1 + 0.15 × 1 CPU) × 2 at once.
    EXPECT_TRUE(dialog.preview().contains("$0.5000 an hour while 2 trial(s) run")) << dialog.preview().toStdString();
    EXPECT_TRUE(dialog.preview().endsWith("no money cap")) << dialog.preview().toStdString();
    // A backend with GPUs: "auto" gives each trial one ($2 an hour), shared by 2 trials when asked, but never on a
    // cluster, which gives whole GPUs.
    dialog.setPrices(
        {{"local",
          QJsonObject{{"base_per_hour", 0.1}, {"cpu_per_hour", 0.15}, {"gpu_per_hour", 2.0}, {"gpu_count", 1}}}});
    EXPECT_TRUE(dialog.preview().contains("$4.50 an hour while 2 trial(s) run")) << dialog.preview().toStdString();
    QJsonObject shared = grid_spec();
    shared["trials_per_gpu"] = 2;
    dialog.load(shared);
    EXPECT_TRUE(dialog.preview().contains("$2.50 an hour while 2 trial(s) run")) << dialog.preview().toStdString();
    dialog.setPrices({{"local", QJsonObject{{"base_per_hour", 0.1},
                                            {"cpu_per_hour", 0.15},
                                            {"gpu_per_hour", 2.0},
                                            {"gpu_count", 1},
                                            {"cluster", true}}}});
    EXPECT_TRUE(dialog.preview().contains("$4.50 an hour while 2 trial(s) run")) << dialog.preview().toStdString();
    dialog.setPrices({{"local", QJsonObject{{"base_per_hour", 0.1}, {"cpu_per_hour", 0.15}}}});
    dialog.load(grid_spec());

    // Fewer trials allowed than the grid has: the maximum; a money cap bounds the worst case.
    QJsonObject capped = grid_spec();
    capped["max_trials"] = 4;
    capped["budget"] = QJsonObject{{"money", 5.0}};
    dialog.load(capped);
    EXPECT_TRUE(dialog.preview().startsWith("4 trial(s) (a grid of 6) · at most 20 epochs"))
        << dialog.preview().toStdString();
    EXPECT_TRUE(dialog.preview().endsWith("never more than $5.00 in all (its cap)")) << dialog.preview().toStdString();

    // ASHA counting epochs trains each trial to its last rung, whatever the base says.
    QJsonObject asha = grid_spec();
    asha["early_stopping"] =
        QJsonObject{{"method", "asha"}, {"min_resource", 1}, {"max_resource", 3}, {"reduction_factor", 3}};
    dialog.load(asha);
    EXPECT_TRUE(dialog.preview().startsWith("6 trial(s) (a grid of 6) · at most 18 epochs (6 × 3)"))
        << dialog.preview().toStdString();

    // A grid cannot enumerate a continuous dimension: the library says which.
    dialog.addDimension("optimizer.weight_decay", "loguniform", "1e-6", "1e-2");
    EXPECT_TRUE(dialog.problem().contains("space.optimizer.weight_decay")) << dialog.problem().toStdString();
    EXPECT_FALSE(dialog.startButton()->isEnabled());
}

TEST(NewSweepDialog, TheSpecItMakesIsWhatTheWorkerReads) {
    NewSweepDialog dialog;
    dialog.load(grid_spec());
    QTableWidget& space = dialog.space();
    // Words stay words, JSON stays JSON: "sgd, adamw" and "[64], [128, 64]".
    dialog.addDimension("optimizer.type", "choice", {}, {}, "sgd, adamw");
    dialog.addDimension("hidden", "choice", {}, {}, "[64], [128, 64]");
    ASSERT_EQ(dialog.problem(), QString());
    const QJsonObject spec = dialog.spec();
    const QJsonObject dimensions = spec.value("space").toObject();
    EXPECT_EQ(dimensions.value("optimizer.type").toObject().value("choice").toArray(), QJsonArray({"sgd", "adamw"}));
    EXPECT_EQ(dimensions.value("hidden").toObject().value("choice").toArray(),
              QJsonArray({QJsonArray{64}, QJsonArray{128, 64}}));
    EXPECT_EQ(dimensions.value("optimizer.lr").toObject().value("choice").toArray(), QJsonArray({0.1, 0.01, 0.001}));
    // The base keeps what the dialog does not show (the data limit), and the worker names each trial.
    const QJsonObject base = spec.value("base").toObject();
    EXPECT_EQ(base.value("builtin").toObject().value("data").toObject().value("limit").toInt(), 6000);
    EXPECT_FALSE(base.contains("name"));
    EXPECT_FALSE(base.value("resources").toObject().contains("gpus")); // none asked: the worker's default
    sweep::SweepSpec parsed;
    EXPECT_EQ(sweep::parse_sweep_spec(nlohmann::json::parse(QJsonDocument(spec).toJson().toStdString()), parsed), "");
    EXPECT_EQ(sweep::grid_size(parsed), 3u * 2u * 2u * 2u);
    EXPECT_EQ(space.rowCount(), 4);
}
