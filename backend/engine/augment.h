#pragma once
// Augmentation of image samples on the fly, from a generator the caller seeds per sample (the trainer: from the
// seed, the epoch and the sample's place in the epoch), so a resumed run draws exactly what an unbroken one drew.
// Works on a normalised float sample (HWC row): pixels outside the image are black (raw 0), and brightness and
// contrast act on the raw [0, 1] values, as torchvision's transforms do before Normalize.
#include "dataset.h"
#include "rng.h"

#include <vector>

namespace traindeck::engine {

struct AugmentSpec {
    int crop_padding = 0;    // random crop of the image padded by this many pixels on each side (a shift of ±padding)
    bool hflip = false;      // mirror left-right with probability 1/2
    float rotate = 0.0f;     // rotation by up to ± this many degrees (bilinear)
    float translate = 0.0f;  // shift by up to ± this fraction of the width and height (whole pixels)
    float brightness = 0.0f; // raw values times a factor in [1 - b, 1 + b]
    float contrast = 0.0f;   // raw values blended with the image's mean by a factor in [1 - c, 1 + c]
    bool any() const {
        return crop_padding > 0 || hflip || rotate > 0.0f || translate > 0.0f || brightness > 0.0f || contrast > 0.0f;
    }
};

// row: height x width x channels floats, normalised by norm (empty: raw [0, 1] values). scratch: reused storage.
void augment_sample(float* row, int height, int width, int channels, const AugmentSpec& spec, const Normalization& norm,
                    Rng& rng, std::vector<float>& scratch);

} // namespace traindeck::engine
