// An error about a generation parameter said in a door's own name for the field: the proto's
// "params.steps", unmask-engine's "--steps", the HTTP API's "max_tokens".
#pragma once

#include <string>

#include "common/util/status.h"

namespace unmask::generation {

// `status` with its field `name`, in the detail and at the head of the message where the old
// field led it ("steps: ..." -> "params.steps: ..."); unchanged when it names no field.
Status RenameField(const Status& status, const std::string& name);

}  // namespace unmask::generation
