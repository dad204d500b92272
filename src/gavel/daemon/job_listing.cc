#include "gavel/daemon/job_listing.h"

#include <algorithm>
#include <set>
#include <string>

#include "gavel/daemon/job_book.h"

namespace gavel::daemon {

JobListing::JobListing(std::vector<Entry> jobs) : jobs_(std::move(jobs)) {}

Result<wire::ListJobsResponse> JobListing::Page(const wire::ListJobsRequest& request) const {
  GAVEL_ASSIGN_OR_RETURN(const ListPage page, ParseListPage(request));
  const auto by_id = [](const Entry& entry, std::uint64_t id) { return entry->id() < id; };
  const std::set<std::uint64_t> wanted(request.job_ids().begin(), request.job_ids().end());
  for (std::uint64_t id : wanted) {
    const auto it = std::lower_bound(jobs_.begin(), jobs_.end(), id, by_id);
    if (it == jobs_.end() || (*it)->id() != id) {
      return Status::NotFound("job_ids: no job " + std::to_string(id));
    }
  }
  wire::ListJobsResponse response;
  std::size_t bytes = 0;
  for (auto it = std::lower_bound(jobs_.begin(), jobs_.end(), page.after_id + 1, by_id);
       it != jobs_.end(); ++it) {
    const wire::JobInfo& job = **it;
    if (!wanted.empty() && !wanted.contains(job.id())) continue;
    if (request.active_only() && !IsActiveState(job.state())) continue;
    if (static_cast<std::uint32_t>(response.jobs_size()) == page.limit ||
        (response.jobs_size() > 0 && bytes >= kListPageBytes)) {
      response.set_next_page_token(std::to_string(response.jobs().rbegin()->id()));
      break;
    }
    *response.add_jobs() = job;
    bytes += job.ByteSizeLong();
  }
  return response;
}

}  // namespace gavel::daemon
