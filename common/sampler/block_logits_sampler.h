// block_logits: the reference algorithm with logits computed only where they are read.
//
// Changes relative to the reference (reference_sampler.h), and nothing else:
//  - Every step still runs the transformer over the whole sequence (same Hidden()), but ln_f, the
//    LM head, classifier-free guidance, the EOS switches, the Gumbel noise and the softmax are
//    computed only for the rows of the current block: the reference computes [B, L, V] logits per
//    step and reads only block rows (positions outside the block are never unmasked). With a
//    126k vocabulary the LM head is most of a small model's step.
//  - temperature 0: the output and the per-step unmasking order equal the reference's (the
//    confidence of the block rows is the same; the top-k runs over a full-length [B, L] row with
//    -inf outside the block, as in the reference, so ties break the same way; random remasking
//    still draws the reference's uniform [B, L] and reads the block part, so the generator stream
//    is the same). Floating-point caveat: the LM head is a matmul over fewer rows, which a BLAS
//    may round differently in the last bit; this has not changed an output on the golden cases.
//  - temperature > 0: the Gumbel noise is drawn only for the block rows ([B, block_length, V]
//    instead of [B, L, V]), so the generator stream differs from the reference's and a seeded
//    run samples different (equally distributed) tokens. Random remasking then also draws from
//    a different point of the stream.
// Plus, as for every fast mode, the options of fast_sampler.h (decoding rule, early stop).
#pragma once

#include <memory>

#include "common/sampler/block_forward.h"

namespace unmask::sampler {

std::unique_ptr<BlockForward> MakeBlockLogitsForward();

}  // namespace unmask::sampler
