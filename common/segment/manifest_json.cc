// JSON form of the manifest (see manifest.h for the schema).
#include <nlohmann/json.hpp>

#include "common/segment/manifest.h"

namespace unmask::weights {

using checkpoint::DType;
using nlohmann::json;

namespace {

json QuantToJson(const QuantInfo& q) {
  json j = {{"scheme", QuantSchemeName(q.scheme)},
            {"symmetric", q.symmetric},
            {"scales_offset", q.scales_offset},
            {"scales_nbytes", q.scales_nbytes},
            {"scales_dtype", checkpoint::DTypeName(q.scales_dtype)}};
  if (q.scheme == QuantScheme::kInt4Groupwise) j["group_size"] = q.group_size;
  if (q.zeros_nbytes != 0) {
    j["zeros_offset"] = q.zeros_offset;
    j["zeros_nbytes"] = q.zeros_nbytes;
    j["zeros_dtype"] = checkpoint::DTypeName(q.zeros_dtype);
  }
  return j;
}

// Typed field readers; every error names the path of the field.
class Reader {
 public:
  Reader(const json& object, std::string path) : j_(object), path_(std::move(path)) {}

  Status Object() const { return j_.is_object() ? OkStatus() : Fail("", "must be an object"); }
  Status U64(const char* key, std::uint64_t& out, bool required = true) const {
    auto it = j_.find(key);
    if (it == j_.end()) return required ? Fail(key, "is missing") : OkStatus();
    if (!it->is_number_unsigned()) return Fail(key, "must be a non-negative integer");
    out = it->get<std::uint64_t>();
    return OkStatus();
  }
  Status I64(const char* key, std::int64_t& out, bool required = true) const {
    std::uint64_t v = 0;
    UNMASK_RETURN_IF_ERROR(U64(key, v, required));
    if (v > static_cast<std::uint64_t>(INT64_MAX)) return Fail(key, "is too large");
    if (j_.contains(key)) out = static_cast<std::int64_t>(v);
    return OkStatus();
  }
  Status Str(const char* key, std::string& out, bool required = true) const {
    auto it = j_.find(key);
    if (it == j_.end()) return required ? Fail(key, "is missing") : OkStatus();
    if (!it->is_string()) return Fail(key, "must be a string");
    out = it->get<std::string>();
    return OkStatus();
  }
  Status Bool(const char* key, bool& out, bool required = true) const {
    auto it = j_.find(key);
    if (it == j_.end()) return required ? Fail(key, "is missing") : OkStatus();
    if (!it->is_boolean()) return Fail(key, "must be true or false");
    out = it->get<bool>();
    return OkStatus();
  }
  Status Dtype(const char* key, DType& out, bool required = true) const {
    std::string name;
    if (!j_.contains(key) && !required) return OkStatus();
    UNMASK_RETURN_IF_ERROR(Str(key, name));
    auto d = checkpoint::ParseDType(name);
    if (!d) return Fail(key, "unknown dtype '" + name + "'");
    out = *d;
    return OkStatus();
  }
  Status Fail(const std::string& key, const std::string& why) const {
    return InvalidArgumentError("manifest: " + path_ + (key.empty() ? "" : (path_.empty() ? "'" : ": '") + key + "'") +
                                " " + why);
  }
  const json& j() const { return j_; }
  const std::string& path() const { return path_; }

 private:
  const json& j_;
  std::string path_;
};

Status ParseTensor(const json& j, std::size_t index, TensorEntry& e) {
  std::string path = "tensors[" + std::to_string(index) + "]";
  UNMASK_RETURN_IF_ERROR(Reader(j, path).Object());
  UNMASK_RETURN_IF_ERROR(Reader(j, path).Str("name", e.name));
  const Reader r(j, path + " ('" + e.name + "')");
  UNMASK_RETURN_IF_ERROR(r.Dtype("dtype", e.dtype));
  UNMASK_RETURN_IF_ERROR(r.Dtype("source_dtype", e.source_dtype));
  auto shape = j.find("shape");
  if (shape == j.end() || !shape->is_array()) return r.Fail("shape", "must be an array of dimensions");
  for (const auto& d : *shape) {
    if (!d.is_number_unsigned() || d.get<std::uint64_t>() > (1ull << 48))
      return r.Fail("shape", "has a dimension that is not an integer in [0, 2^48]");
    e.shape.push_back(d.get<std::int64_t>());
  }
  UNMASK_RETURN_IF_ERROR(r.U64("offset", e.offset));
  UNMASK_RETURN_IF_ERROR(r.U64("nbytes", e.nbytes));
  UNMASK_RETURN_IF_ERROR(r.I64("pruned", e.pruned, false));
  auto q = j.find("quant");
  if (q == j.end()) return OkStatus();
  Reader qr(*q, r.path() + ": 'quant'");
  UNMASK_RETURN_IF_ERROR(qr.Object());
  std::string scheme;
  UNMASK_RETURN_IF_ERROR(qr.Str("scheme", scheme));
  auto parsed = ParseQuantScheme(scheme);
  if (!parsed.ok()) return qr.Fail("scheme", parsed.status().message());
  e.quant.scheme = *parsed;
  UNMASK_RETURN_IF_ERROR(qr.Bool("symmetric", e.quant.symmetric));
  std::int64_t group = 0;
  UNMASK_RETURN_IF_ERROR(qr.I64("group_size", group, e.quant.scheme == QuantScheme::kInt4Groupwise));
  if (group > 1 << 20) return qr.Fail("group_size", "is too large");
  e.quant.group_size = static_cast<int>(group);
  UNMASK_RETURN_IF_ERROR(qr.U64("scales_offset", e.quant.scales_offset));
  UNMASK_RETURN_IF_ERROR(qr.U64("scales_nbytes", e.quant.scales_nbytes));
  UNMASK_RETURN_IF_ERROR(qr.Dtype("scales_dtype", e.quant.scales_dtype));
  UNMASK_RETURN_IF_ERROR(qr.U64("zeros_offset", e.quant.zeros_offset, false));
  UNMASK_RETURN_IF_ERROR(qr.U64("zeros_nbytes", e.quant.zeros_nbytes, false));
  UNMASK_RETURN_IF_ERROR(qr.Dtype("zeros_dtype", e.quant.zeros_dtype, false));
  return OkStatus();
}

Status ParseTotals(const json& j, ManifestTotals& t) {
  Reader r(j, "'totals'");
  UNMASK_RETURN_IF_ERROR(r.Object());
  UNMASK_RETURN_IF_ERROR(r.U64("data_bytes", t.data_bytes));
  UNMASK_RETURN_IF_ERROR(r.U64("float_bytes", t.float_bytes));
  UNMASK_RETURN_IF_ERROR(r.U64("quantized_bytes", t.quantized_bytes));
  UNMASK_RETURN_IF_ERROR(r.U64("quant_meta_bytes", t.quant_meta_bytes));
  UNMASK_RETURN_IF_ERROR(r.U64("padding_bytes", t.padding_bytes));
  UNMASK_RETURN_IF_ERROR(r.U64("source_bytes", t.source_bytes));
  UNMASK_RETURN_IF_ERROR(r.U64("source_quantized_bytes", t.source_quantized_bytes));
  auto roles = j.find("by_role");
  if (roles == j.end() || !roles->is_object()) return r.Fail("by_role", "must be an object");
  for (auto it = roles->begin(); it != roles->end(); ++it) {
    if (!it->is_number_unsigned()) return r.Fail("by_role", "value '" + it.key() + "' must be a non-negative integer");
    t.by_role[it.key()] = it->get<std::uint64_t>();
  }
  return OkStatus();
}

}  // namespace

std::string Manifest::ToJson() const {
  json tensor_list = json::array();
  for (const auto& e : tensors) {
    json t = {{"name", e.name},
              {"dtype", checkpoint::DTypeName(e.dtype)},
              {"source_dtype", checkpoint::DTypeName(e.source_dtype)},
              {"shape", e.shape},
              {"offset", e.offset},
              {"nbytes", e.nbytes},
              {"pruned", e.pruned}};
    if (e.quantized()) t["quant"] = QuantToJson(e.quant);
    tensor_list.push_back(std::move(t));
  }
  json j = {{"format_version", format_version},
            {"model_id", model_id},
            {"precision", precision},
            {"source_dir", source_dir},
            {"config_json", config_json},
            {"data_offset", data_offset},
            {"segment_bytes", segment_bytes},
            {"alignment", kTensorAlignment},
            {"tensors", std::move(tensor_list)},
            {"totals",
             {{"data_bytes", totals.data_bytes},
              {"float_bytes", totals.float_bytes},
              {"quantized_bytes", totals.quantized_bytes},
              {"quant_meta_bytes", totals.quant_meta_bytes},
              {"padding_bytes", totals.padding_bytes},
              {"source_bytes", totals.source_bytes},
              {"source_quantized_bytes", totals.source_quantized_bytes},
              {"by_role", totals.by_role}}}};
  // Invalid UTF-8 (in a config.json, say) is replaced rather than thrown on.
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

StatusOr<Manifest> Manifest::FromJson(const std::string& text) {
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return InvalidArgumentError("manifest: not well-formed JSON");
  Reader r(j, "");
  if (!j.is_object()) return InvalidArgumentError("manifest: not a JSON object");
  Manifest m;
  std::int64_t version = 0;
  UNMASK_RETURN_IF_ERROR(r.I64("format_version", version));
  m.format_version = static_cast<int>(std::min<std::int64_t>(version, INT32_MAX));
  if (m.format_version != kManifestFormatVersion)
    return r.Fail("format_version", std::to_string(version) + " is not supported (expected " +
                                        std::to_string(kManifestFormatVersion) + ")");
  UNMASK_RETURN_IF_ERROR(r.Str("model_id", m.model_id));
  UNMASK_RETURN_IF_ERROR(r.Str("precision", m.precision));
  UNMASK_RETURN_IF_ERROR(r.Str("source_dir", m.source_dir, false));
  UNMASK_RETURN_IF_ERROR(r.Str("config_json", m.config_json));
  UNMASK_RETURN_IF_ERROR(r.U64("data_offset", m.data_offset));
  UNMASK_RETURN_IF_ERROR(r.U64("segment_bytes", m.segment_bytes));
  std::uint64_t alignment = 0;
  UNMASK_RETURN_IF_ERROR(r.U64("alignment", alignment));
  if (alignment != kTensorAlignment) return r.Fail("alignment", "must be " + std::to_string(kTensorAlignment));
  auto tensors = j.find("tensors");
  if (tensors == j.end() || !tensors->is_array()) return r.Fail("tensors", "must be an array");
  for (std::size_t i = 0; i < tensors->size(); ++i) {
    TensorEntry e;
    UNMASK_RETURN_IF_ERROR(ParseTensor((*tensors)[i], i, e));
    m.tensors.push_back(std::move(e));
  }
  auto totals = j.find("totals");
  if (totals == j.end()) return r.Fail("totals", "is missing");
  UNMASK_RETURN_IF_ERROR(ParseTotals(*totals, m.totals));
  UNMASK_RETURN_IF_ERROR(m.Validate());
  return m;
}

}  // namespace unmask::weights
