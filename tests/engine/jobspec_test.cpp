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
    for (const LayerType type : {LayerType::linear, LayerType::conv2d, LayerType::maxpool, LayerType::relu,
                                 LayerType::gelu, LayerType::dropout, LayerType::flatten})
        EXPECT_EQ(layer_type_from(to_string(type)), type) << to_string(type);
    EXPECT_EQ(layer_type_from("Linear"), std::nullopt); // names are exact
    EXPECT_EQ(layer_type_from(""), std::nullopt);
    EXPECT_EQ(layer_type_names(), "conv2d, dropout, flatten, gelu, linear, maxpool, relu");
    const auto bad = parse_job_spec(json{{"layers", {{{"type", "lstm"}}}}});
    ASSERT_FALSE(bad);
    EXPECT_NE(bad.error().find("unknown layer type \"lstm\" (known: conv2d, dropout, flatten, gelu, linear, maxpool, relu)"),
              std::string::npos)
        << bad.error();
}

TEST(JobSpec, UnknownKeysAndLayersAreNamed) {
    EXPECT_NE(error_of({{"model", "mlp"}, {"learnig_rate", 0.1}}).find("unknown key \"learnig_rate\""), std::string::npos);
    EXPECT_NE(error_of({{"layers", {{{"type", "transformer"}}}}}).find("unknown layer type \"transformer\""),
              std::string::npos);
    EXPECT_NE(error_of({{"layers", {{{"type", "linear"}}}}}).find("\"out\" must be a positive"), std::string::npos);
    EXPECT_NE(error_of({{"optimizer", {{"type", "adam"}}}}).find("\"sgd\" or \"adamw\""), std::string::npos);
    EXPECT_NE(error_of({{"batch_size", "big"}}).find("\"batch_size\" has the wrong type"), std::string::npos);
    EXPECT_NE(error_of({{"model", "resnet"}}).find("unknown model \"resnet\""), std::string::npos);
    EXPECT_NE(error_of({{"model", "mlp"}, {"layers", json::array()}}).find("either"), std::string::npos);
    EXPECT_NE(error_of(json::array()).find("JSON object"), std::string::npos);
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
