// The moving parts of Clamp (clamp.h): the request being clamped with its adjustments, and the
// levers the extreme policy pulls. Internal to common/fitting; the behaviour is documented in
// clamp.h.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/fitting/clamp.h"
#include "common/fitting/clamp_lengths.h"

namespace unmask::fitting {

class Clamper {
 public:
  // `asked` must have passed Clamp's validation.
  Clamper(const checkpoint::LladaConfig& config, std::uint64_t budget, std::uint64_t weights, const GenerationRequest& asked)
      : config_(config), budget_(budget), weights_(weights), asked_(asked), r_(asked) {}

  MemoryEstimate Estimate(const GenerationRequest& r) const;
  bool Fits(const GenerationRequest& r) const { return Estimate(r).total() <= budget_; }
  bool Fits() const { return Fits(r_); }
  // "needs 9.1 GiB (weights 4.2 GiB + peak 4.9 GiB in phase softmax), the budget is 8.0 GiB"
  std::string Needs(const GenerationRequest& r) const;

  GenerationRequest& request() { return r_; }
  const GenerationRequest& asked() const { return asked_; }
  std::uint64_t budget() const { return budget_; }
  const std::vector<Adjustment>& adjustments() const { return adjustments_; }

  // Records a change of `field`; a field changed twice keeps one entry (asked = what was asked,
  // the reasons joined). Drop removes the entry of a field set back to what was asked.
  void Record(const std::string& field, const std::string& asked, const std::string& applied, const std::string& why);
  void Drop(const std::string& field);

  // Applies and reports new lengths; steps are settled by FinishSteps once, at the end.
  void SetLengths(const Lengths& lengths, const std::string& why_gen, const std::string& why_block);
  // Keeps the asked steps per generated token, as a multiple of the number of blocks, in
  // [num_blocks, gen_length]; nothing when gen_length and block_length are as asked.
  void FinishSteps();

 private:
  const checkpoint::LladaConfig& config_;
  std::uint64_t budget_, weights_;
  GenerationRequest asked_, r_;
  std::vector<Adjustment> adjustments_;
};

// extreme, each only while the request does not fit and only when it lowers the peak:
// the largest power-of-two query chunk that fits (else the smallest, 16).
void ChunkLever(Clamper& c);
// dual_cache with the asked decoding rule when it fits, else the block_logits kind.
void SamplerLever(Clamper& c);
// temperature 0, then cfg_scale 0.
void NoiseAndGuidanceLevers(Clamper& c);
// When no length fits otherwise: every lever at its most frugal (chunk 16, block_logits kind,
// temperature 0, cfg 0), whether or not it lowers the peak at the current lengths.
void AllLevers(Clamper& c);
// At the end: sets back what still fits at the chosen lengths — the asked sampler (or dual_cache
// over block_logits), cfg_scale, temperature, then the largest chunk.
void Relax(Clamper& c);

}  // namespace unmask::fitting
