// GenerationParams to and from the wire (unmask.v1.GenerationParams): the one conversion every
// gRPC door uses (the scheduler's API, the executor's Run, the HTTP adapter after its JSON).
#pragma once

#include "common/generation/params.h"
#include "common/util/status.h"
#include "unmask/v1/generation.pb.h"

namespace unmask::generation {

// The lengths left unset get their defaults (ResolveLengths); threshold or factor 0 and an unset
// early_stop mean the defaults; an empty sampler is "reference". Every field is then validated
// (ValidateFields): an error's detail names "params.<field>". The model's token ids are not on
// the wire: WithModelTokens sets them.
StatusOr<GenerationParams> ParamsFromProto(const v1::GenerationParams& proto);

// Every field set, as it will run (ParamsFromProto of the result gives `params` back, token ids
// aside).
v1::GenerationParams ParamsToProto(const GenerationParams& params);

// `status` with its field (and the field at the head of its message) under `prefix`:
// "steps: must ..." becomes "params.steps: must ...". Errors without a field are unchanged.
Status UnderField(const std::string& prefix, const Status& status);

}  // namespace unmask::generation
