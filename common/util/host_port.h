// The one parser of "host:port" addresses (listen addresses, Redis, executors, OTLP receivers).
#pragma once

#include <string>
#include <string_view>

#include "common/util/status.h"

namespace unmask {

struct HostPort {
  std::string host;  // without brackets ("::1" for "[::1]:80"); empty: every interface
  int port = 0;      // 0..65535
  // "host:port", with an IPv6 host in brackets.
  std::string ToString() const;
};

struct HostPortRules {
  // >= 0: the port may be left out ("redis" means redis:default_port).
  int default_port = -1;
  // An empty host (":9091") is allowed: a listener then binds every interface.
  bool allow_empty_host = false;
  // A bare port ("9091") is allowed and means every interface (implies allow_empty_host for it).
  bool allow_bare_port = false;
};

// "host:port" or "[v6]:port" (an IPv6 host must be in brackets). The port is decimal digits in
// 0..65535. InvalidArgument saying what is wrong with `text` otherwise.
StatusOr<HostPort> ParseHostPort(std::string_view text, const HostPortRules& rules = {});

}  // namespace unmask
