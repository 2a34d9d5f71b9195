#include "common/checkpoint/safetensors.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>

namespace unmask::checkpoint {

std::int64_t TensorInfo::numel() const {
  std::int64_t n = 1;
  for (auto d : shape) n *= d;
  return n;
}

StatusOr<std::shared_ptr<SafetensorsFile>> SafetensorsFile::Open(const std::string& path) {
  UNMASK_ASSIGN_OR_RETURN(auto mapped, MappedFile::Open(path));
  std::shared_ptr<SafetensorsFile> file(new SafetensorsFile(std::move(mapped)));
  UNMASK_RETURN_IF_ERROR(file->ParseHeader());
  return file;
}

const TensorInfo* SafetensorsFile::Find(const std::string& name) const {
  auto it = index_.find(name);
  return it == index_.end() ? nullptr : &tensors_[it->second];
}

namespace {

// Reads one tensor entry of the header into `info`; errors name the tensor.
Status ParseEntry(const std::string& name, const nlohmann::json& entry, TensorInfo& info) {
  if (!entry.is_object()) return DataLossError("tensor '" + name + "': header entry is not an object");
  auto dtype_it = entry.find("dtype");
  if (dtype_it == entry.end() || !dtype_it->is_string())
    return DataLossError("tensor '" + name + "': missing string field 'dtype'");
  auto dtype = ParseDType(dtype_it->get<std::string>());
  if (!dtype) {
    return DataLossError("tensor '" + name + "': unknown dtype '" + dtype_it->get<std::string>() + "'");
  }
  auto shape_it = entry.find("shape");
  if (shape_it == entry.end() || !shape_it->is_array())
    return DataLossError("tensor '" + name + "': missing array field 'shape'");
  auto offsets_it = entry.find("data_offsets");
  if (offsets_it == entry.end() || !offsets_it->is_array() || offsets_it->size() != 2 ||
      !(*offsets_it)[0].is_number_unsigned() || !(*offsets_it)[1].is_number_unsigned()) {
    return DataLossError("tensor '" + name + "': 'data_offsets' must be two non-negative integers");
  }
  info.name = name;
  info.dtype = *dtype;
  // Overflow-checked element count: a header must not make us compute a wrapped size.
  unsigned __int128 numel = 1;
  for (const auto& dim : *shape_it) {
    if (!dim.is_number_unsigned()) return DataLossError("tensor '" + name + "': shape has a non-integer or negative dimension");
    auto d = dim.get<std::uint64_t>();
    if (d > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
      return DataLossError("tensor '" + name + "': dimension too large");
    info.shape.push_back(static_cast<std::int64_t>(d));
    numel *= d;
    if (numel > (static_cast<unsigned __int128>(1) << 62))
      return DataLossError("tensor '" + name + "': shape too large");
  }
  std::uint64_t begin = (*offsets_it)[0].get<std::uint64_t>();
  std::uint64_t end = (*offsets_it)[1].get<std::uint64_t>();
  if (end < begin) return DataLossError("tensor '" + name + "': data_offsets end < begin");
  // In 128 bits: 2^62 elements of 4 bytes wrap to 0 in 64, which an empty data range would match.
  const unsigned __int128 expected = numel * DTypeSize(*dtype);
  if (expected > std::numeric_limits<std::uint64_t>::max())
    return DataLossError("tensor '" + name + "': shape x dtype exceeds 2^64 bytes");
  if (end - begin != static_cast<std::uint64_t>(expected)) {
    return DataLossError("tensor '" + name + "': byte length " + std::to_string(end - begin) +
                         " does not match shape x dtype (" + std::to_string(static_cast<std::uint64_t>(expected)) +
                         " bytes)");
  }
  info.offset = begin;  // relative for now; made absolute by the caller
  info.nbytes = end - begin;
  return OkStatus();
}

}  // namespace

Status SafetensorsFile::ParseHeader() {
  const std::string& path = file_->path();
  auto fail = [&](const std::string& what) { return DataLossError(path + ": " + what); };
  if (file_->size() < 8) return fail("truncated: shorter than the 8-byte header length");
  std::uint64_t header_len = 0;
  for (int i = 7; i >= 0; --i) header_len = (header_len << 8) | file_->data()[i];
  if (header_len > kMaxSafetensorsHeaderBytes)
    return fail("header length " + std::to_string(header_len) + " exceeds the limit of " +
                std::to_string(kMaxSafetensorsHeaderBytes) + " bytes");
  if (header_len > file_->size() - 8)
    return fail("truncated: header length " + std::to_string(header_len) + " runs past the end of the file");
  const char* header_begin = reinterpret_cast<const char*>(file_->data() + 8);
  nlohmann::json header = nlohmann::json::parse(header_begin, header_begin + header_len, nullptr,
                                                /*allow_exceptions=*/false);
  if (header.is_discarded()) return fail("header is not well-formed JSON");
  if (!header.is_object()) return fail("header is not a JSON object");

  const std::uint64_t data_start = 8 + header_len;
  const std::uint64_t data_size = file_->size() - data_start;
  for (auto it = header.begin(); it != header.end(); ++it) {
    if (it.key() == "__metadata__") {
      if (!it->is_object()) return fail("__metadata__ is not an object");
      for (auto m = it->begin(); m != it->end(); ++m) {
        if (!m->is_string()) return fail("__metadata__ value '" + m.key() + "' is not a string");
        metadata_[m.key()] = m->get<std::string>();
      }
      continue;
    }
    TensorInfo info;
    Status s = ParseEntry(it.key(), *it, info);
    if (!s.ok()) return s.WithContext(path);
    if (info.offset + info.nbytes > data_size) {
      return fail("tensor '" + info.name + "': data_offsets [" + std::to_string(info.offset) + ", " +
                  std::to_string(info.offset + info.nbytes) + ") run past the end of the data (" +
                  std::to_string(data_size) + " bytes): the file is truncated or corrupt");
    }
    info.offset += data_start;
    index_[info.name] = tensors_.size();
    tensors_.push_back(std::move(info));
  }

  // The buffer must be indexed exactly: sorted by offset, each tensor starts where the last ended.
  std::vector<const TensorInfo*> by_offset;
  for (const auto& t : tensors_) by_offset.push_back(&t);
  std::sort(by_offset.begin(), by_offset.end(),
            [](const TensorInfo* a, const TensorInfo* b) { return a->offset < b->offset; });
  std::uint64_t cursor = data_start;
  for (const TensorInfo* t : by_offset) {
    if (t->offset < cursor)
      return fail("tensor '" + t->name + "' overlaps the tensor before it in the data buffer");
    if (t->offset > cursor)
      return fail("tensor '" + t->name + "' leaves a hole of " + std::to_string(t->offset - cursor) +
                  " bytes before it in the data buffer");
    cursor = t->offset + t->nbytes;
  }
  return OkStatus();
}

}  // namespace unmask::checkpoint
