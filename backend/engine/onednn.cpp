#include "onednn.h"

#include "parallel.h"

#include <oneapi/dnnl/dnnl.hpp>
#include <omp.h>

#include <algorithm>
#include <array>
#include <exception>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace traindeck::engine::onednn {
namespace {

using dnnl::memory;
using Tag = memory::format_tag;
constexpr auto kF32 = memory::data_type::f32;

dnnl::engine& cpu() {
    static dnnl::engine engine(dnnl::engine::kind::cpu, 0);
    return engine;
}

// oneDNN sizes its OpenMP team from the calling thread's setting: each engine thread runs its share alone.
void hold_to_one_thread() {
    thread_local bool held = false;
    if (!held) {
        omp_set_num_threads(1);
        held = true;
    }
}

// The descriptions of one convolution over `batch` samples, in the engine's layouts.
struct Shapes {
    memory::desc src, dst, weights, bias;
    memory::dims strides, padding;
};

Shapes shapes_of(const Conv2dShape& s, int batch) {
    return {memory::desc({batch, s.in_c, s.in_h, s.in_w}, kF32, Tag::nhwc),
            memory::desc({batch, s.out_c, s.out_h(), s.out_w()}, kF32, Tag::nhwc),
            memory::desc({s.out_c, s.in_c, s.kernel, s.kernel}, kF32, Tag::ohwi),
            memory::desc({s.out_c}, kF32, Tag::a),
            {s.stride, s.stride},
            {s.pad, s.pad}};
}

// Every primitive brings its own scratchpad (oneDNN's default keeps one per creating thread, and a primitive could
// then only run on the thread that made it; the engine's shares move between threads as batches and thread counts
// change), and computes in strict fp32 whatever ONEDNN_DEFAULT_FPMATH_MODE says.
dnnl::primitive_attr attributes() {
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    attr.set_fpmath_mode(dnnl::fpmath_mode::strict);
    return attr;
}

// A primitive with its scratchpad.
template <typename Primitive>
struct Step {
    Primitive primitive;
    memory scratchpad;

    template <typename Pd>
    explicit Step(const Pd& pd) : primitive(pd), scratchpad(pd.scratchpad_desc(), cpu()) {}
    Step() = default;

    void run(dnnl::stream& stream, std::unordered_map<int, memory> args) {
        args.insert({DNNL_ARG_SCRATCHPAD, scratchpad});
        primitive.execute(stream, args);
    }
};

// One convolution's primitives for a share of the batch; a share's Kernels run on one thread at a time (whichever).
// The weights go to each kernel in the layout it asked for (format any), and its weight gradient comes back to ours.
struct Kernels {
    Shapes shapes;
    dnnl::convolution_forward::primitive_desc forward_pd;
    dnnl::convolution_backward_data::primitive_desc data_pd;
    dnnl::convolution_backward_weights::primitive_desc weights_pd;
    Step<dnnl::convolution_forward> forward;
    Step<dnnl::convolution_backward_data> data;
    Step<dnnl::convolution_backward_weights> weights;
    Step<dnnl::reorder> to_forward, to_data, from_diff;
    memory forward_weights, data_weights, diff_weights;
    dnnl::stream stream;
    std::vector<float> dweight, dbias; // this share's gradients, in the engine's layout

    Kernels(const Conv2dShape& s, int batch) : shapes(shapes_of(s, batch)) {
        const memory::desc any({s.out_c, s.in_c, s.kernel, s.kernel}, kF32, Tag::any);
        const auto& d = shapes;
        const dnnl::primitive_attr attr = attributes();
        forward_pd = dnnl::convolution_forward::primitive_desc(
            dnnl::convolution_forward::desc(dnnl::prop_kind::forward_training, dnnl::algorithm::convolution_direct,
                                            d.src, any, d.bias, d.dst, d.strides, d.padding, d.padding),
            attr, cpu());
        data_pd = dnnl::convolution_backward_data::primitive_desc(
            dnnl::convolution_backward_data::desc(dnnl::algorithm::convolution_direct, d.src, any, d.dst, d.strides,
                                                  d.padding, d.padding),
            attr, cpu(), forward_pd);
        weights_pd = dnnl::convolution_backward_weights::primitive_desc(
            dnnl::convolution_backward_weights::desc(dnnl::algorithm::convolution_direct, d.src, any, d.bias, d.dst,
                                                     d.strides, d.padding, d.padding),
            attr, cpu(), forward_pd);
        forward = Step<dnnl::convolution_forward>(forward_pd);
        data = Step<dnnl::convolution_backward_data>(data_pd);
        weights = Step<dnnl::convolution_backward_weights>(weights_pd);
        to_forward = Step<dnnl::reorder>(
            dnnl::reorder::primitive_desc(cpu(), d.weights, cpu(), forward_pd.weights_desc(), attr));
        to_data =
            Step<dnnl::reorder>(dnnl::reorder::primitive_desc(cpu(), d.weights, cpu(), data_pd.weights_desc(), attr));
        from_diff = Step<dnnl::reorder>(
            dnnl::reorder::primitive_desc(cpu(), weights_pd.diff_weights_desc(), cpu(), d.weights, attr));
        forward_weights = memory(forward_pd.weights_desc(), cpu());
        data_weights = memory(data_pd.weights_desc(), cpu());
        diff_weights = memory(weights_pd.diff_weights_desc(), cpu());
        stream = dnnl::stream(cpu());
        dweight.assign(static_cast<size_t>(s.out_c) * s.patch(), 0.0f);
        dbias.assign(s.out_c, 0.0f);
    }

    bool all_jit() const {
        for (const char* name : {forward_pd.impl_info_str(), data_pd.impl_info_str(), weights_pd.impl_info_str()})
            if (std::string(name).rfind("ref", 0) == 0)
                return false;
        return true;
    }

    memory at(const memory::desc& desc, const float* data) const {
        return memory(desc, cpu(), const_cast<float*>(data)); // oneDNN's handles are not const; inputs are only read
    }

    void reorder(Step<dnnl::reorder>& step, const memory& from, const memory& to) {
        step.run(stream, {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}});
    }
};

using Key = std::array<int, 9>;

Key key_of(const Conv2dShape& s, int batch, int share) {
    return {batch, s.in_h, s.in_w, s.in_c, s.out_c, s.kernel, s.stride, s.pad, share};
}

std::mutex g_mutex;
std::map<Key, std::unique_ptr<Kernels>> g_kernels;
std::map<Key, std::string> g_names; // per shape (batch 1, share 0): the forward kernel's name, "" when not all JIT

// Made on the calling thread, before any share runs: a failure to make one is an exception there, not in the pool.
Kernels& kernels(const Conv2dShape& s, int batch, int share) {
    hold_to_one_thread(); // oneDNN picks its kernels for the thread count it will run with
    std::lock_guard lock(g_mutex);
    auto& slot = g_kernels[key_of(s, batch, share)];
    if (!slot)
        slot = std::make_unique<Kernels>(s, batch);
    return *slot;
}

const std::string& name_of(const Conv2dShape& s) {
    hold_to_one_thread();
    std::lock_guard lock(g_mutex);
    const Key key = key_of(s, 1, 0);
    if (auto found = g_names.find(key); found != g_names.end())
        return found->second;
    std::string name;
    try {
        const Kernels probe(s, 1);
        if (probe.all_jit())
            name = probe.forward_pd.impl_info_str();
    } catch (const dnnl::error&) {
        // no oneDNN kernel for this shape at all: the engine's own path runs it
    }
    return g_names[key] = name;
}

bool enabled() {
    static const bool on = [] {
        const char* setting = std::getenv("TRAINDECK_ONEDNN");
        return !setting || std::strcmp(setting, "0") != 0;
    }();
    return on;
}

// The batch's shares: as many as threads, each a contiguous run of samples (a fixed split).
struct Share {
    int first = 0, count = 0;
};

Share share_of(int batch, int shares, size_t index) {
    const int first = static_cast<int>(static_cast<size_t>(batch) * index / shares);
    const int last = static_cast<int>(static_cast<size_t>(batch) * (index + 1) / shares);
    return {first, last - first};
}

int shares_for(int batch) { return std::max(1, std::min(parallel_threads(), batch)); }

// Each share's Kernels, made on the calling thread.
std::vector<Kernels*> prepare(const Conv2dShape& s, int shares) {
    std::vector<Kernels*> all(shares);
    for (int index = 0; index < shares; ++index)
        all[index] = &kernels(s, share_of(s.batch, shares, index).count, index);
    return all;
}

// Runs body(share index, its Kernels) for every share on the engine's threads; an exception in any share (oneDNN
// out of memory, say) is thrown again here once every share has ended, never inside the pool.
template <typename Body>
void run_shares(const Conv2dShape& s, Body&& body) {
    const int shares = shares_for(s.batch);
    const std::vector<Kernels*> all = prepare(s, shares);
    std::vector<std::exception_ptr> failures(shares);
    parallel_for(shares, [&](size_t first, size_t last) {
        hold_to_one_thread();
        for (size_t index = first; index < last; ++index) {
            try {
                body(share_of(s.batch, shares, index), *all[index]);
            } catch (...) {
                failures[index] = std::current_exception();
            }
        }
    });
    for (const std::exception_ptr& failure : failures)
        if (failure)
            std::rethrow_exception(failure);
}

} // namespace

bool runs(const Conv2dShape& s) { return enabled() && !name_of(s).empty(); }

std::string kernel_name(const Conv2dShape& s) {
    if (!runs(s))
        return {};
    const int shares = shares_for(s.batch);
    return kernels(s, share_of(s.batch, shares, 0).count, 0).forward_pd.impl_info_str();
}

std::string description() {
    const dnnl_version_t* version = dnnl_version();
    std::string text = "oneDNN " + std::to_string(version->major) + "." + std::to_string(version->minor) + "." +
                       std::to_string(version->patch);
    if (!enabled())
        return text + " (turned off: TRAINDECK_ONEDNN=0)";
    const char* isa = "unknown";
    switch (dnnl_get_effective_cpu_isa()) {
    case dnnl_cpu_isa_sse41:
        isa = "sse41";
        break;
    case dnnl_cpu_isa_avx:
        isa = "avx";
        break;
    case dnnl_cpu_isa_avx2:
        isa = "avx2";
        break;
    case dnnl_cpu_isa_avx2_vnni:
        isa = "avx2_vnni";
        break;
    case dnnl_cpu_isa_avx512_mic:
        isa = "avx512_mic";
        break;
    case dnnl_cpu_isa_avx512_mic_4ops:
        isa = "avx512_mic_4ops";
        break;
    case dnnl_cpu_isa_avx512_core:
        isa = "avx512_core";
        break;
    case dnnl_cpu_isa_avx512_core_vnni:
        isa = "avx512_core_vnni";
        break;
    case dnnl_cpu_isa_avx512_core_bf16:
        isa = "avx512_core_bf16";
        break;
    case dnnl_cpu_isa_avx512_core_amx:
        isa = "avx512_core_amx";
        break;
    default:
        break;
    }
    return text + " (" + isa + " kernels)";
}

void conv2d_forward(float* y, const float* x, const float* weight, const float* bias, const Conv2dShape& s) {
    const size_t in_sample = static_cast<size_t>(s.in_h) * s.in_w * s.in_c;
    const size_t out_sample = static_cast<size_t>(s.out_h()) * s.out_w() * s.out_c;
    run_shares(s, [&](Share share, Kernels& k) {
        k.reorder(k.to_forward, k.at(k.shapes.weights, weight), k.forward_weights);
        k.forward.run(k.stream, {{DNNL_ARG_SRC, k.at(k.shapes.src, x + share.first * in_sample)},
                                 {DNNL_ARG_WEIGHTS, k.forward_weights},
                                 {DNNL_ARG_BIAS, k.at(k.shapes.bias, bias)},
                                 {DNNL_ARG_DST, k.at(k.shapes.dst, y + share.first * out_sample)}});
        k.stream.wait();
    });
}

void conv2d_backward(float* dx, float* dweight, float* dbias, const float* dy, const float* x, const float* weight,
                     const Conv2dShape& s) {
    const size_t in_sample = static_cast<size_t>(s.in_h) * s.in_w * s.in_c;
    const size_t out_sample = static_cast<size_t>(s.out_h()) * s.out_w() * s.out_c;
    run_shares(s, [&](Share share, Kernels& k) {
        const memory diff_dst = k.at(k.shapes.dst, dy + share.first * out_sample);
        k.weights.run(k.stream, {{DNNL_ARG_SRC, k.at(k.shapes.src, x + share.first * in_sample)},
                                 {DNNL_ARG_DIFF_DST, diff_dst},
                                 {DNNL_ARG_DIFF_WEIGHTS, k.diff_weights},
                                 {DNNL_ARG_DIFF_BIAS, k.at(k.shapes.bias, k.dbias.data())}});
        k.reorder(k.from_diff, k.diff_weights, k.at(k.shapes.weights, k.dweight.data()));
        if (dx) {
            k.reorder(k.to_data, k.at(k.shapes.weights, weight), k.data_weights);
            k.data.run(k.stream, {{DNNL_ARG_DIFF_SRC, k.at(k.shapes.src, dx + share.first * in_sample)},
                                  {DNNL_ARG_WEIGHTS, k.data_weights},
                                  {DNNL_ARG_DIFF_DST, diff_dst}});
        }
        k.stream.wait();
    });
    // The shares' gradients join the accumulated ones in share order: the same sums every run.
    const int shares = shares_for(s.batch);
    for (int index = 0; index < shares; ++index) {
        const Kernels& k = kernels(s, share_of(s.batch, shares, index).count, index);
        for (size_t i = 0; i < k.dweight.size(); ++i)
            dweight[i] += k.dweight[i];
        for (size_t i = 0; i < k.dbias.size(); ++i)
            dbias[i] += k.dbias[i];
    }
}

} // namespace traindeck::engine::onednn
