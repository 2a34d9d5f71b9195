#include "common/registry/segment_adoption.h"

#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <ctime>
#include <map>
#include <optional>

#include "common/checkpoint/llada_config.h"
#include "common/registry/model_paths.h"
#include "common/segment/segment_format.h"

namespace unmask::weights {

namespace {

std::string ShapeText(const std::vector<std::int64_t>& shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

std::vector<std::string> RealRoots(const std::vector<std::string>& roots) {
  std::vector<std::string> out;
  for (const auto& root : roots) {
    char buf[PATH_MAX];
    if (::realpath(root.c_str(), buf) != nullptr) out.emplace_back(buf);
  }
  return out;
}

// The names in `dir` starting with `prefix`, sorted (a stable order for logs and tests).
StatusOr<std::vector<std::string>> ListNames(const std::string& dir, const std::string& prefix) {
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return NotFoundError("cannot list '" + dir + "' for leftover weight segments");
  std::vector<std::string> names;
  while (const dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (name.compare(0, prefix.size(), prefix) == 0) names.push_back(name);
  }
  ::closedir(d);
  std::sort(names.begin(), names.end());
  return names;
}

struct Candidate {
  AdoptedSegment adopted;
  std::int64_t mtime_ns = 0;
};

}  // namespace

StatusOr<Manifest> ValidateCompleteSegment(const ShmSegment& segment) {
  UNMASK_ASSIGN_OR_RETURN(Manifest manifest, ReadSegmentManifest(segment.data(), segment.size(), segment.name()));
  auto corrupt = [&](const std::string& why) { return DataLossError("segment '" + segment.name() + "': " + why); };
  auto config = checkpoint::LladaConfig::FromJsonText(manifest.config_json, "the manifest's config_json");
  if (!config.ok()) return corrupt(config.status().message());
  for (const auto& expected : checkpoint::ExpectedTensors(*config)) {
    const TensorEntry* t = manifest.Find(expected.name);
    if (t == nullptr) return corrupt("incomplete: no tensor '" + expected.name + "'");
    if (t->shape != expected.shape) {
      return corrupt("tensor '" + expected.name + "' has shape " + ShapeText(t->shape) + ", config.json needs " +
                     ShapeText(expected.shape));
    }
  }
  return manifest;
}

namespace {

// One scan of the leftover segments, by step: open each file that may be ours (Open), then keep
// it as the newest complete copy of its model, or remove or skip it, saying why (Consider).
class LeftoverScanner {
 public:
  LeftoverScanner(const LeftoverScanOptions& options, LeftoverScan& scan)
      : options_(options), scan_(scan), roots_(RealRoots(options.model_roots)),
        now_ns_(static_cast<std::int64_t>(std::time(nullptr)) * 1000000000) {}

  void Examine(const std::string& file) {
    std::int64_t mtime_ns = 0;
    auto segment = Open(file, &mtime_ns);
    if (segment) Consider(std::move(*segment), mtime_ns);
  }

  // The newest complete segment of each model.
  void Finish() {
    for (auto& [id, c] : best_) scan_.adopted.push_back(std::move(c.adopted));
  }

 private:
  void Remove(const std::string& name, const std::string& why) {
    Status s = ShmSegment::UnlinkName(name);
    if (s.ok() || s.code() == StatusCode::kNotFound) {
      scan_.removed.push_back({name, why});
    } else {
      scan_.skipped.push_back({name, why + "; removing it failed: " + s.message()});
    }
  }

  // The segment of `file` (a name in shm_dir), owned by this loader now; nothing when it is not a
  // candidate (skipped or removed, and said so, or gone meanwhile).
  std::optional<ShmSegment> Open(const std::string& file, std::int64_t* mtime_ns) {
    const std::string name = "/" + file;
    if (!ShmSegment::ValidateName(name).ok()) return std::nullopt;  // not a name we could have made
    struct stat st {};
    if (::lstat((options_.shm_dir + "/" + file).c_str(), &st) != 0) return std::nullopt;  // gone meanwhile
    if (!S_ISREG(st.st_mode)) {
      scan_.skipped.push_back({name, "not a regular file"});
      return std::nullopt;
    }
    *mtime_ns = static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
    if (st.st_size == 0 && now_ns_ - *mtime_ns < std::chrono::nanoseconds(options_.empty_grace).count()) {
      scan_.skipped.push_back({name, "empty and new: may be a segment being created"});
      return std::nullopt;
    }
    auto segment = ShmSegment::OpenOwned(name);
    if (segment.ok()) return std::move(*segment);
    const Status& s = segment.status();
    if (s.code() == StatusCode::kNotFound) return std::nullopt;
    if (ShmSegment::IsOwnedElsewhere(s)) {
      scan_.skipped.push_back({name, "owned by a live loader"});
    } else if (s.code() == StatusCode::kDataLoss) {
      Remove(name, s.message());
    } else {
      scan_.skipped.push_back({name, s.message()});
    }
    return std::nullopt;
  }

  void Consider(ShmSegment segment, std::int64_t mtime_ns) {
    const std::string name = segment.name();
    auto manifest = ValidateCompleteSegment(segment);
    if (!manifest.ok()) return Remove(name, "partial or corrupt: " + manifest.status().message());
    auto precision = PrecisionSpec::Parse(manifest->precision);
    if (!precision.ok()) {
      return Remove(name, "corrupt: manifest precision '" + manifest->precision + "': " + precision.status().message());
    }
    if (!options_.model_roots.empty()) {  // (none of them existing: nothing is ours)
      bool ours = false;
      for (const auto& root : roots_) ours |= IsPathUnder(manifest->source_dir, root);
      if (!ours) {
        scan_.skipped.push_back({name, "model '" + manifest->model_id + "' was loaded from '" + manifest->source_dir +
                                           "', outside this loader's model roots"});
        return;
      }
    }
    if (!options_.adopt) {
      return Remove(name, "complete model '" + manifest->model_id + "' left by a previous loader; adoption is off");
    }
    Candidate c;
    c.mtime_ns = mtime_ns;
    c.adopted.precision = *precision;
    const std::string model_id = manifest->model_id;
    c.adopted.model = std::make_shared<LoadedModel>(LoadedModel{std::move(segment), std::move(*manifest), {}});
    auto it = best_.find(model_id);
    if (it == best_.end()) {
      best_.emplace(model_id, std::move(c));
      return;
    }
    // Two complete copies of one model (e.g. two loaders died): keep the newer one.
    Candidate& kept = it->second;
    if (c.mtime_ns > kept.mtime_ns) std::swap(kept, c);
    // Unlinked while its lock is still held, so that no other loader adopts it meanwhile.
    Remove(c.adopted.model->segment.name(),
           "duplicate of '" + kept.adopted.model->segment.name() + "' (model '" + model_id + "')");
  }

  const LeftoverScanOptions& options_;
  LeftoverScan& scan_;
  const std::vector<std::string> roots_;
  const std::int64_t now_ns_;
  std::map<std::string, Candidate> best_;  // model id -> the newest complete segment
};

}  // namespace

LeftoverScan ScanLeftoverSegments(const LeftoverScanOptions& options) {
  LeftoverScan scan;
  auto names = ListNames(options.shm_dir, options.name_prefix);
  if (!names.ok()) {
    scan.error = names.status();
    return scan;
  }
  LeftoverScanner scanner(options, scan);
  for (const auto& file : *names) scanner.Examine(file);
  scanner.Finish();
  return scan;
}

}  // namespace unmask::weights
