// What every benchmark needs to write its figures honestly: the machine they came from, the
// command that reproduces them, peak memory, and a section of docs/benchmarks.md to replace.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <string>
#include <utility>
#include <vector>

#include "common/util/status.h"

namespace unmask::bench {

// "Intel(R) Xeon(R) ... | 2 cores | 23 GiB RAM | Linux 6.x" from /proc.
std::string MachineDescription();
// Peak resident set (VmHWM) of this process in bytes.
std::uint64_t PeakRssBytes();
// Current resident set (VmRSS) of this process in bytes.
std::uint64_t CurrentRssBytes();
// The command line of this process, shell-quoted where needed.
std::string CommandLine(int argc, char** argv);

// Replaces the text between "<!-- bench:ID -->" and "<!-- /bench:ID -->" in the markdown file
// at `path` (appending the section if it is not there yet). Returns false on I/O errors.
bool ReplaceDocSection(const std::string& path, const std::string& id, const std::string& markdown);

std::string FormatBytes(std::uint64_t bytes);
// One number through a printf format ("%.2fx").
std::string Fmt(const char* format, double v);
// The middle value (the upper one of an even count); `v` must not be empty.
double Median(std::vector<double> v);
double SecondsSince(std::chrono::steady_clock::time_point since);

// The value, or (a benchmark cannot go on without it) `what: <status>` on stderr and exit 1.
template <typename T>
T Check(StatusOr<T> v, const std::string& what) {
  if (!v.ok()) {
    std::cerr << what << ": " << v.status().ToString() << "\n";
    std::exit(1);
  }
  return std::move(v).value();
}

}  // namespace unmask::bench
