#include "jobspec.h"

#include <gtest/gtest.h>

using namespace traindeck::engine;
using nlohmann::json;

namespace {
std::string error_of(const json& spec) {
    auto parsed = parse_job_spec(spec);
    return parsed ? std::string() : parsed.error();
}
} // namespace

TEST(JobSpec, PresetsExpandToLayers) {
    auto mlp = parse_job_spec(json{{"model", "mlp"}, {"hidden", {64, 32}}, {"dropout", 0.2}});
    ASSERT_TRUE(mlp) << mlp.error();
    std::vector<std::string> types;
    for (const auto& layer : mlp->layers)
        types.push_back(to_string(layer.type));
    EXPECT_EQ(types, (std::vector<std::string>{"flatten", "linear", "relu", "dropout", "linear", "relu", "dropout"}));
    EXPECT_EQ(mlp->data.train_images, std::string(kFashionMnistDir) + "/train-images-idx3-ubyte.gz");

    auto cnn = parse_job_spec(json{{"model", "cnn"}});
    ASSERT_TRUE(cnn) << cnn.error();
    EXPECT_EQ(cnn->layers.front().type, LayerType::conv2d);
    EXPECT_EQ(cnn->layers.front().out, 32);
    EXPECT_EQ(cnn->layers[2].type, LayerType::maxpool);
    EXPECT_EQ(cnn->layers[2].stride, 2);
}

TEST(JobSpec, LayerTypesHaveOneNameEach) {
    for (const LayerType type : {LayerType::linear, LayerType::conv2d, LayerType::maxpool, LayerType::avgpool,
                                 LayerType::global_avgpool, LayerType::batchnorm, LayerType::add, LayerType::relu,
                                 LayerType::gelu, LayerType::dropout, LayerType::flatten})
        EXPECT_EQ(layer_type_from(to_string(type)), type) << to_string(type);
    EXPECT_EQ(layer_type_from("Linear"), std::nullopt); // names are exact
    EXPECT_EQ(layer_type_from(""), std::nullopt);
    const std::string names =
        "add, avgpool, batchnorm, conv2d, dropout, flatten, gelu, global_avgpool, linear, maxpool, relu";
    EXPECT_EQ(layer_type_names(), names);
    const auto bad = parse_job_spec(json{{"layers", {{{"type", "lstm"}}}}});
    ASSERT_FALSE(bad);
    EXPECT_NE(bad.error().find("unknown layer type \"lstm\" (known: " + names + ")"), std::string::npos) << bad.error();
}

TEST(JobSpec, UnknownKeysAndLayersAreNamed) {
    EXPECT_NE(error_of({{"model", "mlp"}, {"learnig_rate", 0.1}}).find("unknown key \"learnig_rate\""), std::string::npos);
    EXPECT_NE(error_of({{"layers", {{{"type", "transformer"}}}}}).find("unknown layer type \"transformer\""),
              std::string::npos);
    EXPECT_NE(error_of({{"layers", {{{"type", "linear"}}}}}).find("\"out\" must be a positive"), std::string::npos);
    EXPECT_NE(error_of({{"optimizer", {{"type", "adam"}}}}).find("\"sgd\" or \"adamw\""), std::string::npos);
    EXPECT_NE(error_of({{"batch_size", "big"}}).find("\"batch_size\" has the wrong type"), std::string::npos);
    EXPECT_NE(error_of({{"model", "vgg"}}).find("unknown model \"vgg\" (known: mlp, cnn, resnet"), std::string::npos);
    EXPECT_NE(error_of({{"model", "mlp"}, {"layers", json::array()}}).find("either"), std::string::npos);
    EXPECT_NE(error_of(json::array()).find("JSON object"), std::string::npos);
}

TEST(JobSpec, ResnetPresetIsResidualBlocksWithBatchNorm) {
    const auto spec = parse_job_spec(json{{"model", "resnet"}, {"width", 8}, {"stages", 2}, {"blocks", 1}});
    ASSERT_TRUE(spec) << spec.error();
    // stem: conv bn relu | stage 0: block | stage 1: conv bn relu maxpool, block | gap flatten
    std::vector<LayerType> types;
    for (const LayerSpec& layer : spec->layers)
        types.push_back(layer.type);
    const std::vector<LayerType> block = {LayerType::conv2d, LayerType::batchnorm, LayerType::relu,
                                          LayerType::conv2d, LayerType::batchnorm, LayerType::add,
                                          LayerType::relu};
    std::vector<LayerType> expected = {LayerType::conv2d, LayerType::batchnorm, LayerType::relu};
    expected.insert(expected.end(), block.begin(), block.end());
    expected.insert(expected.end(), {LayerType::conv2d, LayerType::batchnorm, LayerType::relu, LayerType::maxpool});
    expected.insert(expected.end(), block.begin(), block.end());
    expected.insert(expected.end(), {LayerType::global_avgpool, LayerType::flatten});
    EXPECT_EQ(types, expected);
    EXPECT_EQ(spec->layers[8].from, 3); // the first block adds its own input (the stem's output)
    EXPECT_EQ(spec->layers[0].out, 8);
    EXPECT_EQ(spec->layers[10].out, 16); // the second stage doubles the channels
    EXPECT_EQ(spec->layers[19].from, 14);
    EXPECT_EQ(spec->model, "resnet");
    // It round-trips through the run's configuration as explicit layers.
    json config = job_spec_to_json(*spec);
    config.erase("model");
    const auto again = parse_job_spec(config);
    ASSERT_TRUE(again) << again.error();
    ASSERT_EQ(again->layers.size(), spec->layers.size());
    EXPECT_EQ(again->layers[19].from, 14);
    EXPECT_FLOAT_EQ(again->layers[1].momentum, 0.1f);
}

TEST(JobSpec, NewLayersAndTrainingOptionsAreChecked) {
    EXPECT_NE(error_of({{"layers", {{{"type", "add"}}}}}).find("needs \"from\""), std::string::npos);
    EXPECT_NE(error_of({{"layers", {{{"type", "relu"}}, {{"type", "add"}, {"from", 1}}}}}).find("(0 to 0)"),
              std::string::npos);
    EXPECT_NE(error_of({{"layers", {{{"type", "batchnorm"}, {"eps", 0}}}}}).find("\"eps\" positive"),
              std::string::npos);
    EXPECT_NE(error_of({{"label_smoothing", 1.0}}).find("\"label_smoothing\" must be in [0, 1)"), std::string::npos);
    EXPECT_NE(error_of({{"early_stopping", {{"metric", "loss"}}}}).find("\"val_loss\" or \"val_accuracy\""),
              std::string::npos);
    EXPECT_NE(error_of({{"early_stopping", {{"patiense", 2}}}}).find("unknown key \"patiense\""), std::string::npos);
    EXPECT_NE(error_of({{"early_stopping", 3}}).find("must be an object"), std::string::npos);
    const auto spec = parse_job_spec(
        json{{"label_smoothing", 0.1}, {"early_stopping", {{"metric", "val_accuracy"}, {"patience", 2}}}});
    ASSERT_TRUE(spec) << spec.error();
    EXPECT_TRUE(spec->early_stopping.enabled);
    EXPECT_EQ(spec->early_stopping.patience, 2);
    const json config = job_spec_to_json(*spec);
    EXPECT_EQ(config["label_smoothing"], 0.1);
    EXPECT_EQ(config["early_stopping"]["metric"], "val_accuracy");
    // Early stopping decides only where a run ends: a run may be resumed with another patience.
    const auto other = parse_job_spec(json{{"label_smoothing", 0.1}, {"early_stopping", {{"patience", 5}}}});
    ASSERT_TRUE(other);
    EXPECT_EQ(other->hash, spec->hash);
    const auto unsmoothed = parse_job_spec(json{{"early_stopping", {{"patience", 5}}}});
    EXPECT_NE(unsmoothed->hash, spec->hash);
}

TEST(JobSpec, ARegressionIsACsvTaskWithoutClassesOrAccuracy) {
    const json csv = {{"format", "csv"}, {"train_csv", "/t.csv"}, {"label_column", "price"}};
    const auto spec = parse_job_spec(json{{"task", "regression"}, {"data", csv}});
    ASSERT_TRUE(spec) << spec.error();
    EXPECT_EQ(spec->task, "regression");
    json out = job_spec_to_json(*spec);
    EXPECT_EQ(out["task"], "regression");
    out.erase("model"); // its "layers" say it
    const auto reparsed = parse_job_spec(out);
    ASSERT_TRUE(reparsed) << reparsed.error();
    EXPECT_EQ(reparsed->task, "regression");
    const auto classifier = parse_job_spec(json{{"data", csv}});
    ASSERT_TRUE(classifier) << classifier.error();
    EXPECT_EQ(classifier->task, "classification");
    EXPECT_NE(classifier->hash, spec->hash); // another task is another run: no resuming one from the other
    EXPECT_NE(error_of({{"task", "ranking"}}).find("\"task\" must be \"classification\" or \"regression\""),
              std::string::npos);
    EXPECT_NE(error_of({{"task", "regression"}}).find("trains on a CSV table"), std::string::npos); // IDX images
    EXPECT_NE(error_of({{"task", "regression"}, {"data", csv}, {"label_smoothing", 0.1}}).find("has no classes"),
              std::string::npos);
    EXPECT_NE(error_of({{"task", "regression"}, {"data", csv}, {"early_stopping", {{"metric", "val_accuracy"}}}})
                  .find("a regression has no accuracy"),
              std::string::npos);
    EXPECT_TRUE(parse_job_spec(json{{"task", "regression"}, {"data", csv}, {"early_stopping", {{"patience", 2}}}}));
}

TEST(JobSpec, HashIgnoresObservationFieldsOnly) {
    const json base = {{"model", "mlp"}, {"epochs", 2}, {"seed", 3}};
    json observed = base;
    observed["log_every"] = 50;
    observed["checkpoint_every"] = 10;
    observed["max_steps"] = 7;
    json different = base;
    different["seed"] = 4;
    EXPECT_EQ(parse_job_spec(base)->hash, parse_job_spec(observed)->hash);
    EXPECT_NE(parse_job_spec(base)->hash, parse_job_spec(different)->hash);
}

TEST(JobSpec, RelativeDataPathsResolveAgainstTheDatasetDir) {
    ::setenv("TRAINDECK_DATASET_DIR", "/data/v1", 1);
    auto spec = parse_job_spec(json{{"data", {{"format", "csv"}, {"train_csv", "iris.csv"}}}});
    ::unsetenv("TRAINDECK_DATASET_DIR");
    ASSERT_TRUE(spec) << spec.error();
    EXPECT_EQ(spec->data.train_csv, "/data/v1/iris.csv");
}

TEST(JobSpec, ItsJsonHasEveryDefaultAndParsesBackToTheSameRun) {
    auto spec = parse_job_spec({{"model", "cnn"}, {"optimizer", {{"type", "adamw"}}}, {"epochs", 2}});
    ASSERT_TRUE(spec) << spec.error();
    const json out = job_spec_to_json(*spec);
    EXPECT_EQ(out["model"], "cnn");
    EXPECT_EQ(out["epochs"], 2);
    EXPECT_EQ(out["batch_size"], 128);                 // a default, filled in
    EXPECT_EQ(out["optimizer"]["lr"].dump(), "0.001"); // adamw's default, written as its shortest decimal
    EXPECT_EQ(out["optimizer"]["beta2"].dump(), "0.999");
    EXPECT_FALSE(out["optimizer"].contains("momentum")); // sgd's only
    EXPECT_EQ(out["schedule"]["decay"], "constant");
    EXPECT_EQ(out["data"]["format"], "idx");
    ASSERT_EQ(out["layers"].size(), spec->layers.size());
    EXPECT_EQ(out["layers"][0]["type"], "conv2d");
    // The JSON (without "model", which would conflict with its "layers") describes the same run.
    json again = out;
    again.erase("model");
    auto reparsed = parse_job_spec(again);
    ASSERT_TRUE(reparsed) << reparsed.error();
    EXPECT_EQ(job_spec_to_json(*reparsed).dump(), [&] {
        json expected = out;
        expected.erase("model");
        return expected.dump();
    }());
}

TEST(JobSpec, AnImageFolderWithAugmentationParsesChecksAndRoundTrips) {
    ::setenv("TRAINDECK_DATASET_DIR", "/data/v2", 1);
    auto spec = parse_job_spec(
        json{{"model", "cnn"},
             {"data",
              {{"format", "image_folder"},
               {"train_dir", "photos/train"},
               {"test_dir", "/elsewhere/test"},
               {"image_size", {48, 64}},
               {"channels", 3},
               {"resize", "crop"},
               {"augment", {{"crop_padding", 4}, {"hflip", true}, {"rotate", 15}, {"contrast", 0.3}}}}}});
    ::unsetenv("TRAINDECK_DATASET_DIR");
    ASSERT_TRUE(spec) << spec.error();
    EXPECT_EQ(spec->data.train_dir, "/data/v2/photos/train");
    EXPECT_EQ(spec->data.test_dir, "/elsewhere/test");
    EXPECT_EQ(spec->data.image_height, 48);
    EXPECT_EQ(spec->data.image_width, 64);
    EXPECT_EQ(spec->data.augment.crop_padding, 4);
    EXPECT_TRUE(spec->data.augment.hflip);
    EXPECT_FLOAT_EQ(spec->data.augment.contrast, 0.3f);

    const json out = job_spec_to_json(*spec);
    EXPECT_EQ(out["data"]["image_size"], json::array({48, 64}));
    EXPECT_EQ(out["data"]["augment"]["rotate"].dump(), "15.0");
    json again = out;
    again.erase("model");
    auto reparsed = parse_job_spec(again);
    ASSERT_TRUE(reparsed) << reparsed.error();
    EXPECT_EQ(job_spec_to_json(*reparsed)["data"], out["data"]);
    // A square size may be one number; "image_size" left out is "from the images", not written as 0.
    EXPECT_EQ(parse_job_spec(json{{"data", {{"format", "image_folder"}, {"train_dir", "/d"}, {"image_size", 32}}}})
                  ->data.image_width,
              32);
    EXPECT_FALSE(
        job_spec_to_json(*parse_job_spec(json{{"data", {{"format", "image_folder"}, {"train_dir", "/d"}}}}))["data"]
            .contains("image_size"));

    auto data_error = [](const json& data) { return error_of({{"data", data}}); };
    EXPECT_NE(data_error({{"format", "image_folder"}}).find("needs \"train_dir\""), std::string::npos);
    EXPECT_NE(data_error({{"format", "images"}}).find("\"idx\", \"csv\" or \"image_folder\""), std::string::npos);
    EXPECT_NE(
        data_error({{"format", "image_folder"}, {"train_dir", "/d"}, {"image_size", {0, 3}}}).find("\"image_size\""),
        std::string::npos);
    EXPECT_NE(
        data_error({{"format", "image_folder"}, {"train_dir", "/d"}, {"image_size", "big"}}).find("\"image_size\""),
        std::string::npos);
    EXPECT_NE(data_error({{"format", "image_folder"}, {"train_dir", "/d"}, {"channels", 4}}).find("1 or 3"),
              std::string::npos);
    EXPECT_NE(data_error({{"format", "image_folder"}, {"train_dir", "/d"}, {"resize", "stretch"}})
                  .find("\"pad\" or \"crop\""),
              std::string::npos);
    EXPECT_NE(data_error({{"augment", {{"flip", true}}}}).find("unknown key \"flip\""), std::string::npos);
    EXPECT_NE(data_error({{"augment", {{"brightness", 1.5}}}}).find("[0, 1)"), std::string::npos);
    EXPECT_NE(data_error({{"format", "csv"}, {"train_csv", "t.csv"}, {"augment", {{"hflip", true}}}})
                  .find("a CSV table has none"),
              std::string::npos);
}
