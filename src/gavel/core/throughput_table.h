// The throughput table: measured steps/second of every job type on every GPU type, alone and
// sharing a GPU with another job type. Read from the original's JSON format (docs/formats.md):
//
//   { "<gpu type>": { "('<model>', <scale factor>)": {
//         "null": <steps/s alone>,
//         "('<other model>', <same scale factor>)": [<steps/s of this job>, <of the other>] } } }
//
// A throughput of 0 means "cannot run there" (out of memory). Throughputs are of the whole
// job: a key with scale factor s describes the s-GPU job. Immutable after loading; safe to
// share between threads.
#pragma once

#include <array>
#include <compare>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "gavel/core/status.h"

namespace gavel {

// The original's job-type key: a model name (with batch size) and a scale factor.
struct JobTypeKey {
  std::string model;
  int scale_factor = 1;

  friend auto operator<=>(const JobTypeKey&, const JobTypeKey&) = default;
  // The key as the file writes it: "('ResNet-18 (batch size 64)', 1)".
  std::string ToString() const;
  // Parses "('<model>', <scale factor>)"; error names the offending text.
  static Result<JobTypeKey> Parse(std::string_view text);
};

class ThroughputTable {
 public:
  // Reads and validates a table. Errors name the file and the JSON key at fault: a value that
  // is not a finite non-negative number, a malformed key, a pair entry between different
  // scale factors, or a pair entry that disagrees with its mirror image.
  static Result<ThroughputTable> LoadFile(const std::string& path);
  // Reads `path` and adds the GPU types of each file in `extras` (rows a user measured for a
  // type the base table lacks, e.g. `gavel profile`'s output). Each file is validated alone
  // first, so errors name the file at fault; a GPU type that two files both define is an error
  // naming both (the files are combined, never overridden, so no measurement is silently lost).
  static Result<ThroughputTable> LoadFiles(const std::string& path,
                                           const std::vector<std::string>& extras);
  static Result<ThroughputTable> Parse(std::string_view json_text, const std::string& source_name);

  // Every GPU type in the file, sorted (including the `*_unconsolidated` ones).
  const std::vector<std::string>& gpu_types() const { return gpu_types_; }
  bool HasGpuType(std::string_view gpu_type) const;
  // Every job-type key in the file, sorted.
  const std::vector<JobTypeKey>& job_types() const { return keys_; }
  bool HasJobType(const JobTypeKey& key) const { return key_index_.contains(key.ToString()); }

  // Steps/s of `key` alone on `gpu_type`; nullopt when the type or key is not in the table.
  std::optional<double> Isolated(std::string_view gpu_type, const JobTypeKey& key) const;
  // {steps/s of a, steps/s of b} when a and b share `gpu_type`; nullopt when not in the table.
  std::optional<std::array<double, 2>> Colocated(std::string_view gpu_type, const JobTypeKey& a,
                                                 const JobTypeKey& b) const;

  // Index-based access for hot paths: key index from job_types(), type index from gpu_types().
  std::optional<int> KeyIndex(const JobTypeKey& key) const;
  std::optional<int> GpuTypeIndex(std::string_view gpu_type) const;
  std::optional<double> Isolated(int gpu_type, int key) const;
  std::optional<std::array<double, 2>> Colocated(int gpu_type, int key_a, int key_b) const;

 private:
  struct PerGpuType {
    std::vector<std::optional<double>> isolated;  // by key index
    std::unordered_map<std::uint64_t, std::array<double, 2>> colocated;  // key a * K + key b
  };
  std::vector<std::string> gpu_types_;
  std::vector<JobTypeKey> keys_;
  std::unordered_map<std::string, int> key_index_;
  std::vector<PerGpuType> per_type_;
};

}  // namespace gavel
