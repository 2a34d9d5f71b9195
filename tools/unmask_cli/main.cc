// unmask: the command-line client of the unmask services.
#include <CLI/CLI.hpp>

#include "tools/unmask_cli/client_options.h"
#include "tools/unmask_cli/commands.h"

int main(int argc, char** argv) {
  CLI::App app{"unmask: generate with masked-diffusion language models served by unmask"};
  app.require_subcommand(1);
  unmask::cli::ClientOptions client;
  unmask::cli::AddClientOptions(app, client);
  unmask::cli::AddGenerateCommands(app, client);
  unmask::cli::AddJobCommands(app, client);
  unmask::cli::AddLoadCommand(app, client);
  unmask::cli::AddHealthCommand(app, client);
  try {
    app.parse(argc, argv);
  } catch (const CLI::RuntimeError& e) {
    return e.get_exit_code();
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  return 0;
}
