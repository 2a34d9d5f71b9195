// One measured generation in a child process: the parent never touches LibTorch before forking,
// so each child starts from the same clean heap.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "common/fitting/clamp.h"

namespace unmask::bench::memory {

// Forks; the child loads the checkpoint at `dir`, touches every weight page, runs a one-token
// warm-up generation (math-library buffers and thread pools are not activations), resets its
// peak RSS and runs `r` (the last `suffix` of its prompt_length tokens an infilling suffix), stopped
// after `steps_run` steps (< 1: run to the end). With mmap_threshold 0 the child sets glibc's malloc
// as the executor does (model::ConfigureAllocator), with mmap_threshold > 0 it fixes glibc's
// M_MMAP_THRESHOLD alone. Returns loaded_rss, baseline_rss, peak_rss, hwm_reset, measured (peak -
// baseline), steps, seconds and allocator (the settings' line), or {"error"}.
nlohmann::json RunInChild(const std::string& dir, const fitting::GenerationRequest& r, std::int64_t suffix, int steps_run,
                          long mmap_threshold);

}  // namespace unmask::bench::memory
