// The subcommands of the `unmask` client. Each Add* registers one or more subcommands whose
// callbacks throw CLI::RuntimeError(exit_code).
#pragma once

#include <CLI/CLI.hpp>

#include "tools/unmask_cli/client_options.h"

namespace unmask::cli {

void AddGenerateCommands(CLI::App& app, const ClientOptions& client);  // generate, submit
void AddJobCommands(CLI::App& app, const ClientOptions& client);       // watch, jobs, cancel, models
void AddLoadCommand(CLI::App& app, const ClientOptions& client);       // load (talks to a loader)
void AddHealthCommand(CLI::App& app, const ClientOptions& client);     // health (any service)

// Prints a failed call's status to stderr and returns the exit code (2 for caller errors).
int ReportStatus(const char* command, const grpc::Status& status);

}  // namespace unmask::cli
