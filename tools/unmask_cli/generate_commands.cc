#include <unistd.h>

#include <google/protobuf/util/json_util.h>

#include <algorithm>
#include <iostream>
#include <optional>
#include <sstream>

#include "common/telemetry/grpc_tracing.h"
#include "common/util/status.h"
#include "services/common/grpc_status.h"

#include "tools/unmask_cli/canvas_flags.h"
#include "tools/unmask_cli/likelihood_flags.h"
#include "tools/unmask_cli/tool_flags.h"
#include "tools/unmask_cli/commands.h"
#include "tools/unmask_cli/live_view.h"
#include "unmask/v1/scheduler.grpc.pb.h"

namespace unmask::cli {
namespace {

struct GenerateFlags {
  std::string model, prompt, chat, system, prompt_ids, sampler, remasking = "low_confidence", idempotency_key;
  std::string early_stop;  // "", "on" or "off"; empty = the server's default (on for the fast samplers)
  std::string alg;         // dream
  double alg_temp = 0;
  std::optional<double> eps;
  std::int64_t gen_length = 0, block_length = 0, steps = 0, top_k = 0, minimal_topk = 0;
  double temperature = 0, cfg_scale = 0, threshold = 0, factor = 0, top_p = 0, deadline = 0;
  std::optional<double> editing_threshold;
  std::optional<std::int64_t> max_post_steps;
  std::int64_t num_to_transfer = 0;
  std::uint64_t seed = 0;
  int priority = 0, n = 0;
  bool json = false, no_live = false, stop_at_eos = false, no_early_stop = false, eos_early_stop = false;
  CanvasFlags canvas;  // --suffix, --template-file, --logprobs
  ToolFlags tools;     // --tools, --tool-choice
  LikelihoodFlags likelihood;  // --continuation, --mc-num, ...
};

void AddGenerateFlags(CLI::App* cmd, GenerateFlags& f) {
  cmd->add_option("--model", f.model, "Model id")->required();
  cmd->add_option("--prompt", f.prompt, "Prompt text");
  cmd->add_option("--chat", f.chat, "A user message, wrapped in the chat template");
  cmd->add_option("--system", f.system, "System message for --chat");
  cmd->add_option("--prompt-ids", f.prompt_ids, "Prompt token ids, e.g. 1,2,3");
  cmd->add_option("--gen-length", f.gen_length, "Tokens to generate (default: the server's)");
  cmd->add_option("--block-length", f.block_length, "Block length");
  cmd->add_option("--steps", f.steps, "Diffusion steps");
  cmd->add_option("--temperature", f.temperature, "Sampling temperature");
  cmd->add_option("--cfg-scale", f.cfg_scale, "Classifier-free guidance scale");
  cmd->add_option("--remasking", f.remasking, "low_confidence or random")->capture_default_str();
  cmd->add_option("--sampler", f.sampler,
                  "reference, block_logits, dual_cache+threshold, ..., llada2, llada21, dream (default: the model's: "
                  "llada21 for LLaDA2.1 models, llada2 for LLaDA2.0, dream for Dream, else reference)");
  cmd->add_option("--threshold", f.threshold, "Confidence threshold for parallel decoding and llada2 (default 0.9, llada2 0.95)");
  cmd->add_option("--factor", f.factor, "Factor of the factor rule (default 1)");
  cmd->add_option("--top-k", f.top_k, "llada2/dream with --temperature: keep the k most likely tokens (0 = off)");
  cmd->add_option("--top-p", f.top_p, "llada2/dream with --temperature: nucleus probability in (0, 1] (default 1 = off)");
  cmd->add_option("--minimal-topk", f.minimal_topk, "llada2: steps per block at most gen-length / this (default 1)");
  cmd->add_flag("--eos-early-stop", f.eos_early_stop, "llada2: stop once an EOS is committed with nothing masked before it");
  cmd->add_option("--editing-threshold", f.editing_threshold, "llada21: edit a committed token whose new sample is more probable than this (default 0.9)");
  cmd->add_option("--max-post-steps", f.max_post_steps, "llada21: steps a block may run once no mask is left (default 16)");
  cmd->add_option("--num-to-transfer", f.num_to_transfer, "llada21: masked tokens committed per step at least (default 1)");
  cmd->add_option("--alg", f.alg, "dream: origin, maskgit_plus, topk_margin or entropy (default entropy)");
  cmd->add_option("--alg-temp", f.alg_temp, "dream: > 0 draws the committed positions (default 0 = the most confident)");
  cmd->add_option("--eps", f.eps, "dream: the time schedule's end, in (0, 1) (default 0.001)");
  cmd->add_option("--seed", f.seed, "Seed");
  cmd->add_option("--priority", f.priority, "-10..10, higher first");
  cmd->add_option("--deadline", f.deadline, "Seconds until a queued job expires (0 = none)");
  cmd->add_option("--idempotency-key", f.idempotency_key, "Makes a retried submit return the same job");
  cmd->add_option("--n", f.n, "Samples of the prompt, 1..16: jobs with seeds seed, seed+1, ... (default 1)");
  cmd->add_flag("--stop-at-eos", f.stop_at_eos, "Cut the output at the first EOS / EoT");
  cmd->add_option("--early-stop", f.early_stop,
                  "on or off: fast samplers stop once a block ends in EOS (default: on; reference never does)");
  cmd->add_flag("--no-early-stop", f.no_early_stop, "Same as --early-stop off");
  cmd->add_option("--tools", f.tools.tools_file,
                  "With --chat: a JSON file of tools the model may call (OpenAI's [{\"type\": \"function\", ...}])");
  cmd->add_option("--tool-choice", f.tools.tool_choice, "With --tools: auto, none, required or a tool's name");
  cmd->add_option("--suffix", f.canvas.suffix,
                  "Infilling: the text after the gap; the gap (--gen-length tokens) is generated and printed");
  cmd->add_option("--template-file", f.canvas.template_file,
                  "A template with holes: the file's text, in which each <hole:N> is N tokens to fill (<<hole: is a "
                  "literal <hole:); the rest is kept as it is and the whole template is printed filled")
      ->type_name("PATH");
  cmd->add_option("--logprobs", f.canvas.logprobs,
                  "0..20: print each generated token's log-probability and its K most likely alternatives")
      ->type_name("K");
  cmd->add_option("--prompt-logprobs", f.canvas.prompt_logprobs,
                  "0..20: print each prompt token's log-probability given the tokens before it (the first has "
                  "none) and its K most likely alternatives")
      ->type_name("K");
  cmd->add_option("--continuation", f.likelihood.continuation,
                  "With --prompt: estimate the log-likelihood of this text after the prompt (the official LLaDA "
                  "Monte Carlo estimate; nothing is generated)");
  cmd->add_option("--continuation-tokens", f.likelihood.continuation_tokens,
                  "With --prompt-ids: the last N ids are the continuation whose log-likelihood is estimated")
      ->type_name("N");
  cmd->add_option("--mc-num", f.likelihood.mc_num, "Likelihood: Monte Carlo samples in all (default 128)")->type_name("N");
  cmd->add_option("--mc-batch-size", f.likelihood.batch_size,
                  "Likelihood: samples per draw, dividing --mc-num (default 16)")
      ->type_name("N");
  cmd->add_option("--mc-rows-per-forward", f.likelihood.rows_per_forward,
                  "Likelihood: samples one forward runs, at most --mc-batch-size (default: as many as the memory "
                  "allows, the scheduler chooses)")
      ->type_name("N");
  cmd->add_flag("--check-greedy", f.likelihood.check_greedy,
                "Likelihood: also say whether greedy unmasking from the prompt gives the continuation");
  cmd->add_flag("--json", f.json, "Print the events as JSON lines (for scripts)");
  cmd->add_flag("--no-live", f.no_live, "Do not redraw the text after every step");
}

Status ParsePromptIds(const std::string& list, v1::GenerateRequest& r) {
  std::stringstream in(list);
  std::string item;
  while (std::getline(in, item, ',')) {
    try {
      std::size_t used = 0;
      const long long v = std::stoll(item, &used);
      if (used != item.size()) throw std::invalid_argument(item);
      r.mutable_ids()->add_ids(v);
    } catch (const std::exception&) {
      return InvalidArgumentError("--prompt-ids: '" + item + "' is not an integer");
    }
  }
  return OkStatus();
}

StatusOr<v1::GenerateRequest> BuildRequest(const GenerateFlags& f) {
  v1::GenerateRequest r;
  r.set_model(f.model);
  const int sources = !f.prompt.empty() + !f.chat.empty() + !f.prompt_ids.empty();
  if (sources != 1) return InvalidArgumentError("give exactly one of --prompt, --chat, --prompt-ids");
  if (!f.prompt.empty()) r.set_text(f.prompt);
  if (!f.chat.empty()) {
    if (!f.system.empty()) {
      auto* m = r.mutable_chat()->add_messages();
      m->set_role("system");
      m->set_content(f.system);
    }
    auto* m = r.mutable_chat()->add_messages();
    m->set_role("user");
    m->set_content(f.chat);
  }
  if (!f.prompt_ids.empty()) UNMASK_RETURN_IF_ERROR(ParsePromptIds(f.prompt_ids, r));
  auto* p = r.mutable_params();
  if (f.gen_length) p->set_gen_length(f.gen_length);
  if (f.block_length) p->set_block_length(f.block_length);
  if (f.steps) p->set_steps(f.steps);
  p->set_temperature(f.temperature);
  p->set_cfg_scale(f.cfg_scale);
  if (f.remasking == "random") {
    p->set_remasking(v1::REMASKING_RANDOM);
  } else if (f.remasking != "low_confidence") {
    return InvalidArgumentError("--remasking '" + f.remasking + "' is not one of low_confidence, random");
  }
  p->set_sampler(f.sampler);
  p->set_threshold(f.threshold);
  p->set_factor(f.factor);
  p->set_top_k(f.top_k);
  p->set_top_p(f.top_p);
  p->set_minimal_topk(f.minimal_topk);
  p->set_eos_early_stop(f.eos_early_stop);
  if (f.editing_threshold) p->set_editing_threshold(*f.editing_threshold);
  if (f.max_post_steps) p->set_max_post_steps(*f.max_post_steps);
  p->set_num_to_transfer(f.num_to_transfer);
  p->set_alg(f.alg);
  p->set_alg_temp(f.alg_temp);
  if (f.eps) p->set_eps(*f.eps);
  p->set_seed(f.seed);
  p->set_stop_at_eos(f.stop_at_eos);
  if (f.no_early_stop && !f.early_stop.empty() && f.early_stop != "off")
    return InvalidArgumentError("--no-early-stop contradicts --early-stop " + f.early_stop);
  if (f.no_early_stop || f.early_stop == "off") {
    p->set_early_stop(false);
  } else if (f.early_stop == "on") {
    p->set_early_stop(true);
  } else if (!f.early_stop.empty()) {
    return InvalidArgumentError("--early-stop '" + f.early_stop + "' is not one of on, off");
  }
  UNMASK_RETURN_IF_ERROR(ApplyCanvasFlags(f.canvas, r));
  UNMASK_RETURN_IF_ERROR(ApplyToolFlags(f.tools, r));
  UNMASK_RETURN_IF_ERROR(ApplyLikelihoodFlags(f.likelihood, r));
  r.set_priority(f.priority);
  r.set_deadline_seconds(f.deadline);
  r.set_idempotency_key(f.idempotency_key);
  r.set_n(f.n == 1 ? 0 : f.n);  // 1 is the default: the request as it was before n
  r.set_partial_text(!f.json && !f.no_live && ::isatty(1));  // what the live view draws, each choice its own
  return r;
}

std::string ToJson(const google::protobuf::Message& m) {
  std::string out;
  google::protobuf::util::JsonPrintOptions o;
  o.preserve_proto_field_names = true;
  (void)google::protobuf::util::MessageToJsonString(m, &out, o);
  return out;
}

}  // namespace

int ReportStatus(const char* command, const grpc::Status& s) {
  std::cerr << "unmask " << command << ": " << telemetry::GrpcCodeName(s.error_code()) << " " << s.error_message()
            << "\n";
  // The field at fault, from the status's google.rpc.BadRequest detail.
  if (const std::string field = services::FromGrpcStatus(s).field(); !field.empty())
    std::cerr << "  field: " << field << "\n";
  switch (s.error_code()) {
    case grpc::StatusCode::INVALID_ARGUMENT:
    case grpc::StatusCode::NOT_FOUND:
    case grpc::StatusCode::UNAUTHENTICATED:
    case grpc::StatusCode::PERMISSION_DENIED: return 2;
    default: return 1;
  }
}

int StreamEvents(grpc::ClientReader<v1::JobEvent>& reader, bool json, const char* command, RpcCall& call,
                 int choices) {
  LiveView view(std::cout, ::isatty(1) && !json, choices);
  v1::JobEvent ev;
  int code = 0;
  bool job_id_set = false;
  std::string failure;
  while (reader.Read(&ev)) {
    if (!job_id_set && !ev.job_id().empty()) {
      call.span().SetAttribute("job.id", ev.job_id());
      job_id_set = true;
    }
    if (ev.has_failed()) {
      failure = (choices > 1 ? "choice " + std::to_string(ev.index()) + ": " : "") + "job failed (code " + std::to_string(ev.failed().code()) + "): " + ev.failed().message();
      if (!ev.failed().field().empty()) failure += "\n  field: " + ev.failed().field();
    }
    if (json) {
      std::cout << ToJson(ev) << std::endl;
      if (ev.has_failed()) code = 1;
    } else if (!view.OnEvent(ev)) {
      code = view.exit_code();
    }
  }
  grpc::Status s = reader.Finish();
  call.Finish(s, failure);
  if (!s.ok()) return ReportStatus(command, s);
  return code;
}

void AddGenerateCommands(CLI::App& app, const ClientOptions& client) {
  auto gen = std::make_shared<GenerateFlags>();
  CLI::App* cmd = app.add_subcommand("generate", "Generate and watch the text unmask step by step");
  AddGenerateFlags(cmd, *gen);
  cmd->callback([gen, &client] {
    auto req = BuildRequest(*gen);
    if (!req.ok()) {
      std::cerr << "unmask generate: " << req.status().message() << "\n";
      throw CLI::RuntimeError(2);
    }
    auto stub = v1::Scheduler::NewStub(client.Channel(client.scheduler));
    RpcCall call = client.Call("unmask.v1.Scheduler/Generate", client.scheduler);
    call.span().SetAttribute("model", req->model());
    auto reader = stub->Generate(call.ctx(), *req);
    throw CLI::RuntimeError(StreamEvents(*reader, gen->json, "generate", call, std::max(gen->n, 1)));
  });

  auto sub = std::make_shared<GenerateFlags>();
  CLI::App* submit = app.add_subcommand("submit", "Queue a generation and print its job id");
  AddGenerateFlags(submit, *sub);
  submit->callback([sub, &client] {
    auto req = BuildRequest(*sub);
    if (!req.ok()) {
      std::cerr << "unmask submit: " << req.status().message() << "\n";
      throw CLI::RuntimeError(2);
    }
    auto stub = v1::Scheduler::NewStub(client.Channel(client.scheduler));
    RpcCall call = client.Call("unmask.v1.Scheduler/Submit", client.scheduler);
    call.span().SetAttribute("model", req->model());
    v1::SubmitResponse resp;
    grpc::Status s = stub->Submit(call.ctx(), *req, &resp);
    if (s.ok()) call.span().SetAttribute("job.id", resp.job_id());
    call.Finish(s);
    if (!s.ok()) throw CLI::RuntimeError(ReportStatus("submit", s));
    if (sub->json || resp.accepted().job_ids().empty()) {
      std::cout << (sub->json ? ToJson(resp) : resp.job_id()) << std::endl;
    } else {
      for (const auto& id : resp.accepted().job_ids()) std::cout << id << "\n";  // one per choice
      std::cout.flush();
    }
    throw CLI::RuntimeError(0);
  });
}

}  // namespace unmask::cli
