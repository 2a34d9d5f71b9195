// The only translation unit of the trainer that includes torch/torch.h (autograd, AdamW,
// serialization).
#include "tools/train/trainer.h"

#include <torch/torch.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <thread>

#include "common/checkpoint/checkpoint_writer.h"
#include "common/model/llada_model.h"
#include "common/model/threading.h"
#include "common/model/torch_util.h"
#include "common/util/remove_tree.h"

namespace unmask::train {
namespace fs = std::filesystem;

struct Trainer::State {
  TrainOptions o;
  TrainData d;
  std::vector<std::string> names;
  std::vector<torch::Tensor> params;
  std::unique_ptr<torch::optim::AdamW> optimizer;
  std::int64_t step = 0;  // steps done
  torch::Tensor held_ids;  // fixed held-out windows
  at::Device device{at::kCPU};
};

namespace {

std::uint64_t Mix(std::uint64_t seed, std::uint64_t step, std::uint64_t stream) {
  std::uint64_t z = seed * 0x9E3779B97F4A7C15ull + step * 0xBF58476D1CE4E5B9ull + stream * 0x94D049BB133111EBull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

at::Generator Gen(std::uint64_t seed) { return at::make_generator<at::CPUGeneratorImpl>(seed); }

bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// The projections that write into the residual stream get a smaller init (GPT-2's rule).
bool IsResidualOutput(const std::string& name) {
  return name.find(".blocks.") != std::string::npos && (EndsWith(name, "attn_out.weight") || EndsWith(name, "ff_out.weight"));
}

std::unique_ptr<model::LladaModel> BuildModel(const Trainer::State& s) {
  const auto dtype = model::ToScalarType(s.o.compute);
  model::LladaWeights w;
  size_t i = 0;
  auto next = [&] { return s.params[i++].to(dtype); };
  w.wte = model::Linear(next());
  for (std::int64_t l = 0; l < s.o.model.n_layers; ++l) {
    model::LladaBlockWeights b;
    b.attn_norm = next();
    b.q_proj = model::Linear(next());
    b.k_proj = model::Linear(next());
    b.v_proj = model::Linear(next());
    b.attn_out = model::Linear(next());
    b.ff_norm = next();
    b.ff_proj = model::Linear(next());
    b.up_proj = model::Linear(next());
    b.ff_out = model::Linear(next());
    w.blocks.push_back(std::move(b));
  }
  w.ln_f = next();
  w.lm_head = s.o.model.weight_tying ? w.wte : model::Linear(next());
  model::ModelOptions mo;
  mo.precision = s.o.compute;
  return std::make_unique<model::LladaModel>(s.o.model, std::move(w), mo, s.device);
}

// The LLaDA loss over a batch: ids [B, L], maskable [B, L] (bool), row_norm [B] (what a row's
// weighted sum is divided by). t: [B] mask ratios; `masks` [B, L] uniform draws.
torch::Tensor MaskedLoss(const model::LladaModel& m, const torch::Tensor& ids, const torch::Tensor& maskable,
                         const torch::Tensor& row_norm, const torch::Tensor& t, const torch::Tensor& draws,
                         std::int64_t mask_id) {
  const auto b = ids.size(0), l = ids.size(1);
  const torch::Tensor masked = draws.lt(t.unsqueeze(1)).logical_and(maskable);
  const torch::Tensor noisy = ids.masked_fill(masked, mask_id);
  const torch::Tensor hidden = m.Hidden(noisy, torch::Tensor());
  const torch::Tensor rows = hidden.masked_select(masked.unsqueeze(-1)).view({-1, hidden.size(-1)});
  if (rows.size(0) == 0) return torch::zeros({}, torch::kFloat);
  const torch::Tensor targets = ids.masked_select(masked);
  const torch::Tensor logits = m.HeadLogits(rows).to(torch::kFloat);
  namespace F = torch::nn::functional;
  const torch::Tensor ce = F::cross_entropy(logits, targets, F::CrossEntropyFuncOptions().reduction(torch::kNone));
  const torch::Tensor weight = (1.0 / (t * row_norm)).unsqueeze(1).expand({b, l}).masked_select(masked);
  return (ce * weight).sum() / static_cast<double>(b);
}

struct Batch {
  torch::Tensor ids, maskable, row_norm;
};

Batch PretrainBatch(const Trainer::State& s, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  const auto n = static_cast<std::int64_t>(s.d.train_stream.size());
  std::uniform_int_distribution<std::int64_t> start(0, n - s.o.seq_len);
  torch::Tensor ids = torch::empty({s.o.batch, s.o.seq_len}, torch::kLong);
  auto acc = ids.accessor<std::int64_t, 2>();
  for (std::int64_t r = 0; r < s.o.batch; ++r) {
    const std::int64_t at = start(rng);
    for (std::int64_t c = 0; c < s.o.seq_len; ++c) acc[r][c] = s.d.train_stream[at + c];
  }
  return {ids, torch::ones({s.o.batch, s.o.seq_len}, torch::kBool),
          torch::full({s.o.batch}, static_cast<double>(s.o.seq_len), torch::kFloat)};
}

Batch ChatBatch(const Trainer::State& s, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<size_t> pick(0, s.d.chat.size() - 1);
  std::vector<const ChatExample*> rows;
  std::int64_t l = 0;
  for (std::int64_t r = 0; r < s.o.batch; ++r) {
    rows.push_back(&s.d.chat[pick(rng)]);
    l = std::max<std::int64_t>(l, rows.back()->prompt.size() + rows.back()->answer.size());
  }
  if (s.o.chat_padding == TrainOptions::ChatPadding::kFull) l = s.o.chat_len;
  torch::Tensor ids = torch::full({s.o.batch, l}, static_cast<std::int64_t>(s.d.eos_id), torch::kLong);
  torch::Tensor maskable = torch::zeros({s.o.batch, l}, torch::kBool);
  torch::Tensor norm = torch::empty({s.o.batch}, torch::kFloat);
  auto acc = ids.accessor<std::int64_t, 2>();
  for (std::int64_t r = 0; r < s.o.batch; ++r) {
    const ChatExample& e = *rows[r];
    const auto p = static_cast<std::int64_t>(e.prompt.size());
    for (std::int64_t c = 0; c < p; ++c) acc[r][c] = e.prompt[c];
    for (size_t c = 0; c < e.answer.size(); ++c) acc[r][p + c] = e.answer[c];
    maskable[r].narrow(0, p, l - p).fill_(true);
    norm[r] = static_cast<double>(l - p);
  }
  return {ids, maskable, norm};
}

torch::Tensor StepLoss(const Trainer::State& s, const model::LladaModel& m, const Batch& b, std::uint64_t seed) {
  at::Generator gen = Gen(seed);
  const double eps = s.o.mask_eps;
  torch::Tensor t = at::rand({b.ids.size(0)}, gen, torch::kFloat) * (1.0 - eps) + eps;
  torch::Tensor draws = at::rand({b.ids.size(0), b.ids.size(1)}, gen, torch::kFloat);
  const auto d = s.device;
  return MaskedLoss(m, b.ids.to(d), b.maskable.to(d), b.row_norm.to(d), t.to(d), draws.to(d), s.d.mask_id);
}

double Cosine(double peak, double min_ratio, double progress) {
  return peak * (min_ratio + (1.0 - min_ratio) * 0.5 * (1.0 + std::cos(M_PI * std::min(1.0, progress))));
}

// Linear warm-up, cosine over pre-training; the chat stage has a cosine of its own.
double LearningRate(const TrainOptions& o, std::int64_t step) {
  if (step >= o.pretrain_steps)
    return Cosine(o.chat_lr, o.min_lr_ratio,
                  static_cast<double>(step - o.pretrain_steps) / std::max<std::int64_t>(1, o.chat_steps));
  if (step < o.warmup_steps) return o.lr * static_cast<double>(step + 1) / static_cast<double>(o.warmup_steps);
  return Cosine(o.lr, o.min_lr_ratio,
                static_cast<double>(step - o.warmup_steps) / std::max<std::int64_t>(1, o.pretrain_steps - o.warmup_steps));
}

Status CheckOptions(const TrainOptions& o, const TrainData& d) {
  auto positive = [](const char* name, std::int64_t v) -> Status {
    if (v <= 0) return InvalidArgumentError(std::string("training option '") + name + "' must be positive, got " + std::to_string(v));
    return OkStatus();
  };
  UNMASK_RETURN_IF_ERROR(positive("seq_len", o.seq_len));
  UNMASK_RETURN_IF_ERROR(positive("batch", o.batch));
  UNMASK_RETURN_IF_ERROR(positive("log_every", o.log_every));
  UNMASK_RETURN_IF_ERROR(positive("checkpoint_every", o.checkpoint_every));
  if (o.pretrain_steps < 0 || o.chat_steps < 0 || o.pretrain_steps + o.chat_steps == 0)
    return InvalidArgumentError("training options: pretrain_steps and chat_steps must be >= 0 and not both 0");
  if (!(o.lr > 0)) return InvalidArgumentError("training option 'lr' must be positive");
  if (!(o.chat_lr > 0)) return InvalidArgumentError("training option 'chat_lr' must be positive");
  if (!(o.mask_eps > 0 && o.mask_eps < 1)) return InvalidArgumentError("training option 'mask_eps' must be in (0, 1)");
  if (static_cast<std::int64_t>(d.train_stream.size()) < o.seq_len)
    return InvalidArgumentError("training data: the training stream has " + std::to_string(d.train_stream.size()) +
                                " tokens, fewer than seq_len " + std::to_string(o.seq_len));
  if (d.held_out_stream.empty()) return InvalidArgumentError("training data: the held-out stream is empty");
  if (o.chat_steps > 0 && d.chat.empty()) return InvalidArgumentError("training data: chat_steps > 0 but no chat pairs");
  if (o.seq_len > o.model.max_sequence_length || o.chat_len > o.model.max_sequence_length)
    return InvalidArgumentError("training options: seq_len/chat_len exceed max_sequence_length " +
                                std::to_string(o.model.max_sequence_length));
  for (std::int32_t id : {d.mask_id, d.eos_id})
    if (id < 0 || id >= o.model.embedding_size)
      return InvalidArgumentError("training data: special token id " + std::to_string(id) + " is outside the embedding (" +
                                  std::to_string(o.model.embedding_size) + " rows)");
  return OkStatus();
}

fs::path CheckpointDir(const TrainOptions& o) { return fs::path(o.work_dir) / "checkpoint"; }

}  // namespace

Trainer::Trainer(std::unique_ptr<State> state) : s_(std::move(state)) {}
Trainer::~Trainer() = default;

StatusOr<std::unique_ptr<Trainer>> Trainer::Create(TrainOptions options, TrainData data) {
  UNMASK_ASSIGN_OR_RETURN(options.model, checkpoint::LladaConfig::FromJsonText(options.model.ToJsonText(), "model config"));
  UNMASK_RETURN_IF_ERROR(CheckOptions(options, data));
  auto s = std::make_unique<State>();
  UNMASK_ASSIGN_OR_RETURN(s->device, model::ParseDevice(options.device));
  s->o = std::move(options);
  s->d = std::move(data);
  at::Generator gen = Gen(Mix(s->o.seed, 0, 7));
  const double std_dev = 0.02, residual_std = 0.02 / std::sqrt(2.0 * static_cast<double>(s->o.model.n_layers));
  std::vector<torch::Tensor> decay, no_decay;
  for (const auto& t : checkpoint::ExpectedTensors(s->o.model)) {
    torch::Tensor p = t.shape.size() == 1 ? torch::ones(t.shape, torch::kFloat)
                                          : at::empty(t.shape, torch::kFloat).normal_(0, IsResidualOutput(t.name) ? residual_std : std_dev, gen);
    p = p.to(s->device);
    p.set_requires_grad(true);
    s->names.push_back(t.name);
    s->params.push_back(p);
    (t.shape.size() == 1 ? no_decay : decay).push_back(p);
  }
  std::vector<torch::optim::OptimizerParamGroup> groups;
  groups.emplace_back(decay, std::make_unique<torch::optim::AdamWOptions>(
                                 torch::optim::AdamWOptions(s->o.lr).betas({0.9, 0.95}).weight_decay(s->o.weight_decay)));
  groups.emplace_back(no_decay, std::make_unique<torch::optim::AdamWOptions>(
                                    torch::optim::AdamWOptions(s->o.lr).betas({0.9, 0.95}).weight_decay(0.0)));
  s->optimizer = std::make_unique<torch::optim::AdamW>(std::move(groups));

  // Fixed held-out windows, evenly spaced over the held-out stream.
  const auto n = static_cast<std::int64_t>(s->d.held_out_stream.size());
  const std::int64_t len = std::min(s->o.seq_len, n);
  const std::int64_t windows = std::max<std::int64_t>(1, std::min<std::int64_t>(32, n / len));
  s->held_ids = torch::empty({windows, len}, torch::kLong);
  for (std::int64_t r = 0; r < windows; ++r) {
    const std::int64_t start = windows == 1 ? 0 : r * (n - len) / (windows - 1);
    for (std::int64_t c = 0; c < len; ++c) s->held_ids[r][c] = s->d.held_out_stream[start + c];
  }
  return std::unique_ptr<Trainer>(new Trainer(std::move(s)));
}

double Trainer::HeldOutLoss() {
  torch::NoGradGuard no_grad;
  auto m = BuildModel(*s_);
  const auto rows = s_->held_ids.size(0), len = s_->held_ids.size(1);
  // Stratified mask ratios (one per window) and fixed draws: the same figure for the same weights.
  const auto d = s_->device;
  torch::Tensor t = ((torch::arange(rows, torch::kFloat) + 0.5) / static_cast<double>(rows)).to(d);
  at::Generator gen = Gen(12345);
  torch::Tensor draws = at::rand({rows, len}, gen, torch::kFloat).to(d);
  const torch::Tensor ids = s_->held_ids.to(d);
  double total = 0;
  for (std::int64_t r = 0; r < rows; r += s_->o.batch) {
    const auto k = std::min(s_->o.batch, rows - r);
    total += MaskedLoss(*m, ids.narrow(0, r, k), torch::ones({k, len}, torch::dtype(torch::kBool).device(d)),
                        torch::full({k}, static_cast<double>(len), torch::dtype(torch::kFloat).device(d)), t.narrow(0, r, k), draws.narrow(0, r, k),
                        s_->d.mask_id)
                 .item<double>() *
             static_cast<double>(k);
  }
  return total / static_cast<double>(rows);
}

namespace {

Status SaveCheckpoint(const Trainer::State& s) {
  const fs::path dir = CheckpointDir(s.o), tmp = dir.string() + ".tmp";
  std::error_code ec;
  unmask::util::RemoveTree(tmp);
  fs::create_directories(tmp, ec);
  if (ec) return InternalError(tmp.string() + ": cannot create: " + ec.message());
  try {
    torch::save(s.params, (tmp / "params.pt").string());
    torch::save(*s.optimizer, (tmp / "optimizer.pt").string());
  } catch (const std::exception& e) {
    return InternalError(tmp.string() + ": cannot save the checkpoint: " + e.what());
  }
  std::ofstream(tmp / "step") << s.step << "\n" << s.o.model.ToJsonText();
  unmask::util::RemoveTree(dir);
  fs::rename(tmp, dir, ec);
  if (ec) return InternalError(dir.string() + ": cannot move the checkpoint in place: " + ec.message());
  return OkStatus();
}

// Loads the checkpoint in work_dir, if there is one; returns the step it was written at.
StatusOr<std::int64_t> LoadCheckpoint(Trainer::State& s) {
  const fs::path dir = CheckpointDir(s.o);
  std::ifstream in(dir / "step");
  if (!in) return std::int64_t{0};
  std::int64_t step = 0;
  in >> step;
  std::string config((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  while (!config.empty() && std::isspace(static_cast<unsigned char>(config.front()))) config.erase(0, 1);
  if (config != s.o.model.ToJsonText())
    return FailedPreconditionError(dir.string() + ": holds a checkpoint of another model shape; use another work directory");
  std::vector<torch::Tensor> loaded;
  try {
    torch::load(loaded, (dir / "params.pt").string());
    if (loaded.size() != s.params.size()) throw std::runtime_error("wrong number of tensors");
    torch::NoGradGuard no_grad;
    for (size_t i = 0; i < loaded.size(); ++i) {
      if (loaded[i].sizes() != s.params[i].sizes()) throw std::runtime_error("tensor " + s.names[i] + " has another shape");
      s.params[i].copy_(loaded[i]);
    }
    torch::load(*s.optimizer, (dir / "optimizer.pt").string());
  } catch (const std::exception& e) {
    return DataLossError(dir.string() + ": cannot resume from the checkpoint: " + e.what());
  }
  return step;
}

}  // namespace

StatusOr<TrainResult> Trainer::Run(const std::function<void(const StepReport&)>& report) {
  State& s = *s_;
  UNMASK_ASSIGN_OR_RETURN(const model::ThreadingReport threading, model::ConfigureThreading(s.o.threads));
  TrainResult result;
  result.threading = threading.Describe();
  if (!s.o.work_dir.empty()) {
    UNMASK_ASSIGN_OR_RETURN(s.step, LoadCheckpoint(s));
    result.resumed_from = s.step;
  }
  const std::int64_t total = s.o.pretrain_steps + s.o.chat_steps;
  const auto start = std::chrono::steady_clock::now();
  auto window_start = start;
  double window_loss = 0, held = -1;
  std::int64_t window_steps = 0, window_tokens = 0;
  while (s.step < total) {
    const std::int64_t step = s.step;
    const bool chat = step >= s.o.pretrain_steps;
    const double lr = LearningRate(s.o, step);
    for (auto& group : s.optimizer->param_groups()) static_cast<torch::optim::AdamWOptions&>(group.options()).lr(lr);
    s.optimizer->zero_grad();
    double loss = 0;
    {
      auto m = BuildModel(s);
      torch::Tensor l = StepLoss(s, *m, PretrainBatch(s, Mix(s.o.seed, step, 1)), Mix(s.o.seed, step, 2));
      l.backward();
      loss += l.item<double>();
      window_tokens += s.o.batch * s.o.seq_len;
    }
    std::int64_t chat_tokens = 0;
    if (chat) {
      auto m = BuildModel(s);
      const Batch batch = ChatBatch(s, Mix(s.o.seed, step, 3));
      torch::Tensor l = StepLoss(s, *m, batch, Mix(s.o.seed, step, 4));
      l.backward();
      loss += l.item<double>();
      chat_tokens = batch.ids.numel();
      window_tokens += chat_tokens;
    }
    torch::nn::utils::clip_grad_norm_(s.params, s.o.grad_clip);
    s.optimizer->step();
    s.step = step + 1;
    window_loss += loss;
    ++window_steps;
    result.tokens_seen += s.o.batch * s.o.seq_len + chat_tokens;
    const bool last = s.step == total;
    if (s.o.eval_every > 0 && (s.step % s.o.eval_every == 0 || last)) held = HeldOutLoss();
    if (s.step % s.o.log_every == 0 || last) {
      const auto now = std::chrono::steady_clock::now();
      const double secs = std::chrono::duration<double>(now - window_start).count();
      const double per_step = std::chrono::duration<double>(now - start).count() / static_cast<double>(s.step - result.resumed_from);
      StepReport r{s.step, total, chat ? "chat" : "pretrain", window_loss / window_steps, held,
                   window_tokens / std::max(secs, 1e-9), per_step * static_cast<double>(total - s.step), lr};
      if (report) report(r);
      result.final_loss = r.loss;
      window_start = now;
      window_loss = 0;
      window_steps = 0;
      window_tokens = 0;
    }
    if (!s.o.work_dir.empty() && (s.step % s.o.checkpoint_every == 0 || last)) {
      UNMASK_RETURN_IF_ERROR(SaveCheckpoint(s));
      if (stop_after_ >= 0 && s.step >= stop_after_) break;
    }
  }
  result.steps = s.step;
  result.final_held_out_loss = held >= 0 ? held : HeldOutLoss();
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}

Status Trainer::Export(const std::string& dir) const {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return FailedPreconditionError(dir + ": cannot create: " + ec.message());
  {
    std::ofstream out(dir + "/config.json");
    out << s_->o.model.ToJsonText();
    if (!out) return InternalError(dir + "/config.json: write failed");
  }
  std::map<std::string, torch::Tensor> bf16;
  std::vector<checkpoint::TensorSpec> specs;
  for (size_t i = 0; i < s_->names.size(); ++i) {
    bf16[s_->names[i]] = s_->params[i].detach().to(torch::kCPU).to(torch::kBFloat16).contiguous();
    specs.push_back({s_->names[i], checkpoint::DType::kBF16, s_->params[i].sizes().vec()});
  }
  return checkpoint::WriteShardedCheckpoint(dir, specs, 1, [&](const checkpoint::TensorSpec& spec, std::uint8_t* dst) {
    const torch::Tensor& t = bf16.at(spec.name);
    std::memcpy(dst, t.data_ptr(), spec.nbytes());
  });
}

}  // namespace unmask::train
