#include "gavel/daemon/job_listing.h"

#include <algorithm>
#include <set>
#include <string>

#include "gavel/daemon/job_book.h"

namespace gavel::daemon {
namespace {

// ListJobsResponse's fields on the wire (scheduler.proto): both length-delimited.
constexpr char kJobsTag = (1 << 3) | 2;           // repeated JobInfo jobs = 1
constexpr char kNextPageTokenTag = (2 << 3) | 2;  // string next_page_token = 2

void AppendVarint(std::uint64_t value, std::string* out) {
  while (value >= 0x80) {
    out->push_back(static_cast<char>((value & 0x7f) | 0x80));
    value >>= 7;
  }
  out->push_back(static_cast<char>(value));
}

void AppendField(char tag, const std::string& bytes, std::string* out) {
  out->push_back(tag);
  AppendVarint(bytes.size(), out);
  out->append(bytes);
}

}  // namespace

const std::string& JobListing::Entry::framed() const {
  std::call_once(framed_once_,
                 [this] { AppendField(kJobsTag, info_.SerializeAsString(), &framed_); });
  return framed_;
}

JobListing::JobListing(std::vector<EntryPtr> jobs) : jobs_(std::move(jobs)) {}

Result<JobListing::Selection> JobListing::Select(const wire::ListJobsRequest& request) const {
  GAVEL_ASSIGN_OR_RETURN(const ListPage page, ParseListPage(request));
  const auto by_id = [](const EntryPtr& entry, std::uint64_t id) { return entry->id() < id; };
  const std::set<std::uint64_t> wanted(request.job_ids().begin(), request.job_ids().end());
  for (std::uint64_t id : wanted) {
    const auto it = std::lower_bound(jobs_.begin(), jobs_.end(), id, by_id);
    if (it == jobs_.end() || (*it)->id() != id) {
      return Status::NotFound("job_ids: no job " + std::to_string(id));
    }
  }
  Selection selection;
  std::size_t bytes = 0;
  for (auto it = std::lower_bound(jobs_.begin(), jobs_.end(), page.after_id + 1, by_id);
       it != jobs_.end(); ++it) {
    const Entry& entry = **it;
    if (!wanted.empty() && !wanted.contains(entry.id())) continue;
    if (request.active_only() && !IsActiveState(entry.info().state())) continue;
    if (selection.entries.size() == page.limit ||
        (!selection.entries.empty() && bytes >= kListPageBytes)) {
      selection.next_page_token = std::to_string(selection.entries.back()->id());
      break;
    }
    selection.entries.push_back(&entry);
    bytes += entry.framed().size();
  }
  return selection;
}

Result<wire::ListJobsResponse> JobListing::Page(const wire::ListJobsRequest& request) const {
  GAVEL_ASSIGN_OR_RETURN(const Selection selection, Select(request));
  wire::ListJobsResponse response;
  response.mutable_jobs()->Reserve(static_cast<int>(selection.entries.size()));
  for (const Entry* entry : selection.entries) *response.add_jobs() = entry->info();
  response.set_next_page_token(selection.next_page_token);
  return response;
}

Result<std::string> JobListing::PageBytes(const wire::ListJobsRequest& request) const {
  GAVEL_ASSIGN_OR_RETURN(const Selection selection, Select(request));
  std::size_t size = selection.next_page_token.size() + 16;
  for (const Entry* entry : selection.entries) size += entry->framed().size();
  std::string bytes;
  bytes.reserve(size);
  for (const Entry* entry : selection.entries) bytes.append(entry->framed());
  if (!selection.next_page_token.empty()) {
    AppendField(kNextPageTokenTag, selection.next_page_token, &bytes);
  }
  return bytes;
}

}  // namespace gavel::daemon
