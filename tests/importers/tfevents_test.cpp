// TensorBoard event files: every fixture under shared/fixtures/tfevents read as its PROVENANCE.txt describes it
// (tags, point counts, step ranges, first and last values, other records), the logdir walk (one run per folder,
// several files of a folder in name order), TF2 tensor summaries built by hand (scalars as tensor_content, float_val,
// double_val and half_val; histograms and images of the plugins), and the exporter's files read back.
#include "importertest.h"
#include "protowire.h"
#include "tfevents.h"
#include "tfrecord.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <random>

using namespace traindeck::importers;
using namespace traindeck::test;

namespace {

// PROVENANCE.txt prints six significant digits.
void expect_close(double actual, double expected, const std::string& what) {
    EXPECT_NEAR(actual, expected, std::max(1e-12, std::fabs(expected) * 1e-5)) << what;
}

// n points, steps first..last (as the decoder saw them, min and max), first and last values as written.
void expect_series(const ImportedRun& run, const std::string& tag, size_t n, int64_t first_step, int64_t last_step,
                   double first, double last) {
    const auto& points = series(run, tag);
    ASSERT_EQ(points.size(), n) << tag;
    int64_t low = points.front().step, high = low;
    for (const auto& p : points) {
        low = std::min(low, p.step);
        high = std::max(high, p.step);
    }
    EXPECT_EQ(low, first_step) << tag;
    EXPECT_EQ(high, last_step) << tag;
    expect_close(points.front().value, first, tag + " first");
    expect_close(points.back().value, last, tag + " last");
}

ImportedRun only_run(const std::string& path) {
    auto runs = read_tensorboard_logdir(path);
    EXPECT_TRUE(runs) << (runs ? "" : runs.error());
    if (!runs || runs->size() != 1) {
        ADD_FAILURE() << path << ": expected one run";
        return {};
    }
    EXPECT_TRUE(runs->front().damage.empty()) << runs->front().damage.front().what;
    return std::move(runs->front());
}

} // namespace

TEST(TfEvents, GuildMinimalWriterFile) {
    REQUIRE_FIXTURES();
    const ImportedRun run = only_run(fixture("tfevents/guild-tbwriter-minimal"));
    EXPECT_EQ(run.records, 2);
    EXPECT_EQ(run.other_records.at("file_version"), 1);
    EXPECT_EQ(run.scalars.size(), 1u);
    expect_series(run, "loss", 1, 0, 0, 0.478751, 0.478751);
    EXPECT_EQ(run.format, "tensorboard");
    EXPECT_EQ(run.name, "guild-tbwriter-minimal");
    ASSERT_EQ(run.files.size(), 1u);
}

TEST(TfEvents, SimpleValueWithScalarsPluginMetadata) {
    REQUIRE_FIXTURES();
    const ImportedRun run = only_run(fixture("tfevents/tfevents-js-hello"));
    EXPECT_EQ(run.records, 2);
    expect_series(run, "hello", 1, 0, 0, 1.0, 1.0);
    EXPECT_DOUBLE_EQ(series(run, "hello").front().wall_time, 1687811641.0);
}

TEST(TfEvents, CatBoostFileWithoutFileVersionNamedExactlyEventsOutTfevents) {
    REQUIRE_FIXTURES();
    const ImportedRun run = only_run(fixture("tfevents/catboost-learn"));
    EXPECT_EQ(run.name, "catboost_info/learn");
    ASSERT_EQ(run.files.size(), 1u);
    EXPECT_EQ(std::filesystem::path(run.files[0]).filename(), "events.out.tfevents");
    EXPECT_EQ(run.records, 10);
    EXPECT_EQ(run.other_records.count("file_version"), 0u);
    expect_series(run, "MultiClass", 10, 0, 9, 1.21015, 0.908528);
    for (const auto& p : series(run, "MultiClass"))
        EXPECT_DOUBLE_EQ(p.wall_time, 1677217425.0);
    EXPECT_DOUBLE_EQ(run.started, 1677217425.0);
}

TEST(TfEvents, KerasTf1FileWithGraph) {
    REQUIRE_FIXTURES();
    const ImportedRun run = only_run(fixture("tfevents/guild-keras-tf1-graph"));
    EXPECT_EQ(run.records, 83);
    EXPECT_EQ(run.other_records.at("graph_def"), 1);
    EXPECT_EQ(run.other_records.at("meta_graph_def"), 1);
    EXPECT_EQ(run.scalars.size(), 4u);
    expect_series(run, "acc", 20, 0, 19, 0.9234, 0.99515);
    expect_series(run, "loss", 20, 0, 19, 0.247365, 0.0190362);
    expect_series(run, "val_acc", 20, 0, 19, 0.9587, 0.9837);
    expect_series(run, "val_loss", 20, 0, 19, 0.126611, 0.0971651);
    EXPECT_DOUBLE_EQ(run.started, 1548797801.0);
    EXPECT_NEAR(run.finished, 1548797904.25, 1e-3);
}

TEST(TfEvents, LightningRunFolderOfTwoFilesWithHparams) {
    REQUIRE_FIXTURES();
    const ImportedRun run = only_run(fixture("tfevents/lightning-torch-hparams"));
    EXPECT_EQ(run.name, "version_1");
    ASSERT_EQ(run.files.size(), 2u);
    EXPECT_LT(run.files[0], run.files[1]); // name order: the fit's .0 file, then the test's .1
    EXPECT_EQ(run.records, 1034 + 8);
    EXPECT_EQ(run.tool, "tensorboard.summary.writer.event_file_writer");
    EXPECT_EQ(run.other_records.at("file_version"), 2);
    // The fit file's 343 epoch points and the test file's one at 16875, in file order.
    expect_series(run, "epoch", 344, 49, 16875, 0, 2);
    EXPECT_EQ(series(run, "epoch").back().step, 16875);
    expect_series(run, "hp_metric", 2, 0, 0, -1, -1);
    expect_series(run, "train_accuracy_epoch", 3, 5624, 16874, 0.580222, 0.577067);
    expect_series(run, "train_accuracy_step", 337, 49, 16849, 0.25, 0.5);
    expect_series(run, "train_cross_entropy_epoch", 3, 5624, 16874, 0.739085, 0.760548);
    expect_series(run, "train_cross_entropy_step", 337, 49, 16849, 0.747144, 0.761183);
    expect_series(run, "val_accuracy", 3, 5624, 16874, 0.6372, 0.6432);
    expect_series(run, "val_cross_entropy", 3, 5624, 16874, 0.633032, 0.64988);
    expect_series(run, "test_accuracy", 1, 16875, 16875, 0.6308, 0.6308);
    expect_series(run, "test_cross_entropy", 1, 16875, 16875, 0.63944, 0.63944);
    // No scalar for the hparams plugin's placeholder values.
    EXPECT_EQ(run.scalars.size(), 10u);
    EXPECT_EQ(run.other_records.at("plugin:hparams/experiment"), 2);
    EXPECT_EQ(run.other_records.at("plugin:hparams/session_start_info"), 2);
    EXPECT_EQ(run.other_records.at("plugin:hparams/session_end_info"), 2);
    // session_start_info's hparams as the config.
    EXPECT_EQ(run.config.size(), 12u);
    EXPECT_EQ(run.config.at("backbone"), "prajjwal1/bert-tiny");
    EXPECT_DOUBLE_EQ(run.config.at("learning_rate").get<double>(), 0.01);
    EXPECT_DOUBLE_EQ(run.config.at("num_classes").get<double>(), 2.0);
    EXPECT_DOUBLE_EQ(run.config.at("multi_label").get<double>(), 0.0);
    EXPECT_EQ(run.config.at("optimizer"), "<class 'torch.optim.adam.Adam'>");
    EXPECT_EQ(run.config.at("loss_fn"), "None");
    EXPECT_NEAR(run.started, 1677071112.518, 1e-3);
    EXPECT_NEAR(run.finished, 1677072216.934, 1e-3);
}

TEST(TfEvents, DuplicateStepsAreAllKeptInTheOrderWritten) {
    REQUIRE_FIXTURES();
    const ImportedRun run = only_run(fixture("tfevents/tbreducer-torch-dupsteps"));
    EXPECT_EQ(run.records, 421);
    for (const std::string tag : {"dup_steps/foo", "dup_steps/bar"}) {
        const auto& points = series(run, tag);
        ASSERT_EQ(points.size(), 210u) << tag;
        for (size_t i = 0; i < 100; ++i)
            EXPECT_EQ(points[i].step, static_cast<int64_t>(i)) << tag;
        for (size_t i = 100; i < 210; ++i)
            EXPECT_EQ(points[i].step, static_cast<int64_t>(i) - 10) << tag;
        // Steps 90..99 twice, with different values.
        for (int64_t step = 90; step < 100; ++step)
            EXPECT_NE(points[static_cast<size_t>(step)].value, points[static_cast<size_t>(step) + 10].value) << tag;
    }
    expect_series(run, "dup_steps/bar", 210, 0, 199, 1.76822, 1.96241);
    expect_series(run, "dup_steps/foo", 210, 0, 199, 1.49626, 1.54785);
}

TEST(TfEvents, StrictStrideFive) {
    REQUIRE_FIXTURES();
    const ImportedRun run = only_run(fixture("tfevents/tbreducer-torch-strict"));
    EXPECT_EQ(run.records, 101);
    expect_series(run, "strict/foo", 100, 0, 495, 1.49626, 1.21209);
    const auto& points = series(run, "strict/foo");
    for (size_t i = 0; i < points.size(); ++i)
        EXPECT_EQ(points[i].step, static_cast<int64_t>(5 * i));
}

TEST(TfEvents, GanRunWithHistogramsAndCustomScalars) {
    REQUIRE_FIXTURES();
    const ImportedRun run = only_run(fixture("tfevents/wandb-gan-histos-customscalars"));
    EXPECT_EQ(run.records, 785);
    EXPECT_EQ(run.scalars.size(), 47u);
    EXPECT_EQ(run.histograms.size(), 3u);
    EXPECT_EQ(run.other_records.at("plugin:custom_scalars"), 1);
    size_t with[32] = {};
    for (const auto& [tag, points] : run.scalars)
        if (points.size() < 32)
            ++with[points.size()];
    // 47 simple_value tags of 31, 12, 2 or 1 points.
    EXPECT_EQ(with[31] + with[12] + with[2] + with[1], 47u);
    EXPECT_EQ(with[2], 2u);
    EXPECT_EQ(with[1], 4u);
    expect_series(run, "G/loss", 31, 0, 937, 187257, 11203.3);
    expect_series(run, "FID/conditional_patch_unmasked-fake_conditional_patch_1_real", 2, 512, 937, 49.953, 42.937);
    expect_series(run, "activation/D/expected_module_mean", 12, 0, 900, -9.06014e-09, -3.70386e-06);
    expect_series(run, "meta/gradient/netE_img2z_A/norm/high", 12, 0, 900, 30091.7, 43988.2);
    expect_series(run, "progression/total_kimgs", 31, 0, 937, 0.064, 60.032);
    expect_series(run, "progression/target_iters_for_progression", 1, 0, 0, 938, 938);
    const std::pair<const char*, size_t> histograms[] = {{"gradient/D/norm/histogram", 2},
                                                         {"gradient/netE_img2z_A/norm/histogram", 56},
                                                         {"gradient/netG_A/norm/histogram", 29}};
    for (const auto& [tag, buckets] : histograms) {
        const auto& points = run.histograms.at(tag);
        ASSERT_EQ(points.size(), 12u) << tag;
        EXPECT_EQ(points.front().step, 0) << tag;
        EXPECT_EQ(points.back().step, 900) << tag;
        // PROVENANCE.txt gives the last histogram's bucket count.
        EXPECT_EQ(points.back().bucket_limit.size(), buckets) << tag;
        EXPECT_EQ(points.back().bucket_count.size(), buckets) << tag;
        double counted = 0;
        for (double c : points.front().bucket_count)
            counted += c;
        EXPECT_DOUBLE_EQ(counted, points.front().num) << tag;
    }
    EXPECT_DOUBLE_EQ(run.histograms.at("gradient/D/norm/histogram").front().num, 1.0);
    EXPECT_DOUBLE_EQ(run.histograms.at("gradient/netE_img2z_A/norm/histogram").front().num, 4.0);
    EXPECT_NEAR(run.started, 1571777890.600, 1e-3);
    EXPECT_NEAR(run.finished, 1571778083.208, 1e-3);
}

TEST(TfEvents, TheWholeFixtureTreeIsOneRunPerFolderWithoutDamage) {
    REQUIRE_FIXTURES();
    auto runs = read_tensorboard_logdir(fixture("tfevents"));
    ASSERT_TRUE(runs) << runs.error();
    std::vector<std::string> names;
    for (const auto& run : *runs) {
        names.push_back(run.name);
        EXPECT_TRUE(run.damage.empty()) << run.name << ": " << run.damage.front().what;
    }
    EXPECT_EQ(names, (std::vector<std::string>{"catboost-learn/catboost_info/learn", "guild-keras-tf1-graph",
                                               "guild-tbwriter-minimal", "lightning-torch-hparams/version_1",
                                               "tbreducer-torch-dupsteps", "tbreducer-torch-strict",
                                               "tfevents-js-hello", "wandb-gan-histos-customscalars"}));
}

TEST(TfEvents, RunByRunReadsWhatTheWholeLogdirReads) {
    REQUIRE_FIXTURES();
    auto whole = read_tensorboard_logdir(fixture("tfevents"));
    auto listed = list_tensorboard_runs(fixture("tfevents"));
    ASSERT_TRUE(whole && listed);
    ASSERT_EQ(listed->size(), whole->size());
    SourceBuffer buffer; // one buffer for every file, large and small after each other
    for (size_t i = 0; i < listed->size(); ++i) {
        const ImportedRun run = read_tensorboard_run((*listed)[i], buffer);
        const ImportedRun& expected = (*whole)[i];
        EXPECT_EQ(run.name, expected.name);
        EXPECT_EQ(run.files, expected.files);
        EXPECT_EQ(run.records, expected.records);
        EXPECT_EQ(run.scalar_points(), expected.scalar_points());
        EXPECT_EQ(run.histograms.size(), expected.histograms.size());
        for (const auto& [tag, points] : expected.scalars) {
            ASSERT_EQ(run.scalars.at(tag).size(), points.size()) << tag;
            for (size_t p = 0; p < points.size(); ++p)
                EXPECT_EQ(run.scalars.at(tag)[p].value, points[p].value) << tag;
        }
    }
}

TEST(TfEvents, ASourceBufferReadsEachFileWholeWhateverCameBefore) {
    TempDir dir;
    const std::string large(300000, 'x'), small = "small", larger(1000000, 'y');
    spill(dir.file("a"), large);
    spill(dir.file("b"), small);
    spill(dir.file("c"), larger);
    SourceBuffer buffer;
    EXPECT_EQ(*buffer.read(dir.file("a")), large);
    EXPECT_EQ(*buffer.read(dir.file("b")), small);
    EXPECT_EQ(*buffer.read(dir.file("c")), larger);
    spill(dir.file("empty"), "");
    EXPECT_EQ(*buffer.read(dir.file("empty")), "");
    auto missing = buffer.read(dir.file("missing"));
    ASSERT_FALSE(missing);
    EXPECT_NE(missing.error().find("cannot read"), std::string::npos);
}

TEST(TfEvents, AFolderWithoutEventFilesIsAnErrorThatSaysSo) {
    TempDir dir;
    spill(dir.file("notes.txt"), "hello");
    auto runs = read_tensorboard_logdir(dir.path);
    ASSERT_FALSE(runs);
    EXPECT_NE(runs.error().find("no TensorBoard event file"), std::string::npos);
    EXPECT_FALSE(read_tensorboard_logdir(dir.file("missing")));
}

namespace {

std::string tensor_value_event(const std::string& tag, int64_t step, const std::string& tensor,
                               const std::string& plugin = "") {
    ProtoWriter value;
    value.bytes(1, tag);
    if (!plugin.empty())
        value.bytes(9, ProtoWriter().bytes(1, ProtoWriter().bytes(1, plugin).data()).data());
    value.bytes(8, tensor);
    ProtoWriter event;
    event.fixed64(1, 1700000000.0 + static_cast<double>(step)).varint(2, static_cast<uint64_t>(step));
    event.bytes(5, ProtoWriter().bytes(1, value.data()).data());
    return tfrecord_frame(event.data());
}

std::string shape(std::initializer_list<int64_t> dims) {
    ProtoWriter s;
    for (const int64_t d : dims)
        s.bytes(2, ProtoWriter().varint(1, static_cast<uint64_t>(d)).data());
    return s.take();
}

} // namespace

namespace {

// What a run holds after its events, bit for bit (NaN values and wall times included).
std::string what_run_holds(const ImportedRun& run) {
    std::string out = "records " + std::to_string(run.records);
    const auto bits = [](double v) {
        uint64_t b = 0;
        std::memcpy(&b, &v, 8);
        return std::to_string(b);
    };
    out += " started " + bits(run.started) + " finished " + bits(run.finished);
    for (const auto& [tag, points] : run.scalars) {
        out += "\n[" + tag + "]";
        for (const ScalarPoint& p : points)
            out += " " + std::to_string(p.step) + "=" + bits(p.value) + "@" + bits(p.wall_time);
    }
    for (const auto& [what, n] : run.other_records)
        out += "\nother " + what + " " + std::to_string(n);
    return out;
}

} // namespace

// A scalar event takes one of three paths: its bytes matched as every writer lays them out, the fields read in any
// order, or the general decoder. Each random event is decoded as it is and again with an unknown Event field after
// it (which only the general decoder accepts, and ignores): the runs must hold the same, whatever the step (absent,
// 0, large, negative), tag (empty, up to 127 bytes and longer), value, wall time, field order, and whether the tag is
// the hparams plugin's placeholder.
TEST(TfEvents, EveryScalarPathReadsAnEventAsTheGeneralDecoderDoes) {
    std::mt19937_64 random(29);
    TagPlugins plugins_fast, plugins_general;
    plugins_fast["_hparams_/session_start_info"] = plugins_general["_hparams_/session_start_info"] = "hparams";
    ImportedRun fast, general;
    std::string why;
    int plain = 0;
    for (int i = 0; i < 20000; ++i) {
        const int64_t steps[] = {0,
                                 1,
                                 static_cast<int64_t>(random() % 1'000'000),
                                 static_cast<int64_t>(random() >> 2),
                                 -static_cast<int64_t>(random() % 1000) - 1,
                                 std::numeric_limits<int64_t>::max()};
        const int64_t step = steps[random() % std::size(steps)];
        const size_t tag_sizes[] = {0, 1, 5, 20, 118, 119, 120, 127, 128, 200};
        std::string tag(tag_sizes[random() % std::size(tag_sizes)], 'a');
        for (char& c : tag)
            c = static_cast<char>('a' + random() % 26);
        if (random() % 50 == 0)
            tag = "_hparams_/session_start_info";
        const uint32_t value_bits = static_cast<uint32_t>(random());
        float value = 0;
        std::memcpy(&value, &value_bits, 4);
        const double wall_times[] = {0.0, 1.7e9 + static_cast<double>(random() % 100000) / 7, -5.0, std::nan("")};
        const double wall_time = wall_times[random() % std::size(wall_times)];

        ProtoWriter fields;
        const bool tag_last = random() % 10 == 0;
        if (!tag_last)
            fields.bytes(1, tag);
        fields.fixed32(2, value);
        // A third with the exact value our exporter writes beside a value a float does not hold (any bits).
        const bool with_exact = random() % 3 == 0;
        if (with_exact) {
            const uint64_t exact_bits = random();
            double exact = 0;
            std::memcpy(&exact, &exact_bits, 8);
            fields.fixed64(7747, exact);
        }
        if (tag_last)
            fields.bytes(1, tag);
        const std::string summary = ProtoWriter().bytes(1, fields.data()).take();
        ProtoWriter event;
        const bool step_first = random() % 10 == 0, with_step = step != 0 || random() % 2 == 0;
        if (step_first && with_step)
            event.varint(2, static_cast<uint64_t>(step));
        event.fixed64(1, wall_time);
        if (!step_first && with_step)
            event.varint(2, static_cast<uint64_t>(step));
        event.bytes(5, summary);
        const std::string record = event.data();
        const std::string unknown_after = ProtoWriter(event).varint(15, 1).take();

        ASSERT_TRUE(decode_event(record, fast, plugins_fast, why, 0, 0)) << why;
        ASSERT_TRUE(decode_event(unknown_after, general, plugins_general, why, 0, 0)) << why;
        // The byte-matched path takes exactly the events laid out as writers lay them out (not the placeholder).
        const bool laid_out_plainly = !(step_first && with_step) && !tag_last && step >= 0 &&
                                      tag.size() < (with_exact ? 108u : 119u) && tag != "_hparams_/session_start_info";
        ImportedRun scratch;
        ASSERT_EQ(decode_plain_scalar(record, scratch, plugins_fast), laid_out_plainly) << "event " << i;
        plain += laid_out_plainly ? 1 : 0;
        if (i % 1000 == 999) {
            ASSERT_EQ(what_run_holds(fast), what_run_holds(general)) << "after event " << i;
        }
    }
    EXPECT_EQ(what_run_holds(fast), what_run_holds(general));
    EXPECT_GT(fast.scalars.size(), 1000u);
    EXPECT_GT(plain, 5000) << "a third of the events are laid out as writers lay them out";
}

TEST(TfEvents, Tf2TensorSummariesAsScalarsHistogramsAndImages) {
    TempDir dir;
    std::string file = encode_file_version_event(1700000000.0);
    const float f = 0.25f;
    const double d = -1.5;
    // tensor_content of one float; float_val; double_val; half_val (0x3C00 = 1.0); an int64 value.
    file += tensor_value_event(
        "t/content", 1,
        ProtoWriter().varint(1, 1).bytes(2, "").bytes(4, std::string(reinterpret_cast<const char*>(&f), 4)).data(),
        "scalars");
    file += tensor_value_event("t/float_val", 2, ProtoWriter().varint(1, 1).bytes(2, "").fixed32(5, 3.5f).data());
    file += tensor_value_event(
        "t/double", 3,
        ProtoWriter().varint(1, 2).bytes(2, "").bytes(4, std::string(reinterpret_cast<const char*>(&d), 8)).data());
    file += tensor_value_event("t/double_val", 4, ProtoWriter().varint(1, 2).fixed64(6, 6.25).data());
    file += tensor_value_event("t/half", 5, ProtoWriter().varint(1, 19).varint(13, 0x3C00).data());
    file += tensor_value_event("t/int64", 6, ProtoWriter().varint(1, 9).varint(10, 42).data());
    // Metadata on the first value of a tag only: the second value of t/content is read by the plugin it named.
    file += tensor_value_event("t/content", 7, ProtoWriter().varint(1, 1).fixed32(5, 0.5f).data());
    // A histograms-plugin tensor: rows of (left, right, count).
    std::string rows;
    for (double v : {0.0, 1.0, 3.0, 1.0, 2.0, 5.0})
        rows.append(reinterpret_cast<const char*>(&v), 8);
    file += tensor_value_event("h", 8, ProtoWriter().varint(1, 2).bytes(2, shape({2, 3})).bytes(4, rows).data(),
                               "histograms");
    // An images-plugin tensor: width, height, two encoded images.
    file += tensor_value_event("img", 9,
                               ProtoWriter()
                                   .varint(1, 7)
                                   .bytes(2, shape({4}))
                                   .bytes(8, "28")
                                   .bytes(8, "14")
                                   .bytes(8, "PNG1")
                                   .bytes(8, "PNG22")
                                   .data(),
                               "images");
    // A text-plugin string tensor is no scalar: counted.
    file += tensor_value_event("notes", 10, ProtoWriter().varint(1, 7).bytes(8, "hello").data(), "text");
    // A vector tensor with no plugin is no scalar either.
    file += tensor_value_event("vec", 11,
                               ProtoWriter().varint(1, 1).bytes(2, shape({2})).fixed32(5, 1).fixed32(5, 2).data());
    spill(dir.file("events.out.tfevents.1.tf2"), file);

    const ImportedRun run = only_run(dir.path);
    EXPECT_EQ(run.records, 12);
    ASSERT_EQ(series(run, "t/content").size(), 2u);
    EXPECT_EQ(series(run, "t/content")[0].value, 0.25);
    EXPECT_EQ(series(run, "t/content")[1].value, 0.5);
    EXPECT_EQ(series(run, "t/float_val").at(0).value, 3.5);
    EXPECT_EQ(series(run, "t/double").at(0).value, -1.5);
    EXPECT_EQ(series(run, "t/double_val").at(0).value, 6.25);
    EXPECT_EQ(series(run, "t/half").at(0).value, 1.0);
    EXPECT_EQ(series(run, "t/int64").at(0).value, 42.0);
    EXPECT_EQ(series(run, "t/double").at(0).step, 3);
    EXPECT_DOUBLE_EQ(series(run, "t/double").at(0).wall_time, 1700000003.0);
    const auto& h = run.histograms.at("h").at(0);
    EXPECT_EQ(h.step, 8);
    EXPECT_EQ(h.bucket_limit, (std::vector<double>{1.0, 2.0}));
    EXPECT_EQ(h.bucket_count, (std::vector<double>{3.0, 5.0}));
    EXPECT_EQ(h.num, 8.0);
    EXPECT_EQ(h.min, 0.0);
    EXPECT_EQ(h.max, 2.0);
    const auto& images = run.images.at("img");
    ASSERT_EQ(images.size(), 2u);
    EXPECT_EQ(images[0].width, 28);
    EXPECT_EQ(images[0].height, 14);
    EXPECT_EQ(images[0].encoded_bytes, 4u);
    EXPECT_EQ(images[1].encoded_bytes, 5u);
    EXPECT_EQ(run.other_records.at("plugin:text"), 1);
    EXPECT_EQ(run.other_records.at("tensor"), 1);
    EXPECT_EQ(run.scalars.count("vec"), 0u);
}

TEST(TfEvents, TheExportersFileReadsBackPointForPointWithItsConfig) {
    TempDir dir;
    ImportedRun run;
    run.config = {{"lr", 0.001}, {"optimizer", "adamw"}, {"layers", 4}, {"warmup", true}};
    run.started = 1700000000.0;
    // Out of order across tags, a repeated step, a negative step, NaN and infinity: all as they were.
    run.scalars["train/loss"] = {
        {1, 2.5, 1700000001.0}, {2, 2.0, 1700000002.0}, {2, 1.75, 1700000003.0}, {3, NAN, 1700000004.0}};
    run.scalars["val/accuracy"] = {{-1, 0.5, 1700000000.5}, {3, INFINITY, 1700000004.0}};
    // Values a float does not hold: written as double tensors, read back bit for bit (they were cut to floats).
    run.scalars["train/lr"] = {{1, 0.1, 1700000001.0},
                               {2, 1.0 / 3, 1700000002.0},
                               {3, 1e300, 1700000004.0},
                               {4, -4.9e-324, 1700000005.0},
                               {5, 0.25, 1700000006.0}};
    auto path = write_tensorboard_scalars(dir.file("logdir/run-a"), run);
    ASSERT_TRUE(path) << path.error();
    EXPECT_TRUE(is_event_file_name(std::filesystem::path(*path).filename().string()));

    // What TensorBoard reads: simple_value, the nearest float (also for 1e300: infinity); the exact bits ride in a
    // field of TrainDeck's own, which other readers skip.
    const std::string bytes = read_file(*path);
    std::vector<std::pair<float, double>> lr_values;
    std::vector<Damage> damage;
    scan_tfrecords(
        bytes, *path,
        [&](uint64_t, std::string_view event) {
            ProtoReader reader(event);
            ProtoField f;
            while (reader.next(f))
                if (f.number == 5) {
                    ProtoReader list(f.bytes);
                    ProtoField v;
                    while (list.next(v)) {
                        ProtoReader fields(v.bytes);
                        ProtoField g;
                        std::string_view tag;
                        float shown = 0;
                        double exact = NAN;
                        while (fields.next(g)) {
                            if (g.number == 1)
                                tag = g.bytes;
                            else if (g.number == 2)
                                shown = g.as_float();
                            else if (g.type == WireType::fixed64)
                                exact = g.as_double();
                        }
                        if (tag == "train/lr")
                            lr_values.emplace_back(shown, exact);
                    }
                }
        },
        damage);
    EXPECT_TRUE(damage.empty());
    ASSERT_EQ(lr_values.size(), 5u);
    EXPECT_EQ(lr_values[0].first, 0.1f);
    EXPECT_EQ(lr_values[0].second, 0.1);
    EXPECT_EQ(lr_values[2].first, std::numeric_limits<float>::infinity());
    EXPECT_EQ(lr_values[2].second, 1e300);
    EXPECT_EQ(lr_values[4].first, 0.25f);
    EXPECT_TRUE(std::isnan(lr_values[4].second)) << "a float-exact value goes out as simple_value alone";

    auto back = read_tensorboard_logdir(dir.file("logdir"));
    ASSERT_TRUE(back) << back.error();
    ASSERT_EQ(back->size(), 1u);
    const ImportedRun& read = back->front();
    EXPECT_EQ(read.name, "run-a");
    EXPECT_TRUE(read.damage.empty());
    EXPECT_EQ(read.tool, "traindeck");
    for (const auto& [tag, points] : run.scalars) {
        const auto& got = series(read, tag);
        ASSERT_EQ(got.size(), points.size()) << tag;
        for (size_t i = 0; i < points.size(); ++i) {
            EXPECT_EQ(got[i].step, points[i].step) << tag << " " << i;
            if (std::isnan(points[i].value))
                EXPECT_TRUE(std::isnan(got[i].value));
            else
                EXPECT_EQ(got[i].value, points[i].value) << tag << " " << i;
            EXPECT_DOUBLE_EQ(got[i].wall_time, points[i].wall_time);
        }
    }
    EXPECT_DOUBLE_EQ(read.config.at("lr").get<double>(), 0.001);
    EXPECT_EQ(read.config.at("optimizer"), "adamw");
    EXPECT_DOUBLE_EQ(read.config.at("layers").get<double>(), 4);
    EXPECT_EQ(read.config.at("warmup"), true);
    // The exporter never leaves a temp file beside its file, and a second export in the same second is a file of its
    // own (the folder is then one run of both files, as TensorBoard reads it).
    EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir.file("logdir/run-a")), {}), 1);
    auto second = write_tensorboard_scalars(dir.file("logdir/run-a"), run);
    ASSERT_TRUE(second) << second.error();
    EXPECT_NE(*second, *path);
    EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir.file("logdir/run-a")), {}), 2);
}

namespace {

std::string legacy_image_event(const std::string& tag, int64_t step, const std::string& encoded) {
    const std::string image = ProtoWriter().varint(1, 3).varint(2, 5).varint(3, 3).bytes(4, encoded).take();
    const std::string value = ProtoWriter().bytes(1, tag).bytes(4, image).take();
    ProtoWriter event;
    event.fixed64(1, 1700000000.0 + static_cast<double>(step)).varint(2, static_cast<uint64_t>(step));
    event.bytes(5, ProtoWriter().bytes(1, value).data());
    return tfrecord_frame(event.data());
}

} // namespace

TEST(TfEvents, AnImageIsReadAgainFromWhereTheImportFoundItAndAChangedSourceSaysSo) {
    TempDir dir;
    // A legacy Summary.Image at steps 1 and 2 (its own bytes each), between scalars, and a TF2 images tensor of two.
    std::string file = encode_file_version_event(1700000000.0);
    file += encode_scalar_event("loss", 1, 0.5f, 1700000001.0);
    file += legacy_image_event("samples", 1, "first image's bytes");
    file += encode_scalar_event("loss", 2, 0.25f, 1700000002.0);
    file += legacy_image_event("samples", 2, std::string("\x89PNG second\0bytes", 17));
    file += tensor_value_event("tf2", 3,
                               ProtoWriter()
                                   .varint(1, 7)
                                   .bytes(2, shape({4}))
                                   .bytes(8, "8")
                                   .bytes(8, "6")
                                   .bytes(8, "tf2 zero")
                                   .bytes(8, "tf2 one!")
                                   .data(),
                               "images");
    // Its later value names no plugin: it is an image by the tag's first.
    file += tensor_value_event("tf2", 4,
                               ProtoWriter().varint(1, 7).bytes(8, "8").bytes(8, "6").bytes(8, "tf2 later").data());
    const std::string first_file = dir.file("events.out.tfevents.1.a"),
                      second_file = dir.file("events.out.tfevents.2.b");
    spill(first_file, encode_file_version_event(1700000000.0)); // a first file of the run, no images in it
    spill(second_file, file);

    const ImportedRun run = only_run(dir.path);
    ASSERT_EQ(run.files.size(), 2u);
    const auto& samples = run.images.at("samples");
    const auto& tf2 = run.images.at("tf2");
    ASSERT_EQ(samples.size(), 2u);
    ASSERT_EQ(tf2.size(), 3u);
    const auto read = [&](const std::string& tag, const ImagePoint& image) {
        return read_tensorboard_image(run.files.at(image.file), image.record_offset, tag, image.item, image.step);
    };
    EXPECT_EQ(run.files.at(samples[0].file), second_file);
    EXPECT_EQ(samples[0].width, 5);
    EXPECT_EQ(samples[0].height, 3);
    EXPECT_EQ(*read("samples", samples[0]), "first image's bytes");
    EXPECT_EQ(*read("samples", samples[1]), std::string("\x89PNG second\0bytes", 17));
    EXPECT_EQ(tf2[0].item, 0);
    EXPECT_EQ(tf2[1].item, 1);
    EXPECT_EQ(tf2[0].record_offset, tf2[1].record_offset);
    EXPECT_EQ(*read("tf2", tf2[0]), "tf2 zero");
    EXPECT_EQ(*read("tf2", tf2[1]), "tf2 one!");
    EXPECT_EQ(*read("tf2", tf2[2]), "tf2 later");

    // Asked for what is not there: another tag, another item, another step.
    EXPECT_NE(
        read_tensorboard_image(second_file, samples[0].record_offset, "other", 0, 1).error().find("holds no image"),
        std::string::npos);
    EXPECT_FALSE(read_tensorboard_image(second_file, tf2[0].record_offset, "tf2", 2, 3));
    EXPECT_NE(read_tensorboard_image(second_file, samples[0].record_offset, "samples", 0, 2).error().find("step 2"),
              std::string::npos);
    // An offset inside a record is not a record's start.
    const auto inside = read_tensorboard_image(second_file, samples[0].record_offset + 5, "samples", 0, 1);
    ASSERT_FALSE(inside);
    EXPECT_NE(inside.error().find("not a record's start"), std::string::npos) << inside.error();

    // The source changed since: a byte of the second image flipped (its data CRC fails), the file cut short, gone.
    std::string flipped = file;
    const size_t at = flipped.find("PNG second");
    ASSERT_NE(at, std::string::npos);
    flipped[at] = 'X';
    spill(second_file, flipped);
    EXPECT_EQ(*read("samples", samples[0]), "first image's bytes"); // the other record is whole
    const auto damaged = read("samples", samples[1]);
    ASSERT_FALSE(damaged);
    EXPECT_NE(damaged.error().find("CRC"), std::string::npos) << damaged.error();
    EXPECT_NE(damaged.error().find("delete the run and import it again"), std::string::npos) << damaged.error();
    spill(second_file, file.substr(0, samples[1].record_offset + 20));
    const auto cut = read("samples", samples[1]);
    ASSERT_FALSE(cut);
    EXPECT_NE(cut.error().find("ends inside"), std::string::npos) << cut.error();
    std::filesystem::remove(second_file);
    const auto gone = read("samples", samples[0]);
    ASSERT_FALSE(gone);
    EXPECT_NE(gone.error().find("cannot read " + second_file), std::string::npos) << gone.error();
}
