// The protobuf wire reader: every wire type read back from the writer, packed and unpacked repeated numbers, and
// malformed messages (a length past the end, a ten-byte-plus varint, a group) stopping it without reading past the
// buffer.
#include "protowire.h"

#include <gtest/gtest.h>

#include <vector>

using namespace traindeck::importers;

TEST(ProtoWire, ReadsBackEveryWireTypeTheWriterWrites) {
    ProtoWriter w;
    w.varint(1, 300).fixed64(2, 2.5).fixed32(3, -1.25f).bytes(4, "abc").varint(536870911, UINT64_MAX);
    ProtoReader r(w.data());
    ProtoField f;
    ASSERT_TRUE(r.next(f));
    EXPECT_EQ(f.number, 1u);
    EXPECT_EQ(f.value, 300u);
    ASSERT_TRUE(r.next(f));
    EXPECT_EQ(f.type, WireType::fixed64);
    EXPECT_EQ(f.as_double(), 2.5);
    ASSERT_TRUE(r.next(f));
    EXPECT_EQ(f.as_float(), -1.25f);
    ASSERT_TRUE(r.next(f));
    EXPECT_EQ(f.bytes, "abc");
    ASSERT_TRUE(r.next(f));
    EXPECT_EQ(f.number, 536870911u);
    EXPECT_EQ(f.value, UINT64_MAX);
    EXPECT_FALSE(r.next(f));
    EXPECT_TRUE(r.ok());
}

TEST(ProtoWire, PackedAndUnpackedRepeatedNumbersReadAlike) {
    std::string packed;
    for (double d : {1.0, 2.0, 3.0})
        packed.append(reinterpret_cast<const char*>(&d), 8);
    ProtoWriter w;
    w.bytes(6, packed).fixed64(6, 4.0);
    ProtoReader r(w.data());
    ProtoField f;
    std::vector<double> values;
    while (r.next(f))
        ASSERT_TRUE(for_each_packed_fixed64(f, [&](double v) { values.push_back(v); }));
    EXPECT_EQ(values, (std::vector<double>{1, 2, 3, 4}));

    ProtoField odd;
    odd.type = WireType::bytes;
    odd.bytes = std::string_view(packed).substr(0, 7);
    EXPECT_FALSE(for_each_packed_fixed64(odd, [](double) {}));

    ProtoField run;
    run.type = WireType::bytes;
    const std::string bare = std::string("\x05\xac\x02", 3);
    run.bytes = bare;
    std::vector<uint64_t> ints;
    ASSERT_TRUE(for_each_packed_varint(run, [&](uint64_t v) { ints.push_back(v); }));
    EXPECT_EQ(ints, (std::vector<uint64_t>{5, 300}));
}

TEST(ProtoWire, MalformedMessagesStopTheReaderInsideItsBuffer) {
    for (const std::string& bad :
         {std::string("\x0a\x05"
                      "abc",
                      5),                                                      // length past the end
          std::string("\x08\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", 12), // 11-byte varint
          std::string("\x0b", 1),                                              // a group (wire type 3)
          std::string("\x11\x01\x02", 3),                                      // fixed64 cut short
          std::string("\x00\x01", 2)}) {                                       // field number 0
        ProtoReader r(bad);
        ProtoField f;
        while (r.next(f)) {
        }
        EXPECT_FALSE(r.ok()) << "bytes of size " << bad.size();
    }
}
