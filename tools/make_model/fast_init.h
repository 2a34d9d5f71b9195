// make-model's --fast-init fill: every tensor drawn on all cores from counter-based streams, so
// that an 8B-parameter checkpoint is written in seconds rather than minutes.
#pragma once

#include <cstdint>
#include <vector>

#include "common/checkpoint/checkpoint_writer.h"
#include "tools/make_model/make_model.h"

namespace unmask::tools {

// Values per chunk of a tensor. Fixed, so that the bytes never depend on the thread count.
constexpr std::size_t kFastInitChunk = std::size_t{1} << 20;

// The filler of MakeModelOptions::fast_init for `specs` (the full list, in order: a tensor's
// index in it keys its streams). Chunk c of tensor t draws from a splitmix64 stream keyed by
// (o.seed, t, c); each 64-bit draw gives two normals (Box-Muller, mean 0, std o.init_std).
// 1-D tensors (norm weights) are 1.0 and the LM head rows of ids >= o.active_vocab are 0.
checkpoint::TensorFiller MakeFastFiller(const MakeModelOptions& o, const std::vector<checkpoint::TensorSpec>& specs);

}  // namespace unmask::tools
