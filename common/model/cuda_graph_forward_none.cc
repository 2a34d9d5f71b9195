// GraphedForward in a build whose LibTorch has no CUDA: nothing is ever captured.
#include "common/model/cuda_graph_forward.h"

namespace unmask::model {

bool GraphedForward::Available() { return false; }

std::unique_ptr<GraphedForward> GraphedForward::Make(const LladaModel&) { return nullptr; }

}  // namespace unmask::model
