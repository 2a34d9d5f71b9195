// Infilling on unmask's trained model (models/unmask-kjv), issue 31: held-out verses with a
// masked middle of 8-16 tokens (bench/engine/infill_cases.h says exactly how a verse is cut),
// filled with the suffix after the gap (PromptBatch::canvas) and, side by side, by a baseline that
// never sees the suffix (plain continuation of the prefix, the same gen_length), per sampler mode:
//   corpus words     share of the filled words that are words of the training split
//   words in place   share of the reference gap's words reproduced at the same word index
//   words anywhere   share of the reference gap's words found anywhere in the filled text (each
//                    filled word matching at most one reference word)
//   tokens in place  share of the reference gap's tokens reproduced at the same position
// Every infilled output is checked: G ids, none the mask id, the steps reported G commits and none
// at a position past the gap (the suffix never changes); the bench aborts naming the verse otherwise.
//
//   bench_infill --model models/unmask-kjv --corpus build/corpus/kjv.txt [--doc docs/benchmarks.md]
#include <c10/core/GradMode.h>

#include <CLI/CLI.hpp>
#include <iostream>
#include <map>
#include <set>
#include <sstream>

#include "bench/common/bench_compute.h"
#include "bench/common/bench_report.h"
#include "bench/engine/infill_cases.h"
#include "common/model/cpu_features.h"
#include "common/sampler/sampler_registry.h"
#include "tools/train/verse_corpus.h"

namespace {

using namespace unmask;

using bench::Check;

// This bench's own copies of bench_model_quality's tiny private helpers (Text, Fmt).

[[noreturn]] void Abort(const std::string& message) {
  std::cerr << "bench_infill: " << message << "\n";
  std::abort();
}

std::string Fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

std::string Pct(std::int64_t part, std::int64_t whole) {
  return whole ? Fmt("%.1f%%", 100.0 * static_cast<double>(part) / static_cast<double>(whole)) : "-";
}

// The figures of one (mode, canvas) row, summed over the verses.
struct Tally {
  std::int64_t verses = 0, words = 0, known = 0, ref_words = 0, in_place = 0, anywhere = 0, tokens = 0,
               tokens_in_place = 0, exact = 0, ended = 0;
  double seconds = 0, forwards = 0;
};

struct Setup {
  const model::LladaModel* model = nullptr;
  const tokenizer::Tokenizer* tok = nullptr;
  const checkpoint::LladaConfig* config = nullptr;
  const std::set<std::string>* vocabulary = nullptr;
};

// One generation of the gap: with the suffix as the canvas (infill) or without it (baseline).
// Aborts unless the output is G ids, none the mask id, and no step touched a position past it.
sampler::GenerationResult FillGap(const Setup& s, const bench::InfillCase& c, generation::GenerationParams params,
                                  bool infill) {
  const auto g = static_cast<std::int64_t>(c.gap.size());
  params.gen_length = params.block_length = params.steps = g;
  sampler::PromptBatch prompts;
  prompts.ids.push_back(c.prefix);
  if (infill) prompts.canvas.suffix = c.suffix;
  const std::string what = c.where + " (" + (infill ? "infill" : "baseline") + ", " +
                           generation::SamplerModeName(params.sampler) + ")";
  std::int64_t committed = 0;
  auto on_step = [&](const sampler::StepEvent& e) {
    for (const auto& row : e.positions)
      for (auto pos : row)
        if (++committed, pos < 0 || pos >= g)
          Abort(what + ": step " + std::to_string(e.step) + " unmasked position " + std::to_string(pos) +
                ", outside the gap of " + std::to_string(g) + " tokens (a suffix token changed)");
    return true;
  };
  auto out = sampler::Generate(*s.model, prompts, params, on_step);
  if (!out.ok()) Abort(what + ": " + out.status().ToString());
  if (out->output.size() != 1 || static_cast<std::int64_t>(out->output[0].size()) != g)
    Abort(what + ": the output is not one row of " + std::to_string(g) + " ids");
  for (auto id : out->output[0])
    if (id == params.mask_id) Abort(what + ": the output still holds the mask id");
  if (infill && committed != g)  // each hole committed once (no early stop with a suffix)
    Abort(what + ": the steps reported " + std::to_string(committed) + " commits for " + std::to_string(g) + " holes");
  return std::move(out).value();
}

// The generated ids up to the first EOS/EOT, decoded; `ended` tells whether one was there.
std::string Text(const Setup& s, const std::vector<std::int64_t>& ids, bool* ended) {
  std::vector<std::int32_t> kept;
  *ended = false;
  for (auto id : ids) {
    if (id == s.config->eos_token_id || id == s.config->eot_token_id) {
      *ended = true;
      break;
    }
    kept.push_back(static_cast<std::int32_t>(id));
  }
  return Check(s.tok->Decode(kept, true), "decode");
}

// Adds one filled gap to `t`; returns its text.
std::string Score(const Setup& s, const bench::InfillCase& c, const sampler::GenerationResult& r, Tally& t) {
  bool ended = false;
  const std::string text = Text(s, r.output[0], &ended);
  const auto got = train::Words(text), want = train::Words(c.gap_text);
  ++t.verses;
  t.ended += ended;
  t.words += static_cast<std::int64_t>(got.size());
  for (const auto& w : got) t.known += s.vocabulary->count(w);
  t.ref_words += static_cast<std::int64_t>(want.size());
  for (std::size_t k = 0; k < want.size() && k < got.size(); ++k) t.in_place += want[k] == got[k];
  std::map<std::string, int> left;  // the reference words not matched yet
  for (const auto& w : want) ++left[w];
  for (const auto& w : got)
    if (left[w] > 0) --left[w], ++t.anywhere;
  t.tokens += static_cast<std::int64_t>(c.gap.size());
  for (std::size_t k = 0; k < c.gap.size(); ++k) t.tokens_in_place += r.output[0][k] == c.gap[k];
  t.exact += r.output[0] == c.gap;
  t.seconds += r.seconds;
  t.forwards += static_cast<double>(r.steps_run);
  return text;
}

std::string Row(const std::string& mode, const std::string& canvas, const Tally& t) {
  return "| " + mode + " | " + canvas + " | " + std::to_string(t.verses) + " | " + Pct(t.known, t.words) + " (" +
         std::to_string(t.words) + " words) | " + Pct(t.in_place, t.ref_words) + " | " +
         Pct(t.anywhere, t.ref_words) + " | " + Pct(t.tokens_in_place, t.tokens) + " | " + std::to_string(t.exact) + " | " + std::to_string(t.ended) + " | " +
         Fmt("%.1f", t.verses ? t.forwards / static_cast<double>(t.verses) : 0.0) + " | " +
         Fmt("%.1f", t.verses ? 1000.0 * t.seconds / static_cast<double>(t.verses) : 0.0) + " |\n";
}

std::string Cell(std::string text) {
  while (!text.empty() && text.front() == ' ') text.erase(0, 1);
  std::string out;
  for (char ch : text) out += ch == '|' ? std::string("\\|") : std::string(1, ch);
  return out.empty() ? "(empty)" : out;
}

struct ModeRun {
  std::string label;
  generation::GenerationParams params;
};

std::vector<ModeRun> ParseModes(const std::string& list, double threshold, const checkpoint::LladaConfig& config) {
  std::vector<ModeRun> runs;
  std::stringstream in(list);
  for (std::string name; std::getline(in, name, ',');) {
    ModeRun run;
    run.params.sampler = Check(generation::ParseSamplerMode(name), "--modes");
    run.params.threshold = threshold;
    run.params.temperature = 0;
    generation::WithModelTokens(config, run.params);
    run.label = generation::SamplerModeName(run.params.sampler);
    if (run.params.sampler != generation::SamplerMode::kReference &&
        generation::FastOptionsOf(run.params).rule == generation::DecodeRule::kThreshold)
      run.label += " " + Fmt("%g", threshold);
    runs.push_back(run);
  }
  return runs;
}

struct Options {
  std::string dir = "models/unmask-kjv", corpus_path, doc, precision = "bf16";
  std::string modes = "reference,dual_cache,threshold";
  int held_out_every = 50, threads = 0;
  std::int64_t verses = 0;
  double threshold = generation::kDefaultThreshold;
  bench::InfillRule rule;
};

// The table rows of every mode (infill and baseline side by side) and the first mode's texts of
// the example verses `picks`.
struct Measured {
  std::string rows;
  std::vector<std::string> infilled, continued;
};

Measured Measure(const Setup& s, const std::vector<ModeRun>& runs, const std::vector<bench::InfillCase>& cases,
                 const std::vector<std::size_t>& picks) {
  Measured m;
  m.infilled.resize(picks.size());
  m.continued.resize(picks.size());
  for (const auto& run : runs) {
    Tally with, without;
    for (std::size_t i = 0; i < cases.size(); ++i) {
      const std::string a = Score(s, cases[i], FillGap(s, cases[i], run.params, true), with);
      const std::string b = Score(s, cases[i], FillGap(s, cases[i], run.params, false), without);
      for (std::size_t k = 0; k < picks.size(); ++k)
        if (&run == &runs.front() && picks[k] == i) m.infilled[k] = a, m.continued[k] = b;
    }
    m.rows += Row(run.label, "infill (prefix, gap, suffix)", with) + Row(run.label, "baseline (prefix only)", without);
    std::cerr << run.label << " done\n";
  }
  return m;
}

// The first row: the reference gaps themselves (how many of their words the training split has).
std::string GapRow(const Setup& s, const std::vector<bench::InfillCase>& cases, std::int64_t* gap_tokens,
                   std::string* lengths) {
  std::int64_t words = 0, known = 0;
  *gap_tokens = 0;
  std::map<std::size_t, int> by_length;
  for (const auto& c : cases) {
    ++by_length[c.gap.size()];
    for (const auto& w : train::Words(c.gap_text)) {
      ++words;
      known += s.vocabulary->count(w);
    }
    *gap_tokens += static_cast<std::int64_t>(c.gap.size());
  }
  for (const auto& [g, n] : by_length) *lengths += (lengths->empty() ? "" : ", ") + std::to_string(n) + " of " + std::to_string(g);
  return "| - | the reference gaps (held-out text) | " + std::to_string(cases.size()) + " | " + Pct(known, words) +
         " (" + std::to_string(words) + " words) | 100% | 100% | 100% | " + std::to_string(cases.size()) + " | 0 | - | - |\n";
}

std::string Describe(const Options& o, std::size_t chapters, std::size_t n, std::size_t cuttable,
                     std::int64_t gap_tokens, const std::string& lengths) {
  std::ostringstream out;
  out << "unmask-kjv (" << o.precision << "), the held-out split (every " << o.held_out_every << "th chapter, "
      << chapters << " chapters): " << n << " verses evenly spaced over the " << cuttable
      << " that can be cut (each verse encoded on its own; prefix = the fewest whole words of at least "
      << o.rule.min_prefix << " tokens; gap = the fewest whole words after it with at least T tokens and at most "
      << o.rule.max_gap << ", T cycling over " << o.rule.min_gap << ".." << o.rule.max_gap
      << " with the verse's index in the split; suffix = the rest of the verse, at least " << o.rule.min_suffix
      << " tokens, nothing of the next verse). Gap lengths G (verses of G tokens): " << lengths << "; "
      << gap_tokens << " gap tokens in all (G = " << Fmt("%.1f", static_cast<double>(gap_tokens) / static_cast<double>(n))
      << " on average). Each gap: gen_length = block_length = steps = G, temperature 0; infill: the suffix as the "
         "canvas (prompt, G masks, suffix); baseline: the prefix alone, the same G tokens. Text up to the first "
         "EOS/EOT; words as train::Words cuts them (runs of ASCII letters with an optional 's, lower-cased). Corpus "
         "words: share of the filled words that are words of the training split. Words in place: filled word k "
         "equals the reference gap's word k, over all the reference gaps' words. Words anywhere: reference gap words "
         "found anywhere in the filled text, each filled word matching at most one. Tokens in place: the same per "
         "token position. Exact gaps: outputs equal to the gap's ids. Every infilled output checked: G ids, no "
         "mask id, G commits reported by the steps, none outside the gap.\n\n";
  return out.str();
}

std::string Examples(const std::string& label, const std::vector<bench::InfillCase>& cases,
                     const std::vector<std::size_t>& picks, const Measured& m) {
  std::ostringstream out;
  out << "\nExamples (" << label << "; verses";
  for (std::size_t k = 0; k < picks.size(); ++k) out << (k ? ", " : " ") << picks[k] + 1;
  out << " of the run, evenly spaced):\n\n| verse | prefix | infilled | suffix | reference gap | baseline "
      << "(no suffix) |\n|---|---|---|---|---|---|\n";
  for (std::size_t k = 0; k < picks.size(); ++k) {
    const auto& c = cases[picks[k]];
    out << "| " << c.where << " | " << Cell(c.prefix_text) << " | **" << Cell(m.infilled[k]) << "** | "
        << Cell(c.suffix_text) << " | " << Cell(c.gap_text) << " | " << Cell(m.continued[k]) << " |\n";
  }
  return out.str();
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  CLI::App app{"bench_infill"};
  app.add_option("--model", o.dir)->capture_default_str();
  app.add_option("--corpus", o.corpus_path, "The corpus the model was trained on (tools/make_corpus.sh)")->required();
  app.add_option("--held-out-every", o.held_out_every, "As given to unmask-train")->capture_default_str();
  app.add_option("--verses", o.verses, "Verses to fill, evenly spaced over those that can be cut (0: all)")
      ->capture_default_str();
  app.add_option("--modes", o.modes, "Comma-separated sampler modes")->capture_default_str();
  app.add_option("--threshold", o.threshold, "The threshold modes' threshold")->capture_default_str();
  app.add_option("--min-prefix", o.rule.min_prefix)->capture_default_str();
  app.add_option("--min-gap", o.rule.min_gap)->capture_default_str();
  app.add_option("--max-gap", o.rule.max_gap)->capture_default_str();
  app.add_option("--min-suffix", o.rule.min_suffix)->capture_default_str();
  app.add_option("--precision", o.precision, "fp32, bf16 or auto")->capture_default_str();
  app.add_option("--threads", o.threads, "Intra-op threads (0: one per core)")->capture_default_str();
  app.add_option("--doc", o.doc, "markdown file whose bench:infill section is replaced");
  CLI11_PARSE(app, argc, argv);
  const std::string compute = bench::SetUpComputeOrExit(o.threads);

  const auto corpus = Check(train::ReadVerseCorpus(o.corpus_path, o.held_out_every), "corpus");
  const auto tok = Check(tokenizer::Tokenizer::FromDirectory(o.dir), "tokenizer");
  const auto config = Check(checkpoint::LladaConfig::FromFile(o.dir + "/config.json"), "config");
  std::set<std::string> vocabulary;  // the training split's words only
  for (const auto& c : corpus.train)
    for (const auto& w : train::Words(c.Text())) vocabulary.insert(w);
  const auto all = Check(bench::MakeInfillCases(corpus.held_out, *tok, o.rule), "cases");
  const auto cases = bench::EvenlySpaced(all, o.verses);
  if (cases.empty()) Abort("no held-out verse can be cut by the rule");
  const auto runs = ParseModes(o.modes, o.threshold, config);
  const auto model = bench::LoadModelOrExit(o.dir, o.precision);
  c10::AutoGradMode no_grad(false);
  const Setup s{model.get(), tok.get(), &config, &vocabulary};

  std::int64_t gap_tokens = 0;
  std::string lengths;
  const std::string gap_row = GapRow(s, cases, &gap_tokens, &lengths);
  const std::vector<std::size_t> picks = {0, cases.size() / 3, 2 * cases.size() / 3};
  const Measured m = Measure(s, runs, cases, picks);
  const std::string text =
      Describe(o, corpus.held_out.size(), cases.size(), all.size(), gap_tokens, lengths) +
      "| sampler | canvas | verses | corpus words | words in place | words anywhere | tokens in place | exact gaps | "
      "ended by EOS/EOT | forwards (mean) | ms per verse |\n|---|---|---|---|---|---|---|---|---|---|---|\n" +
      gap_row + m.rows + Examples(runs.front().label, cases, picks, m) + bench::MachineFooter(compute, argc, argv);
  std::cout << text;
  if (!o.doc.empty() && !bench::ReplaceDocSection(o.doc, "infill", text)) return 1;
  return 0;
}
