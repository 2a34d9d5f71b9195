// A SpanExporter that keeps what it gets, for tests that do not need the wire.
#pragma once

#include <memory>
#include <mutex>
#include <vector>

#include "common/telemetry/span_data.h"

namespace unmask::telemetry::testing {

class MemoryExporter : public SpanExporter {
 public:
  void Export(std::unique_ptr<SpanData> span) override {
    std::lock_guard<std::mutex> lock(mu_);
    spans_.push_back(std::move(span));
  }
  std::vector<std::unique_ptr<SpanData>> Take() {
    std::lock_guard<std::mutex> lock(mu_);
    return std::move(spans_);
  }
  std::size_t size() const {
    std::lock_guard<std::mutex> lock(mu_);
    return spans_.size();
  }

 private:
  mutable std::mutex mu_;
  std::vector<std::unique_ptr<SpanData>> spans_;
};

}  // namespace unmask::telemetry::testing
