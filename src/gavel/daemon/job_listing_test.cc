// JobListing: the wire bytes of a page (PageBytes, what the daemon sends) parse to exactly the
// page built as a message (Page), and both select what a brute-force filter of the jobs says
// (ids after the token, the state filter, the requested ids, the limit, the byte bound).
#include "gavel/daemon/job_listing.h"

#include <google/protobuf/util/message_differencer.h>
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "gavel/daemon/job_book.h"

namespace gavel::daemon {
namespace {

using google::protobuf::util::MessageDifferencer;

// Jobs 1..n with every state in turn, a spec, per-type figures, and every `big_every`-th job's
// command 300 KiB long (pages then end at the byte bound before the limit).
std::vector<wire::JobInfo> Jobs(int n, int big_every = 0) {
  const wire::JobState states[] = {wire::QUEUED, wire::RUNNING, wire::DONE, wire::FAILED,
                                   wire::CANCELLED};
  std::vector<wire::JobInfo> jobs;
  for (int i = 1; i <= n; ++i) {
    wire::JobInfo job;
    job.set_id(static_cast<std::uint64_t>(i));
    job.set_state(states[i % 5]);
    job.set_user(i % 2 == 0 ? "alice" : "bob");
    job.set_name("job-" + std::to_string(i));
    job.mutable_spec()->add_command("train.py");
    if (big_every > 0 && i % big_every == 0) {
      job.mutable_spec()->add_command(std::string(300 * 1024, 'x'));
    }
    (*job.mutable_spec()->mutable_throughputs())["v100"] = 1.5 * i;
    job.set_steps_done(static_cast<std::uint64_t>(i * 7));
    job.set_total_steps(1000);
    job.set_eta_s(i % 3 == 0 ? -1.0 : 12.5 * i);
    wire::JobTypeStats* stats = job.add_per_type();
    stats->set_gpu_type("k80");
    stats->set_allocation(0.25);
    job.set_message(i % 4 == 0 ? "crashed: exit 1" : "");
    jobs.push_back(job);
  }
  return jobs;
}

JobListing ListingOf(const std::vector<wire::JobInfo>& jobs) {
  std::vector<JobListing::EntryPtr> entries;
  for (const wire::JobInfo& job : jobs)
    entries.push_back(std::make_shared<const JobListing::Entry>(job));
  return JobListing(std::move(entries));
}

wire::ListJobsRequest Request(std::uint32_t limit, const std::string& token = "",
                              bool active_only = false, std::vector<std::uint64_t> ids = {}) {
  wire::ListJobsRequest request;
  request.set_limit(limit);
  request.set_page_token(token);
  request.set_active_only(active_only);
  for (std::uint64_t id : ids) request.add_job_ids(id);
  return request;
}

// The ids a page must hold, by brute force over the jobs (the byte bound left out: these
// cases stay far below it).
std::vector<std::uint64_t> Expected(const std::vector<wire::JobInfo>& jobs,
                                    const wire::ListJobsRequest& request) {
  const std::uint64_t after = request.page_token().empty() ? 0 : std::stoull(request.page_token());
  const std::uint32_t limit = request.limit() == 0 ? kDefaultListLimit : request.limit();
  const std::set<std::uint64_t> wanted(request.job_ids().begin(), request.job_ids().end());
  std::vector<std::uint64_t> ids;
  for (const wire::JobInfo& job : jobs) {
    if (job.id() <= after) continue;
    if (!wanted.empty() && !wanted.contains(job.id())) continue;
    if (request.active_only() && job.state() != wire::QUEUED && job.state() != wire::RUNNING) {
      continue;
    }
    ids.push_back(job.id());
  }
  if (ids.size() > limit) ids.resize(limit + 1);  // one past the page: the token is then set
  return ids;
}

// The page as the client parses the bytes; fails the test where it differs from Page.
wire::ListJobsResponse BothWays(const JobListing& listing, const wire::ListJobsRequest& request) {
  const Result<wire::ListJobsResponse> message = listing.Page(request);
  const Result<std::string> bytes = listing.PageBytes(request);
  EXPECT_TRUE(message.ok()) << message.status().ToString();
  EXPECT_TRUE(bytes.ok()) << bytes.status().ToString();
  wire::ListJobsResponse parsed;
  if (!message.ok() || !bytes.ok()) return parsed;
  EXPECT_TRUE(parsed.ParseFromString(*bytes));
  std::string diff;
  MessageDifferencer differencer;
  differencer.ReportDifferencesToString(&diff);
  EXPECT_TRUE(differencer.Compare(*message, parsed)) << diff;
  return parsed;
}

TEST(JobListingTest, PageBytesParseToThePageAndSelectWhatABruteForceFilterSelects) {
  const std::vector<wire::JobInfo> jobs = Jobs(57);
  const JobListing listing = ListingOf(jobs);
  std::vector<wire::ListJobsRequest> requests;
  for (std::uint32_t limit : {0u, 1u, 2u, 10u, 56u, 57u, 1000u}) {
    for (const std::string token : {"", "1", "13", "56", "57", "900"}) {
      for (bool active : {false, true}) requests.push_back(Request(limit, token, active));
    }
  }
  requests.push_back(Request(3, "", false, {5, 9, 44, 57}));
  requests.push_back(Request(2, "5", true, {5, 6, 7, 12, 16, 21}));
  for (const wire::ListJobsRequest& request : requests) {
    SCOPED_TRACE(request.ShortDebugString());
    const wire::ListJobsResponse page = BothWays(listing, request);
    std::vector<std::uint64_t> expected = Expected(jobs, request);
    const bool more =
        expected.size() > (request.limit() == 0 ? kDefaultListLimit : request.limit());
    if (more) expected.pop_back();
    std::vector<std::uint64_t> got;
    for (const wire::JobInfo& job : page.jobs()) {
      got.push_back(job.id());
      // Every job as it was given, whole.
      EXPECT_TRUE(MessageDifferencer::Equals(job, jobs[job.id() - 1])) << job.id();
    }
    EXPECT_EQ(got, expected);
    EXPECT_EQ(page.next_page_token(), more ? std::to_string(expected.back()) : "");
  }
}

TEST(JobListingTest, EveryJobComesOnceThroughPagesBoundedInBytes) {
  const std::vector<wire::JobInfo> jobs = Jobs(40, /*big_every=*/3);  // 13 jobs of 300 KiB
  const JobListing listing = ListingOf(jobs);
  wire::ListJobsRequest request = Request(1000);
  std::vector<std::uint64_t> seen;
  int pages = 0;
  while (true) {
    const wire::ListJobsResponse page = BothWays(listing, request);
    ++pages;
    ASSERT_GT(page.jobs_size(), 0);
    // A page stops growing once past the bound: all but its last job fit under it.
    std::size_t before_last = 0;
    for (int i = 0; i + 1 < page.jobs_size(); ++i) before_last += page.jobs(i).ByteSizeLong();
    EXPECT_LT(before_last, kListPageBytes);
    for (const wire::JobInfo& job : page.jobs()) seen.push_back(job.id());
    if (page.next_page_token().empty()) break;
    request.set_page_token(page.next_page_token());
  }
  std::vector<std::uint64_t> all;
  for (const wire::JobInfo& job : jobs) all.push_back(job.id());
  EXPECT_EQ(seen, all);
  EXPECT_GE(pages, 4);  // 13 x 300 KiB in pages of at most about 1 MiB
}

TEST(JobListingTest, BadRequestsNameTheFieldBothWays) {
  const JobListing listing = ListingOf(Jobs(5));
  struct Case {
    wire::ListJobsRequest request;
    StatusCode code;
    const char* field;
  };
  const Case cases[] = {
      {Request(kMaxListLimit + 1), StatusCode::kInvalidArgument, "limit"},
      {Request(10, "x7"), StatusCode::kInvalidArgument, "page_token"},
      {Request(10, "", false, {2, 6}), StatusCode::kNotFound, "job_ids: no job 6"},
  };
  for (const Case& c : cases) {
    const Result<wire::ListJobsResponse> message = listing.Page(c.request);
    const Result<std::string> bytes = listing.PageBytes(c.request);
    ASSERT_FALSE(message.ok());
    ASSERT_FALSE(bytes.ok());
    EXPECT_EQ(message.status().code(), c.code);
    EXPECT_EQ(bytes.status().code(), c.code);
    EXPECT_NE(bytes.status().message().find(c.field), std::string::npos)
        << bytes.status().message();
  }
}

TEST(JobListingTest, AnEntrySharedByTwoSnapshotsIsTheSameBytesInBoth) {
  const std::vector<wire::JobInfo> jobs = Jobs(3);
  std::vector<JobListing::EntryPtr> entries;
  for (const wire::JobInfo& job : jobs)
    entries.push_back(std::make_shared<const JobListing::Entry>(job));
  const JobListing first(entries);
  ASSERT_EQ(jobs[0].state(), wire::RUNNING);
  wire::JobInfo changed = jobs[0];
  changed.set_state(wire::DONE);
  entries[0] = std::make_shared<const JobListing::Entry>(changed);
  const JobListing second(entries);
  const wire::ListJobsResponse a = BothWays(first, Request(10));
  const wire::ListJobsResponse b = BothWays(second, Request(10));
  ASSERT_EQ(a.jobs_size(), 3);
  ASSERT_EQ(b.jobs_size(), 3);
  EXPECT_EQ(a.jobs(0).state(), wire::RUNNING);
  EXPECT_EQ(b.jobs(0).state(), wire::DONE);
  EXPECT_EQ(&first.jobs()[1]->framed(), &second.jobs()[1]->framed());  // made once
  // Active only: the changed job leaves the second snapshot's active page.
  EXPECT_EQ(BothWays(first, Request(10, "", true)).jobs_size(),
            BothWays(second, Request(10, "", true)).jobs_size() + 1);
}

}  // namespace
}  // namespace gavel::daemon
