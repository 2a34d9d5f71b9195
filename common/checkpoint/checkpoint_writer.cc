#include "common/checkpoint/checkpoint_writer.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <nlohmann/json.hpp>

namespace unmask::checkpoint {

std::uint64_t TensorSpec::nbytes() const {
  std::uint64_t n = DTypeSize(dtype);
  for (auto d : shape) n *= static_cast<std::uint64_t>(d);
  return n;
}

Status WriteSafetensors(const std::string& path, const std::vector<TensorSpec>& specs,
                        const TensorFiller& fill, const std::map<std::string, std::string>& metadata) {
  nlohmann::ordered_json header;
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::uint64_t offset = 0;
  for (const auto& spec : specs) {
    header[spec.name] = {{"dtype", DTypeName(spec.dtype)},
                         {"shape", spec.shape},
                         {"data_offsets", {offset, offset + spec.nbytes()}}};
    offset += spec.nbytes();
  }
  std::string text = header.dump();
  while ((8 + text.size()) % 8 != 0) text.push_back(' ');  // keep the data 8-byte aligned

  std::unique_ptr<FILE, int (*)(FILE*)> out(std::fopen(path.c_str(), "wb"), &std::fclose);
  if (!out) return FailedPreconditionError(path + ": cannot create: " + std::strerror(errno));
  std::uint8_t len[8];
  for (int i = 0; i < 8; ++i) len[i] = static_cast<std::uint8_t>(static_cast<std::uint64_t>(text.size()) >> (8 * i));
  bool ok = std::fwrite(len, 1, 8, out.get()) == 8 &&
            std::fwrite(text.data(), 1, text.size(), out.get()) == text.size();
  std::vector<std::uint8_t> buffer;
  for (const auto& spec : specs) {
    if (!ok) break;
    buffer.assign(spec.nbytes(), 0);
    fill(spec, buffer.data());
    ok = std::fwrite(buffer.data(), 1, buffer.size(), out.get()) == buffer.size();
  }
  if (!ok || std::fflush(out.get()) != 0) return InternalError(path + ": write failed: " + std::strerror(errno));
  return OkStatus();
}

Status WriteShardedCheckpoint(const std::string& dir, const std::vector<TensorSpec>& specs,
                              int num_shards, const TensorFiller& fill) {
  if (num_shards < 1) return InvalidArgumentError("num_shards must be >= 1");
  if (num_shards == 1) return WriteSafetensors(dir + "/model.safetensors", specs, fill);
  std::uint64_t total = 0;
  for (const auto& s : specs) total += s.nbytes();
  const std::uint64_t per_shard = (total + num_shards - 1) / num_shards;

  std::vector<std::vector<TensorSpec>> shards(1);
  std::uint64_t in_shard = 0;
  for (const auto& s : specs) {
    if (in_shard >= per_shard && static_cast<int>(shards.size()) < num_shards) {
      shards.emplace_back();
      in_shard = 0;
    }
    shards.back().push_back(s);
    in_shard += s.nbytes();
  }
  const int n = static_cast<int>(shards.size());
  nlohmann::ordered_json index;
  index["metadata"] = {{"total_size", total}};
  index["weight_map"] = nlohmann::ordered_json::object();
  for (int k = 0; k < n; ++k) {
    char name[64];
    std::snprintf(name, sizeof(name), "model-%05d-of-%05d.safetensors", k + 1, n);
    UNMASK_RETURN_IF_ERROR(WriteSafetensors(dir + "/" + name, shards[k], fill));
    for (const auto& s : shards[k]) index["weight_map"][s.name] = name;
  }
  const std::string index_path = dir + "/model.safetensors.index.json";
  std::unique_ptr<FILE, int (*)(FILE*)> out(std::fopen(index_path.c_str(), "wb"), &std::fclose);
  if (!out) return FailedPreconditionError(index_path + ": cannot create");
  std::string text = index.dump(2) + "\n";
  if (std::fwrite(text.data(), 1, text.size(), out.get()) != text.size())
    return InternalError(index_path + ": write failed");
  return OkStatus();
}

}  // namespace unmask::checkpoint
