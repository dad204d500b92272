// JobListing: an immutable snapshot of every job as `gavel jobs` shows it (wire::JobInfo by
// id), and the board the core publishes it on, so that listings are answered on the gRPC
// threads without waiting for the core thread.
//
// The core publishes a new listing after each commit, before it replies to the requests of
// that batch (SchedulerCore::Listing, CoreLoop): a listing never shows an uncommitted change,
// and a client's own acknowledged submission is always in it (read-committed, as before). A
// listing in pages follows `page_token` (the last id of the previous page) through whichever
// snapshots are current when each page is asked for: every page is one snapshot, and no job
// is shown twice or skipped because another page came from a newer one (ids only grow).
//
// Each entry also keeps its job serialised, framed as one element of ListJobsResponse.jobs,
// made once per entry (on the first page that shows it) and shared by every later snapshot
// while the job does not change: a page on the wire (PageBytes) is a concatenation of those
// bytes, with no per-call work on the jobs it shows beyond a copy, and none at all on the
// jobs it skips but a comparison of ids and states.
//
// Ownership: a snapshot owns its entries, which it shares with the snapshots after it while
// the job does not change (the core rebuilds only changed jobs' entries). Thread-safety: a
// JobListing is immutable (an entry's serialisation is made once, under std::call_once), so
// any thread may read it; ListingBoard's methods may be called from any thread.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "gavel/core/mutex.h"
#include "gavel/core/status.h"
#include "gavel/wire/scheduler.pb.h"

namespace gavel::daemon {

class JobListing {
 public:
  // One job as listed: its JobInfo and, made on first use, the same serialised as one
  // element of ListJobsResponse.jobs (field tag, length, message).
  class Entry {
   public:
    explicit Entry(wire::JobInfo info) : info_(std::move(info)) {}
    const wire::JobInfo& info() const { return info_; }
    std::uint64_t id() const { return info_.id(); }
    const std::string& framed() const;

   private:
    wire::JobInfo info_;
    mutable std::once_flag framed_once_;
    mutable std::string framed_;
  };
  using EntryPtr = std::shared_ptr<const Entry>;

  // `jobs` sorted by id, every entry set.
  explicit JobListing(std::vector<EntryPtr> jobs);

  // One page of the listing (scheduler.proto, ListJobsRequest: page_token, limit,
  // active_only, job_ids). Errors name the field: a bad limit or page token, a job id the
  // listing does not know (kNotFound).
  Result<wire::ListJobsResponse> Page(const wire::ListJobsRequest& request) const;
  // The same page, serialised as a ListJobsResponse: the bytes gRPC sends, made by copying
  // the entries' bytes (ListJobsResponse parses them to exactly what Page returns).
  Result<std::string> PageBytes(const wire::ListJobsRequest& request) const;
  const std::vector<EntryPtr>& jobs() const { return jobs_; }

 private:
  struct Selection {
    std::vector<const Entry*> entries;
    std::string next_page_token;  // empty: the last page
  };
  Result<Selection> Select(const wire::ListJobsRequest& request) const;

  std::vector<EntryPtr> jobs_;  // by id
};

class ListingBoard {
 public:
  void Publish(std::shared_ptr<const JobListing> listing) {
    MutexLock lock(mutex_);
    latest_ = std::move(listing);
  }
  // Null until the first Publish.
  std::shared_ptr<const JobListing> Latest() const {
    MutexLock lock(mutex_);
    return latest_;
  }

 private:
  mutable Mutex mutex_;
  std::shared_ptr<const JobListing> latest_ GAVEL_GUARDED_BY(mutex_);
};

}  // namespace gavel::daemon
