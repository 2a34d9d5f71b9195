// safetensors: the fuzz bytes are a whole .safetensors file opened with SafetensorsFile::Open.
// Properties of an accepted file: every tensor lies inside the file (its first and last byte
// are read) and its byte length is exactly product(shape) x dtype size, computed without
// wrapping; a refusal names the file.
#include <cstddef>
#include <cstdint>

#include "common/checkpoint/safetensors.h"
#include "fuzz/fuzz_check.h"
#include "fuzz/fuzz_files.h"

using unmask::checkpoint::DTypeSize;
using unmask::checkpoint::SafetensorsFile;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const unmask::fuzz::ScratchDir dir("safetensors");
  const std::string path = dir.Write("model.safetensors", data, size);
  auto file = SafetensorsFile::Open(path);
  if (!file.ok()) {
    UNMASK_FUZZ_CHECK(file.status().message().find(path) != std::string::npos, "the error names the file");
    return 0;
  }
  const SafetensorsFile& f = **file;
  for (const auto& t : f.tensors()) {
    UNMASK_FUZZ_CHECK(f.Find(t.name) == &t, "every tensor is found by its name");
    unsigned __int128 bytes = DTypeSize(t.dtype);
    for (std::int64_t d : t.shape) bytes *= static_cast<unsigned __int128>(d);
    UNMASK_FUZZ_CHECK(bytes == t.nbytes, "nbytes == product(shape) x dtype size, without wrapping");
    UNMASK_FUZZ_CHECK(t.offset <= f.file().size() && t.nbytes <= f.file().size() - t.offset,
                      "the tensor lies inside the file");
    if (t.nbytes > 0) {
      volatile std::uint8_t first = f.Data(t)[0];
      volatile std::uint8_t last = f.Data(t)[t.nbytes - 1];
      (void)first;
      (void)last;
    }
  }
  return 0;
}
