// Prompt scoring (GenerationParams.prompt_logprobs, the HTTP API's echo + logprobs) on unmask's
// trained model (models/unmask-kjv), over held-out verses cut by bench_infill's rule
// (infill_cases.h: prefix | gap | suffix):
//   choice   the gap scored after the prefix against the gaps of the next three cases (4 choices,
//            chance 25%), picked by the sum of the candidate's token log-probabilities
//            (lm-evaluation-harness's acc) and by their mean per token
//   order    the gap against its own words in reverse order (the same tokens)
// and the time to score a prompt of L tokens against a reference generation of 32 tokens after
// it, side by side in one run (each the median of --repeats, interleaved).
//
//   bench_scoring --model models/unmask-kjv --corpus build/corpus/kjv.txt [--doc docs/benchmarks.md]
#include <c10/core/GradMode.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>

#include "bench/common/bench_compute.h"
#include "bench/common/bench_report.h"
#include "bench/engine/infill_cases.h"
#include "common/sampler/prompt_logprobs.h"
#include "common/sampler/sampler_registry.h"
#include "tools/train/verse_corpus.h"

namespace {

using namespace unmask;

using bench::Check;
using bench::Fmt;
using bench::Median;
using bench::ReverseWords;

struct Options {
  std::string dir = "models/unmask-kjv", corpus_path, doc, precision = "bf16";
  int held_out_every = 50, threads = 0, repeats = 3;
  std::int64_t verses = 200;
  std::vector<std::int64_t> lengths = {32, 128, 512};
};

// The log-probabilities of `continuation`'s tokens after `context`: (sum, count).
std::pair<double, std::int64_t> Continuation(const model::LladaModel& m, const std::vector<std::int64_t>& context,
                                             const std::vector<std::int64_t>& continuation) {
  std::vector<std::int64_t> prompt = context;
  prompt.insert(prompt.end(), continuation.begin(), continuation.end());
  sampler::PromptScoring s;
  s.tokens_per_pass = static_cast<std::int64_t>(prompt.size()) * 64;
  const auto scored = sampler::PromptLogprobs(m, prompt, s);
  double sum = 0;
  for (std::size_t j = context.size(); j < prompt.size(); ++j) sum += scored[j]->logprob;
  return {sum, static_cast<std::int64_t>(continuation.size())};
}

std::string QualityRows(const model::LladaModel& m, const tokenizer::Tokenizer& tok,
                        const std::vector<bench::InfillCase>& cases) {
  std::int64_t by_sum = 0, by_mean = 0, order = 0, orders = 0;
  double true_mean = 0;
  const std::size_t n = cases.size();
  for (std::size_t i = 0; i < n; ++i) {
    double best_sum = -1e300, best_mean = -1e300;
    std::size_t pick_sum = 0, pick_mean = 0;
    for (std::size_t k = 0; k < 4; ++k) {
      const auto [sum, count] = Continuation(m, cases[i].prefix, cases[(i + k) % n].gap);
      const double mean = sum / static_cast<double>(count);
      if (k == 0) true_mean += mean;
      if (sum > best_sum) best_sum = sum, pick_sum = k;
      if (mean > best_mean) best_mean = mean, pick_mean = k;
    }
    by_sum += pick_sum == 0;
    by_mean += pick_mean == 0;
    const auto reversed = ReverseWords(cases[i].gap, tok);
    if (reversed == cases[i].gap) continue;  // one word, or a palindrome of words
    ++orders;
    order += Continuation(m, cases[i].prefix, cases[i].gap).first > Continuation(m, cases[i].prefix, reversed).first;
  }
  auto pct = [](std::int64_t a, std::int64_t b) { return b ? Fmt("%.1f%%", 100.0 * a / b) : std::string("-"); };
  return "| the verse's own gap among 4 (chance 25%), by sum | " + std::to_string(n) + " | " + pct(by_sum, n) +
         " |\n| the verse's own gap among 4 (chance 25%), by mean per token | " + std::to_string(n) + " | " +
         pct(by_mean, n) + " |\n| the gap above its own words reversed (chance 50%) | " + std::to_string(orders) +
         " | " + pct(order, orders) + " |\n\nMean log-probability of a true gap's token: " +
         Fmt("%.3f", true_mean / static_cast<double>(n)) + ".\n";
}

std::string SpeedRows(const model::LladaModel& m, const std::vector<std::int64_t>& text, const Options& o) {
  std::string rows;
  for (const std::int64_t length : o.lengths) {
    if (length > static_cast<std::int64_t>(text.size())) continue;
    const std::vector<std::int64_t> prompt(text.begin(), text.begin() + length);
    generation::GenerationParams p;
    generation::WithModelTokens(m.config(), p);
    p.gen_length = p.block_length = p.steps = 32;
    p.prompt_logprobs = 0;
    const auto scoring = sampler::ScoringFor(m, p, length + p.gen_length);  // as the executor scores it
    std::vector<double> score, generate;
    for (int r = 0; r < o.repeats; ++r) {
      auto t = std::chrono::steady_clock::now();
      sampler::PromptLogprobs(m, prompt, scoring);
      score.push_back(bench::SecondsSince(t));
      t = std::chrono::steady_clock::now();
      sampler::PromptBatch batch;
      batch.ids = {prompt};
      Check(sampler::Generate(m, batch, p), "generate");
      generate.push_back(bench::SecondsSince(t));
    }
    const double s = Median(score), g = Median(generate);
    const std::int64_t rows_per_pass = std::max<std::int64_t>(1, scoring.tokens_per_pass / length);
    rows += "| " + std::to_string(length) + " | " + std::to_string((length - 1 + rows_per_pass - 1) / rows_per_pass) +
            " x " + std::to_string(std::min(rows_per_pass, length - 1)) + " rows | " + Fmt("%.3f", s) + " | " +
            Fmt("%.3f", g) + " | " + Fmt("%.2fx", s / g) + " | " + Fmt("%.2f", 1000 * s / (length - 1)) + " |\n";
  }
  return rows;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  CLI::App app{"bench_scoring"};
  app.add_option("--model", o.dir)->capture_default_str();
  app.add_option("--corpus", o.corpus_path, "The corpus the model was trained on (tools/make_corpus.sh)")->required();
  app.add_option("--held-out-every", o.held_out_every, "As given to unmask-train")->capture_default_str();
  app.add_option("--verses", o.verses, "Verses to score, evenly spaced over those that can be cut (0: all)")
      ->capture_default_str();
  app.add_option("--lengths", o.lengths, "Prompt lengths to time")->delimiter(',')->capture_default_str();
  app.add_option("--repeats", o.repeats, "Timings per length (the median is shown)")->capture_default_str();
  app.add_option("--precision", o.precision, "fp32, bf16 or auto")->capture_default_str();
  app.add_option("--threads", o.threads, "Intra-op threads (0: one per core)")->capture_default_str();
  app.add_option("--doc", o.doc, "markdown file whose bench:prompt-scoring section is replaced");
  CLI11_PARSE(app, argc, argv);
  const std::string compute = bench::SetUpComputeOrExit(o.threads);

  const auto corpus = Check(train::ReadVerseCorpus(o.corpus_path, o.held_out_every), "corpus");
  const auto tok = Check(tokenizer::Tokenizer::FromDirectory(o.dir), "tokenizer");
  const auto cases = bench::EvenlySpaced(Check(bench::MakeInfillCases(corpus.held_out, *tok, {}), "cases"), o.verses);
  if (cases.size() < 4) {
    std::cerr << "bench_scoring: fewer than 4 held-out verses can be cut\n";
    return 1;
  }
  std::vector<std::int64_t> text;  // the held-out verses, one after another, for the timed prompts
  for (const auto& c : cases) {
    for (const auto* part : {&c.prefix, &c.gap, &c.suffix}) text.insert(text.end(), part->begin(), part->end());
  }
  const auto model = bench::LoadModelOrExit(o.dir, o.precision);
  c10::AutoGradMode no_grad(false);
  const std::string out =
      "Prompt scoring (`prompt_logprobs`; `echo` with `logprobs` on /v1/completions) on `" + o.dir +
      "`, held-out verses cut by bench_infill's rule (a prefix of at least 6 tokens, a gap of 8-16 whole "
      "words' tokens): each prompt token scored given the tokens before it, the rest of the prompt masked "
      "(common/sampler/prompt_logprobs.h).\n\n| test | verses | accuracy |\n|---|---|---|\n" +
      QualityRows(*model, *tok, cases) +
      "\nTime to score a prompt of L tokens (L - 1 rows of L tokens, in forwards no larger than the "
      "job's: L + 32 tokens) against a reference generation of 32 tokens after it (32 steps), the median "
      "of " + std::to_string(o.repeats) + " interleaved runs each:\n\n| prompt tokens | forwards | scoring s | "
      "generation s | scoring / generation | ms per scored token |\n|---|---|---|---|---|---|\n" +
      SpeedRows(*model, text, o) + bench::MachineFooter(compute, argc, argv);
  std::cout << out;
  if (!o.doc.empty() && !bench::ReplaceDocSection(o.doc, "prompt-scoring", out)) return 1;
  return 0;
}
