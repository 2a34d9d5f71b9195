// The subcommands of the `unmask` client. Each Add* registers one or more subcommands whose
// callbacks throw CLI::RuntimeError(exit_code).
#pragma once

#include <CLI/CLI.hpp>

#include "tools/unmask_cli/client_options.h"
#include "unmask/v1/scheduler.grpc.pb.h"

namespace unmask::cli {

void AddGenerateCommands(CLI::App& app, const ClientOptions& client);  // generate, submit
void AddJobCommands(CLI::App& app, const ClientOptions& client);       // watch, job, jobs, cancel, models
void AddLoadCommand(CLI::App& app, const ClientOptions& client);       // load (talks to a loader)
void AddUnloadCommand(CLI::App& app, const ClientOptions& client);     // unload (talks to a loader)
void AddHealthCommand(CLI::App& app, const ClientOptions& client);     // health (any service)
void AddKeysCommand(CLI::App& app);                                    // keys hash|new (local)

// Prints a failed call's status to stderr and returns the exit code (2 for caller errors).
int ReportStatus(const char* command, const grpc::Status& status);
// Streams a job's events (from Generate or Watch) to the terminal or as JSON lines, then ends
// `call` with the stream's status; returns the exit code (1 when a choice failed). `choices` > 1
// (a Generate with --n): plain lines, each marked with its choice.
int StreamEvents(grpc::ClientReader<v1::JobEvent>& reader, bool json, const char* command, RpcCall& call,
                 int choices = 1);

}  // namespace unmask::cli
