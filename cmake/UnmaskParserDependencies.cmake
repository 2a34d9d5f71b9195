# What the LibTorch-free parser libraries need (JSON, threads, PCRE2, ICU): shared by the main
# build (UnmaskDependencies.cmake) and the fuzz build (fuzz/CMakeLists.txt).
# nlohmann/json is header-only; UNMASK_JSON_INCLUDE_DIR points at a copy where no package exists.
find_package(nlohmann_json 3.9 QUIET)
if(NOT nlohmann_json_FOUND)
  find_path(UNMASK_JSON_INCLUDE_DIR nlohmann/json.hpp REQUIRED)
  add_library(nlohmann_json::nlohmann_json INTERFACE IMPORTED)
  target_include_directories(nlohmann_json::nlohmann_json INTERFACE ${UNMASK_JSON_INCLUDE_DIR})
endif()

find_package(Threads REQUIRED)
find_package(PkgConfig REQUIRED)
pkg_check_modules(PCRE2 REQUIRED IMPORTED_TARGET libpcre2-8)
pkg_check_modules(ICU REQUIRED IMPORTED_TARGET icu-uc)
