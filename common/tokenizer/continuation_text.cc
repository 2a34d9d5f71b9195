#include "common/tokenizer/continuation_text.h"

namespace unmask::tokenizer {

StatusOr<EncodedPair> EncodeContextAndContinuation(const Tokenizer& tok, const std::string& context,
                                                   const std::string& continuation) {
  const std::size_t kept = context.find_last_not_of(" \t\n\r\f\v");
  const std::string head = kept == std::string::npos ? std::string() : context.substr(0, kept + 1);
  const std::string tail = context.substr(head.size()) + continuation;
  UNMASK_ASSIGN_OR_RETURN(auto whole, tok.Encode(head + tail, /*parse_special_tokens=*/true));
  UNMASK_ASSIGN_OR_RETURN(auto alone, tok.Encode(head, /*parse_special_tokens=*/true));
  if (whole.size() <= alone.size())
    return InvalidArgumentError("continuation: encodes to no tokens after the prompt's").WithField("continuation");
  EncodedPair out;
  out.ids.assign(alone.begin(), alone.end());
  out.ids.insert(out.ids.end(), whole.begin() + static_cast<std::ptrdiff_t>(alone.size()), whole.end());
  out.continuation_tokens = static_cast<std::int64_t>(whole.size() - alone.size());
  return out;
}

}  // namespace unmask::tokenizer
