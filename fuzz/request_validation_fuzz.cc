// RPC request validation: the fuzz bytes are a serialized unmask.v1.GenerateRequest, parsed
// with ParseFromArray and given to ValidateGenerateRequest. A refusal must be InvalidArgument.
#include <cstddef>
#include <cstdint>

#include "fuzz/fuzz_check.h"
#include "services/scheduler/request_validation.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  unmask::v1::GenerateRequest request;
  if (!request.ParseFromArray(data, static_cast<int>(size))) return 0;
  const unmask::Status status = unmask::scheduler::ValidateGenerateRequest(request);
  UNMASK_FUZZ_CHECK(status.ok() || status.code() == unmask::StatusCode::kInvalidArgument,
                    "a refused request is InvalidArgument");
  UNMASK_FUZZ_CHECK(status.ok() || !status.message().empty(), "and says why");
  return 0;
}
