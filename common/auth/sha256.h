// SHA-256 of a byte string as 64 lowercase hex digits (OpenSSL's libcrypto underneath).
#pragma once

#include <string>
#include <string_view>

namespace unmask::auth {

std::string Sha256Hex(std::string_view data);

}  // namespace unmask::auth
