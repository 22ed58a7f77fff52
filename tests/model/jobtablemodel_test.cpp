#include "jobtablemodel.h"

#include <gtest/gtest.h>

#include <filesystem>

using namespace traindeck;
namespace fs = std::filesystem;

TEST(JobTableModel, FetchesLazilyAndPicksUpNewJobsOnTop) {
    std::string pattern = (fs::temp_directory_path() / "traindeck-model-XXXXXX").string();
    const fs::path dir = ::mkdtemp(pattern.data());
    const std::string path = (dir / "catalog.db").string();
    Catalog catalog;
    ASSERT_EQ(catalog.open(path), "");
    catalog.db().exec("BEGIN");
    for (int i = 1; i <= 1000; ++i)
        catalog.add_job("job " + std::to_string(i), "local", std::to_string(i), nlohmann::json::object());
    catalog.db().exec("COMMIT");

    JobTableModel model(QString::fromStdString(path));
    EXPECT_EQ(model.totalJobs(), 1000);
    model.refresh();
    ASSERT_EQ(model.rowCount(), JobTableModel::kPage) << "only the first page is read";
    EXPECT_EQ(model.data(model.index(0, JobTableModel::Name), Qt::DisplayRole).toString(), "job 1000");
    EXPECT_TRUE(model.canFetchMore({}));
    model.fetchMore({});
    EXPECT_EQ(model.rowCount(), 2 * JobTableModel::kPage);

    const int64_t fresh = catalog.add_job("newest", "local", "x", nlohmann::json::object());
    catalog.db().exec("UPDATE jobs SET state='running', progress=0.5, loss=0.25, started=1 WHERE id=" + std::to_string(fresh));
    model.refresh();
    EXPECT_EQ(model.rowCount(), 2 * JobTableModel::kPage + 1);
    EXPECT_EQ(model.data(model.index(0, JobTableModel::Name), Qt::DisplayRole).toString(), "newest");
    EXPECT_EQ(model.data(model.index(0, JobTableModel::State), Qt::DisplayRole).toString(), "running");
    EXPECT_EQ(model.data(model.index(0, JobTableModel::Progress), Qt::DisplayRole).toString(), "50.0 %");
    EXPECT_EQ(model.data(model.index(0, JobTableModel::Loss), Qt::DisplayRole).toString(), "0.2500");
    EXPECT_EQ(model.data(model.index(0, 0), JobTableModel::JobIdRole).toLongLong(), fresh);
    fs::remove_all(dir);
}
