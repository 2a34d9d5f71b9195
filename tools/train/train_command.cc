#include "tools/train/train_command.h"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "common/tokenizer/bpe_trainer.h"
#include "common/tokenizer/chat_template.h"
#include "tools/train/verse_corpus.h"

namespace unmask::train {
namespace fs = std::filesystem;
namespace {

Status WriteText(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  if (!out) return InternalError(path + ": write failed");
  return OkStatus();
}

// The tokenizer of the work directory, trained on the training chapters when it is not there yet.
StatusOr<std::unique_ptr<tokenizer::Tokenizer>> WorkTokenizer(const TrainCommandOptions& o, const VerseCorpus& corpus,
                                                             std::ostream& log) {
  const std::string path = o.work + "/tokenizer.json";
  if (!fs::exists(path)) {
    std::vector<std::string> texts;
    for (const auto& c : corpus.train)
      for (const auto& v : c.verses) texts.push_back(v.text);
    tokenizer::BpeTrainerOptions bo;
    bo.vocab_size = o.vocab_size;
    bo.special_tokens = TrainedSpecialTokens();
    UNMASK_ASSIGN_OR_RETURN(const std::string json, tokenizer::TrainByteLevelBpe(texts, bo));
    UNMASK_RETURN_IF_ERROR(WriteText(path + ".tmp", json));
    fs::rename(path + ".tmp", path);
    log << "tokenizer: trained a byte-level BPE of " << o.vocab_size << " ids on " << texts.size() << " verses -> " << path
        << "\n";
  } else {
    log << "tokenizer: reusing " << path << "\n";
  }
  return tokenizer::Tokenizer::FromFile(path);
}

std::string Duration(double seconds) {
  const long s = static_cast<long>(seconds + 0.5);
  char buf[32];
  std::snprintf(buf, sizeof buf, "%ldh%02ldm%02lds", s / 3600, s / 60 % 60, s % 60);
  return buf;
}

// The chat template as transformers renders it (tokenizer_config.json), the one the engine
// implements in common/tokenizer/chat_template.
const char kChatTemplate[] =
    "{% set loop_messages = messages %}{% for message in loop_messages %}{% set content = '<|start_header_id|>' + "
    "message['role'] + '<|end_header_id|>\n\n'+ message['content'] | trim + '<|eot_id|>' %}{% if loop.index0 == 0 %}{% "
    "set content = bos_token + content %}{% endif %}{{ content }}{% endfor %}{% if add_generation_prompt %}{{ "
    "'<|start_header_id|>assistant<|end_header_id|>\n\n' }}{% endif %}";

Status WriteTokenizerConfig(const std::string& dir) {
  namespace l = tokenizer::llada;
  nlohmann::ordered_json j = {{"tokenizer_class", "PreTrainedTokenizerFast"},
                              {"bos_token", l::kBos},
                              {"eos_token", l::kEos},
                              {"pad_token", l::kEos},
                              {"mask_token", l::kMask},
                              {"model_max_length", 1024},
                              {"chat_template", kChatTemplate}};
  return WriteText(dir + "/tokenizer_config.json", j.dump(2) + "\n");
}

}  // namespace

StatusOr<TrainResult> RunTrainCommand(TrainCommandOptions o, std::ostream& log) {
  if (o.out.empty()) return InvalidArgumentError("--out: the model directory is required");
  if (o.work.empty()) o.work = o.out + ".work";
  UNMASK_ASSIGN_OR_RETURN(const VerseCorpus corpus, ReadVerseCorpus(o.corpus, o.held_out_every));
  std::error_code ec;
  fs::create_directories(o.work, ec);
  if (ec) return FailedPreconditionError(o.work + ": cannot create the work directory: " + ec.message());
  UNMASK_ASSIGN_OR_RETURN(auto tok, WorkTokenizer(o, corpus, log));
  UNMASK_ASSIGN_OR_RETURN(const tokenizer::ChatTokenIds ids, tokenizer::FindChatTokenIds(*tok));

  auto& config = o.train.model;
  config.vocab_size = config.embedding_size = tok->id_limit();
  config.mask_token_id = ids.mask;
  config.eos_token_id = config.pad_token_id = ids.eos;
  config.eot_token_id = ids.eot;
  TrainData data;
  data.mask_id = ids.mask;
  data.eos_id = ids.eos;
  UNMASK_ASSIGN_OR_RETURN(data.train_stream, TokenStream(corpus.train, *tok, ids.eos));
  UNMASK_ASSIGN_OR_RETURN(data.held_out_stream, TokenStream(corpus.held_out, *tok, ids.eos));
  UNMASK_ASSIGN_OR_RETURN(data.chat, MakeChatExamples(corpus.train, *tok, ids, o.train.chat_len));
  log << "data: " << corpus.train.size() << " training chapters (" << data.train_stream.size() << " tokens), "
      << corpus.held_out.size() << " held-out chapters (" << data.held_out_stream.size() << " tokens), "
      << data.chat.size() << " chat pairs; model " << config.parameter_count() << " parameters\n";

  o.train.work_dir = o.work;
  UNMASK_ASSIGN_OR_RETURN(auto trainer, Trainer::Create(o.train, std::move(data)));
  UNMASK_ASSIGN_OR_RETURN(TrainResult result, trainer->Run([&](const StepReport& r) {
    char line[256];
    std::snprintf(line, sizeof line, "step %lld/%lld %s | %.0f tok/s | loss %.4f | held-out %s | lr %.2e | ETA %s\n",
                  static_cast<long long>(r.step), static_cast<long long>(r.total_steps), r.stage, r.tokens_per_second, r.loss,
                  r.held_out_loss < 0 ? "-" : std::to_string(r.held_out_loss).substr(0, 6).c_str(), r.lr,
                  Duration(r.eta_seconds).c_str());
    log << line << std::flush;
  }));
  if (result.steps < o.train.pretrain_steps + o.train.chat_steps) return result;  // stopped early (tests)

  UNMASK_RETURN_IF_ERROR(trainer->Export(o.out));
  fs::copy_file(o.work + "/tokenizer.json", o.out + "/tokenizer.json", fs::copy_options::overwrite_existing, ec);
  if (ec) return InternalError(o.out + "/tokenizer.json: cannot copy: " + ec.message());
  UNMASK_RETURN_IF_ERROR(WriteTokenizerConfig(o.out));
  nlohmann::ordered_json record = {
      {"corpus", fs::path(o.corpus).filename().string()},
      {"steps", result.steps},
      {"pretrain_steps", o.train.pretrain_steps},
      {"chat_steps", o.train.chat_steps},
      {"batch", o.train.batch},
      {"seq_len", o.train.seq_len},
      {"chat_len", o.train.chat_len},
      {"lr", o.train.lr},
      {"chat_lr", o.train.chat_lr},
      {"chat_padding", o.train.chat_padding == TrainOptions::ChatPadding::kFull ? "full" : "batch"},
      {"device", o.train.device},
      {"seed", o.train.seed},
      {"compute", model::PrecisionName(o.train.compute)},
      {"tokens_seen_this_process", result.tokens_seen},
      {"resumed_from_step", result.resumed_from},
      {"seconds_this_process", result.seconds},
      {"final_train_loss", result.final_loss},
      {"final_held_out_loss", result.final_held_out_loss},
      {"parameters", config.parameter_count()},
      {"threads", result.threading}};
  UNMASK_RETURN_IF_ERROR(WriteText(o.out + "/training.json", record.dump(2) + "\n"));
  log << "wrote " << o.out << " (held-out loss " << result.final_held_out_loss << ")\n";
  return result;
}

}  // namespace unmask::train
