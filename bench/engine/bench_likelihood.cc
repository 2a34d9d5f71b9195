// The official Monte Carlo likelihood (GenerationParams.likelihood; common/sampler/likelihood.h)
// on unmask's trained model (models/unmask-kjv), over held-out verses cut by bench_infill's rule
// (infill_cases.h: prefix | gap), next to the deterministic prompt scoring (prompt_logprobs
// summed over the gap, bench_scoring's estimate):
//   choice   the verse's own gap after its prefix against the gaps of the next three cases (4
//            choices, chance 25%), picked by the larger log-likelihood
//   order    the gap above its own words in reverse order (the same tokens)
//   spread   the mean standard error of the Monte Carlo estimate, and how often greedy
//            unmasking from the prefix gives the true gap (lm-evaluation-harness's is_greedy)
// for mc_num 16 and 128 (batch_size 16, seed 0 for every candidate: the same draws' shapes), and
// the time per estimate against the deterministic scoring of the same pair, side by side in one
// run (interleaved, the median of --repeats).
//
//   bench_likelihood --model models/unmask-kjv --corpus build/corpus/kjv.txt [--doc docs/benchmarks.md]
#include <c10/core/GradMode.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>

#include "bench/common/bench_compute.h"
#include "bench/common/bench_report.h"
#include "bench/engine/infill_cases.h"
#include "common/sampler/likelihood.h"
#include "common/sampler/prompt_logprobs.h"
#include "tools/train/verse_corpus.h"

namespace {

using namespace unmask;

using bench::Check;
using bench::Fmt;
using bench::Median;
using bench::ReverseWords;

struct Options {
  std::string dir = "models/unmask-kjv", corpus_path, doc, precision = "bf16";
  int held_out_every = 50, threads = 0, repeats = 5;
  std::int64_t verses = 100;
  std::vector<int> mc_nums = {16, 128};
};

std::vector<std::int64_t> Concat(const std::vector<std::int64_t>& a, const std::vector<std::int64_t>& b) {
  std::vector<std::int64_t> out = a;
  out.insert(out.end(), b.begin(), b.end());
  return out;
}

// The deterministic estimate: the continuation's prompt log-probabilities summed.
double Deterministic(const model::LladaModel& m, const std::vector<std::int64_t>& context,
                     const std::vector<std::int64_t>& continuation) {
  const auto ids = Concat(context, continuation);
  sampler::PromptScoring s;
  s.tokens_per_pass = static_cast<std::int64_t>(ids.size()) * 64;
  const auto scored = sampler::PromptLogprobs(m, ids, s);
  double sum = 0;
  for (std::size_t j = context.size(); j < ids.size(); ++j) sum += scored[j]->logprob;
  return sum;
}

sampler::LikelihoodResult MonteCarlo(const model::LladaModel& m, const std::vector<std::int64_t>& context,
                                     const std::vector<std::int64_t>& continuation, int mc_num, bool check_greedy,
                                     std::int64_t tokens_per_pass) {
  generation::GenerationParams p;
  p.seed = 0;
  p.likelihood = generation::LikelihoodParams{static_cast<std::int64_t>(continuation.size()), mc_num,
                                              std::min(mc_num, 16), check_greedy};
  return sampler::EstimateLikelihood(m, Concat(context, continuation), p, tokens_per_pass);
}

struct Tally {
  std::int64_t choice = 0, order = 0, greedy = 0;
  double standard_error = 0;
};

std::string QualityRows(const model::LladaModel& m, const tokenizer::Tokenizer& tok,
                        const std::vector<bench::InfillCase>& cases, const Options& o) {
  const std::size_t n = cases.size();
  const std::int64_t wide = 1 << 20;  // a whole draw per forward: the same estimate, faster
  std::vector<Tally> mc(o.mc_nums.size());
  Tally det;
  std::int64_t orders = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const auto& prefix = cases[i].prefix;
    const auto reversed = ReverseWords(cases[i].gap, tok);
    const bool ordered = reversed != cases[i].gap;
    orders += ordered;
    // The deterministic estimate.
    double best = -1e300;
    std::size_t pick = 0;
    for (std::size_t k = 0; k < 4; ++k) {
      const double v = Deterministic(m, prefix, cases[(i + k) % n].gap);
      if (v > best) best = v, pick = k;
    }
    det.choice += pick == 0;
    if (ordered) det.order += Deterministic(m, prefix, cases[i].gap) > Deterministic(m, prefix, reversed);
    for (std::size_t a = 0; a < o.mc_nums.size(); ++a) {
      best = -1e300;
      pick = 0;
      for (std::size_t k = 0; k < 4; ++k) {
        const auto r = MonteCarlo(m, prefix, cases[(i + k) % n].gap, o.mc_nums[a], k == 0, wide);
        if (k == 0) {
          mc[a].standard_error += r.standard_error;
          mc[a].greedy += r.greedy.value_or(false);
        }
        if (r.loglikelihood > best) best = r.loglikelihood, pick = k;
      }
      mc[a].choice += pick == 0;
      if (ordered)
        mc[a].order += MonteCarlo(m, prefix, cases[i].gap, o.mc_nums[a], false, wide).loglikelihood >
                       MonteCarlo(m, prefix, reversed, o.mc_nums[a], false, wide).loglikelihood;
    }
  }
  auto pct = [](std::int64_t a, std::int64_t b) { return b ? Fmt("%.1f%%", 100.0 * a / b) : std::string("-"); };
  const auto count = static_cast<std::int64_t>(n);
  std::string rows = "| deterministic (prompt_logprobs summed) | " + pct(det.choice, count) + " | " +
                     pct(det.order, orders) + " | - | - |\n";
  for (std::size_t a = 0; a < o.mc_nums.size(); ++a) {
    rows += "| Monte Carlo, mc_num " + std::to_string(o.mc_nums[a]) + " | " + pct(mc[a].choice, count) + " | " +
            pct(mc[a].order, orders) + " | " + Fmt("%.3f", mc[a].standard_error / static_cast<double>(n)) + " | " +
            pct(mc[a].greedy, count) + " |\n";
  }
  return "| estimate | own gap among 4 (chance 25%; " + std::to_string(n) + " verses) | gap above its words reversed "
         "(chance 50%; " + std::to_string(orders) + ") | mean standard error (nats) | true gap greedy |\n"
         "|---|---|---|---|---|\n" + rows;
}

// Per mc_num: an estimate as the executor runs it (forwards of the job's size: one row of the
// sequence, its one generated position included) and with a whole draw per forward, against the
// deterministic scoring (the continuation's T rows), on the first case's prefix and gap.
std::string SpeedRows(const model::LladaModel& m, const bench::InfillCase& c, const Options& o) {
  std::string rows;
  const auto sequence = static_cast<std::int64_t>(c.prefix.size() + c.gap.size()) + 1;
  for (const int mc_num : o.mc_nums) {
    std::vector<double> job, wide, det;
    for (int r = 0; r < o.repeats; ++r) {
      auto t = std::chrono::steady_clock::now();
      MonteCarlo(m, c.prefix, c.gap, mc_num, false, sequence);
      job.push_back(bench::SecondsSince(t));
      t = std::chrono::steady_clock::now();
      MonteCarlo(m, c.prefix, c.gap, mc_num, false, 1 << 20);
      wide.push_back(bench::SecondsSince(t));
      t = std::chrono::steady_clock::now();
      Deterministic(m, c.prefix, c.gap);
      det.push_back(bench::SecondsSince(t));
    }
    const double a = Median(job), b = Median(wide), d = Median(det);
    rows += "| " + std::to_string(mc_num) + " | " + std::to_string(sequence - 1) + " (" + std::to_string(c.gap.size()) +
            ") | " + Fmt("%.3f", a) + " | " + Fmt("%.3f", b) + " | " + Fmt("%.4f", d) + " | " + Fmt("%.1fx", a / d) +
            " | " + Fmt("%.1fx", b / d) + " |\n";
  }
  return rows;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  CLI::App app{"bench_likelihood"};
  app.add_option("--model", o.dir)->capture_default_str();
  app.add_option("--corpus", o.corpus_path, "The corpus the model was trained on (tools/make_corpus.sh)")->required();
  app.add_option("--held-out-every", o.held_out_every, "As given to unmask-train")->capture_default_str();
  app.add_option("--verses", o.verses, "Verses, evenly spaced over those that can be cut (0: all)")->capture_default_str();
  app.add_option("--mc-nums", o.mc_nums, "Monte Carlo sample counts")->delimiter(',')->capture_default_str();
  app.add_option("--repeats", o.repeats, "Timings per row (the median is shown)")->capture_default_str();
  app.add_option("--precision", o.precision, "fp32, bf16 or auto")->capture_default_str();
  app.add_option("--threads", o.threads, "Intra-op threads (0: one per core)")->capture_default_str();
  app.add_option("--doc", o.doc, "markdown file whose bench:likelihood section is replaced");
  CLI11_PARSE(app, argc, argv);
  const std::string compute = bench::SetUpComputeOrExit(o.threads);

  const auto corpus = Check(train::ReadVerseCorpus(o.corpus_path, o.held_out_every), "corpus");
  const auto tok = Check(tokenizer::Tokenizer::FromDirectory(o.dir), "tokenizer");
  const auto cases = bench::EvenlySpaced(Check(bench::MakeInfillCases(corpus.held_out, *tok, {}), "cases"), o.verses);
  if (cases.size() < 4) {
    std::cerr << "bench_likelihood: fewer than 4 held-out verses can be cut\n";
    return 1;
  }
  const auto model = bench::LoadModelOrExit(o.dir, o.precision);
  c10::AutoGradMode no_grad(false);
  const std::string out =
      "The official Monte Carlo likelihood (`likelihood`; common/sampler/likelihood.h: LLaDA's "
      "get_log_likelihood, batch_size 16, seed 0) against the deterministic prompt scoring on `" + o.dir +
      "`, held-out verses cut by bench_infill's rule (a prefix of at least 6 tokens, then a gap of 8-16 whole "
      "words' tokens as the continuation):\n\n" + QualityRows(*model, *tok, cases, o) +
      "\nTime per estimate of the first verse's gap after its prefix: the Monte Carlo estimate with one sample a "
      "forward (rows_per_forward 1: what the executor ran before 2026-11-28, and runs where the memory holds no "
      "more) and with a whole draw a forward (16 samples: what the scheduler plans where it fits, and the "
      "official code's batch), against the deterministic scoring (one forward of the continuation's rows), the "
      "median of " + std::to_string(o.repeats) + " interleaved runs each:\n\n| mc_num | tokens (continuation) | "
      "Monte Carlo s, 1 sample a forward | Monte Carlo s, 16 samples a forward | deterministic s | 1 sample / "
      "deterministic | 16 samples / deterministic |\n|---|---|---|---|---|---|---|\n" + SpeedRows(*model, cases[0], o) +
      bench::MachineFooter(compute, argc, argv);
  std::cout << out;
  if (!o.doc.empty() && !bench::ReplaceDocSection(o.doc, "likelihood", out)) return 1;
  return 0;
}
