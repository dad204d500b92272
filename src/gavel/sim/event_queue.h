// EventQueue: the simulator's pending events, ordered by (time, sequence number). The
// sequence number is the push order, so events at the same time come out in the order they
// were scheduled and every run is reproducible. Value type owning its events; not
// synchronised.
#pragma once

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "gavel/core/check.h"
#include "gavel/core/units.h"

namespace gavel::sim {

template <class Event>
class EventQueue {
 public:
  struct Entry {
    Seconds time;
    std::uint64_t sequence = 0;
    Event event;
  };

  // Returns the event's sequence number.
  std::uint64_t Push(Seconds time, Event event) {
    const std::uint64_t sequence = next_sequence_++;
    heap_.push_back(Entry{time, sequence, std::move(event)});
    std::push_heap(heap_.begin(), heap_.end(), Later{});
    return sequence;
  }
  bool empty() const { return heap_.empty(); }
  std::size_t size() const { return heap_.size(); }
  // The earliest entry. Precondition: !empty().
  const Entry& Top() const {
    GAVEL_CHECK(!heap_.empty());
    return heap_.front();
  }
  Entry Pop() {
    GAVEL_CHECK(!heap_.empty());
    std::pop_heap(heap_.begin(), heap_.end(), Later{});
    Entry entry = std::move(heap_.back());
    heap_.pop_back();
    return entry;
  }

 private:
  struct Later {
    bool operator()(const Entry& a, const Entry& b) const {
      if (a.time != b.time) return a.time > b.time;
      return a.sequence > b.sequence;
    }
  };
  std::vector<Entry> heap_;  // a binary heap under Later: the earliest entry at the front
  std::uint64_t next_sequence_ = 0;
};

}  // namespace gavel::sim
