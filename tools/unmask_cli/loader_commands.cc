#include <unistd.h>

#include <iostream>

#include "grpc/health/v1/health.grpc.pb.h"
#include "tools/unmask_cli/commands.h"
#include "tools/unmask_cli/live_view.h"
#include "unmask/v1/loader.grpc.pb.h"

namespace unmask::cli {

void AddLoadCommand(CLI::App& app, const ClientOptions& client) {
  struct Flags {
    std::string loader = "127.0.0.1:50052", model, precision;
  };
  auto f = std::make_shared<Flags>();
  CLI::App* cmd = app.add_subcommand("load", "Load a model into a loader, with a progress bar");
  cmd->add_option("--loader", f->loader, "Loader address")->capture_default_str();
  cmd->add_option("--model", f->model, "Model id (a directory under the loader's model roots)")->required();
  cmd->add_option("--precision", f->precision, "bf16, fp16, fp32, int8, int4[:gN][:sym]");
  cmd->callback([f, &client] {
    auto stub = v1::Loader::NewStub(client.Channel(f->loader));
    RpcCall call = client.Call("unmask.v1.Loader/LoadModel", f->loader);
    call.span().SetAttribute("model_id", f->model);
    v1::LoadModelRequest req;
    req.set_model_id(f->model);
    req.set_precision(f->precision);
    auto reader = stub->LoadModel(call.ctx(), req);
    const bool tty = ::isatty(2);
    v1::LoadProgress p;
    v1::ModelInfo info;
    while (reader->Read(&p)) {
      if (p.has_model()) info = p.model();
      const double fraction = p.bytes_total() ? static_cast<double>(p.bytes_done()) / p.bytes_total() : 0.0;
      std::cerr << (tty ? "\r\x1b[2K" : "") << ProgressBar(fraction, 30) << " " << p.phase() << " " << p.tensors_done()
                << "/" << p.tensors_total() << " tensors " << p.current_tensor() << (tty ? "" : "\n");
    }
    if (tty) std::cerr << "\n";
    grpc::Status s = call.Finish(reader->Finish());
    if (!s.ok()) throw CLI::RuntimeError(ReportStatus("load", s));
    std::cout << info.model_id() << " " << info.state() << " " << info.precision() << " " << info.resident_bytes()
              << " bytes" << std::endl;
    throw CLI::RuntimeError(0);
  });
}

void AddUnloadCommand(CLI::App& app, const ClientOptions& client) {
  struct Flags {
    std::string loader = "127.0.0.1:50052", model;
    bool force = false;
  };
  auto f = std::make_shared<Flags>();
  CLI::App* cmd = app.add_subcommand("unload", "Free a model in a loader (refused while executors use it, unless --force)");
  cmd->add_option("--loader", f->loader, "Loader address")->capture_default_str();
  cmd->add_option("--model", f->model, "Model id")->required();
  cmd->add_flag("--force", f->force,
                "Unload even while executors are attached: they stop serving it, finish their running jobs, let go, "
                "and the loader frees it after the last one");
  cmd->callback([f, &client] {
    auto stub = v1::Loader::NewStub(client.Channel(f->loader));
    RpcCall call = client.Call("unmask.v1.Loader/UnloadModel", f->loader);
    call.span().SetAttribute("model_id", f->model);
    v1::UnloadModelRequest req;
    req.set_model_id(f->model);
    req.set_force(f->force);
    v1::UnloadModelResponse resp;
    grpc::Status s = call.Finish(stub->UnloadModel(call.ctx(), req, &resp));
    if (!s.ok()) throw CLI::RuntimeError(ReportStatus("unload", s));
    if (resp.notified_executors().empty()) {
      std::cout << "unloaded " << f->model << std::endl;
    } else {
      std::cout << "unloading " << f->model << "; freed once these executors let go:";
      for (const auto& e : resp.notified_executors()) std::cout << " " << e;
      std::cout << std::endl;
    }
    throw CLI::RuntimeError(0);
  });
}

void AddHealthCommand(CLI::App& app, const ClientOptions& client) {
  struct Flags {
    std::string addr, service;
  };
  auto f = std::make_shared<Flags>();
  CLI::App* cmd = app.add_subcommand("health", "Check a service's gRPC health (exit 0 when SERVING)");
  cmd->add_option("--addr", f->addr, "host:port of any unmask service")->required();
  cmd->add_option("--service", f->service, "Service name (empty = the whole server)");
  cmd->callback([f, &client] {
    auto stub = grpc::health::v1::Health::NewStub(client.Channel(f->addr));
    RpcCall call = client.Call("grpc.health.v1.Health/Check", f->addr);
    if (client.timeout_seconds <= 0)
      call.ctx()->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
    grpc::health::v1::HealthCheckRequest req;
    req.set_service(f->service);
    grpc::health::v1::HealthCheckResponse resp;
    grpc::Status s = call.Finish(stub->Check(call.ctx(), req, &resp));
    if (!s.ok()) throw CLI::RuntimeError(ReportStatus("health", s) == 2 ? 2 : 1);
    std::cout << grpc::health::v1::HealthCheckResponse::ServingStatus_Name(resp.status()) << std::endl;
    throw CLI::RuntimeError(resp.status() == grpc::health::v1::HealthCheckResponse::SERVING ? 0 : 1);
  });
}

}  // namespace unmask::cli
