#include "gavel/core/throughput_table.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <sstream>

#include <nlohmann/json.hpp>

#include "gavel/core/bounds.h"
#include "gavel/core/parse_number.h"

namespace gavel {
namespace {

using nlohmann::json;

Result<double> ReadThroughput(const json& value, const std::string& where) {
  if (!value.is_number()) return Status::InvalidArgument(where + ": expected a number");
  const double v = value.get<double>();
  GAVEL_RETURN_IF_ERROR(bounds::CheckThroughput(v, where));
  return v;
}

bool NearlyEqual(double a, double b) {
  return std::abs(a - b) <= 1e-9 * std::max({1.0, std::abs(a), std::abs(b)});
}

Result<std::string> ReadTableText(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Status::IoError("cannot open throughput file " + path);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

}  // namespace

std::string JobTypeKey::ToString() const {
  return "('" + model + "', " + std::to_string(scale_factor) + ")";
}

Result<JobTypeKey> JobTypeKey::Parse(std::string_view text) {
  const auto bad = [&] {
    return Status::InvalidArgument("malformed job-type key \"" + std::string(text) +
                                   "\" (expected \"('<model>', <scale factor>)\")");
  };
  if (text.size() < 7 || !text.starts_with("('") || !text.ends_with(")")) return bad();
  const std::size_t sep = text.rfind("', ");
  if (sep == std::string_view::npos || sep < 2) return bad();
  JobTypeKey key;
  key.model = std::string(text.substr(2, sep - 2));
  const std::string_view digits = text.substr(sep + 3, text.size() - 1 - (sep + 3));
  const std::optional<int> sf = ParseInteger<int>(digits);
  if (!sf || *sf < 1 || *sf > bounds::kMaxGpus || key.model.empty()) return bad();
  key.scale_factor = *sf;
  return key;
}

Result<ThroughputTable> ThroughputTable::LoadFile(const std::string& path) {
  GAVEL_ASSIGN_OR_RETURN(const std::string text, ReadTableText(path));
  return Parse(text, path);
}

Result<ThroughputTable> ThroughputTable::LoadFiles(const std::string& path,
                                                   const std::vector<std::string>& extras) {
  if (extras.empty()) return LoadFile(path);
  json merged = json::object();
  std::map<std::string, std::string> defined_in;  // GPU type -> file
  std::string sources;
  for (std::size_t i = 0; i <= extras.size(); ++i) {
    const std::string& file = i == 0 ? path : extras[i - 1];
    GAVEL_ASSIGN_OR_RETURN(const std::string text, ReadTableText(file));
    GAVEL_RETURN_IF_ERROR(Parse(text, file).status());
    // Parse accepted it, so it is an object of GPU types.
    json file_types = json::parse(text);
    for (auto& [gpu_type, rows] : file_types.items()) {
      const auto [it, added] = defined_in.emplace(gpu_type, file);
      if (!added) {
        return Status::InvalidArgument(file + ": \"" + gpu_type + "\": GPU type already in " +
                                       it->second);
      }
      merged[gpu_type] = std::move(rows);
    }
    sources += (i == 0 ? "" : " + ") + file;
  }
  return Parse(merged.dump(), sources);
}

Result<ThroughputTable> ThroughputTable::Parse(std::string_view json_text,
                                               const std::string& source_name) {
  json root;
  try {
    root = json::parse(json_text);
  } catch (const json::exception& e) {
    // parse_error, and out_of_range for a number beyond a double (1e999).
    return Status::InvalidArgument(source_name + ": not valid JSON: " + e.what());
  }
  if (!root.is_object() || root.empty()) {
    return Status::InvalidArgument(source_name + ": expected a non-empty object of GPU types");
  }

  // First pass: collect every key so indices are dense and sorted.
  std::map<std::string, JobTypeKey> all_keys;
  for (const auto& [gpu_type, entries] : root.items()) {
    const std::string where = source_name + ": \"" + gpu_type + "\"";
    if (gpu_type.empty()) return Status::InvalidArgument(source_name + ": empty GPU type name");
    if (!entries.is_object()) return Status::InvalidArgument(where + ": expected an object");
    for (const auto& [key_text, value] : entries.items()) {
      auto key = JobTypeKey::Parse(key_text);
      if (!key.ok()) return key.status().WithContext(where);
      all_keys.emplace(key->ToString(), *key);
    }
  }

  ThroughputTable table;
  for (const auto& [text, key] : all_keys) {
    table.key_index_.emplace(text, static_cast<int>(table.keys_.size()));
    table.keys_.push_back(key);
  }
  std::sort(table.keys_.begin(), table.keys_.end());
  table.key_index_.clear();
  for (std::size_t i = 0; i < table.keys_.size(); ++i) {
    table.key_index_.emplace(table.keys_[i].ToString(), static_cast<int>(i));
  }
  const auto num_keys = static_cast<std::uint64_t>(table.keys_.size());

  for (const auto& [gpu_type, entries] : root.items()) table.gpu_types_.push_back(gpu_type);
  std::sort(table.gpu_types_.begin(), table.gpu_types_.end());
  table.per_type_.resize(table.gpu_types_.size());

  for (std::size_t t = 0; t < table.gpu_types_.size(); ++t) {
    const std::string& gpu_type = table.gpu_types_[t];
    PerGpuType& per_type = table.per_type_[t];
    per_type.isolated.assign(table.keys_.size(), std::nullopt);
    for (const auto& [key_text, value] : root.at(gpu_type).items()) {
      const std::string where = source_name + ": \"" + gpu_type + "\" → \"" + key_text + "\"";
      const JobTypeKey key = *JobTypeKey::Parse(key_text);
      const int a = table.key_index_.at(key.ToString());
      if (!value.is_object()) return Status::InvalidArgument(where + ": expected an object");
      if (!value.contains("null")) {
        return Status::InvalidArgument(where + ": missing \"null\" (throughput alone)");
      }
      for (const auto& [partner_text, entry] : value.items()) {
        const std::string entry_where = where + " → \"" + partner_text + "\"";
        if (partner_text == "null") {
          GAVEL_ASSIGN_OR_RETURN(const double alone, ReadThroughput(entry, entry_where));
          per_type.isolated[static_cast<std::size_t>(a)] = alone;
          continue;
        }
        auto partner = JobTypeKey::Parse(partner_text);
        if (!partner.ok()) return partner.status().WithContext(where);
        if (partner->scale_factor != key.scale_factor) {
          return Status::InvalidArgument(entry_where +
                                         ": jobs sharing a GPU must have the same scale factor");
        }
        if (!entry.is_array() || entry.size() != 2) {
          return Status::InvalidArgument(entry_where + ": expected [throughput, throughput]");
        }
        GAVEL_ASSIGN_OR_RETURN(const double mine, ReadThroughput(entry[0], entry_where + "[0]"));
        GAVEL_ASSIGN_OR_RETURN(const double theirs, ReadThroughput(entry[1], entry_where + "[1]"));
        const auto partner_index = table.key_index_.find(partner->ToString());
        if (partner_index == table.key_index_.end()) {
          return Status::InvalidArgument(entry_where + ": not a job type of this file");
        }
        const auto b = static_cast<std::uint64_t>(partner_index->second);
        per_type.colocated[static_cast<std::uint64_t>(a) * num_keys + b] = {mine, theirs};
      }
    }
    // A pair entry and its mirror image must agree: T[a][b] == reverse(T[b][a]).
    for (const auto& [code, tputs] : per_type.colocated) {
      const std::uint64_t a = code / num_keys;
      const std::uint64_t b = code % num_keys;
      const auto mirror = per_type.colocated.find(b * num_keys + a);
      if (mirror == per_type.colocated.end()) continue;
      if (!NearlyEqual(tputs[0], mirror->second[1]) || !NearlyEqual(tputs[1], mirror->second[0])) {
        return Status::InvalidArgument(
            source_name + ": \"" + gpu_type + "\" → \"" + table.keys_[a].ToString() + "\" → \"" +
            table.keys_[b].ToString() + "\": disagrees with its mirror entry");
      }
    }
  }
  return table;
}

bool ThroughputTable::HasGpuType(std::string_view gpu_type) const {
  return GpuTypeIndex(gpu_type).has_value();
}

std::optional<int> ThroughputTable::KeyIndex(const JobTypeKey& key) const {
  const auto it = key_index_.find(key.ToString());
  if (it == key_index_.end()) return std::nullopt;
  return it->second;
}

std::optional<int> ThroughputTable::GpuTypeIndex(std::string_view gpu_type) const {
  const auto it = std::lower_bound(gpu_types_.begin(), gpu_types_.end(), gpu_type);
  if (it == gpu_types_.end() || *it != gpu_type) return std::nullopt;
  return static_cast<int>(it - gpu_types_.begin());
}

std::optional<double> ThroughputTable::Isolated(int gpu_type, int key) const {
  return per_type_[static_cast<std::size_t>(gpu_type)].isolated[static_cast<std::size_t>(key)];
}

std::optional<std::array<double, 2>> ThroughputTable::Colocated(int gpu_type, int key_a,
                                                                int key_b) const {
  const auto& colocated = per_type_[static_cast<std::size_t>(gpu_type)].colocated;
  const auto code = static_cast<std::uint64_t>(key_a) * keys_.size() +
                    static_cast<std::uint64_t>(key_b);
  const auto it = colocated.find(code);
  if (it != colocated.end()) return it->second;
  // Files may list a pair under one partner only; the mirror entry is the same measurement.
  const auto mirror = colocated.find(static_cast<std::uint64_t>(key_b) * keys_.size() +
                                     static_cast<std::uint64_t>(key_a));
  if (mirror != colocated.end()) return std::array<double, 2>{mirror->second[1], mirror->second[0]};
  return std::nullopt;
}

std::optional<double> ThroughputTable::Isolated(std::string_view gpu_type,
                                                const JobTypeKey& key) const {
  const auto t = GpuTypeIndex(gpu_type);
  const auto k = KeyIndex(key);
  if (!t || !k) return std::nullopt;
  return Isolated(*t, *k);
}

std::optional<std::array<double, 2>> ThroughputTable::Colocated(std::string_view gpu_type,
                                                                const JobTypeKey& a,
                                                                const JobTypeKey& b) const {
  const auto t = GpuTypeIndex(gpu_type);
  const auto ka = KeyIndex(a);
  const auto kb = KeyIndex(b);
  if (!t || !ka || !kb) return std::nullopt;
  return Colocated(*t, *ka, *kb);
}

}  // namespace gavel
