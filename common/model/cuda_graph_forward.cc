// GraphedForward with a LibTorch built with CUDA (compiled only there: UNMASK_CUDA_GRAPHS).
#include "common/model/cuda_graph_forward.h"

#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime_api.h>

#include <iostream>
#include <optional>
#include <vector>

#include "common/model/llada_model.h"

namespace unmask::model {
namespace {

// What makes two forwards the same graph: everything the plan or the capture took from the
// segment on the host (addresses, shapes, the attention chunk), never the values the device reads.
struct Key {
  bool whole = false;
  const void* ids = nullptr;
  std::vector<std::int64_t> sizes, strides;
  const void* mask = nullptr;
  const void* cache = nullptr;
  const void* cache_k = nullptr;  // layer 0's K: a refill puts new tensors into the cache
  std::int64_t cache_length = 0, offset = 0, causal_block = 0, chunk = 0, scoped_chunk = 0;

  bool operator==(const Key& o) const {
    return whole == o.whole && ids == o.ids && sizes == o.sizes && strides == o.strides && mask == o.mask &&
           cache == o.cache && cache_k == o.cache_k && cache_length == o.cache_length && offset == o.offset &&
           causal_block == o.causal_block && chunk == o.chunk && scoped_chunk == o.scoped_chunk;
  }
};

std::optional<Key> KeyOf(const PackedSegment& seg) {
  if (seg.position_ids.defined()) return std::nullopt;         // the plan reads its values on the host
  if (seg.whole && seg.cache != nullptr) return std::nullopt;  // a refill stores new tensors in the cache
  if (!seg.whole && (seg.cache == nullptr || seg.cache->layers.empty() || !seg.cache->layers[0].k.defined()))
    return std::nullopt;
  Key k;
  k.whole = seg.whole;
  k.ids = seg.ids.data_ptr();
  k.sizes = seg.ids.sizes().vec();
  k.strides = seg.ids.strides().vec();
  k.mask = seg.attention_mask.defined() ? seg.attention_mask.data_ptr() : nullptr;
  if (!seg.whole) {
    k.cache = seg.cache;
    k.cache_k = seg.cache->layers[0].k.data_ptr();
    k.cache_length = seg.cache->length;
    k.offset = seg.offset;
  }
  k.causal_block = seg.causal_block;
  k.chunk = seg.attention_query_chunk;
  k.scoped_chunk = ScopedAttentionChunk::Current();
  return k;
}

class CudaGraphedForward : public GraphedForward {
 public:
  explicit CudaGraphedForward(const LladaModel& model) : model_(model) {}
  ~CudaGraphedForward() override { Drop(); }

  at::Tensor Hidden(const PackedSegment& segment) override {
    const std::optional<Key> key = failed_ ? std::nullopt : KeyOf(segment);
    if (key && captured_ && *captured_ == *key) return Replay();
    if (key && last_ && *last_ == *key && Capture(segment, *key)) return Replay();
    last_ = key;
    return model_.HiddenPacked({segment})[0];
  }
  std::int64_t captures() const override { return captures_; }
  std::int64_t replays() const override { return replays_; }

 private:
  at::Tensor Replay() {
    graph_->replay();
    ++replays_;
    return out_;
  }

  // Captures the forward on a side stream (CUDA graphs cannot capture the default stream), after
  // one eager run there. False, and eager from then on, when the capture fails.
  bool Capture(const PackedSegment& segment, const Key& key) {
    // Every capture of this generation shares one memory pool, so a block's capture reuses what
    // the last one freed. The old graph lives until the new capture has joined the pool (a pool
    // no graph holds is given up) and is never replayed again; its output is dropped first.
    std::unique_ptr<at::cuda::CUDAGraph> previous = std::move(graph_);
    Drop();
    plan_ = model_.PlanForward({segment});
    c10::cuda::device_synchronize();  // the side stream must see what the default stream wrote
    c10::cuda::CUDAStream stream = c10::cuda::getStreamFromPool(/*isHighPriority=*/false, model_.device().index());
    c10::cuda::CUDAStreamGuard guard(stream);
    try {
      model_.RunForward(*plan_);  // lazy set-up (cuBLAS handles, workspaces) outside the capture
      stream.synchronize();
      graph_ = std::make_unique<at::cuda::CUDAGraph>();
      graph_->capture_begin(pool_, cudaStreamCaptureModeThreadLocal);
      out_ = model_.RunForward(*plan_)[0];
      graph_->capture_end();
      previous.reset();  // not during the capture: destroying a graph is no call to make while capturing
    } catch (const std::exception& e) {
      std::cerr << "unmask: CUDA graph capture failed, the forwards run eagerly from now on: " << e.what() << "\n";
      cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
      if (cudaStreamIsCapturing(stream.stream(), &status) == cudaSuccess && status != cudaStreamCaptureStatusNone) {
        cudaGraph_t broken = nullptr;
        if (cudaStreamEndCapture(stream.stream(), &broken) == cudaSuccess && broken != nullptr) cudaGraphDestroy(broken);
      }
      (void)cudaGetLastError();
      failed_ = true;
      out_ = at::Tensor();
      graph_.reset();
      plan_.reset();
      return false;
    }
    stream.synchronize();
    captured_ = key;
    ++captures_;
    return true;
  }

  void Drop() {
    out_ = at::Tensor();
    graph_.reset();
    plan_.reset();
    captured_.reset();
  }

  const LladaModel& model_;
  const decltype(at::cuda::graph_pool_handle()) pool_ = at::cuda::graph_pool_handle();
  std::shared_ptr<const LladaModel::ForwardPlan> plan_;  // the captured forward's: its tensors stay where the graph reads them
  std::unique_ptr<at::cuda::CUDAGraph> graph_;
  at::Tensor out_;
  std::optional<Key> captured_, last_;
  bool failed_ = false;
  std::int64_t captures_ = 0, replays_ = 0;
};

}  // namespace

bool GraphedForward::Available() { return true; }

std::unique_ptr<GraphedForward> GraphedForward::Make(const LladaModel& model) {
  if (!model.options().cuda_graphs || !model.device().is_cuda()) return nullptr;
  return std::make_unique<CudaGraphedForward>(model);
}

}  // namespace unmask::model
