// bench_quant: segment bytes of a ~1 GB bf16 LLaDA-layout checkpoint per precision, the int4/bf16
// ratio over the quantized tensors (must be <= 0.3), the quantization error of layer 0, load
// time, and the speed of the row dequantization a quantized linear layer runs on the fly.
//
//   bench_quant [--d-model 1024] [--layers 20] [--mlp 3072] [--vocab 126464] [--shards 4]
//               [--dir DIR] [--keep]
#include <sys/mman.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

#include "bench/weights/bench_common.h"
#include "common/checkpoint/checkpoint.h"
#include "common/quant/convert.h"
#include "common/registry/progressive_loader.h"
#include "common/segment/weight_view.h"

namespace unmask::weights::bench {
namespace {

using checkpoint::Checkpoint;

int Fail(const Status& s) {
  std::fprintf(stderr, "error: %s\n", s.ToString().c_str());
  return 1;
}

// Bytes of the mapping that are resident (mincore), i.e. what the segment really occupies.
std::uint64_t ResidentBytes(const std::uint8_t* data, std::size_t size) {
  const std::size_t page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  std::vector<unsigned char> vec((size + page - 1) / page);
  if (::mincore(const_cast<std::uint8_t*>(data), size, vec.data()) != 0) return 0;
  std::uint64_t n = 0;
  for (unsigned char v : vec) n += v & 1;
  return n * page;
}

// sqrt(sum (w - w')^2 / sum w^2) over layer 0's linear weights.
double RelativeRmsError(const AttachedModel& model, const Checkpoint& ckpt) {
  double err = 0, ref = 0;
  for (const char* leaf : {"q_proj", "k_proj", "v_proj", "attn_out", "ff_proj", "up_proj", "ff_out"}) {
    const std::string name = std::string("model.transformer.blocks.0.") + leaf + ".weight";
    auto view = model.Find(name);
    auto src = ckpt.Find(name);
    if (!view.ok() || !src.ok()) return NAN;
    const std::int64_t n = view->rows() * view->cols();
    std::vector<float> a(static_cast<std::size_t>(n)), b(static_cast<std::size_t>(n));
    if (!DequantizeRows(*view, 0, view->rows(), a.data()).ok()) return NAN;
    if (!ToF32(src->data(), src->info->dtype, b.data(), b.size()).ok()) return NAN;
    for (std::int64_t i = 0; i < n; ++i) {
      err += (static_cast<double>(a[i]) - b[i]) * (static_cast<double>(a[i]) - b[i]);
      ref += static_cast<double>(b[i]) * b[i];
    }
  }
  return std::sqrt(err / ref);
}

// Output elements per second of DequantizeRowsBf16 over a whole weight, in 64-row chunks into a
// reused scratch buffer (the access pattern of an on-the-fly quantized linear layer).
double DequantRate(const TensorView& view) {
  const std::int64_t rows = view.rows(), cols = view.cols(), chunk = 64;
  std::vector<std::uint16_t> scratch(static_cast<std::size_t>(chunk * cols));
  std::int64_t elements = 0;
  const std::int64_t start = NowNs();
  while (NowNs() - start < 300'000'000) {
    for (std::int64_t r = 0; r < rows; r += chunk) {
      if (!DequantizeRowsBf16(view, r, std::min(rows, r + chunk), scratch.data()).ok()) return 0;
    }
    elements += rows * cols;
  }
  return static_cast<double>(elements) / Seconds(start, NowNs());
}

struct Options {
  std::int64_t d_model = 1024, layers = 20, mlp = 3072, vocab = 126464;
  int shards = 4;
  std::string dir;
  bool keep = false;
  std::string command = "bench_quant";
};

int Run(const Options& o) {
  const std::string model_id = "bench" + std::to_string(::getpid());
  std::string dir = o.dir;
  const bool generated = dir.empty();
  const auto config = BenchConfig(o.d_model, o.layers, o.mlp, o.vocab);
  if (generated) dir = WriteTempCheckpoint(config, o.shards);
  WarmPageCache(dir);
  auto ckpt = Checkpoint::Open(dir);
  if (!ckpt.ok()) return Fail(ckpt.status());

  std::printf("## Weight store: segment size per precision (bench_quant)\n\n");
  std::printf(
      "Command: `%s`  \nMachine: %s  \nCheckpoint: bf16, d_model %lld, %lld layers, MLP %lld, vocab %lld, "
      "%s MiB of tensors. Quantized: the 7 linear layers of every block (defaults; embedding, norms and LM "
      "head stay bf16). Ratio = (packed + scales + zeros) / bf16 bytes of the quantized tensors. Error: "
      "relative RMS over layer 0's linears. Dequant: DequantizeRowsBf16 of blocks.0.ff_proj (%lld x %lld) "
      "in 64-row chunks, one thread.\n\n",
      o.command.c_str(), CpuModel().c_str(), static_cast<long long>(o.d_model), static_cast<long long>(o.layers),
      static_cast<long long>(o.mlp), static_cast<long long>(o.vocab), MiB((*ckpt)->total_bytes()).c_str(),
      static_cast<long long>(o.mlp), static_cast<long long>(o.d_model));
  std::printf(
      "| precision | segment MiB | resident MiB | block linears MiB | linears vs bf16 | rel. RMS error | "
      "load s | dequant Gelem/s |\n|---|---|---|---|---|---|---|---|\n");
  bool ratio_ok = true;
  double bf16_linear = 0;
  for (const char* precision : {"bf16", "int8", "int4:g32:sym", "int4:g32:asym", "int4:g64:sym", "int4:g64:asym",
                                "int4:g128:sym", "int4:g128:asym"}) {
    const std::int64_t t0 = NowNs();
    auto loaded = LoadIntoSegment(**ckpt, config, *PrecisionSpec::Parse(precision), model_id);
    const double load_s = Seconds(t0, NowNs());
    if (!loaded.ok()) return Fail(loaded.status());
    const std::uint64_t resident = ResidentBytes(loaded->segment.data(), loaded->segment.size());
    const std::string name = loaded->segment.name();
    auto model = AttachedModel::FromSegment(std::move(loaded->segment));
    if (!model.ok()) return Fail(model.status());
    (void)ShmSegment::UnlinkName(name);
    double linear = 0;
    for (const auto& t : model->manifest().tensors) {
      const TensorRole role = ClassifyTensor(t.name);
      if (role == TensorRole::kAttention || role == TensorRole::kMlp) linear += static_cast<double>(t.footprint());
    }
    if (bf16_linear == 0) bf16_linear = linear;
    const double ratio = linear / bf16_linear;
    const bool is_int4 = std::string(precision).rfind("int4", 0) == 0;
    if (is_int4) ratio_ok &= ratio <= 0.3;
    auto ff = model->Find("model.transformer.blocks.0.ff_proj.weight");
    const double rate = ff.ok() ? DequantRate(*ff) : 0;
    std::printf("| %s | %s | %s | %s | %.3f | %.4f | %.2f | %.2f |\n", precision, MiB(model->segment().size()).c_str(),
                MiB(resident).c_str(), MiB(static_cast<std::uint64_t>(linear)).c_str(), ratio,
                RelativeRmsError(*model, **ckpt), load_s, rate / 1e9);
    std::fflush(stdout);
  }
  std::printf("\nint4 ratio <= 0.3 for every group size: %s\n", ratio_ok ? "yes" : "NO");
  UnlinkSegmentsWithPrefix("unmask-" + model_id + "-");
  ckpt->reset();
  if (generated && !o.keep) RemoveTree(dir);
  return ratio_ok ? 0 : 2;
}

}  // namespace
}  // namespace unmask::weights::bench

int main(int argc, char** argv) {
  using namespace unmask::weights::bench;
  Options o;
  std::vector<std::string> args(argv + 1, argv + argc);
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
    else if (args[i] == "--dir")
      o.dir = next();
    else if (args[i] == "--keep")
      o.keep = true;
    else {
      std::fprintf(stderr, "unknown argument %s\n", args[i].c_str());
      return 1;
    }
  }
  return Run(o);
}
