// unmask-loader: owns model weights in shared memory and lends them to executors.
#include <CLI/CLI.hpp>
#include <iostream>

#include "services/common/server_runner.h"
#include "services/loader/loader_core.h"
#include "services/loader/loader_grpc.h"

int main(int argc, char** argv) {
  unmask::services::BlockShutdownSignals();
  unmask::loader::LoaderOptions options;
  std::string listen = "0.0.0.0:50052";
  std::vector<std::string> preload;
  int drain_seconds = 30;
  CLI::App app{"unmask-loader: streams checkpoints into shared memory for executors"};
  app.add_option("--listen", listen, "gRPC listen address (port 0 picks one)")->capture_default_str();
  app.add_option("--model-root", options.model_roots, "Directory holding model directories (repeatable)")->required();
  app.add_option("--preload", preload, "MODEL_ID[:precision] to load at start (repeatable)");
  app.add_option("--default-precision", options.default_precision, "bf16, fp16, fp32, int8, int4[:gN][:sym]")
      ->capture_default_str();
  app.add_option("--drain-timeout-seconds", drain_seconds, "Grace period for in-flight calls on SIGTERM")
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  if (auto spec = unmask::weights::PrecisionSpec::Parse(options.default_precision); !spec.ok()) {
    std::cerr << "unmask-loader: --default-precision: " << spec.status().message() << "\n";
    return 2;
  }

  unmask::loader::LoaderCore core(options);
  unmask::loader::LoaderGrpcService service(core);
  unmask::services::ServerRunner runner("Loader");
  runner.AddService(&service);
  if (auto s = runner.Start(listen); !s.ok()) {
    std::cerr << "unmask-loader: " << s.ToString() << "\n";
    return 1;
  }
  std::cout << "unmask-loader: listening on port " << runner.port() << std::endl;
  for (const auto& item : preload) {
    const auto colon = item.find(':');
    const std::string model = item.substr(0, colon);
    const std::string precision = colon == std::string::npos ? "" : item.substr(colon + 1);
    auto info = core.Load(model, precision, {});
    if (info.ok()) {
      std::cout << "unmask-loader: preloaded " << model << " (" << info->resident_bytes << " bytes)" << std::endl;
    } else {
      std::cerr << "unmask-loader: preload of " << model << " failed: " << info.status().ToString() << std::endl;
    }
  }
  runner.SetServing(true);
  runner.WaitForSignalAndDrain(std::chrono::seconds(drain_seconds));
  return 0;
}
