// model.safetensors.index.json: the fuzz bytes are the index of a checkpoint directory that
// also holds two small valid shards, opened with Checkpoint::Open (which opens every shard the
// index names). Properties of an accepted checkpoint: every tensor name is found, inside its
// shard; every shard is one of the directory's files.
#include <cstddef>
#include <cstdint>
#include <string>

#include "common/checkpoint/checkpoint.h"
#include "fuzz/fuzz_check.h"
#include "fuzz/fuzz_files.h"

namespace {

// A valid safetensors file holding F32 tensors of shape [2] (8 bytes each), zero-filled.
std::string SmallShard(const std::vector<std::string>& names) {
  std::string header = "{\"__metadata__\":{\"format\":\"pt\"}";
  std::uint64_t offset = 0;
  for (const auto& name : names) {
    header += ",\"" + name + "\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[" + std::to_string(offset) +
              "," + std::to_string(offset + 8) + "]}";
    offset += 8;
  }
  header += "}";
  std::string file(8, '\0');
  for (int i = 0; i < 8; ++i) file[i] = static_cast<char>((header.size() >> (8 * i)) & 0xff);
  return file + header + std::string(offset, '\0');
}

const unmask::fuzz::ScratchDir& CheckpointDir() {
  static const unmask::fuzz::ScratchDir dir("sharded_index");
  static const bool written = [] {
    dir.Write("model-00001-of-00002.safetensors", SmallShard({"model.transformer.wte.weight", "model.transformer.ln_f.weight"}));
    dir.Write("model-00002-of-00002.safetensors", SmallShard({"model.transformer.ff_out.weight"}));
    return true;
  }();
  (void)written;
  return dir;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto& dir = CheckpointDir();
  dir.Write("model.safetensors.index.json", data, size);
  auto ckpt = unmask::checkpoint::Checkpoint::Open(dir.path());
  if (!ckpt.ok()) return 0;
  for (const auto& name : (*ckpt)->tensor_names()) {
    auto ref = (*ckpt)->Find(name);
    UNMASK_FUZZ_CHECK(ref.ok(), "every listed tensor is found");
    UNMASK_FUZZ_CHECK(ref->info->offset + ref->info->nbytes <= ref->file->file().size(), "the tensor lies inside its shard");
    UNMASK_FUZZ_CHECK(ref->file->path().rfind(dir.path() + "/", 0) == 0, "shards come from the checkpoint directory");
  }
  return 0;
}
