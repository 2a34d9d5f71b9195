# Finds the project's dependencies. Debian packages on CPU machines; on a GPU machine the CUDA
# LibTorch from a PyTorch install (pass -DCMAKE_PREFIX_PATH=$(python3 -c 'import torch;print(torch.utils.cmake_prefix_path)')).

find_package(Torch REQUIRED)
# LibTorch's CMake config adds its own flags (e.g. -D_GLIBCXX_USE_CXX11_ABI) through TORCH_CXX_FLAGS.
if(TORCH_CXX_FLAGS)
  set(CMAKE_CXX_FLAGS "${CMAKE_CXX_FLAGS} ${TORCH_CXX_FLAGS}")
endif()

# CUDA is detected, never hand-set: a LibTorch with CUDA plus an nvcc turns on the CUDA-only parts.
set(UNMASK_WITH_CUDA OFF)
if(TORCH_CUDA_LIBRARIES OR CUDA_FOUND)
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    enable_language(CUDA)
    set(UNMASK_WITH_CUDA ON)
  endif()
endif()
message(STATUS "unmask: CUDA parts ${UNMASK_WITH_CUDA}")
# CUDA graphs for repeating forwards (common/model/cuda_graph_forward.h) and the fused elementwise
# kernels (common/model/fused_ops.h, nvcc) need ATen's CUDA headers, which only a LibTorch built
# with CUDA ships; elsewhere their stubs answer "not available".
find_package(CUDAToolkit QUIET)
if(UNMASK_WITH_CUDA AND CUDAToolkit_FOUND)
  option(UNMASK_CUDA_GRAPHS "Capture and replay repeating forwards as CUDA graphs" ON)
  option(UNMASK_CUDA_KERNELS "Build the fused elementwise CUDA kernels (ModelOptions::fused_kernels)" ON)
else()
  set(UNMASK_CUDA_GRAPHS OFF)
  set(UNMASK_CUDA_KERNELS OFF)
endif()
message(STATUS "unmask: CUDA graphs ${UNMASK_CUDA_GRAPHS}, CUDA kernels ${UNMASK_CUDA_KERNELS}")

# CUDA IPC weight sharing (common/segment/cuda_ipc) needs only the CUDA runtime library, not nvcc
# nor a CUDA LibTorch: it is on by default wherever the toolkit is found, and the build works
# without it (the functions then answer Unimplemented). Running it needs a GPU.
find_package(CUDAToolkit QUIET)
option(UNMASK_CUDA_IPC "Build CUDA IPC weight sharing (needs the CUDA toolkit's runtime library)" ${CUDAToolkit_FOUND})
if(UNMASK_CUDA_IPC AND NOT CUDAToolkit_FOUND)
  message(WARNING "unmask: UNMASK_CUDA_IPC is ON but no CUDA toolkit was found; building without it")
  set(UNMASK_CUDA_IPC OFF CACHE BOOL "" FORCE)
endif()
if(UNMASK_CUDA_IPC)
  message(STATUS "unmask: CUDA IPC ON (CUDA runtime ${CUDAToolkit_VERSION} in ${CUDAToolkit_LIBRARY_DIR})")
else()
  message(STATUS "unmask: CUDA IPC OFF")
endif()

include(UnmaskParserDependencies)
find_path(CLI11_INCLUDE_DIR CLI/CLI.hpp REQUIRED)

if(UNMASK_BUILD_TESTS)
  find_package(GTest REQUIRED)
  include(GoogleTest)
endif()
if(UNMASK_BUILD_BENCH)
  find_package(benchmark QUIET)
endif()

if(NOT UNMASK_ENGINE_ONLY)
  # SHA-256 and random bytes for API keys (common/auth), PEM checks and the HTTP API's TLS
  # context (services/common/tls_options, services/scheduler/http): Debian's libssl-dev.
  find_package(OpenSSL REQUIRED COMPONENTS Crypto SSL)
  find_package(Protobuf REQUIRED)
  find_package(gRPC CONFIG REQUIRED)
  find_package(absl CONFIG REQUIRED)
  pkg_check_modules(HIREDIS REQUIRED IMPORTED_TARGET hiredis)
  find_package(prometheus-cpp CONFIG REQUIRED)
  # The scheduler's OpenAI-compatible HTTP API: Debian's cpp-httplib (a compiled library whose
  # pkg-config flags must be used, they select its TLS and compression parts).
  pkg_check_modules(HTTPLIB REQUIRED IMPORTED_TARGET cpp-httplib)
endif()
