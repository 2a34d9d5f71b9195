// The HTTP API's request body: the fuzz bytes are a POST body, given to ParseJsonBody and then
// to ParseOpenAiRequest for both endpoints (/v1/chat/completions, /v1/completions), as the
// server does. Properties: a refusal is InvalidArgument naming a field ("<field>: ..."), and a
// request the HTTP parser accepts also passes the scheduler's RPC validation.
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string_view>

#include "fuzz/fuzz_check.h"
#include "services/scheduler/http/openai_request.h"
#include "services/scheduler/request_validation.h"

using namespace unmask::scheduler;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  auto body = http::ParseJsonBody(std::string_view(reinterpret_cast<const char*>(data), size));
  if (!body.ok()) {
    UNMASK_FUZZ_CHECK(body.status().code() == unmask::StatusCode::kInvalidArgument, "a bad body is InvalidArgument");
    return 0;
  }
  for (auto endpoint : {http::Endpoint::kChatCompletions, http::Endpoint::kCompletions}) {
    auto request = http::ParseOpenAiRequest(endpoint, *body);
    if (!request.ok()) {
      UNMASK_FUZZ_CHECK(request.status().code() == unmask::StatusCode::kInvalidArgument, "a bad field is InvalidArgument");
      UNMASK_FUZZ_CHECK(request.status().message().find(": ") != std::string::npos, "the error names the field");
      continue;
    }
    const unmask::Status valid = ValidateGenerateRequest(request->generate);
    UNMASK_FUZZ_CHECK(valid.ok(), "what the HTTP API accepts, the scheduler's validation accepts");
  }
  return 0;
}
