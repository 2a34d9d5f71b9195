// bench_load: peak RSS and time of loading a ~1 GB bf16 LLaDA-layout checkpoint into a shm
// segment progressively vs. reading every shard into memory first, and the memory of three
// processes attached to one segment vs. three private copies. Every measurement runs in its own
// child process (this binary re-executed with a --child-* mode) so that VmHWM/PSS are per process.
//
//   bench_load [--d-model 1024] [--layers 20] [--mlp 3072] [--vocab 126464] [--shards 4]
//              [--reps 3] [--precisions bf16,int4:g128:asym] [--dir DIR] [--keep]
// Without --dir a checkpoint is generated in a temp dir and removed at the end (unless --keep).
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "bench/weights/bench_common.h"
#include "common/checkpoint/checkpoint.h"
#include "common/segment/layout.h"
#include "common/registry/progressive_loader.h"
#include "common/segment/segment_format.h"
#include "common/registry/tensor_store.h"
#include "common/segment/weight_view.h"

namespace unmask::weights::bench {
namespace {

using checkpoint::Checkpoint;
using checkpoint::LladaConfig;

int Fail(const Status& s) {
  std::fprintf(stderr, "error: %s\n", s.ToString().c_str());
  return 1;
}

// The naive loader: every shard read into private memory, then converted into the segment.
StatusOr<LoadedModel> LoadReadingEverythingFirst(const std::string& dir, const PrecisionSpec& spec,
                                                 const std::string& model_id) {
  UNMASK_ASSIGN_OR_RETURN(LladaConfig config, LladaConfig::FromFile(dir + "/config.json"));
  UNMASK_ASSIGN_OR_RETURN(std::unique_ptr<Checkpoint> ckpt, Checkpoint::Open(dir));
  std::map<const checkpoint::SafetensorsFile*, std::vector<std::uint8_t>> copies;
  for (const auto& shard : ckpt->shards()) {
    std::ifstream in(shard->path(), std::ios::binary);
    std::vector<std::uint8_t>& bytes = copies[shard.get()];
    bytes.resize(shard->file().size());
    in.read(reinterpret_cast<char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    if (!in) return DataLossError(shard->path() + ": short read");
  }
  UNMASK_RETURN_IF_ERROR(checkpoint::ValidateCheckpoint(config, *ckpt));
  std::vector<LayoutInput> inputs;
  std::vector<checkpoint::TensorRef> refs;
  for (const auto& t : checkpoint::ExpectedTensors(config)) {
    UNMASK_ASSIGN_OR_RETURN(checkpoint::TensorRef ref, ckpt->Find(t.name));
    inputs.push_back({t.name, t.shape, ref.info->dtype});
    refs.push_back(ref);
  }
  UNMASK_ASSIGN_OR_RETURN(Manifest manifest, PlanLayout(inputs, spec));
  manifest.model_id = model_id;
  const SegmentPlan plan = PlanSegment(manifest);
  UNMASK_ASSIGN_OR_RETURN(ShmSegment segment, ShmSegment::Create(ShmSegment::MakeName(model_id), plan.segment_bytes));
  WriteSegmentHeader(segment.mutable_data(), plan, manifest.totals.data_bytes);
  TensorWriter writer;
  for (std::size_t i = 0; i < refs.size(); ++i) {
    const std::uint8_t* src = copies[refs[i].file].data() + refs[i].info->offset;
    Status s = writer.Write(manifest.tensors[i], src, segment.mutable_data() + plan.data_offset);
    if (!s.ok()) {
      (void)segment.Unlink();
      return s;
    }
  }
  MarkSegmentReady(segment.mutable_data());
  return LoadedModel{std::move(segment), std::move(manifest), {}};
}

int ChildLoad(const std::string& mode, const std::string& precision, const std::string& dir,
              const std::string& model_id) {
  auto spec = PrecisionSpec::Parse(precision);
  if (!spec.ok()) return Fail(spec.status());
  const std::uint64_t rss_before = ProcStatusBytes("VmRSS:");
  const std::int64_t t0 = NowNs();
  auto loaded =
      mode == "progressive" ? LoadModelDir(dir, *spec, model_id) : LoadReadingEverythingFirst(dir, *spec, model_id);
  const std::int64_t t1 = NowNs();
  if (!loaded.ok()) return Fail(loaded.status());
  std::printf("%.3f %llu %llu %llu\n", Seconds(t0, t1), static_cast<unsigned long long>(ProcStatusBytes("VmHWM:")),
              static_cast<unsigned long long>(loaded->segment.size()), static_cast<unsigned long long>(rss_before));
  (void)loaded->segment.Unlink();
  return 0;
}

int ChildMakeSegment(const std::string& dir, const std::string& model_id) {
  auto loaded = LoadModelDir(dir, *PrecisionSpec::Parse("bf16"), model_id);
  if (!loaded.ok()) return Fail(loaded.status());
  std::printf("%s\n", loaded->segment.name().c_str());  // left in /dev/shm for the attachers
  return 0;
}

// Touches every page of `data`, so that the mapping is resident in this process.
std::uint64_t TouchPages(const std::uint8_t* data, std::size_t size) {
  std::uint64_t sum = 0;
  for (std::size_t i = 0; i < size; i += 4096) sum += data[i];
  return sum;
}

// Reports "ready", waits for a line, reports "<rss> <pss>", waits for stdin to close.
int ReportMemoryWhenAsked(std::uint64_t checksum) {
  std::printf("ready %llu\n", static_cast<unsigned long long>(checksum));
  std::fflush(stdout);
  ReadLine(0);
  std::printf("%llu %llu\n", static_cast<unsigned long long>(SmapsRollupBytes("Rss:")),
              static_cast<unsigned long long>(SmapsRollupBytes("Pss:")));
  std::fflush(stdout);
  ReadLine(0);
  return 0;
}

int ChildAttach(const std::string& segment_name) {
  auto model = AttachedModel::Attach(segment_name);
  if (!model.ok()) return Fail(model.status());
  return ReportMemoryWhenAsked(TouchPages(model->segment().data(), model->segment().size()));
}

// An executor without the shared store: its own copy of every tensor in private memory.
int ChildPrivateCopy(const std::string& dir) {
  auto ckpt = Checkpoint::Open(dir);
  if (!ckpt.ok()) return Fail(ckpt.status());
  std::vector<std::vector<std::uint8_t>> tensors;
  std::uint64_t sum = 0;
  for (const auto& name : (*ckpt)->tensor_names()) {
    auto ref = *(*ckpt)->Find(name);
    tensors.emplace_back(ref.data(), ref.data() + ref.info->nbytes);
    ref.file->file().DropPages(ref.info->offset, ref.info->nbytes);
    sum += TouchPages(tensors.back().data(), tensors.back().size());
  }
  return ReportMemoryWhenAsked(sum);
}

struct Options {
  std::int64_t d_model = 1024, layers = 20, mlp = 3072, vocab = 126464;
  int shards = 4, reps = 3;
  std::vector<std::string> precisions = {"bf16", "int4:g128:asym"};
  std::string dir;
  bool keep = false;
  std::string command;
};

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Runs `n` concurrent children with `args`, measures them all while all are alive.
std::vector<std::pair<std::uint64_t, std::uint64_t>> MeasureConcurrent(int n, const std::vector<std::string>& args) {
  std::vector<Child> children;
  for (int i = 0; i < n; ++i) children.push_back(SpawnSelf(args));
  for (auto& c : children) {
    if (ReadLine(c.from_child).rfind("ready", 0) != 0) std::fprintf(stderr, "child %d did not get ready\n", c.pid);
  }
  std::vector<std::pair<std::uint64_t, std::uint64_t>> out;
  for (auto& c : children) WriteLine(c.to_child, "measure");
  for (auto& c : children) {
    std::istringstream in(ReadLine(c.from_child));
    std::uint64_t rss = 0, pss = 0;
    in >> rss >> pss;
    out.emplace_back(rss, pss);
  }
  for (auto& c : children) Wait(c);
  return out;
}

int Orchestrate(const Options& o) {
  const std::string model_id = "bench" + std::to_string(::getpid());
  std::string dir = o.dir;
  const bool generated = dir.empty();
  const LladaConfig config = BenchConfig(o.d_model, o.layers, o.mlp, o.vocab);
  if (generated) dir = WriteTempCheckpoint(config, o.shards);
  WarmPageCache(dir);
  std::uint64_t ckpt_bytes = 0;
  {
    auto ckpt = Checkpoint::Open(dir);
    if (!ckpt.ok()) return Fail(ckpt.status());
    ckpt_bytes = (*ckpt)->total_bytes();
  }

  std::printf("## Weight store: loading and sharing (bench_load)\n\n");
  std::printf(
      "Command: `%s`  \nMachine: %s  \nCheckpoint: bf16, d_model %lld, %lld layers, MLP %lld, vocab %lld, "
      "%d shards, %s MiB of tensors; page cache warm; median of %d runs, each in a fresh process.\n\n",
      o.command.c_str(), CpuModel().c_str(), static_cast<long long>(o.d_model), static_cast<long long>(o.layers),
      static_cast<long long>(o.mlp), static_cast<long long>(o.vocab), o.shards, MiB(ckpt_bytes).c_str(), o.reps);
  std::printf("### (a) Peak RSS and time: progressive vs read-everything-first\n\n");
  std::printf(
      "| loader | precision | seconds (median) | RSS at start MiB | peak RSS (VmHWM) MiB | segment MiB | "
      "budget: segment + 10%% + 256 MiB | within budget |\n");
  std::printf("|---|---|---|---|---|---|---|---|\n");
  bool all_within = true;
  for (const auto& precision : o.precisions) {
    for (const char* mode : {"progressive", "readall"}) {
      std::vector<double> secs;
      std::uint64_t hwm = 0, segment = 0, start_rss = 0;
      for (int r = 0; r < o.reps; ++r) {
        Child c = SpawnSelf({"--child-load", mode, precision, dir, model_id});
        std::istringstream in(ReadLine(c.from_child));
        double s = 0;
        std::uint64_t h = 0, seg = 0, before = 0;
        in >> s >> h >> seg >> before;
        if (!Wait(c) || seg == 0) {
          std::fprintf(stderr, "child load %s %s failed\n", mode, precision.c_str());
          return 1;
        }
        secs.push_back(s);
        hwm = std::max(hwm, h);
        segment = seg;
        start_rss = before;
      }
      const std::uint64_t budget = segment + segment / 10 + (256ull << 20);
      const bool within = hwm <= budget;
      if (std::strcmp(mode, "progressive") == 0) all_within &= within;
      std::printf("| %s | %s | %.2f | %s | %s | %s | %s | %s |\n", mode, precision.c_str(), Median(secs),
                  MiB(start_rss).c_str(), MiB(hwm).c_str(), MiB(segment).c_str(), MiB(budget).c_str(),
                  within ? "yes" : "no");
      std::fflush(stdout);
    }
  }

  std::printf("\n### (c) Three executors: attached to one segment vs private copies\n\n");
  Child maker = SpawnSelf({"--child-make-segment", dir, model_id});
  const std::string segment = ReadLine(maker.from_child);
  if (!Wait(maker) || segment.empty()) {
    std::fprintf(stderr, "making the shared segment failed\n");
    return 1;
  }
  const auto attached = MeasureConcurrent(3, {"--child-attach", segment});
  (void)ShmSegment::UnlinkName(segment);
  const auto priv = MeasureConcurrent(3, {"--child-private", dir});
  std::printf("| setup | RSS per process MiB | PSS per process MiB | total PSS of the 3 MiB |\n|---|---|---|---|\n");
  for (const auto& [label, rows] :
       {std::pair<const char*, decltype(attached)>{"3 attached to one bf16 segment", attached},
        {"3 private copies", priv}}) {
    std::string rss, pss;
    std::uint64_t total = 0;
    for (const auto& [r, p] : rows) {
      rss += (rss.empty() ? "" : " / ") + MiB(r);
      pss += (pss.empty() ? "" : " / ") + MiB(p);
      total += p;
    }
    std::printf("| %s | %s | %s | %s |\n", label, rss.c_str(), pss.c_str(), MiB(total).c_str());
  }
  std::printf("\nProgressive loads within budget: %s\n", all_within ? "yes" : "NO");

  UnlinkSegmentsWithPrefix("unmask-" + model_id + "-");
  if (generated && !o.keep) RemoveTree(dir);
  return all_within ? 0 : 2;
}

}  // namespace
}  // namespace unmask::weights::bench

int main(int argc, char** argv) {
  using namespace unmask::weights::bench;
  std::vector<std::string> args(argv + 1, argv + argc);
  if (!args.empty() && args[0] == "--child-load" && args.size() == 5)
    return ChildLoad(args[1], args[2], args[3], args[4]);
  if (!args.empty() && args[0] == "--child-make-segment" && args.size() == 3) return ChildMakeSegment(args[1], args[2]);
  if (!args.empty() && args[0] == "--child-attach" && args.size() == 2) return ChildAttach(args[1]);
  if (!args.empty() && args[0] == "--child-private" && args.size() == 2) return ChildPrivateCopy(args[1]);
  Options o;
  o.command = "bench_load";
  for (std::size_t i = 0; i < args.size(); ++i) {
    o.command += " " + args[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= args.size()) {
        std::fprintf(stderr, "%s needs a value\n", args[i].c_str());
        std::exit(1);
      }
      o.command += " " + args[i + 1];
      return args[++i];
    };
    if (args[i] == "--d-model")
      o.d_model = std::stoll(next());
    else if (args[i] == "--layers")
      o.layers = std::stoll(next());
    else if (args[i] == "--mlp")
      o.mlp = std::stoll(next());
    else if (args[i] == "--vocab")
      o.vocab = std::stoll(next());
    else if (args[i] == "--shards")
      o.shards = std::stoi(next());
    else if (args[i] == "--reps")
      o.reps = std::stoi(next());
    else if (args[i] == "--dir")
      o.dir = next();
    else if (args[i] == "--keep")
      o.keep = true;
    else if (args[i] == "--precisions") {
      o.precisions.clear();
      std::stringstream in(next());
      std::string p;
      while (std::getline(in, p, ',')) o.precisions.push_back(p);
    } else {
      std::fprintf(stderr, "unknown argument %s\n", args[i].c_str());
      return 1;
    }
  }
  return Orchestrate(o);
}
