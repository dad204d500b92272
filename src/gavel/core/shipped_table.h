// The shipped simulation table for tests and benchmarks (header-only): the file
// DefaultThroughputsFile() names, loaded once per process. A shipped table that cannot be
// read aborts with the loader's message, since nothing a test or benchmark measures means
// anything without it; programs load tables through ThroughputTable::LoadFile and report.
#pragma once

#include <memory>
#include <utility>

#include "gavel/core/check.h"
#include "gavel/core/snapshot.h"
#include "gavel/core/throughput_table.h"

namespace gavel {

inline std::shared_ptr<const ThroughputTable> ShippedThroughputTable() {
  static const std::shared_ptr<const ThroughputTable> table = [] {
    auto loaded = ThroughputTable::LoadFile(DefaultThroughputsFile());
    GAVEL_CHECK_MSG(loaded.ok(), loaded.status().ToString().c_str());
    return std::make_shared<const ThroughputTable>(std::move(loaded).value());
  }();
  return table;
}

}  // namespace gavel
