#include "common/generation/field_names.h"

namespace unmask::generation {

Status RenameField(const Status& status, const std::string& name) {
  if (status.ok() || status.field().empty()) return status;
  const std::string& old = status.field();
  const std::string& m = status.message();
  ErrorDetail detail = *status.detail();
  detail.field = name;
  return Status(status.code(), m.rfind(old + ":", 0) == 0 ? name + m.substr(old.size()) : m, std::move(detail));
}

}  // namespace unmask::generation
