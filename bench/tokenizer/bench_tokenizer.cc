// Encode throughput of the tokenizer, single thread, on a few MB of generated English prose and
// source code (deterministic: same bytes on every machine, nothing downloaded).
//
//   bench_tokenizer [--data DIR] [--mb N] [--reps N]
//
// DIR holds gpt2/tokenizer.json and tokenizers/llada-like.tokenizer.json (default: the source
// tree's tests/data). The text is cut into ~2 KiB documents (prompt-sized) that are encoded one by
// one. "cold" is the first pass over the text with an empty word cache, "warm" the median of the
// following passes. Prints a markdown table, the command line and the CPU model.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "common/tokenizer/tokenizer.h"

namespace {

using unmask::tokenizer::Tokenizer;

class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  uint64_t Next() {  // splitmix64
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  size_t Below(size_t n) { return static_cast<size_t>(Next() % n); }
  template <typename T, size_t N>
  const T& Pick(const T (&items)[N]) { return items[Below(N)]; }

 private:
  uint64_t state_;
};

const char* const kWords[] = {
    "the", "of", "and", "to", "in", "a", "is", "that", "for", "it", "as", "was", "with", "be", "by", "on", "not",
    "he", "this", "are", "or", "his", "from", "at", "which", "but", "have", "an", "had", "they", "you", "were",
    "their", "one", "all", "we", "can", "her", "has", "there", "been", "if", "more", "when", "will", "would",
    "who", "so", "no", "model", "language", "diffusion", "token", "tokens", "masked", "sequence", "generation",
    "inference", "server", "request", "latency", "throughput", "memory", "attention", "transformer", "layer",
    "probability", "distribution", "sampling", "temperature", "confidence", "remasking", "block", "step",
    "training", "dataset", "evaluation", "benchmark", "performance", "architecture", "parameters", "billion",
    "understanding", "reasoning", "mathematics", "instruction", "assistant", "question", "answer", "people",
    "government", "history", "university", "international", "development", "information", "community",
};
const char* const kRare[] = {"café", "naïve", "Zürich", "résumé", "São Paulo", "Ωmega", "日本語", "中文", "😀",
                             "привет", "München", "façade", "Ελλάδα", "—", "“quoted”", "…"};
const char* const kIdents[] = {"value", "count", "index", "buffer", "result", "tokens", "logits", "mask", "step",
                               "config", "request", "batch_size", "hidden", "weights", "offset", "length", "cache"};
const char* const kTypes[] = {"int", "size_t", "float", "std::string", "std::vector<int32_t>", "double", "bool"};

void AppendProse(Rng& rng, std::string* out) {
  const size_t sentences = 2 + rng.Below(5);
  for (size_t s = 0; s < sentences; ++s) {
    const size_t words = 6 + rng.Below(18);
    for (size_t w = 0; w < words; ++w) {
      std::string word = rng.Below(40) == 0 ? rng.Pick(kRare) : rng.Pick(kWords);
      if (w == 0) word[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(word[0])));
      if (rng.Below(25) == 0) word = std::to_string(rng.Below(100000));
      *out += word;
      if (w + 1 < words) *out += rng.Below(12) == 0 ? ", " : " ";
    }
    *out += rng.Below(8) == 0 ? "? " : (rng.Below(10) == 0 ? "'s. " : ". ");
  }
  *out += "\n\n";
}

void AppendCode(Rng& rng, std::string* out) {
  if (rng.Below(2) == 0) {  // Python
    *out += "def " + std::string(rng.Pick(kIdents)) + "_" + rng.Pick(kIdents) + "(" + rng.Pick(kIdents) + ", " +
            rng.Pick(kIdents) + "=None):\n";
    const size_t lines = 2 + rng.Below(8);
    for (size_t i = 0; i < lines; ++i) {
      *out += std::string(4 * (1 + rng.Below(2)), ' ') + rng.Pick(kIdents) + " = " + rng.Pick(kIdents) + "[" +
              std::to_string(rng.Below(64)) + "] * " + std::to_string(rng.Below(1000)) + "  # " + rng.Pick(kWords) +
              "\n";
    }
    *out += "    return " + std::string(rng.Pick(kIdents)) + "\n\n";
  } else {  // C++
    *out += std::string(rng.Pick(kTypes)) + " " + rng.Pick(kIdents) + "_" + rng.Pick(kIdents) + "(const " +
            rng.Pick(kTypes) + "& " + rng.Pick(kIdents) + ") {\n";
    const size_t lines = 2 + rng.Below(8);
    for (size_t i = 0; i < lines; ++i) {
      *out += "  for (size_t i = 0; i < " + std::string(rng.Pick(kIdents)) + ".size(); ++i) " + rng.Pick(kIdents) +
              " += " + rng.Pick(kIdents) + "[i] * " + std::to_string(rng.Below(1000)) + ";\n";
    }
    *out += "  return " + std::string(rng.Pick(kIdents)) + ";\n}\n\n";
  }
}

// ~2 KiB documents, 2/3 prose and 1/3 code by count, `total_bytes` in all.
std::vector<std::string> MakeDocuments(size_t total_bytes) {
  Rng rng(20240521);
  std::vector<std::string> docs;
  size_t bytes = 0;
  while (bytes < total_bytes) {
    std::string doc;
    while (doc.size() < 2048) {
      if (rng.Below(3) == 0) {
        AppendCode(rng, &doc);
      } else {
        AppendProse(rng, &doc);
      }
    }
    bytes += doc.size();
    docs.push_back(std::move(doc));
  }
  return docs;
}

std::string CpuModel() {
  if (FILE* p = popen("lscpu 2>/dev/null", "r")) {
    char line[512];
    std::string model;
    while (std::fgets(line, sizeof(line), p) != nullptr) {
      if (std::strncmp(line, "Model name:", 11) == 0) {
        model = line + 11;
        model.erase(0, model.find_first_not_of(" \t"));
        model.erase(model.find_last_not_of(" \t\n") + 1);
      }
    }
    pclose(p);
    if (!model.empty()) return model;
  }
  return "unknown";
}

double Seconds(std::chrono::steady_clock::duration d) { return std::chrono::duration<double>(d).count(); }

struct Result {
  double cold_mbps = 0, warm_mbps = 0, best_mbps = 0, decode_mbps = 0;
  size_t tokens = 0;
};

bool Run(const Tokenizer& tok, const std::vector<std::string>& docs, size_t total, int reps, Result* r) {
  std::vector<double> mbps;
  std::vector<std::vector<int32_t>> ids(docs.size());
  for (int rep = 0; rep <= reps; ++rep) {
    size_t tokens = 0;
    const auto start = std::chrono::steady_clock::now();
    for (size_t i = 0; i < docs.size(); ++i) {
      auto encoded = tok.Encode(docs[i], /*parse_special_tokens=*/false);
      if (!encoded.ok()) {
        std::fprintf(stderr, "encode failed: %s\n", encoded.status().ToString().c_str());
        return false;
      }
      tokens += encoded->size();
      ids[i] = *std::move(encoded);
    }
    const double mb = static_cast<double>(total) / 1e6 / Seconds(std::chrono::steady_clock::now() - start);
    if (rep == 0) {
      r->cold_mbps = mb;
      r->tokens = tokens;
    } else {
      mbps.push_back(mb);
    }
  }
  std::sort(mbps.begin(), mbps.end());
  r->warm_mbps = mbps[mbps.size() / 2];
  r->best_mbps = mbps.back();
  const auto start = std::chrono::steady_clock::now();
  size_t decoded_bytes = 0;
  for (size_t i = 0; i < docs.size(); ++i) {
    auto text = tok.Decode(ids[i], false);
    if (!text.ok() || *text != docs[i]) {
      std::fprintf(stderr, "decode did not round-trip document %zu\n", i);
      return false;
    }
    decoded_bytes += text->size();
  }
  r->decode_mbps = static_cast<double>(decoded_bytes) / 1e6 / Seconds(std::chrono::steady_clock::now() - start);
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  std::string data = UNMASK_BENCH_DATA;
  double mb = 4;
  int reps = 5;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--data") == 0) data = argv[i + 1];
    else if (std::strcmp(argv[i], "--mb") == 0) mb = std::atof(argv[i + 1]);
    else if (std::strcmp(argv[i], "--reps") == 0) reps = std::max(1, std::atoi(argv[i + 1]));
    else {
      std::fprintf(stderr, "usage: %s [--data DIR] [--mb N] [--reps N]\n", argv[0]);
      return 2;
    }
  }
  const std::vector<std::string> docs = MakeDocuments(static_cast<size_t>(mb * 1e6));
  size_t total = 0;
  for (const auto& d : docs) total += d.size();

  std::string command;
  for (int i = 0; i < argc; ++i) command += (i ? " " : "") + std::string(argv[i]);
  std::printf("command: %s\nmachine: %s, 1 thread\ninput: %zu documents, %.2f MB (generated prose + code)\n\n",
              command.c_str(), CpuModel().c_str(), docs.size(), total / 1e6);
  std::printf("| tokenizer | load ms | MB | tokens | bytes/token | encode cold MB/s | encode warm MB/s (median of %d) | "
              "encode best MB/s | decode MB/s |\n|---|---|---|---|---|---|---|---|---|\n",
              reps);
  for (const char* name : {"gpt2/tokenizer.json", "tokenizers/llada-like.tokenizer.json"}) {
    const auto load_start = std::chrono::steady_clock::now();
    auto tok = Tokenizer::FromFile(data + "/" + name);
    const double load_ms = 1e3 * Seconds(std::chrono::steady_clock::now() - load_start);
    if (!tok.ok()) {
      std::fprintf(stderr, "%s\n", tok.status().ToString().c_str());
      return 1;
    }
    Result r;
    if (!Run(**tok, docs, total, reps, &r)) return 1;
    std::printf("| %s | %.0f | %.2f | %zu | %.2f | %.1f | %.1f | %.1f | %.1f |\n", name, load_ms, total / 1e6, r.tokens,
                static_cast<double>(total) / r.tokens, r.cold_mbps, r.warm_mbps, r.best_mbps, r.decode_mbps);
    std::fflush(stdout);
  }
  return 0;
}
