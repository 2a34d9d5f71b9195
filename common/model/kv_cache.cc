#include "common/model/kv_cache.h"

namespace unmask::model {

void KvCache::Clear() {
  layers.clear();
  key_bias = at::Tensor();
  batch = 0;
  length = 0;
}

std::int64_t KvCache::Bytes() const {
  std::int64_t total = 0;
  for (const auto& l : layers) {
    if (l.k.defined()) total += static_cast<std::int64_t>(l.k.nbytes());
    if (l.v.defined()) total += static_cast<std::int64_t>(l.v.nbytes());
  }
  return total;
}

}  // namespace unmask::model
