// GenerationParams to and from the wire (unmask.v1.GenerationParams): the one conversion every
// gRPC door uses (the scheduler's API, the executor's Run, the HTTP adapter after its JSON).
#pragma once

#include "common/generation/params.h"
#include "common/util/status.h"
#include "unmask/v1/generation.pb.h"

namespace unmask::generation {

// An empty sampler is `default_sampler` (a door that knows the model passes DefaultSampler(config));
// the lengths left unset get that mode's defaults (ResolveLengths); threshold, factor,
// minimal_topk or top_p 0 and an unset early_stop mean the defaults (ResolveThreshold: llada2's
// is 0.95). Every field is then validated (ValidateFields): an error's detail names
// "params.<field>". The model's token ids are not on the wire: WithModelTokens sets them.
StatusOr<GenerationParams> ParamsFromProto(const v1::GenerationParams& proto,
                                           SamplerMode default_sampler = SamplerMode::kReference);

// What ParamsFromProto refuses whichever model the request goes to, for a door that checks before
// it knows the model: an empty sampler passes when the fields are valid for either default
// (reference, llada2, llada21 or dream); the model's own default is judged later. The error is
// llada21's when the request sets one of its editing options, dream's when it sets alg, alg_temp
// or eps, llada2's when it sets a block-diffusion option, else the reference's.
Status CheckParamsProto(const v1::GenerationParams& proto);

// Every field set, as it will run (ParamsFromProto of the result gives `params` back, token ids
// aside).
v1::GenerationParams ParamsToProto(const GenerationParams& params);

// `status` with its field (and the field at the head of its message) under `prefix`:
// "steps: must ..." becomes "params.steps: must ...". Errors without a field are unchanged.
Status UnderField(const std::string& prefix, const Status& status);

}  // namespace unmask::generation
