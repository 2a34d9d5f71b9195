// unmask-engine: the engine on the command line, in-process (no services needed).
#include <CLI/CLI.hpp>

#include "tools/unmask_engine/generate_command.h"
#include "tools/unmask_engine/tokenize_commands.h"

int main(int argc, char** argv) {
  CLI::App app{"unmask-engine: run the LLaDA engine in-process"};
  app.require_subcommand(1);
  unmask::cli::AddGenerateCommand(app);
  unmask::cli::AddTokenizeCommands(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::RuntimeError& e) {
    return e.get_exit_code();
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  return 0;
}
