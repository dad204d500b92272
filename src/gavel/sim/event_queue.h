// EventQueue: the simulator's pending events, ordered by (time, sequence number). The
// sequence number is the push order, so events at the same time come out in the order they
// were scheduled and every run is reproducible. Value type owning its events; not
// synchronised.
//
// Design choice: the heap orders small keys (time, sequence, slot) and the events stay put in
// a pool of slots reused after each pop. A simulated round pushes and pops one event per
// micro-task, millions in a long run; sifting the events themselves (vectors inside) through
// the heap cost more than everything else the queue does, and reusing the slots keeps their
// vectors' memory for the next round's events.
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
    const std::uint64_t sequence = next_sequence_;
    Emplace(time) = std::move(event);
    return sequence;
  }
  // Schedules an event at `time` and returns it for the caller to fill in: a reused slot
  // still holds an earlier event's values (and its vectors' memory), so the caller assigns
  // every field. The reference is valid until the next Push, Emplace or Pop.
  Event& Emplace(Seconds time) {
    const std::uint64_t sequence = next_sequence_++;
    std::uint32_t slot;
    if (free_slots_.empty()) {
      slot = static_cast<std::uint32_t>(events_.size());
      events_.emplace_back();
    } else {
      slot = free_slots_.back();
      free_slots_.pop_back();
    }
    heap_.push_back(Key{time, sequence, slot});
    std::push_heap(heap_.begin(), heap_.end(), Later{});
    return events_[slot];
  }
  bool empty() const { return heap_.empty(); }
  std::size_t size() const { return heap_.size(); }
  // When the earliest event happens. Precondition: !empty().
  Seconds TopTime() const {
    GAVEL_CHECK(!heap_.empty());
    return heap_.front().time;
  }
  Entry Pop() {
    GAVEL_CHECK(!heap_.empty());
    std::pop_heap(heap_.begin(), heap_.end(), Later{});
    const Key key = heap_.back();
    heap_.pop_back();
    free_slots_.push_back(key.slot);
    return Entry{key.time, key.sequence, std::move(events_[key.slot])};
  }
  // Moves the earliest event into `event` (whose storage it may reuse), returning its time.
  // Precondition: !empty().
  Seconds PopInto(Event& event) {
    GAVEL_CHECK(!heap_.empty());
    std::pop_heap(heap_.begin(), heap_.end(), Later{});
    const Key key = heap_.back();
    heap_.pop_back();
    free_slots_.push_back(key.slot);
    std::swap(event, events_[key.slot]);
    return key.time;
  }

 private:
  struct Key {
    Seconds time;
    std::uint64_t sequence;
    std::uint32_t slot;
  };
  struct Later {
    bool operator()(const Key& a, const Key& b) const {
      if (a.time != b.time) return a.time > b.time;
      return a.sequence > b.sequence;
    }
  };
  std::vector<Key> heap_;  // a binary heap under Later: the earliest key at the front
  std::vector<Event> events_;              // by slot; a popped slot's event is moved-from
  std::vector<std::uint32_t> free_slots_;  // slots to reuse
  std::uint64_t next_sequence_ = 0;
};

}  // namespace gavel::sim
