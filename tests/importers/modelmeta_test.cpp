// An exported model's metadata read back from its bytes (backend/importers/modelmeta.h): ONNX and safetensors, and
// what is refused (foreign or damaged files).
#include "modelmeta.h"
#include "protowire.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <string>

#include <unistd.h>

using namespace traindeck::importers;

namespace {

std::string onnx_model(bool with_graph) {
    ProtoWriter model;
    model.varint(1, 8).bytes(2, "traindeck").bytes(3, "0.1.0");
    if (with_graph)
        model.bytes(7, ProtoWriter().bytes(1, "a node").take());
    model.bytes(14, ProtoWriter().bytes(1, "traindeck_provenance").bytes(2, R"({"run":7})").take());
    model.bytes(14, ProtoWriter().bytes(1, "classes").bytes(2, "10").take());
    return model.take();
}

std::string safetensors(const std::string& header) {
    std::string bytes(8, '\0');
    uint64_t length = header.size();
    for (int i = 0; i < 8; ++i)
        bytes[static_cast<size_t>(i)] = static_cast<char>((length >> (8 * i)) & 0xff);
    return bytes + header + std::string(4, '\0');
}

} // namespace

TEST(ModelMetadata, AnOnnxModelSaysWhatItsMetadataHolds) {
    ModelMetadata metadata;
    std::string error;
    ASSERT_TRUE(parse_model_metadata(onnx_model(true), metadata, error)) << error;
    EXPECT_EQ(metadata.format, "onnx");
    EXPECT_EQ(metadata.producer, "traindeck 0.1.0");
    EXPECT_EQ(metadata.properties.at("traindeck_provenance"), R"({"run":7})");
    EXPECT_EQ(metadata.properties.at("classes"), "10");
    EXPECT_FALSE(parse_model_metadata(onnx_model(false), metadata, error));
    EXPECT_NE(error.find("no graph"), std::string::npos) << error;
    const std::string whole = onnx_model(true);
    EXPECT_FALSE(parse_model_metadata(whole.substr(0, whole.size() - 3), metadata, error)) << "a cut file";
    EXPECT_NE(error.find("malformed protobuf"), std::string::npos) << error;
    EXPECT_FALSE(parse_model_metadata("PK\x03\x04 a zip file, not a model", metadata, error));
}

TEST(ModelMetadata, ASafetensorsFileSaysItsMetadataAndALyingLengthIsRefused) {
    ModelMetadata metadata;
    std::string error;
    const std::string good = safetensors(
        R"({"__metadata__":{"traindeck_checkpoint":"{\"step\":5}","n":"1"},"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})");
    ASSERT_TRUE(parse_model_metadata(good, metadata, error)) << error;
    EXPECT_EQ(metadata.format, "safetensors");
    EXPECT_EQ(metadata.properties.at("traindeck_checkpoint"), R"({"step":5})");
    std::string lying = good;
    lying[5] = '\x7f'; // a header length far past the end of the file
    EXPECT_FALSE(parse_model_metadata(lying, metadata, error));
    EXPECT_NE(error.find("past the file's end"), std::string::npos) << error;
    EXPECT_FALSE(parse_model_metadata(safetensors(R"({"__metadata__":[1,2]})"), metadata, error));
    EXPECT_FALSE(parse_model_metadata(safetensors("{not json"), metadata, error));
    EXPECT_FALSE(read_model_metadata("/no/such/model.onnx", metadata, error));
    EXPECT_NE(error.find("cannot be read"), std::string::npos) << error;
}

TEST(ModelMetadata, AFileIsReadWithoutItsGraphAndACutOneIsRefused) {
    char name[] = "/tmp/traindeck-modelmeta-XXXXXX";
    const int fd = ::mkstemp(name);
    ASSERT_GE(fd, 0);
    ::close(fd);
    const std::string path = name;
    const auto write = [&](const std::string& bytes) {
        std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
    };
    // A model whose graph is 8 MB of weights: its metadata comes after it, as an exporter may write it.
    ProtoWriter model;
    model.bytes(2, "traindeck").bytes(7, std::string(8 << 20, 'w'));
    model.bytes(14, ProtoWriter().bytes(1, "traindeck_checkpoint").bytes(2, R"({"step":9})").take());
    write(model.data());
    ModelMetadata metadata;
    std::string error;
    ASSERT_TRUE(read_model_metadata(path, metadata, error)) << error;
    EXPECT_EQ(metadata.format, "onnx");
    EXPECT_EQ(metadata.properties.at("traindeck_checkpoint"), R"({"step":9})");
    write(model.data().substr(0, 4 << 20)); // cut inside the graph
    EXPECT_FALSE(read_model_metadata(path, metadata, error));
    EXPECT_NE(error.find("damaged"), std::string::npos) << error;
    write(safetensors(R"({"__metadata__":{"a":"b"}})"));
    ASSERT_TRUE(read_model_metadata(path, metadata, error)) << error;
    EXPECT_EQ(metadata.properties.at("a"), "b");
    // The model card an export writes beside its files says the same checkpoint and provenance.
    write("{\n  \"checkpoint\": {\"file\": \"ckpt-0000000086.tdck\", \"step\": 86},\n  \"format\": "
          "\"traindeck-model-card\",\n  \"provenance\": {\"run\": 7}\n}\n");
    ASSERT_TRUE(read_model_metadata(path, metadata, error)) << error;
    EXPECT_EQ(metadata.format, "model-card");
    EXPECT_EQ(metadata.properties.at("traindeck_checkpoint"), R"({"file":"ckpt-0000000086.tdck","step":86})");
    EXPECT_EQ(metadata.properties.at("traindeck_provenance"), R"({"run":7})");
    write(R"({"name": "some other tool's JSON"})");
    EXPECT_FALSE(read_model_metadata(path, metadata, error));
    EXPECT_NE(error.find("not a TrainDeck model card"), std::string::npos) << error;
    std::remove(path.c_str());
}
