#include "common/checkpoint/checkpoint.h"

#include <sys/stat.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

namespace unmask::checkpoint {
namespace {

bool FileExists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

}  // namespace

StatusOr<std::unique_ptr<Checkpoint>> Checkpoint::Open(const std::string& dir) {
  std::unique_ptr<Checkpoint> ckpt(new Checkpoint());
  ckpt->dir_ = dir;
  const std::string index = dir + "/model.safetensors.index.json";
  const std::string single = dir + "/model.safetensors";
  if (FileExists(index)) {
    UNMASK_RETURN_IF_ERROR(ckpt->OpenSharded(index));
  } else if (FileExists(single)) {
    UNMASK_RETURN_IF_ERROR(ckpt->OpenSingle(single));
  } else {
    return NotFoundError(dir + ": no model.safetensors.index.json or model.safetensors");
  }
  return ckpt;
}

Status Checkpoint::OpenSingle(const std::string& path) {
  UNMASK_ASSIGN_OR_RETURN(auto shard, SafetensorsFile::Open(path));
  return AddShard(std::move(shard));
}

Status Checkpoint::OpenSharded(const std::string& index_path) {
  std::ifstream in(index_path);
  std::stringstream buf;
  buf << in.rdbuf();
  nlohmann::json index = nlohmann::json::parse(buf.str(), nullptr, /*allow_exceptions=*/false);
  if (index.is_discarded() || !index.is_object())
    return DataLossError(index_path + ": not well-formed JSON");
  auto map_it = index.find("weight_map");
  if (map_it == index.end() || !map_it->is_object())
    return DataLossError(index_path + ": missing object 'weight_map'");

  // Shards in order of first mention, each opened once.
  std::map<std::string, std::vector<std::string>> tensors_by_shard;
  std::vector<std::string> shard_order;
  for (auto it = map_it->begin(); it != map_it->end(); ++it) {
    if (!it->is_string()) return DataLossError(index_path + ": weight_map['" + it.key() + "'] is not a string");
    const std::string shard = it->get<std::string>();
    if (shard.empty() || shard.find('/') != std::string::npos || shard == "..")
      return DataLossError(index_path + ": weight_map['" + it.key() + "'] names an invalid shard file '" + shard + "'");
    if (!tensors_by_shard.count(shard)) shard_order.push_back(shard);
    tensors_by_shard[shard].push_back(it.key());
  }
  for (const auto& shard_name : shard_order) {
    const std::string path = dir_ + "/" + shard_name;
    auto shard = SafetensorsFile::Open(path);
    if (!shard.ok()) {
      if (shard.status().code() == StatusCode::kNotFound) {
        return NotFoundError(index_path + ": shard '" + shard_name + "' (holding tensor '" +
                             tensors_by_shard[shard_name].front() + "') is missing");
      }
      return shard.status();
    }
    UNMASK_RETURN_IF_ERROR(AddShard(*shard));
    for (const auto& tensor : tensors_by_shard[shard_name]) {
      if ((*shard)->Find(tensor) == nullptr)
        return DataLossError(index_path + ": tensor '" + tensor + "' is mapped to '" + shard_name +
                             "' but that shard does not contain it");
    }
  }
  return OkStatus();
}

Status Checkpoint::AddShard(std::shared_ptr<SafetensorsFile> shard) {
  for (const auto& info : shard->tensors()) {
    if (tensors_.count(info.name))
      return DataLossError(shard->path() + ": tensor '" + info.name + "' also appears in " +
                           tensors_[info.name].file->path());
    tensors_[info.name] = TensorRef{shard.get(), &info};
    names_.push_back(info.name);
  }
  shards_.push_back(std::move(shard));
  return OkStatus();
}

StatusOr<TensorRef> Checkpoint::Find(const std::string& name) const {
  auto it = tensors_.find(name);
  if (it == tensors_.end()) return NotFoundError(dir_ + ": tensor '" + name + "' is missing from the checkpoint");
  return it->second;
}

std::uint64_t Checkpoint::total_bytes() const {
  std::uint64_t total = 0;
  for (const auto& [name, ref] : tensors_) total += ref.info->nbytes;
  return total;
}

}  // namespace unmask::checkpoint
