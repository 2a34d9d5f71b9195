#include "common/util/host_port.h"

namespace unmask {

std::string HostPort::ToString() const {
  const bool v6 = host.find(':') != std::string::npos;
  return (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

namespace {

bool AllDigits(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

StatusOr<int> ParsePort(std::string_view text, std::string_view port) {
  auto bad = [&](const std::string& why) {
    return InvalidArgumentError("'" + std::string(text) + "': " + why);
  };
  if (port.empty()) return bad("no port after ':'");
  if (!AllDigits(port)) return bad("the port '" + std::string(port) + "' is not a number");
  if (port.size() > 5 || std::stoi(std::string(port)) > 65535)
    return bad("the port " + std::string(port) + " is out of range (0..65535)");
  return std::stoi(std::string(port));
}

}  // namespace

StatusOr<HostPort> ParseHostPort(std::string_view text, const HostPortRules& rules) {
  auto bad = [&](const std::string& why) {
    return InvalidArgumentError("'" + std::string(text) + "': " + why + " (want host:port)");
  };
  if (text.empty()) return bad("empty address");
  HostPort out;
  std::string_view host = text, port;
  bool has_port = false;
  if (text.front() == '[') {
    const auto close = text.find(']');
    if (close == std::string_view::npos) return bad("no ']' after the IPv6 address");
    host = text.substr(1, close - 1);
    if (host.empty()) return bad("empty IPv6 address in brackets");
    const std::string_view rest = text.substr(close + 1);
    if (!rest.empty() && rest.front() != ':') return bad("text after the IPv6 address's ']'");
    has_port = !rest.empty();
    if (has_port) port = rest.substr(1);
  } else if (rules.allow_bare_port && AllDigits(text)) {
    host = {};
    port = text;
    has_port = true;
  } else {
    const auto colon = text.rfind(':');
    if (colon != std::string_view::npos) {
      host = text.substr(0, colon);
      port = text.substr(colon + 1);
      has_port = true;
      if (host.find(':') != std::string_view::npos) return bad("an IPv6 address must be in brackets, as [::1]:port");
    }
    if (host.empty() && !rules.allow_empty_host)
      return bad("no host before ':'");
  }
  out.host = std::string(host);
  if (!has_port) {
    if (rules.default_port < 0) return bad("no port");
    out.port = rules.default_port;
    return out;
  }
  UNMASK_ASSIGN_OR_RETURN(out.port, ParsePort(text, port));
  return out;
}

}  // namespace unmask
