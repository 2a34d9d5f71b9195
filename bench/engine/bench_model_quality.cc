// Quality of a trained model (unmask's own, models/unmask-kjv) on the held-out split of its
// corpus, with every figure next to its baseline:
//   - masked-token accuracy at mask ratios 0.15 / 0.5 / 0.9 and the ELBO bound on perplexity
//     (LLaDA's: E_t[(1/t) sum over masked tokens of -log p] per token), against a unigram model
//     of the training split; for bf16, int8, int4 and pruned weights (loader segments);
//   - generation: the share of generated words that are words of the corpus (reference sampler,
//     20 prompts from held-out verses), and per weights the token agreement with bf16;
//   - chat: recall of the supervised pairs (exact reply, and the share of reply words in place);
//   - every sampler mode against the reference on this model (gen_length 256 and 512, block 32);
//   - each clamp policy at a budget too small for the request: what it changed, and the output
//     of what then runs against the unclamped output.
//
//   bench_model_quality --model models/unmask-kjv --corpus kjv.txt [--doc docs/benchmarks.md]
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <c10/core/GradMode.h>

#include <CLI/CLI.hpp>
#include <cmath>
#include <fstream>
#include <iostream>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <thread>

#include "bench/common/bench_report.h"
#include "common/fitting/clamp.h"
#include "bench/common/bench_compute.h"
#include "common/model/llada_model.h"
#include "common/model/torch_util.h"
#include "common/sampler/sampler_registry.h"
#include "common/tokenizer/chat_template.h"
#include "common/registry/progressive_loader.h"
#include "common/segment/weight_view.h"
#include "tools/train/training_data.h"

namespace {

using namespace unmask;

using bench::Check;

void Check(const Status& s, const std::string& what) {
  if (!s.ok()) {
    std::cerr << what << ": " << s.ToString() << "\n";
    std::exit(1);
  }
}

std::shared_ptr<const model::LladaModel> FromSpec(const std::string& dir, const std::string& spec_text) {
  model::ModelOptions mo;
  mo.precision = model::Precision::kBFloat16;
  auto spec = Check(weights::PrecisionSpec::Parse(spec_text), spec_text);
  auto loaded = Check(weights::LoadModelDir(dir, spec, "quality-" + std::to_string(std::hash<std::string>()(spec_text))), dir);
  auto attached = Check(weights::AttachedModel::Attach(loaded.segment.name()), "attach");
  (void)loaded.segment.Unlink();
  return Check(model::LladaModel::FromSegment(std::make_shared<weights::AttachedModel>(std::move(attached)), mo), "model");
}

using train::Words;

// Held-out windows [N, L] and the quality figures of one model on them.
struct HeldOut {
  at::Tensor windows;
  std::int64_t mask_id = 0;
};

double MaskedAccuracy(const model::LladaModel& m, const HeldOut& h, double ratio) {
  const auto n = h.windows.size(0), l = h.windows.size(1);
  at::Generator gen = at::make_generator<at::CPUGeneratorImpl>(77);
  const auto k = static_cast<std::int64_t>(std::llround(ratio * static_cast<double>(l)));
  // Exactly k masked positions per window: the k smallest of L uniform draws.
  at::Tensor order = at::rand({n, l}, gen).argsort(/*dim=*/1, /*descending=*/false);
  at::Tensor masked = at::zeros({n, l}, at::kBool).scatter_(1, order.narrow(1, 0, k), true);
  std::int64_t right = 0;
  for (std::int64_t r = 0; r < n; r += 16) {
    const auto b = std::min<std::int64_t>(16, n - r);
    at::Tensor ids = h.windows.narrow(0, r, b), mk = masked.narrow(0, r, b);
    at::Tensor pred = m.Logits(ids.masked_fill(mk, h.mask_id), at::Tensor()).argmax(-1);
    right += pred.eq(ids).logical_and(mk).sum().item<std::int64_t>();
  }
  return static_cast<double>(right) / static_cast<double>(n * k);
}

// LLaDA's bound in nats per token, with `draws` stratified mask ratios per window.
double ElboNatsPerToken(const model::LladaModel& m, const HeldOut& h, int draws) {
  const auto n = h.windows.size(0), l = h.windows.size(1);
  at::Generator gen = at::make_generator<at::CPUGeneratorImpl>(99);
  double total = 0;
  for (int d = 0; d < draws; ++d) {
    for (std::int64_t r = 0; r < n; r += 16) {
      const auto b = std::min<std::int64_t>(16, n - r);
      at::Tensor ids = h.windows.narrow(0, r, b);
      // t stratified over (window, draw): every window sees draws ratios spread over (0, 1].
      at::Tensor t = ((at::arange(b, at::kDouble) * draws + d + at::rand({b}, gen, at::kDouble)) / (b * draws)).to(at::kFloat);
      at::Tensor mk = at::rand({b, l}, gen).lt(t.unsqueeze(1));
      at::Tensor logp = at::log_softmax(m.Logits(ids.masked_fill(mk, h.mask_id), at::Tensor()).to(at::kFloat), -1);
      at::Tensor nll = -logp.gather(-1, ids.unsqueeze(-1)).squeeze(-1);
      total += (nll * mk / t.unsqueeze(1)).sum().item<double>();
    }
  }
  return total / static_cast<double>(draws * n * l);
}

generation::GenerationParams Params(const checkpoint::LladaConfig& c, std::int64_t gen, std::int64_t block, std::int64_t steps) {
  generation::GenerationParams p;
  p.gen_length = gen;
  p.block_length = block;
  p.steps = steps;
  p.mask_id = c.mask_token_id;
  p.eos_id = c.eos_token_id;
  p.eot_id = c.eot_token_id;
  return p;
}

// The text of generated ids up to the first EOS/EOT.
std::string Text(const tokenizer::Tokenizer& tok, const std::vector<std::int64_t>& ids, const checkpoint::LladaConfig& c) {
  std::vector<std::int32_t> kept;
  for (auto id : ids) {
    if (id == c.eos_token_id || id == c.eot_token_id) break;
    kept.push_back(static_cast<std::int32_t>(id));
  }
  return Check(tok.Decode(kept, true), "decode");
}

std::string Trim(std::string s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.erase(0, 1);
  return s;
}

std::string Fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

}  // namespace

int main(int argc, char** argv) {
  std::string dir = "models/unmask-kjv", corpus_path, doc;
  int held_out_every = 50, windows = 64, prompts_n = 20, chat_n = 40, elbo_draws = 4, mode_prompts = 4;
  std::string specs = "bf16,int8,int4:g64,int4:g32,bf16:prune=0.25,bf16:prune=0.5";
  CLI::App app{"bench_model_quality"};
  app.add_option("--model", dir)->capture_default_str();
  app.add_option("--corpus", corpus_path, "The corpus the model was trained on (tools/make_corpus.sh)")->required();
  app.add_option("--held-out-every", held_out_every, "As given to unmask-train")->capture_default_str();
  app.add_option("--weights", specs, "Comma-separated loader precisions to compare")->capture_default_str();
  app.add_option("--windows", windows)->capture_default_str();
  app.add_option("--prompts", prompts_n)->capture_default_str();
  app.add_option("--chat-pairs", chat_n)->capture_default_str();
  // Small blocks: semi-autoregressive enough that the reply is written before the EOS padding
  // (with one 32-token block the padding, the most confident prediction, closes the reply at once).
  int chat_gen = 64, chat_block = 8;
  app.add_option("--chat-gen-length", chat_gen)->capture_default_str();
  app.add_option("--chat-block-length", chat_block)->capture_default_str();
  app.add_option("--mode-prompts", mode_prompts)->capture_default_str();
  std::string mode_gens = "256,512";
  app.add_option("--mode-gen-lengths", mode_gens, "Comma-separated gen_lengths of the sampler-mode table")
      ->capture_default_str();
  app.add_option("--doc", doc, "markdown file whose bench:quality-* sections are replaced");
  int threads = 0;
  app.add_option("--threads", threads, "Intra-op threads (0: one per core)")->capture_default_str();
  std::string sweep_spec = "dual_cache+threshold:0.9,0.7,0.5,0.3;dual_cache+factor:1,2,4,8,16";
  app.add_option("--sweep", sweep_spec,
                 "The parallel-decoding sweep at the first --mode-gen-lengths: MODE:values;MODE:values (threshold or "
                 "factor values)")
      ->capture_default_str();
  std::string sections = "heldout,chat,samplers,clamp";
  app.add_option("--sections", sections, "Comma-separated parts to measure (and replace in --doc)")->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  std::set<std::string> wanted;
  {
    std::stringstream in(sections);
    for (std::string part; std::getline(in, part, ',');) {
      if (part != "heldout" && part != "chat" && part != "samplers" && part != "clamp" && part != "sweep") {
        std::cerr << "--sections: unknown part '" << part << "' (heldout, chat, samplers, clamp, sweep)\n";
        return 2;
      }
      wanted.insert(part);
    }
  }
  auto want = [&](const char* part) { return wanted.count(part) > 0; };
  (void)bench::SetUpComputeOrExit(threads);

  const auto corpus = Check(train::ReadVerseCorpus(corpus_path, held_out_every), "corpus");
  const auto tok = Check(tokenizer::Tokenizer::FromDirectory(dir), "tokenizer");
  const auto ids = Check(tokenizer::FindChatTokenIds(*tok), "tokenizer");
  const auto config = Check(checkpoint::LladaConfig::FromFile(dir + "/config.json"), "config");
  std::set<std::string> vocabulary;
  for (const auto& c : corpus.train)
    for (const auto& w : Words(c.Text())) vocabulary.insert(w);
  for (const auto& c : corpus.held_out)
    for (const auto& w : Words(c.Text())) vocabulary.insert(w);

  // Held-out windows of 256 tokens, evenly spaced, and the unigram baseline of the training split.
  const auto held_stream = Check(train::TokenStream(corpus.held_out, *tok, ids.eos), "held-out");
  const auto train_stream = Check(train::TokenStream(corpus.train, *tok, ids.eos), "train");
  const std::int64_t L = 256, N = std::min<std::int64_t>(windows, static_cast<std::int64_t>(held_stream.size()) / L);
  HeldOut h{at::empty({N, L}, at::kLong), config.mask_token_id};
  for (std::int64_t r = 0; r < N; ++r)
    for (std::int64_t c = 0; c < L; ++c) h.windows[r][c] = held_stream[r * (held_stream.size() - L) / std::max<std::int64_t>(1, N - 1) + c];
  std::vector<double> counts(config.vocab_size, 1.0);  // add-one smoothing
  for (auto id : train_stream) counts[id] += 1;
  double sum = 0;
  for (double c : counts) sum += c;
  const auto top = std::max_element(counts.begin(), counts.end()) - counts.begin();
  double unigram_nll = 0;
  std::int64_t unigram_right = 0;
  for (std::int64_t r = 0; r < N; ++r)
    for (std::int64_t c = 0; c < L; ++c) {
      const auto id = h.windows[r][c].item<std::int64_t>();
      unigram_nll -= std::log(counts[id] / sum);
      unigram_right += id == top;
    }
  unigram_nll /= static_cast<double>(N * L);
  const double unigram_acc = static_cast<double>(unigram_right) / static_cast<double>(N * L);

  // Prompts: the first 8 words of held-out verses, evenly spaced.
  std::vector<const train::Verse*> held_verses;
  for (const auto& c : corpus.held_out)
    for (const auto& v : c.verses)
      if (Words(v.text).size() >= 12) held_verses.push_back(&v);
  sampler::PromptBatch prompts;
  std::vector<std::string> prompt_texts;
  for (int i = 0; i < prompts_n && !held_verses.empty(); ++i) {
    std::istringstream in(held_verses[i * held_verses.size() / prompts_n]->text);
    std::string w, text;
    for (int k = 0; k < 8 && in >> w; ++k) text += (text.empty() ? "" : " ") + w;
    prompt_texts.push_back(text);
    auto enc = Check(tok->Encode(text, false), "prompt");
    prompts.ids.emplace_back(enc.begin(), enc.end());
  }
  prompts = Check(sampler::NormalizePromptBatch(prompts, config.eos_token_id, config.vocab_size), "prompts");
  const auto gen_params = Params(config, 64, 32, 64);

  std::ostringstream quality;
  quality << "Held-out split: " << corpus.held_out.size() << " chapters never trained on (" << held_stream.size()
          << " tokens); " << N << " windows of " << L << " tokens. Masked-token accuracy: exactly that share of each window"
          << " masked, argmax at the masked positions. ELBO: LLaDA's bound, " << elbo_draws
          << " stratified mask ratios per window, in nats per token, and e^bound as a perplexity bound. Generation: reference"
          << " sampler, " << prompts.ids.size() << " prompts (first 8 words of held-out verses), gen_length 64, block 32, 64"
          << " steps, temperature 0; agreement = generated tokens equal to the bf16 model's.\n\n"
          << "| weights | acc @0.15 | acc @0.5 | acc @0.9 | ELBO nats/token | perplexity bound | corpus words in output | "
             "agreement with bf16 |\n|---|---|---|---|---|---|---|---|\n"
          << "| unigram baseline (training split) | " << Fmt("%.1f%%", 100 * unigram_acc) << " | "
          << Fmt("%.1f%%", 100 * unigram_acc) << " | " << Fmt("%.1f%%", 100 * unigram_acc) << " | "
          << Fmt("%.3f", unigram_nll) << " | " << Fmt("%.1f", std::exp(unigram_nll)) << " (exact) | - | - |\n";
  std::vector<std::vector<std::int64_t>> bf16_out;
  std::string samples;
  std::stringstream spec_list(specs);
  for (std::string spec; want("heldout") && std::getline(spec_list, spec, ',');) {
    auto m = FromSpec(dir, spec);
    c10::AutoGradMode no_grad(false);
    const double a15 = MaskedAccuracy(*m, h, 0.15), a50 = MaskedAccuracy(*m, h, 0.5), a90 = MaskedAccuracy(*m, h, 0.9);
    const double elbo = ElboNatsPerToken(*m, h, elbo_draws);
    auto out = Check(sampler::Generate(generation::SamplerMode::kReference, *m, prompts, gen_params), "generate");
    std::int64_t words = 0, known = 0, same = 0, total = 0;
    for (std::size_t r = 0; r < out.output.size(); ++r) {
      const std::string text = Text(*tok, out.output[r], config);
      for (const auto& w : Words(text)) {
        ++words;
        known += vocabulary.count(w);
      }
      if (spec == "bf16" && r < 4) samples += "- *" + prompt_texts[r] + "* → " + Trim(text) + "\n";
      if (!bf16_out.empty())
        for (std::size_t i = 0; i < out.output[r].size(); ++i, ++total) same += out.output[r][i] == bf16_out[r][i];
    }
    if (spec == "bf16") bf16_out = out.output;
    quality << "| " << spec << " | " << Fmt("%.1f%%", 100 * a15) << " | " << Fmt("%.1f%%", 100 * a50) << " | "
            << Fmt("%.1f%%", 100 * a90) << " | " << Fmt("%.3f", elbo) << " | " << Fmt("%.1f", std::exp(elbo)) << " | "
            << Fmt("%.1f%%", words ? 100.0 * known / words : 0.0) << " (" << words << " words) | "
            << (total ? Fmt("%.1f%%", 100.0 * same / total) : std::string("-")) << " |\n";
    std::cerr << "weights " << spec << " done\n";
  }
  quality << "\nSamples (bf16, prompt in italics):\n\n" << samples;

  // Chat recall on the supervised pairs (both kinds), and on held-out pairs for comparison.
  auto model = FromSpec(dir, "bf16");
  c10::AutoGradMode no_grad(false);
  std::ostringstream chat;
  chat << "Reference sampler, gen_length " << chat_gen << ", block " << chat_block << ", " << chat_gen
       << " steps, temperature 0; the reply is the text before the first"
       << " EOT/EOS. Exact: the reply equals the verse text; words in place: share of the expected reply's words that"
       << " the reply has at the same position; stopped: the model ended its reply with EOT/EOS."
       << " Reply words: mean words per reply (the expected mean in brackets); corpus words: share of the reply's"
       << " words that are words of the corpus.\n\n"
       << "| pairs | n | exact | words in place | reply words | corpus words | stopped |\n|---|---|---|---|---|---|---|\n";
  std::string chat_samples;
  for (const bool held : {false, true}) {
    if (!want("chat")) break;
    const auto pairs = Check(train::MakeChatExamples(held ? corpus.held_out : corpus.train, *tok, ids, 128), "pairs");
    for (const bool finish : {false, true}) {
      std::int64_t n = 0, exact = 0, stopped = 0, got_words = 0, want_words = 0, known_words = 0;
      double in_place = 0;
      for (std::size_t i = 0; n < chat_n / 2 && i < pairs.size(); i += std::max<std::size_t>(1, pairs.size() / chat_n)) {
        const auto& pair = pairs[i];
        if ((pair.question.rfind("Finish", 0) == 0) != finish) continue;
        ++n;
        sampler::PromptBatch pb;
        pb.ids.emplace_back(pair.prompt.begin(), pair.prompt.end());
        auto out = Check(sampler::Generate(generation::SamplerMode::kReference, *model, pb, Params(config, chat_gen, chat_block, chat_gen)), "chat");
        const std::string reply = Trim(Text(*tok, out.output[0], config));
        bool stop = false;
        for (auto id : out.output[0]) stop = stop || id == config.eos_token_id || id == config.eot_token_id;
        stopped += stop;
        exact += reply == pair.reply;
        const auto expected = Words(pair.reply), got = Words(reply);
        got_words += got.size();
        want_words += expected.size();
        for (const auto& w : got) known_words += vocabulary.count(w);
        std::size_t match = 0;
        for (std::size_t k = 0; k < expected.size() && k < got.size(); ++k) match += expected[k] == got[k];
        in_place += expected.empty() ? 0 : static_cast<double>(match) / expected.size();
        if (n <= 2) chat_samples += std::string("- ") + (held ? "held-out" : "trained") + ": *" + pair.question + "* → " + reply + "\n";
      }
      chat << "| " << (held ? "held-out" : "trained") << ", " << (finish ? "finish the verse" : "what does B c:v say")
           << " | " << n << " | " << Fmt("%.0f%%", n ? 100.0 * exact / n : 0) << " | "
           << Fmt("%.1f%%", n ? 100.0 * in_place / n : 0) << " | " << Fmt("%.1f", n ? 1.0 * got_words / n : 0)
           << Fmt(" (%.1f)", n ? 1.0 * want_words / n : 0) << " | "
           << Fmt("%.1f%%", got_words ? 100.0 * known_words / got_words : 0) << " | "
           << Fmt("%.0f%%", n ? 100.0 * stopped / n : 0) << " |\n";
    }
  }
  chat << "\n" << chat_samples;
  std::cerr << "chat done\n";

  // Every sampler mode against the reference, one held-out prompt at a time, per gen_length.
  std::ostringstream modes;
  modes << "gen_length " << mode_gens << " (steps = gen_length), block 32, temperature 0, bf16, " << mode_prompts
        << " held-out prompts one at a time; fast modes with threshold 0.9, factor 1.0, early stop on (their default)."
        << " Agreement: generated tokens equal to the reference's, over all prompts.\n\n"
        << "| gen_length | mode | forwards (mean) | tokens/s | speed-up | agreement with reference |\n"
        << "|---|---|---|---|---|---|\n";
  std::vector<std::int64_t> reference256;  // the first prompt's reference output at gen 256 (the clamp table's base)
  std::stringstream gens(mode_gens);
  for (std::string gen_text; want("samplers") && std::getline(gens, gen_text, ',');) {
    const std::int64_t gen = std::stoll(gen_text);
    const auto mode_params = Params(config, gen, 32, gen);
    std::vector<std::vector<std::int64_t>> reference(mode_prompts);
    double reference_seconds = 0;
    for (auto mode : generation::LladaSamplerModes()) {
      double seconds = 0, forwards = 0;
      std::int64_t same = 0, total = 0;
      for (int i = 0; i < mode_prompts && i < static_cast<int>(prompt_texts.size()); ++i) {
        sampler::PromptBatch pb;
        auto enc = Check(tok->Encode(prompt_texts[i], false), "prompt");
        pb.ids.emplace_back(enc.begin(), enc.end());
        auto out = Check(sampler::Generate(mode, *model, pb, mode_params, generation::FastOptions{}), "mode");
        seconds += out.seconds;
        forwards += static_cast<double>(out.steps_run);
        if (mode == generation::SamplerMode::kReference) reference[i] = out.output[0];
        if (mode == generation::SamplerMode::kReference && gen == 256 && i == 0) reference256 = out.output[0];
        for (std::size_t k = 0; k < out.output[0].size(); ++k, ++total) same += out.output[0][k] == reference[i][k];
      }
      if (mode == generation::SamplerMode::kReference) reference_seconds = seconds;
      modes << "| " << gen << " | " << generation::SamplerModeName(mode) << " | " << Fmt("%.1f", forwards / mode_prompts)
            << " | " << Fmt("%.1f", static_cast<double>(gen) * mode_prompts / seconds) << " | "
            << Fmt("%.2fx", reference_seconds / seconds) << " | "
            << Fmt("%.1f%%", 100.0 * same / std::max<std::int64_t>(1, total)) << " |\n";
      std::cerr << "gen " << gen << " " << generation::SamplerModeName(mode) << " done\n";
    }
  }

  // Parallel decoding: how far a threshold or factor rule trades agreement for speed.
  std::ostringstream sweep;
  if (want("sweep")) {
    const std::int64_t gen = std::stoll(mode_gens.substr(0, mode_gens.find(',')));
    const auto params = Params(config, gen, 32, gen);
    sweep << "gen_length " << gen << " (steps = gen_length), block 32, temperature 0, bf16, " << mode_prompts
          << " held-out prompts one at a time, early stop on. Speed-up against the reference sampler in the same run;"
          << " agreement: generated tokens equal to the reference's; corpus words: share of generated words that are"
          << " words of the corpus (the reference's own share in its row).\n\n"
          << "| mode | rule value | forwards (mean) | tokens/s | speed-up | agreement with reference | corpus words |\n"
          << "|---|---|---|---|---|---|---|\n";
    std::vector<std::vector<std::int64_t>> reference(mode_prompts);
    double reference_seconds = 0;
    auto run = [&](generation::SamplerMode mode, const generation::FastOptions& fast, const std::string& label,
                   const std::string& value) {
      double seconds = 0, forwards = 0;
      std::int64_t same = 0, total = 0, words = 0, known = 0;
      for (int i = 0; i < mode_prompts && i < static_cast<int>(prompt_texts.size()); ++i) {
        sampler::PromptBatch pb;
        auto enc = Check(tok->Encode(prompt_texts[i], false), "prompt");
        pb.ids.emplace_back(enc.begin(), enc.end());
        auto out = Check(sampler::Generate(mode, *model, pb, params, fast), "sweep");
        seconds += out.seconds;
        forwards += static_cast<double>(out.steps_run);
        if (mode == generation::SamplerMode::kReference) reference[i] = out.output[0];
        for (std::size_t k = 0; k < out.output[0].size(); ++k, ++total) same += out.output[0][k] == reference[i][k];
        for (const auto& w : Words(Text(*tok, out.output[0], config))) {
          ++words;
          known += vocabulary.count(w);
        }
      }
      if (mode == generation::SamplerMode::kReference) reference_seconds = seconds;
      sweep << "| " << label << " | " << value << " | " << Fmt("%.1f", forwards / mode_prompts) << " | "
            << Fmt("%.1f", static_cast<double>(gen) * mode_prompts / seconds) << " | "
            << Fmt("%.2fx", reference_seconds / seconds) << " | "
            << Fmt("%.1f%%", 100.0 * same / std::max<std::int64_t>(1, total)) << " | "
            << Fmt("%.1f%%", words ? 100.0 * known / words : 0.0) << " |\n";
      std::cerr << "sweep " << label << " " << value << " done\n";
    };
    run(generation::SamplerMode::kReference, generation::FastOptions{}, "reference", "-");
    std::stringstream modes_in(sweep_spec);
    for (std::string entry; std::getline(modes_in, entry, ';');) {
      const auto colon = entry.find(':');
      if (colon == std::string::npos) Check(InvalidArgumentError("'" + entry + "' is not MODE:values"), "--sweep");
      const std::string name = entry.substr(0, colon);
      const auto mode = Check(generation::ParseSamplerMode(name), "--sweep");
      const bool factor = name.find("factor") != std::string::npos;
      std::stringstream values(entry.substr(colon + 1));
      for (std::string v; std::getline(values, v, ',');) {
        generation::FastOptions fast;
        (factor ? fast.factor : fast.threshold) = std::stod(v);
        Check(generation::ValidateFastOptions(fast), "--sweep");
        run(mode, fast, name, (factor ? "factor " : "threshold ") + v);
      }
    }
  }

  // Each clamp policy at a budget the request does not fit: what runs, and how close it stays.
  std::ostringstream clamps;
  if (want("clamp")) {
    fitting::GenerationRequest asked;
    asked.prompt_length = static_cast<std::int64_t>(Check(tok->Encode(prompt_texts[0], false), "prompt").size());
    asked.params.gen_length = 256;
    asked.params.block_length = 32;
    asked.params.steps = 256;
    asked.compute_dtype_bytes = 2;
    const auto weights_bytes = Check(fitting::WeightBytes(config, Check(weights::PrecisionSpec::Parse("bf16"), "spec")), "weights");
    const auto full = Check(fitting::Clamp(config, asked, ~0ull >> 2, weights_bytes, fitting::ClampPolicy::kOff), "clamp");
    const std::uint64_t budget = weights_bytes + (full.estimate.total() - weights_bytes) * 35 / 100;
    clamps << "Request: gen_length 256, block 32, 256 steps, reference sampler, bf16, the first held-out prompt; it needs "
           << fitting::HumanBytes(full.estimate.total()) << " by the memory model. Budget given: "
           << fitting::HumanBytes(budget) << " (weights + 35% of what the request needs beyond them). Output compared with"
           << " the unclamped run over the tokens both produce.\n\n"
           << "| policy | what changed | runs | corpus words in output | agreement with unclamped |\n|---|---|---|---|---|\n";
    if (reference256.empty()) {
      sampler::PromptBatch pb;
      auto enc = Check(tok->Encode(prompt_texts[0], false), "prompt");
      pb.ids.emplace_back(enc.begin(), enc.end());
      reference256 = Check(sampler::Generate(generation::SamplerMode::kReference, *model, pb, Params(config, 256, 32, 256)),
                           "reference")
                         .output[0];
    }
    const auto& unclamped = reference256;
    for (auto policy : {fitting::ClampPolicy::kOff, fitting::ClampPolicy::kStandard, fitting::ClampPolicy::kExtreme}) {
      auto r = fitting::Clamp(config, asked, budget, weights_bytes, policy);
      clamps << "| " << fitting::ClampPolicyName(policy) << " | ";
      if (!r.ok()) {
        clamps << "refused: " << r.status().message() << " | - | - | - |\n";
        continue;
      }
      std::string changes;
      for (const auto& a : r->adjustments) changes += (changes.empty() ? "" : "; ") + a.field + " " + a.asked + " → " + a.applied;
      const auto& ap = r->applied;
      auto params = Params(config, ap.params.gen_length, ap.params.block_length, ap.params.steps);
      const generation::SamplerMode mode = ap.params.sampler;
      model::ScopedAttentionChunk chunk(ap.params.attention_query_chunk);
      sampler::PromptBatch pb;
      auto enc = Check(tok->Encode(prompt_texts[0], false), "prompt");
      pb.ids.emplace_back(enc.begin(), enc.end());
      auto out = Check(sampler::Generate(mode, *model, pb, params, generation::FastOptions{}), "clamped run");
      std::int64_t words = 0, known = 0, same = 0;
      for (const auto& w : Words(Text(*tok, out.output[0], config))) {
        ++words;
        known += vocabulary.count(w);
      }
      const std::size_t n = std::min(out.output[0].size(), unclamped.size());
      for (std::size_t k = 0; k < n; ++k) same += out.output[0][k] == unclamped[k];
      clamps << (changes.empty() ? (r->fits ? "nothing" : "nothing (reported: does not fit)") : changes) << " | gen "
             << ap.params.gen_length << ", block " << ap.params.block_length << ", " << ap.params.steps << " steps, "
             << generation::SamplerModeName(ap.params.sampler)
             << (ap.params.attention_query_chunk ? ", chunk " + std::to_string(ap.params.attention_query_chunk)
                                                 : std::string())
             << " | "
             << Fmt("%.1f%%", words ? 100.0 * known / words : 0.0) << " | "
             << Fmt("%.1f%%", n ? 100.0 * same / n : 0.0) << " of " << n << " |\n";
    }
  }

  const std::string footer = "\nMachine: " + bench::MachineDescription() + ". Command: `" + bench::CommandLine(argc, argv) + "`.\n";
  std::cout << quality.str() << "\n" << chat.str() << "\n" << modes.str() << "\n" << sweep.str() << "\n" << clamps.str()
            << footer;
  if (!doc.empty()) {
    bool ok = (!want("heldout") || bench::ReplaceDocSection(doc, "quality-heldout", quality.str() + footer)) &&
              (!want("chat") || bench::ReplaceDocSection(doc, "quality-chat", chat.str() + footer)) &&
              (!want("samplers") || bench::ReplaceDocSection(doc, "quality-samplers", modes.str() + footer)) &&
              (!want("sweep") || bench::ReplaceDocSection(doc, "quality-sweep", sweep.str() + footer)) &&
              (!want("clamp") || bench::ReplaceDocSection(doc, "quality-clamp", clamps.str() + footer));
    if (!ok) return 1;
  }
  return 0;
}
