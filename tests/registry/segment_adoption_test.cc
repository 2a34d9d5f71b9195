// Adopting the weight segments a dead loader left in /dev/shm: complete ones are adopted, partial
// or corrupt ones removed (and named), ones whose owner still runs never touched.
#include "common/registry/segment_adoption.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "common/registry/model_registry.h"
#include "common/segment/segment_format.h"
#include "tests/fixtures/weight_checkpoints.h"

namespace unmask::weights {
namespace {

bool ShmExists(const std::string& segment) {
  struct stat st {};
  return ::stat(("/dev/shm" + segment).c_str(), &st) == 0;
}

const LeftoverNote* FindNote(const std::vector<LeftoverNote>& notes, const std::string& segment) {
  for (const auto& n : notes) {
    if (n.segment == segment) return &n;
  }
  return nullptr;
}

class SegmentAdoptionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char buf[PATH_MAX];
    ASSERT_NE(::realpath(root_.path().c_str(), buf), nullptr);
    root_real_ = buf;
    model_id_ = "adopt-" + std::to_string(::getpid()) + "-" + std::to_string(counter_++);
    const auto config = testing::SmallConfig();
    std::filesystem::create_directories(root_real_ + "/" + model_id_);
    ASSERT_TRUE(testing::WriteCheckpoint(root_real_ + "/" + model_id_, config, testing::LladaSpecs(config), 1).ok());
  }
  void TearDown() override {
    for (const auto& name : testing::LeakedSegmentsOfThisProcess()) {
      ADD_FAILURE() << "leaked /dev/shm/" << name;
      (void)ShmSegment::UnlinkName("/" + name);
    }
  }

  // A complete segment of the test model, as a loader leaves it when it dies: the name stays,
  // the handle (and with it the ownership lock) goes.
  std::string LeaveCompleteSegment(const std::string& precision = "bf16") {
    auto loaded = Load(precision);
    return loaded ? loaded->segment.name() : "";
  }
  std::unique_ptr<LoadedModel> Load(const std::string& precision = "bf16") {
    auto loaded = LoadModelDir(root_real_ + "/" + model_id_, *PrecisionSpec::Parse(precision), model_id_);
    EXPECT_TRUE(loaded.ok()) << loaded.status().ToString();
    if (!loaded.ok()) return nullptr;
    return std::make_unique<LoadedModel>(std::move(*loaded));
  }
  LeftoverScan Scan(bool adopt = true, std::vector<std::string> roots = {}) {
    LeftoverScanOptions o;
    o.name_prefix = "unmask-" + model_id_ + "-";  // only this test's segments
    o.model_roots = roots.empty() ? std::vector<std::string>{root_real_} : roots;
    o.adopt = adopt;
    return ScanLeftoverSegments(o);
  }

  static inline std::atomic<int> counter_{0};
  testing::TempDir root_;
  std::string root_real_, model_id_;
};

TEST_F(SegmentAdoptionTest, CompleteSegmentOfADeadOwnerIsAdopted) {
  const std::string name = LeaveCompleteSegment("int8");
  ASSERT_FALSE(name.empty());
  ASSERT_TRUE(ShmExists(name)) << "a dropped handle must not unlink";

  LeftoverScan scan = Scan();
  ASSERT_TRUE(scan.error.ok()) << scan.error.ToString();
  EXPECT_TRUE(scan.removed.empty()) << scan.removed[0].segment << ": " << scan.removed[0].reason;
  ASSERT_EQ(scan.adopted.size(), 1u);
  const AdoptedSegment& a = scan.adopted[0];
  EXPECT_EQ(a.model->segment.name(), name);
  EXPECT_TRUE(a.model->segment.owner());
  EXPECT_EQ(a.model->manifest.model_id, model_id_);
  EXPECT_EQ(a.precision.ToString(), "int8");
  EXPECT_EQ(a.model->segment.size(), a.model->manifest.segment_bytes);

  // Now this process owns it: a second scan (another loader) leaves it alone.
  LeftoverScan again = Scan();
  EXPECT_TRUE(again.adopted.empty());
  const LeftoverNote* note = FindNote(again.skipped, name);
  ASSERT_NE(note, nullptr);
  EXPECT_NE(note->reason.find("owned by a live loader"), std::string::npos) << note->reason;

  ASSERT_TRUE(a.model->segment.Unlink().ok());
}

TEST_F(SegmentAdoptionTest, PartialAndCorruptSegmentsAreRemovedByName) {
  // A load that died midway: header written, state never set to ready.
  std::string partial, corrupt;
  {
    auto loaded = Load();
    ASSERT_NE(loaded, nullptr);
    partial = loaded->segment.name();
    auto* header = reinterpret_cast<SegmentHeader*>(loaded->segment.mutable_data());
    header->state = static_cast<std::uint32_t>(SegmentState::kWriting);
  }
  {
    auto loaded = Load();
    ASSERT_NE(loaded, nullptr);
    corrupt = loaded->segment.name();
    loaded->segment.mutable_data()[0] ^= 0xff;  // bad magic
  }
  ASSERT_TRUE(ShmExists(partial) && ShmExists(corrupt));

  LeftoverScan scan = Scan();
  EXPECT_TRUE(scan.adopted.empty());
  const LeftoverNote* p = FindNote(scan.removed, partial);
  const LeftoverNote* c = FindNote(scan.removed, corrupt);
  ASSERT_NE(p, nullptr);
  ASSERT_NE(c, nullptr);
  EXPECT_NE(p->reason.find("not ready"), std::string::npos) << p->reason;
  EXPECT_NE(p->reason.find(partial), std::string::npos) << "the reason names the segment: " << p->reason;
  EXPECT_NE(c->reason.find("bad magic"), std::string::npos) << c->reason;
  EXPECT_FALSE(ShmExists(partial));
  EXPECT_FALSE(ShmExists(corrupt));
}

TEST_F(SegmentAdoptionTest, IncompleteManifestIsRemoved) {
  // A segment whose manifest lacks tensors config.json needs (a valid header, a ready state).
  auto loaded = Load();
  ASSERT_NE(loaded, nullptr);
  Manifest m = loaded->manifest;
  m.tensors.pop_back();
  const SegmentPlan plan = PlanSegment(m);
  const std::string name = ShmSegment::MakeName(model_id_);
  {
    auto seg = ShmSegment::Create(name, plan.segment_bytes);
    ASSERT_TRUE(seg.ok()) << seg.status().ToString();
    WriteSegmentHeader(seg->mutable_data(), plan, m.totals.data_bytes);
    MarkSegmentReady(seg->mutable_data());
  }
  ASSERT_TRUE(loaded->segment.Unlink().ok());
  LeftoverScan scan = Scan();
  EXPECT_TRUE(scan.adopted.empty());
  const LeftoverNote* note = FindNote(scan.removed, name);
  ASSERT_NE(note, nullptr);
  EXPECT_NE(note->reason.find("incomplete: no tensor"), std::string::npos) << note->reason;
  EXPECT_FALSE(ShmExists(name));
}

TEST_F(SegmentAdoptionTest, SegmentLockedByALiveOwnerInAnotherProcessIsSkipped) {
  auto loaded = Load();
  ASSERT_NE(loaded, nullptr);
  const std::string name = loaded->segment.name();
  int to_child[2];
  ASSERT_EQ(::pipe(to_child), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // The live owner: the forked child shares the segment's locked fd and just stays alive.
    ::close(to_child[1]);
    char c;
    (void)::read(to_child[0], &c, 1);  // until the parent closes the pipe
    ::_exit(0);
  }
  ::close(to_child[0]);
  loaded.reset();  // the parent drops its handle; the child's copy of the fd keeps the lock

  LeftoverScan scan = Scan();
  EXPECT_TRUE(scan.adopted.empty());
  EXPECT_EQ(FindNote(scan.removed, name), nullptr);
  const LeftoverNote* note = FindNote(scan.skipped, name);
  ASSERT_NE(note, nullptr);
  EXPECT_NE(note->reason.find("owned by a live loader"), std::string::npos);
  EXPECT_TRUE(ShmExists(name));

  // The owner dies: the kernel drops its lock, and the segment becomes adoptable.
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  ::close(to_child[1]);
  scan = Scan();
  ASSERT_EQ(scan.adopted.size(), 1u);
  EXPECT_EQ(scan.adopted[0].model->segment.name(), name);
  ASSERT_TRUE(scan.adopted[0].model->segment.Unlink().ok());
}

TEST_F(SegmentAdoptionTest, AdoptionOffRemovesCompleteLeftovers) {
  const std::string name = LeaveCompleteSegment();
  LeftoverScan scan = Scan(/*adopt=*/false);
  EXPECT_TRUE(scan.adopted.empty());
  const LeftoverNote* note = FindNote(scan.removed, name);
  ASSERT_NE(note, nullptr);
  EXPECT_NE(note->reason.find("adoption is off"), std::string::npos) << note->reason;
  EXPECT_FALSE(ShmExists(name));
}

TEST_F(SegmentAdoptionTest, SegmentsOfOtherModelRootsAreLeftAlone) {
  const std::string name = LeaveCompleteSegment();
  testing::TempDir other;
  LeftoverScan scan = Scan(/*adopt=*/true, {other.path()});
  EXPECT_TRUE(scan.adopted.empty());
  const LeftoverNote* note = FindNote(scan.skipped, name);
  ASSERT_NE(note, nullptr);
  EXPECT_NE(note->reason.find("outside this loader's model roots"), std::string::npos) << note->reason;
  EXPECT_TRUE(ShmExists(name));
  scan = Scan();  // the right root adopts it
  ASSERT_EQ(scan.adopted.size(), 1u);
  ASSERT_TRUE(scan.adopted[0].model->segment.Unlink().ok());
}

TEST_F(SegmentAdoptionTest, TwoCopiesOfOneModelKeepOne) {
  const std::string a = LeaveCompleteSegment();
  const std::string b = LeaveCompleteSegment();
  LeftoverScan scan = Scan();
  ASSERT_EQ(scan.adopted.size(), 1u);
  const std::string kept = scan.adopted[0].model->segment.name();
  const std::string dropped = kept == a ? b : a;
  const LeftoverNote* note = FindNote(scan.removed, dropped);
  ASSERT_NE(note, nullptr);
  EXPECT_NE(note->reason.find("duplicate of '" + kept + "'"), std::string::npos) << note->reason;
  EXPECT_FALSE(ShmExists(dropped));
  ASSERT_TRUE(scan.adopted[0].model->segment.Unlink().ok());
}

TEST_F(SegmentAdoptionTest, RegistryServesAnAdoptedModelWithoutLoading) {
  const std::string name = LeaveCompleteSegment("bf16");
  LeftoverScan scan = Scan();
  ASSERT_EQ(scan.adopted.size(), 1u);
  int loads = 0;
  ModelRegistry registry([&](const std::string&, const PrecisionSpec&) -> StatusOr<std::shared_ptr<LoadedModel>> {
    ++loads;
    return InternalError("no load expected");
  });
  ASSERT_TRUE(registry.Adopt(model_id_, scan.adopted[0].precision, scan.adopted[0].model).ok());
  EXPECT_EQ(registry.Adopt(model_id_, scan.adopted[0].precision, scan.adopted[0].model).code(),
            StatusCode::kAlreadyExists);
  auto info = registry.Get(model_id_);
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->state, ModelState::kReady);
  EXPECT_EQ(info->segment_name, name);
  EXPECT_EQ(info->precision.ToString(), "bf16");
  EXPECT_GT(info->resident_bytes, 0u);

  auto got = registry.GetOrLoad(model_id_, *PrecisionSpec::Parse("bf16"));
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ((*got)->segment.name(), name);
  EXPECT_EQ(loads, 0);
  EXPECT_EQ(registry.GetOrLoad(model_id_, *PrecisionSpec::Parse("int8")).status().code(),
            StatusCode::kFailedPrecondition);

  scan.adopted.clear();
  got = InternalError("dropped");
  ASSERT_TRUE(registry.Unload(model_id_, /*force=*/false).ok());
  EXPECT_FALSE(ShmExists(name));
}

}  // namespace
}  // namespace unmask::weights
