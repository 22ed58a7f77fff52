// The safetensors writer (backend/engine/safetensors.h), read back as the format's readers read it: the header
// length, 8-byte alignment of the data, dtypes, shapes, contiguous offsets, string metadata, and the bytes.
#include "network.h"
#include "portablelayout.h"
#include "rng.h"
#include "safetensors.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

using namespace traindeck::engine;
using nlohmann::json;

namespace {

struct Parsed {
    json header;
    std::string data;
};

Parsed parse(const std::string& bytes) {
    uint64_t length = 0;
    EXPECT_GE(bytes.size(), 8u);
    std::memcpy(&length, bytes.data(), 8);
    EXPECT_LE(8 + length, bytes.size());
    EXPECT_EQ((8 + length) % 8, 0u) << "the data must start 8-byte aligned";
    return {json::parse(bytes.substr(8, length)), bytes.substr(8 + length)};
}

std::vector<float> floats_at(const Parsed& file, const json& entry) {
    const size_t begin = entry["data_offsets"][0], end = entry["data_offsets"][1];
    std::vector<float> values((end - begin) / 4);
    std::memcpy(values.data(), file.data.data() + begin, end - begin);
    return values;
}

} // namespace

TEST(Safetensors, HeaderGivesEveryTensorItsDtypeShapeAndContiguousOffsets) {
    const std::vector<SafetensorsTensor> tensors = {
        {"a.weight", {2, 3}, {1, 2, 3, 4, 5, 6}}, {"a.bias", {2}, {-1, -2}}, {"b", {1, 1, 1}, {42}}};
    const Parsed file = parse(safetensors_bytes(tensors, {{"name", "demo"}, {"step", 7}}));
    size_t expected_begin = 0;
    for (const SafetensorsTensor& t : tensors) {
        const json& entry = file.header.at(t.name);
        EXPECT_EQ(entry["dtype"], "F32");
        EXPECT_EQ(entry["shape"], json(t.shape));
        EXPECT_EQ(entry["data_offsets"][0].get<size_t>(), expected_begin) << t.name << " follows the one before it";
        EXPECT_EQ(entry["data_offsets"][1].get<size_t>(), expected_begin + t.values.size() * 4);
        EXPECT_EQ(floats_at(file, entry), t.values);
        expected_begin += t.values.size() * 4;
    }
    EXPECT_EQ(file.data.size(), expected_begin) << "nothing after the last tensor";
    EXPECT_EQ(file.header["__metadata__"]["name"], "demo");
    EXPECT_EQ(file.header["__metadata__"]["step"], "7") << "metadata values are strings in this format";
}

TEST(Safetensors, NetworkTensorsAreItsWeightsInPyTorchLayout) {
    auto built = Network::build({{.type = LayerType::conv2d, .out = 3, .kernel = 3, .padding = 1},
                                 {.type = LayerType::relu},
                                 {.type = LayerType::flatten}},
                                {4, 4, 2}, 5, 1);
    ASSERT_TRUE(built) << built.error();
    Rng init(8);
    built->initialize(init);
    const Parsed file = parse(network_safetensors(*built, built->params(), {4, 4, 2}, json::object()));
    EXPECT_EQ(file.header.size(), 5u) << "two weighted layers, a weight and a bias each, and the metadata";
    EXPECT_EQ(file.header["layers.0.weight"]["shape"], json::array({3, 2, 3, 3}));
    EXPECT_EQ(file.header["layers.3.weight"]["shape"], json::array({5, 48}));
    EXPECT_EQ(file.header["layers.3.bias"]["shape"], json::array({5}));
    const auto portable = portable_weights(*built, built->params(), {4, 4, 2});
    EXPECT_EQ(floats_at(file, file.header["layers.0.weight"]), portable[0].weight);
    EXPECT_EQ(floats_at(file, file.header["layers.3.weight"]), portable[3].weight);
    const Layer& head = built->layers()[3];
    EXPECT_EQ(floats_at(file, file.header["layers.3.bias"]),
              std::vector<float>(built->params().begin() + head.bias, built->params().begin() + head.bias + 5));
}
