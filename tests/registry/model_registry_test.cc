#include "common/registry/model_registry.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <thread>

#include "tests/fixtures/weight_checkpoints.h"

namespace unmask::weights {
namespace {

// A loaded model backed by a small real segment, so that unloading can be observed.
StatusOr<std::shared_ptr<LoadedModel>> FakeModel(const std::string& model_id, std::size_t bytes = 8192) {
  UNMASK_ASSIGN_OR_RETURN(ShmSegment seg, ShmSegment::Create(ShmSegment::MakeName(model_id), bytes));
  seg.mutable_data()[0] = 42;
  auto model = std::make_shared<LoadedModel>();
  model->segment = std::move(seg);
  model->manifest.model_id = model_id;
  return model;
}

// Blocks loads until Release(); counts calls.
class GatedLoader {
 public:
  ModelLoader AsLoader() {
    return [this](const std::string& id, const PrecisionSpec&) -> StatusOr<std::shared_ptr<LoadedModel>> {
      std::unique_lock<std::mutex> lock(mu_);
      ++calls_;
      started_ = true;
      cv_.notify_all();
      cv_.wait(lock, [&] { return released_; });
      if (fail_) return DataLossError("shard 2 is corrupt");
      return FakeModel(id);
    };
  }
  void WaitStarted() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return started_; });
  }
  void Release(bool fail = false) {
    std::lock_guard<std::mutex> lock(mu_);
    fail_ = fail;
    released_ = true;
    cv_.notify_all();
  }
  int calls() {
    std::lock_guard<std::mutex> lock(mu_);
    return calls_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool started_ = false, released_ = false, fail_ = false;
  int calls_ = 0;
};

// Polls `pred` (no sleeping for ordering: each poll yields), failing after 10 s.
template <typename Pred>
bool Eventually(Pred pred) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (std::chrono::steady_clock::now() < deadline) {
    if (pred()) return true;
    std::this_thread::yield();
  }
  return false;
}

const PrecisionSpec kBf16 = *PrecisionSpec::Parse("bf16");
const PrecisionSpec kInt4 = *PrecisionSpec::Parse("int4");

class ModelRegistryTest : public ::testing::Test {
 protected:
  void TearDown() override { EXPECT_TRUE(testing::LeakedSegmentsOfThisProcess().empty()); }
};

TEST_F(ModelRegistryTest, ConcurrentGetOrLoadSharesOneLoad) {
  GatedLoader gate;
  ModelRegistry registry(gate.AsLoader());
  StatusOr<std::shared_ptr<const LoadedModel>> a = InternalError("unset"), b = InternalError("unset");
  std::thread first([&] { a = registry.GetOrLoad("m", kBf16); });
  gate.WaitStarted();
  EXPECT_EQ(registry.Get("m")->state, ModelState::kLoading);
  std::thread second([&] { b = registry.GetOrLoad("m", kBf16); });
  ASSERT_TRUE(Eventually([&] { return registry.Get("m")->waiters == 1; }));
  // A different precision for the same id is refused while the load is in flight.
  auto other = registry.GetOrLoad("m", kInt4);
  EXPECT_EQ(other.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(other.status().message().find("int4:g128:asym"), std::string::npos) << other.status().message();
  gate.Release();
  first.join();
  second.join();
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  EXPECT_EQ(a->get(), b->get());
  EXPECT_EQ(gate.calls(), 1);
  ModelInfo info = *registry.Get("m");
  EXPECT_EQ(info.state, ModelState::kReady);
  EXPECT_EQ(info.resident_bytes, 8192u);
  EXPECT_EQ(info.segment_name, (*a)->segment.name());
  // Ready: a third caller gets the same model without loading.
  EXPECT_EQ(registry.GetOrLoad("m", kBf16)->get(), a->get());
  EXPECT_EQ(gate.calls(), 1);
  ASSERT_TRUE(registry.Unload("m", false).ok());
}

TEST_F(ModelRegistryTest, ConcurrentWaitersSeeTheFailureAndOthersKeepServing) {
  ModelRegistry registry([](const std::string& id, const PrecisionSpec&) -> StatusOr<std::shared_ptr<LoadedModel>> {
    if (id == "broken") return DataLossError("model-00002-of-00002.safetensors: truncated");
    return FakeModel(id);
  });
  ASSERT_TRUE(registry.GetOrLoad("good", kBf16).ok());
  auto broken = registry.GetOrLoad("broken", kBf16);
  ASSERT_FALSE(broken.ok());
  EXPECT_EQ(broken.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(broken.status().message().find("loading model 'broken'"), std::string::npos);
  EXPECT_NE(broken.status().message().find("truncated"), std::string::npos);
  EXPECT_EQ(registry.Get("broken")->state, ModelState::kFailed);
  EXPECT_EQ(registry.Get("good")->state, ModelState::kReady);
  EXPECT_TRUE(registry.Attach("good", "exec-1").ok());
  EXPECT_EQ(registry.List().size(), 2u);
  EXPECT_EQ(registry.resident_bytes(), 8192u);
  ASSERT_TRUE(registry.Detach("good", "exec-1").ok());
  ASSERT_TRUE(registry.Unload("broken", false).ok());
  ASSERT_TRUE(registry.Unload("good", false).ok());
  EXPECT_TRUE(registry.List().empty());
}

TEST_F(ModelRegistryTest, TwoThreadsWaitingOnAFailedLoadBothGetTheErrorAndARetryLoadsAgain) {
  GatedLoader gate;
  ModelRegistry registry(gate.AsLoader());
  StatusOr<std::shared_ptr<const LoadedModel>> a = InternalError("unset"), b = InternalError("unset");
  std::thread first([&] { a = registry.GetOrLoad("m", kBf16); });
  gate.WaitStarted();
  std::thread second([&] { b = registry.GetOrLoad("m", kBf16); });
  ASSERT_TRUE(Eventually([&] { return registry.Get("m")->waiters == 1; }));
  gate.Release(/*fail=*/true);
  first.join();
  second.join();
  EXPECT_EQ(a.status().code(), StatusCode::kDataLoss);
  EXPECT_EQ(b.status().code(), StatusCode::kDataLoss);
  EXPECT_EQ(gate.calls(), 1);
  // The failed entry is retried by the next caller (the gate now lets it fail again at once).
  EXPECT_FALSE(registry.GetOrLoad("m", kInt4).ok());
  EXPECT_EQ(gate.calls(), 2);
}

TEST_F(ModelRegistryTest, UnloadIsRefusedWhileAttachedUnlessForced) {
  ModelRegistry registry([](const std::string& id, const PrecisionSpec&) { return FakeModel(id); });
  auto model = registry.GetOrLoad("m", kBf16);
  ASSERT_TRUE(model.ok());
  const std::string segment = (*model)->segment.name();
  ASSERT_TRUE(registry.Attach("m", "exec-b").ok());
  ASSERT_TRUE(registry.Attach("m", "exec-a").ok());
  ASSERT_TRUE(registry.Attach("m", "exec-a").ok()) << "attach is idempotent per executor";
  EXPECT_EQ(registry.Get("m")->executors, (std::vector<std::string>{"exec-a", "exec-b"}));

  auto refused = registry.Unload("m", false);
  ASSERT_EQ(refused.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(refused.status().message().find("exec-a, exec-b"), std::string::npos) << refused.status().message();
  ASSERT_TRUE(registry.Detach("m", "exec-a").ok());
  EXPECT_EQ(registry.Detach("m", "exec-a").code(), StatusCode::kNotFound);
  refused = registry.Unload("m", false);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().message().find("exec-a"), std::string::npos);
  EXPECT_NE(refused.status().message().find("exec-b"), std::string::npos);

  auto forced = registry.Unload("m", true);
  ASSERT_TRUE(forced.ok());
  EXPECT_EQ(*forced, (std::vector<std::string>{"exec-b"}));
  EXPECT_EQ(registry.Get("m")->state, ModelState::kUnloading);
  // The name is gone (no new attachments), the memory is still mapped and intact.
  EXPECT_EQ(ShmSegment::OpenReadOnly(segment).status().code(), StatusCode::kNotFound);
  EXPECT_EQ((*model)->segment.data()[0], 42);
  EXPECT_EQ(registry.Attach("m", "exec-c").code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(registry.GetOrLoad("m", kBf16).status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(registry.resident_bytes(), 8192u) << "still resident until the last executor detaches";
  ASSERT_TRUE(registry.Detach("m", "exec-b").ok());
  EXPECT_EQ(registry.Get("m").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(registry.resident_bytes(), 0u);
}

TEST_F(ModelRegistryTest, ARevokedExecutorReleasesOnlyTheUnloadingModel) {
  ModelRegistry registry([](const std::string& id, const PrecisionSpec&) { return FakeModel(id); });
  ASSERT_TRUE(registry.GetOrLoad("m", kBf16).ok());
  ASSERT_TRUE(registry.Attach("m", "exec-a").ok());
  ASSERT_TRUE(registry.Attach("m", "exec-b").ok());
  ASSERT_TRUE(registry.Unload("m", true).ok());

  registry.ReleaseRevoked("m", "exec-a");
  EXPECT_EQ(registry.Get("m")->executors, (std::vector<std::string>{"exec-b"})) << "still held by exec-b";
  registry.ReleaseRevoked("m", "exec-b");
  EXPECT_EQ(registry.Get("m").status().code(), StatusCode::kNotFound) << "the last one out frees it";
  EXPECT_EQ(registry.resident_bytes(), 0u);

  // Loaded again and attached again by the same executor: a late release of the old
  // attachment must not detach the new one.
  ASSERT_TRUE(registry.GetOrLoad("m", kBf16).ok());
  ASSERT_TRUE(registry.Attach("m", "exec-a").ok());
  registry.ReleaseRevoked("m", "exec-a");
  EXPECT_EQ(registry.Get("m")->executors, (std::vector<std::string>{"exec-a"}));
  registry.ReleaseRevoked("unknown", "exec-a");  // nothing to release: no effect, no error
  ASSERT_TRUE(registry.Unload("m", /*force=*/true).ok());
}

TEST_F(ModelRegistryTest, DetachExecutorLeavesEveryModel) {
  ModelRegistry registry([](const std::string& id, const PrecisionSpec&) { return FakeModel(id); });
  ASSERT_TRUE(registry.GetOrLoad("a", kBf16).ok());
  ASSERT_TRUE(registry.GetOrLoad("b", kInt4).ok());
  ASSERT_TRUE(registry.Attach("a", "exec").ok());
  ASSERT_TRUE(registry.Attach("b", "exec").ok());
  ASSERT_TRUE(registry.Attach("b", "other").ok());
  ASSERT_TRUE(registry.Unload("b", true).ok());
  EXPECT_EQ(registry.DetachExecutor("exec"), (std::vector<std::string>{"a", "b"}));
  EXPECT_TRUE(registry.Get("a")->executors.empty());
  EXPECT_EQ(registry.Get("b")->state, ModelState::kUnloading);  // "other" is still attached
  EXPECT_EQ(registry.DetachExecutor("other"), (std::vector<std::string>{"b"}));
  EXPECT_EQ(registry.Get("b").status().code(), StatusCode::kNotFound);
  ASSERT_TRUE(registry.Unload("a", false).ok());
}

TEST_F(ModelRegistryTest, AttachAndUnloadRules) {
  GatedLoader gate;
  ModelRegistry registry(gate.AsLoader());
  EXPECT_EQ(registry.Attach("m", "e").code(), StatusCode::kNotFound);
  EXPECT_EQ(registry.Unload("m", false).status().code(), StatusCode::kNotFound);
  std::thread loader([&] { (void)registry.GetOrLoad("m", kBf16); });
  gate.WaitStarted();
  EXPECT_EQ(registry.Attach("m", "e").code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(registry.Unload("m", true).status().code(), StatusCode::kFailedPrecondition);
  gate.Release();
  loader.join();
  EXPECT_TRUE(registry.Attach("m", "e").ok());
  EXPECT_EQ(registry.GetOrLoad("m", kInt4).status().code(), StatusCode::kFailedPrecondition);
  ASSERT_TRUE(registry.Unload("m", true).ok());
  ASSERT_TRUE(registry.Detach("m", "e").ok());
}

TEST_F(ModelRegistryTest, DirectoryLoaderLoadsOnlyUnderTheModelRoots) {
  ModelRegistry registry(DirectoryModelLoader({UNMASK_TEST_DATA}));
  auto model = registry.GetOrLoad("tiny-llada", kInt4);
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  EXPECT_EQ((*model)->manifest.model_id, "tiny-llada");
  EXPECT_EQ(registry.Get("tiny-llada")->resident_bytes, (*model)->segment.size());
  auto escape = registry.GetOrLoad("../weights", kBf16);
  EXPECT_EQ(escape.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(escape.status().message().find("'..'"), std::string::npos);
  EXPECT_EQ(registry.GetOrLoad("no-such-model", kBf16).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(registry.Get("tiny-llada")->state, ModelState::kReady);
  ASSERT_TRUE(registry.Unload("tiny-llada", false).ok());
}

}  // namespace
}  // namespace unmask::weights
