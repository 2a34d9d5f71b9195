// unmask: the command-line client of the unmask services.
#include <CLI/CLI.hpp>

#include "tools/unmask_cli/cli_tracing.h"
#include "tools/unmask_cli/client_options.h"
#include "tools/unmask_cli/commands.h"

namespace {

int Run(CLI::App& app, int argc, char** argv) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::RuntimeError& e) {
    return e.get_exit_code();
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"unmask: generate with masked-diffusion language models served by unmask"};
  app.require_subcommand(1);
  unmask::cli::ClientOptions client;
  unmask::cli::TraceFlags trace_flags;
  unmask::cli::CliTracing tracing(trace_flags);
  client.tracing = &tracing;
  unmask::cli::AddClientOptions(app, client);
  unmask::cli::AddTraceOptions(app, trace_flags);
  unmask::cli::AddGenerateCommands(app, client);
  unmask::cli::AddJobCommands(app, client);
  unmask::cli::AddLoadCommand(app, client);
  unmask::cli::AddUnloadCommand(app, client);
  unmask::cli::AddHealthCommand(app, client);
  unmask::cli::AddKeysCommand(app);
  const int code = Run(app, argc, argv);
  tracing.Shutdown();  // sends the command's span; bounded, whatever the collector does
  return code;
}
