#include "tools/unmask_engine/generate_command.h"

#include "common/generation/field_names.h"
#include "common/generation/validate.h"

#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <iostream>
#include <nlohmann/json.hpp>

#include "common/model/llada_model.h"
#include "common/model/compute_setup.h"
#include "common/model/cuda_graph_forward.h"
#include "common/model/fused_ops.h"
#include "common/model/torch_util.h"
#include "common/registry/progressive_loader.h"
#include "common/segment/weight_view.h"
#include "common/sampler/likelihood.h"
#include "common/sampler/prompt_logprobs.h"
#include "common/sampler/sampler_registry.h"
#include "common/tokenizer/canvas_text.h"
#include "common/tokenizer/checkpoint_chat_template.h"
#include "common/tokenizer/tokenizer.h"
#include "tools/unmask_engine/canvas_options.h"

namespace unmask::cli {

StatusOr<std::vector<std::int64_t>> ParseIdList(const std::string& text) {
  std::vector<std::int64_t> ids;
  std::size_t start = 0;
  while (true) {
    const std::size_t comma = text.find(',', start);
    const std::size_t end = comma == std::string::npos ? text.size() : comma;
    const std::string item = text.substr(start, end - start);
    std::size_t used = 0;
    long long v = -1;
    try {
      v = std::stoll(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (item.empty() || used != item.size() || v < 0)
      return InvalidArgumentError("--prompt-ids '" + text + "': element " + std::to_string(ids.size()) + " ('" + item +
                                  "') is not a non-negative integer");
    ids.push_back(v);
    if (comma == std::string::npos) return ids;
    start = comma + 1;
  }
}

namespace {

// The tokenizer named by --tokenizer (a tokenizer.json, or a directory), or the model's own when it
// ships one (tokenizer.json, or a slow tokenizer's vocab.json + merges.txt).
// `needed_by`: the flag that needs one (empty: none does, and a missing one is no error).
StatusOr<std::unique_ptr<tokenizer::Tokenizer>> LoadTokenizer(const GenerateOptions& o, const std::string& needed_by) {
  if (!o.tokenizer.empty()) return tokenizer::Tokenizer::FromPath(o.tokenizer);
  if (!tokenizer::Tokenizer::DirectoryHasTokenizer(o.model_dir)) {
    if (!needed_by.empty()) {
      return InvalidArgumentError(needed_by + " needs a tokenizer: give --tokenizer FILE (" + o.model_dir +
                                  " has neither tokenizer.json nor vocab.json with merges.txt)");
    }
    return std::unique_ptr<tokenizer::Tokenizer>();
  }
  return tokenizer::Tokenizer::FromDirectory(o.model_dir);
}

// The directory whose tokenizer_config.json goes with the tokenizer LoadTokenizer loads.
std::string TokenizerDirectory(const GenerateOptions& o) {
  if (o.tokenizer.empty()) return o.model_dir;
  struct stat st {};
  if (::stat(o.tokenizer.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) return o.tokenizer;
  const size_t slash = o.tokenizer.find_last_of('/');
  return slash == std::string::npos ? "." : o.tokenizer.substr(0, slash);
}

// The first flag given that needs the tokenizer, or "".
std::string FlagNeedingTokenizer(const GenerateOptions& o) {
  if (!o.prompt_text.empty() || o.chat) return "--prompt";
  if (!o.suffix.empty()) return "--suffix";
  if (!o.template_file.empty()) return "--template-file";
  return "";
}

Status BuildPrompts(const GenerateOptions& o, const tokenizer::Tokenizer* tok, sampler::PromptBatch& prompts) {
  const bool has_text = !o.prompt_text.empty();
  if (has_text == !o.prompt_ids.empty()) return InvalidArgumentError("give either --prompt or --prompt-ids (one per batch row)");
  if (o.chat && !has_text) return InvalidArgumentError("--chat applies the chat template to --prompt; give --prompt");
  if (has_text) {
    std::vector<std::int32_t> ids;
    if (o.chat) {
      std::vector<tokenizer::ChatMessage> messages;
      if (!o.system.empty()) messages.push_back({"system", o.system});
      messages.push_back({"user", o.prompt_text});
      // The template the checkpoint ships beside its tokenizer, else the built-in one.
      UNMASK_ASSIGN_OR_RETURN(auto chat_template, tokenizer::CheckpointChatTemplate::FromTokenizerConfig(
                                                      TokenizerDirectory(o) + "/tokenizer_config.json"));
      UNMASK_ASSIGN_OR_RETURN(ids, tokenizer::EncodeChat(*tok, chat_template.get(), messages));
    } else {
      UNMASK_ASSIGN_OR_RETURN(ids, tok->Encode(o.prompt_text, /*parse_special_tokens=*/true));
    }
    prompts.ids.emplace_back(ids.begin(), ids.end());
    return OkStatus();
  }
  for (const auto& row : o.prompt_ids) {
    UNMASK_ASSIGN_OR_RETURN(auto ids, ParseIdList(row));
    prompts.ids.push_back(std::move(ids));
  }
  return OkStatus();
}

// A generation library error about field "block_length: ..." as the flag that set it:
// "--block-length: ...".
Status AsFlagError(const Status& s) {
  std::string flag = "--" + s.field();
  for (char& c : flag) c = c == '_' ? '-' : c;
  return s.field().empty() ? s : generation::RenameField(s, flag);
}

// Cuts a row at its first EOS or EoT (the stop token itself is dropped).
void CutAtStop(std::vector<std::int64_t>& row, const generation::GenerationParams& p) {
  for (std::size_t i = 0; i < row.size(); ++i) {
    if (row[i] == p.eos_id || row[i] == p.eot_id) {
      row.resize(i);
      return;
    }
  }
}

// The parameters of the flags (gen_length: --gen-length or the template's length), checked.
StatusOr<generation::GenerationParams> ResolveParams(const GenerateOptions& o, const checkpoint::LladaConfig& config,
                                                     std::optional<std::int64_t> gen_length,
                                                     const tokenizer::Tokenizer* tok, sampler::PromptBatch& prompts) {
  generation::GenerationParams params = o.params;
  if (o.likelihood.asked())  // the text pair replaces the prompt's ids
    UNMASK_RETURN_IF_ERROR(ApplyLikelihood(o.likelihood, o.prompt_text, tok, prompts.ids[0], params));
  auto mode = o.sampler.empty() ? StatusOr<generation::SamplerMode>(generation::DefaultSampler(config))
                                : generation::ParseSamplerMode(o.sampler);
  if (!mode.ok()) return AsFlagError(mode.status());
  params.sampler = *mode;
  generation::ResolveLengths(gen_length, o.block_length, o.steps, params);
  generation::ResolveThreshold(o.threshold, params);
  auto remasking = generation::ParseRemasking(o.remasking);
  if (!remasking.ok()) return AsFlagError(remasking.status());
  params.remasking = *remasking;
  if (!o.alg.empty()) {
    auto alg = generation::ParseDreamAlg(o.alg);
    if (!alg.ok()) return AsFlagError(alg.status());
    params.alg = *alg;
  }
  params.early_stop = !o.no_early_stop;
  if (o.logprobs) {
    // -1 means "none" to the library; as a flag it is out of range like any other.
    if (*o.logprobs < 0) return InvalidFieldError("--logprobs", "must be in [0, " + std::to_string(generation::kMaxLogprobs) +
                                                                    "], got " + std::to_string(*o.logprobs));
    params.logprobs = *o.logprobs;
  }
  if (o.prompt_logprobs) {
    if (*o.prompt_logprobs < 0)
      return InvalidFieldError("--prompt-logprobs", "must be in [0, " + std::to_string(generation::kMaxLogprobs) +
                                                        "], got " + std::to_string(*o.prompt_logprobs));
    params.prompt_logprobs = *o.prompt_logprobs;
  }
  UNMASK_RETURN_IF_ERROR(AsFlagError(generation::ValidateFields(params)));
  UNMASK_RETURN_IF_ERROR(AsFlagError(generation::ValidateSamplerForModel(params.sampler, config)));
  return params;
}

// What a generation printed needs besides its result.
struct Printed {
  const GenerateOptions& options;
  const generation::GenerationParams& params;
  const tokenizer::Tokenizer* tokenizer;  // null: ids only
  const sampler::PromptBatch& prompts;
  const model::ComputeSetup& setup;
  const model::ComputeChoice& compute;
  // With --prompt-logprobs: per prompt row, per prompt token (the first has none).
  const std::vector<std::vector<std::optional<sampler::TokenLogprob>>>& prompt_logprobs;
};

// How long each of --repeat's generations took, and whether they all gave the printed output.
struct Timings {
  double load_seconds = 0;
  std::vector<double> runs_seconds;
  bool runs_identical = true;
};

void PrintJson(const Printed& p, const sampler::GenerationResult& result, const std::vector<std::string>& texts,
               const nlohmann::json& per_step, const Timings& timings, std::ostream& out) {
  const double tokens = static_cast<double>(result.output.size() * p.params.gen_length);
  nlohmann::json j = {{"output", result.output},
                      {"unmasked_per_step", per_step},
                      {"seconds", result.seconds},
                      {"tokens_per_second", tokens / result.seconds},
                      {"sampler", result.sampler},
                      {"steps_run", result.steps_run},
                      {"forward_seconds", result.forward_seconds},
                      {"load_seconds", timings.load_seconds},
                      {"runs_seconds", timings.runs_seconds},
                      {"runs_identical", timings.runs_identical}};
  if (p.options.cuda_graphs)
    j["cuda_graphs"] = {{"captures", result.graph_captures}, {"replays", result.graph_replays}};
  nlohmann::json setup_json = {{"precision", model::PrecisionName(p.compute.compute)}, {"precision_why", p.compute.why}};
  setup_json["cpu"] = p.setup.cpu;
  setup_json["cpu_flags"] = p.setup.cpu_flags;
  setup_json["threads"] = p.setup.threads;
  setup_json["gemm"] = p.setup.gemm_line;
  setup_json["allocator"] = p.setup.allocator;
  setup_json["fused_kernels"] = p.options.fused_kernels && p.options.device != "cpu" && model::fused::Available();
  j["compute"] = setup_json;
  if (!texts.empty()) j["text"] = texts;
  if (!p.options.prompt_text.empty()) j["prompt_ids"] = p.prompts.ids;
  if (p.params.logprobs >= 0) {
    nlohmann::json rows = nlohmann::json::array();
    for (std::size_t r = 0; r < result.output.size(); ++r)
      rows.push_back(r < result.logprobs.size()
                         ? RowLogprobsJson(result.logprobs[r], result.output[r].size(), p.tokenizer)
                         : nlohmann::json::array());
    j["logprobs"] = std::move(rows);
  }
  if (p.params.prompt_logprobs >= 0) {
    nlohmann::json rows = nlohmann::json::array();
    for (const auto& row : p.prompt_logprobs) rows.push_back(RowLogprobsJson(row, row.size(), p.tokenizer));
    j["prompt_logprobs"] = std::move(rows);
  }
  // Replaced, not refused: a token that is part of a UTF-8 character decodes to invalid bytes.
  out << j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
}

void PrintText(const Printed& p, const sampler::GenerationResult& result, const std::vector<std::string>& texts,
               std::ostream& out) {
  const double tokens = static_cast<double>(result.output.size() * p.params.gen_length);
  for (std::size_t r = 0; r < result.output.size(); ++r) {
    out << "row " << r << " ids:";
    for (auto id : result.output[r]) out << " " << id;
    out << "\n";
    if (r < texts.size()) out << "row " << r << " text: " << texts[r] << "\n";
    if (r < p.prompt_logprobs.size()) {
      out << "row " << r << " prompt logprobs (position in the prompt, token, log-probability"
          << (p.params.prompt_logprobs > 0 ? ", the " + std::to_string(p.params.prompt_logprobs) + " most likely tokens" : "")
          << "; the first token has none):\n";
      PrintRowLogprobs(out, p.prompt_logprobs[r], p.prompt_logprobs[r].size(), p.tokenizer);
    }
    if (p.params.logprobs >= 0 && r < result.logprobs.size()) {
      out << "row " << r << " logprobs (position after the prompt, token, log-probability"
          << (p.params.logprobs > 0 ? ", the " + std::to_string(p.params.logprobs) + " most likely tokens" : "")
          << "):\n";
      PrintRowLogprobs(out, result.logprobs[r], result.output[r].size(), p.tokenizer);
    }
  }
  out << result.steps_run << " steps, " << result.seconds << " s, " << tokens / result.seconds << " tokens/s ("
      << result.sampler << ", " << model::PrecisionName(p.compute.compute) << ")\n";
}

// The output's text per row (none without a tokenizer): a template's whole region, filled; else
// the generated ids (the gap of an infilling), cut at the first EOS / EoT with --stop-at-eos.
std::vector<std::string> FinishRows(const generation::Canvas& canvas, const generation::GenerationParams& params,
                                    const tokenizer::Tokenizer* tok, sampler::GenerationResult& result) {
  if (params.stop_at_eos && !canvas.has_fixed_region()) {
    for (auto& row : result.output) CutAtStop(row, params);
  }
  std::vector<std::string> texts;
  if (tok == nullptr) return texts;
  // Like Hugging Face's decode, ids the tokenizer does not know (a model's embedding rows past
  // the tokenizer's vocabulary) are skipped rather than refused.
  for (const auto& row : result.output) texts.push_back(tokenizer::DecodeRegion(*tok, row));
  return texts;
}

// The model as stored, or (--weights) converted by the loader into a segment of this process.
StatusOr<std::unique_ptr<model::LladaModel>> LoadModel(const GenerateOptions& o, const model::ModelOptions& mopts) {
  if (o.weights.empty()) return model::LladaModel::Load(o.model_dir, mopts);
  auto spec = weights::PrecisionSpec::Parse(o.weights);
  if (!spec.ok()) return Status(spec.status().code(), "--weights: " + spec.status().message());
  UNMASK_ASSIGN_OR_RETURN(auto loaded, weights::LoadModelDir(o.model_dir, *spec, "unmask-engine"));
  auto attached = weights::AttachedModel::Attach(loaded.segment.name());
  (void)loaded.segment.Unlink();  // the mapping stays; nothing is left behind in /dev/shm
  if (!attached.ok()) return attached.status();
  return model::LladaModel::FromSegment(std::make_shared<weights::AttachedModel>(std::move(*attached)), mopts);
}

}  // namespace

int RunGenerate(const GenerateOptions& o, std::ostream& out, std::ostream& err) {
  auto fail = [&](const Status& s) {
    err << "unmask-engine generate: " << s.ToString() << "\n";
    return s.code() == StatusCode::kInvalidArgument || s.code() == StatusCode::kNotFound ||
                   s.code() == StatusCode::kUnimplemented
               ? 2
               : 1;
  };
  // The model's architecture decides the default sampler, and with it the other defaults.
  auto config = checkpoint::LladaConfig::FromFile(o.model_dir + "/config.json");
  if (!config.ok()) return fail(config.status());
  auto tok = LoadTokenizer(o, FlagNeedingTokenizer(o));
  if (!tok.ok()) return fail(tok.status());
  sampler::PromptBatch prompts;
  if (Status s = BuildPrompts(o, tok->get(), prompts); !s.ok()) return fail(s);
  std::optional<std::int64_t> gen_length = o.gen_length;
  if (Status s = CheckLikelihoodFlags(o.likelihood, !o.prompt_text.empty(), o.prompt_ids.size(),
                                      o.gen_length || o.block_length || o.steps,
                                      !o.suffix.empty() || !o.template_file.empty(),
                                      o.logprobs.has_value() || o.prompt_logprobs.has_value());
      !s.ok())
    return fail(s);
  if (o.likelihood.asked()) gen_length = 1;  // the job's one position, never run (as the scheduler plans it)
  if (*tok) {
    auto canvas = BuildCanvas(o.suffix, o.template_file, **tok);
    if (!canvas.ok()) return fail(canvas.status());
    prompts.canvas = std::move(*canvas);
    if (Status s = FitTemplateLength(prompts.canvas, o.template_file, gen_length); !s.ok()) return fail(s);
  }
  auto params = ResolveParams(o, *config, gen_length, tok->get(), prompts);
  if (!params.ok()) return fail(params.status());
  model::ComputeSetupOptions setup_options;
  setup_options.threads = o.threads;
  setup_options.gemm = o.gemm;
  auto setup = model::SetUpCompute(setup_options);
  if (!setup.ok()) return fail(setup.status());
  auto requested = model::ParsePrecisionFlag(o.precision);
  if (!requested.ok()) return fail(Status(requested.status().code(), "--precision: " + requested.status().message()));
  auto device = model::ParseDevice(o.device);
  if (!device.ok()) return fail(Status(device.status().code(), "--device: " + device.status().message()));
  auto stored = model::CheckpointPrecision(o.model_dir);
  if (!stored.ok()) return fail(stored.status());
  const model::ComputeChoice compute =
      model::ChooseCompute(*requested, model::HostCpuFeatures(), device->is_cuda(), *stored);
  model::ModelOptions mopts;
  mopts.precision = compute.compute;
  mopts.device = o.device;
  mopts.attention_query_chunk = o.attention_chunk;
  mopts.cuda_graphs = o.cuda_graphs;
  mopts.time_forwards = o.time_forwards;
  mopts.fused_kernels = o.fused_kernels && device->is_cuda();
  if (o.fused_kernels_asked && (!device->is_cuda() || !model::fused::Available()))
    err << "unmask-engine generate: --fused-kernels: "
        << (device->is_cuda() ? "this build has no CUDA kernels" : "the kernels need --device cuda")
        << "; ATen's operators run\n";
  if (o.cuda_graphs && (!device->is_cuda() || !model::GraphedForward::Available()))
    err << "unmask-engine generate: --cuda-graphs: "
        << (device->is_cuda() ? "this build's LibTorch has no CUDA graphs" : "graphs need --device cuda")
        << "; the forwards run eagerly\n";

  const auto load_start = std::chrono::steady_clock::now();
  auto model = LoadModel(o, mopts);
  if (!model.ok()) return fail(model.status());
  Timings timings;
  timings.load_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - load_start).count();
  generation::WithModelTokens((*model)->config(), *params);
  if (Status s = generation::ValidateCanvas(prompts.canvas, params->gen_length, (*model)->config().embedding_size,
                                            params->mask_id, "--template-file " + o.template_file, "--suffix");
      !s.ok())
    return fail(s);

  if (params->likelihood) {  // as the executor runs a likelihood job: forwards of rows_per_forward samples
    const std::vector<std::int64_t>& ids = prompts.ids[0];
    if (Status s = generation::ValidateLikelihood(*params->likelihood, (*model)->config(),
                                                  static_cast<std::int64_t>(ids.size()), params->cfg_scale);
        !s.ok())
      return fail(s);
    const auto begin = std::chrono::steady_clock::now();
    const auto sequence = static_cast<std::int64_t>(ids.size()) + params->gen_length;
    // No memory clamp here: unset, a draw's samples run in one forward, as the official code does.
    const std::int64_t rows = params->likelihood->rows_per_forward > 0 ? params->likelihood->rows_per_forward
                                                                        : params->likelihood->batch_size;
    const sampler::LikelihoodResult r =
        sampler::EstimateLikelihood(**model, ids, *params, sequence * rows * (params->cfg_scale > 0 ? 2 : 1));
    PrintLikelihoodResult(r, ids, std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count(),
                          o.json, out);
    return 0;
  }
  nlohmann::json per_step;
  StatusOr<sampler::GenerationResult> result = InternalError("--repeat must be at least 1");
  for (int run = 0; run < std::max(o.repeat, 1); ++run) {
    per_step = nlohmann::json::array();
    auto this_run = sampler::Generate(**model, prompts, *params, [&](const sampler::StepEvent& ev) {
      per_step.push_back(ev.positions);
      return true;
    });
    if (!this_run.ok()) return fail(this_run.status());
    timings.runs_seconds.push_back(this_run->seconds);
    if (result.ok() && result->output != this_run->output) timings.runs_identical = false;
    result = std::move(this_run);
  }
  std::vector<std::vector<std::optional<sampler::TokenLogprob>>> prompt_logprobs;
  if (params->prompt_logprobs >= 0) {  // each row as the executor scores a job's prompt
    for (const auto& row : prompts.ids) {
      const auto sequence = static_cast<std::int64_t>(row.size() + prompts.canvas.suffix.size()) + params->gen_length;
      prompt_logprobs.push_back(sampler::PromptLogprobs(**model, row, sampler::ScoringFor(**model, *params, sequence)));
    }
  }
  const std::vector<std::string> texts = FinishRows(prompts.canvas, *params, tok->get(), *result);
  const Printed printed{o, *params, tok->get(), prompts, *setup, compute, prompt_logprobs};
  if (o.json) {
    PrintJson(printed, *result, texts, per_step, timings, out);
  } else {
    PrintText(printed, *result, texts, out);
  }
  return 0;
}

namespace {

void AddCanvasOptions(CLI::App* cmd, GenerateOptions& o) {
  cmd->add_option("--suffix", o.suffix,
                  "Infilling: the text after the gap; the gap (--gen-length tokens) is generated and printed");
  cmd->add_option("--template-file", o.template_file,
                  "A template with holes: the file's text, in which each <hole:N> is N tokens to fill (<<hole: is a "
                  "literal <hole:); the rest is kept as it is, --gen-length is the template's length and the whole "
                  "template is printed filled")
      ->type_name("PATH");
  cmd->add_option("--logprobs", o.logprobs,
                  "0..20: print each generated token's log-probability and its K most likely alternatives")
      ->type_name("K");
  cmd->add_option("--prompt-logprobs", o.prompt_logprobs,
                  "0..20: print each prompt token's log-probability given the tokens before it (the first has "
                  "none) and its K most likely alternatives")
      ->type_name("K");
}

}  // namespace

void AddGenerateCommand(CLI::App& app) {
  auto opts = std::make_shared<GenerateOptions>();
  CLI::App* cmd = app.add_subcommand("generate", "Generate with the engine in-process on a model directory");
  cmd->add_option("--model", opts->model_dir, "Hugging Face LLaDA checkpoint directory")->required();
  cmd->add_option("--prompt-ids", opts->prompt_ids, "Prompt token ids, e.g. 1,2,3; repeat for a batch");
  cmd->add_option("--prompt", opts->prompt_text, "Prompt text (encoded with the tokenizer)");
  cmd->add_flag("--chat", opts->chat, "Wrap --prompt in the LLaDA Instruct chat template");
  cmd->add_option("--system", opts->system, "System turn for --chat");
  cmd->add_option("--tokenizer", opts->tokenizer, "tokenizer.json, or a directory with one or with vocab.json + merges.txt (default: the model's own)");
  cmd->add_flag("--stop-at-eos", opts->params.stop_at_eos, "Cut the output at the first EOS / EoT");
  cmd->add_option("--steps", opts->steps,
                  "Diffusion steps in total (default: gen-length); llada2: steps per block (default: block-length)");
  cmd->add_option("--gen-length", opts->gen_length, "Tokens to generate (default: 128)");
  cmd->add_option("--block-length", opts->block_length,
                  "Semi-autoregressive block length (default: the largest divisor of gen-length up to 32; llada2: 32)");
  cmd->add_option("--temperature", opts->params.temperature, "Gumbel noise temperature (0 = greedy)")->capture_default_str();
  cmd->add_option("--cfg-scale", opts->params.cfg_scale, "Classifier-free guidance scale")->capture_default_str();
  cmd->add_option("--remasking", opts->remasking, "low_confidence or random")->capture_default_str();
  cmd->add_flag("--logits-eos-inf", opts->params.logits_eos_inf, "Never sample EOS");
  cmd->add_flag("--confidence-eos-eot-inf", opts->params.confidence_eos_eot_inf, "EOS/EoT get confidence 0");
  cmd->add_option("--seed", opts->params.seed, "Seed of the sampling generator")->capture_default_str();
  cmd->add_option("--precision", opts->precision,
                  "Compute type: auto (on a CPU: bf16 for bf16 weights where it has bf16 instructions, fp32 over "
                  "weights kept as stored elsewhere; bf16 on a GPU), fp32, bf16 or fp16")->capture_default_str();
  cmd->add_option("--device", opts->device, "cpu or cuda[:N]")->capture_default_str();
  cmd->add_option("--attention-chunk", opts->attention_chunk, "Query rows per attention chunk (0 = all)")->capture_default_str();
  cmd->add_option("--sampler", opts->sampler,
                  "reference (the official algorithm) or a fast mode: block_logits, prefix_cache, dual_cache, threshold, "
                  "factor, prefix_cache+threshold, dual_cache+threshold, prefix_cache+factor, dual_cache+factor; llada2 "
                  "(LLaDA2.0's block diffusion), llada21 (LLaDA2.1's, with token editing); dream (Dream's "
                  "diffusion_generate). Default: the model's (llada21 for LLaDA2.1, llada2 for LLaDA2.0, dream for "
                  "Dream, else reference)");
  cmd->add_option("--threshold", opts->threshold,
                  "Confidence threshold of the threshold rule and llada2, in [0, 1] (default 0.9; llada2 0.95)");
  cmd->add_option("--factor", opts->params.factor, "Factor of the factor rule, > 0")->capture_default_str();
  cmd->add_flag("--no-early-stop", opts->no_early_stop, "Fast modes: do not stop when a block ends in EOS");
  cmd->add_option("--minimal-topk", opts->params.minimal_topk, "llada2: steps per block at most gen-length / this")
      ->capture_default_str();
  cmd->add_option("--top-k", opts->params.top_k, "llada2 with --temperature: keep the k most likely tokens (0 = off)")
      ->capture_default_str();
  cmd->add_option("--top-p", opts->params.top_p, "llada2 with --temperature: nucleus probability in (0, 1] (1 = off)")
      ->capture_default_str();
  cmd->add_flag("--eos-early-stop", opts->params.eos_early_stop,
                "llada2: stop once an EOS is committed with nothing masked before it");
  cmd->add_option("--editing-threshold", opts->params.editing_threshold,
                  "llada21: edit a committed token whose new sample is more probable than this")
      ->capture_default_str();
  cmd->add_option("--max-post-steps", opts->params.max_post_steps,
                  "llada21: steps a block may run once no mask is left")
      ->capture_default_str();
  cmd->add_option("--num-to-transfer", opts->params.num_to_transfer, "llada21: masked tokens committed per step at least")
      ->capture_default_str();
  cmd->add_option("--alg", opts->alg, "dream: origin, maskgit_plus, topk_margin or entropy (default entropy)");
  cmd->add_option("--alg-temp", opts->params.alg_temp, "dream: > 0 draws the committed positions (0 = the most confident)")
      ->capture_default_str();
  cmd->add_option("--eps", opts->params.eps, "dream: the time schedule's end, in (0, 1)")->capture_default_str();
  cmd->add_option("--threads", opts->threads, "Intra-op threads (0: one per usable core)")->capture_default_str();
  cmd->add_option("--weights", opts->weights,
                  "Convert or quantize the weights as the loader does: int8, int4:g64, bf16, ... (default: as stored)");
  cmd->add_flag("--cuda-graphs", opts->cuda_graphs,
                "cuda: capture the generation's repeating forwards as CUDA graphs and replay them");
  CLI::Option* fused = cmd->add_flag("--fused-kernels", opts->fused_kernels_asked,
                                     "cuda: each layer's RMSNorm, rotary embedding and SiLU product, and an int8/int4 "
                                     "layer's dequantization, as one kernel each (the same bits; the default on cuda)");
  cmd->add_flag("!--no-fused-kernels", opts->fused_kernels, "cuda: ATen's operators instead of the fused kernels")
      ->excludes(fused);
  cmd->add_flag("--time-forwards", opts->time_forwards,
                "Wait for each forward on the device, so --json's forward_seconds is the forwards' whole time");
  cmd->add_option("--repeat", opts->repeat, "Run the generation this many times on the loaded model (--json: runs_seconds)")
      ->check(CLI::Range(1, 1000))
      ->capture_default_str();
  cmd->add_option("--gemm", opts->gemm,
                  "Float32 products with few rows: auto (unmask's widest kernel this CPU runs, never repacking the "
                  "weight), avx512, avx2, or blas (always the BLAS)")
      ->capture_default_str();
  AddCanvasOptions(cmd, *opts);
  AddLikelihoodOptions(cmd, opts->likelihood);
  cmd->add_flag("--json", opts->json,
                "Print {\"output\", \"unmasked_per_step\", \"seconds\", \"text\", \"logprobs\", ...} as JSON");
  cmd->callback([opts]() { throw CLI::RuntimeError(RunGenerate(*opts, std::cout, std::cerr)); });
}

}  // namespace unmask::cli
