#include "gavel/daemon/allocation_service.h"

#include <algorithm>
#include <chrono>
#include <unordered_map>

namespace gavel::daemon {

AllocationService::AllocationService(std::unique_ptr<policy::Policy> policy, bool background,
                                     std::function<void()> notify)
    : policy_(std::move(policy)), background_(background), notify_(std::move(notify)) {
  if (background_) thread_ = std::thread([this] { BackgroundLoop(); });
}

AllocationService::~AllocationService() {
  {
    MutexLock lock(mutex_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

bool AllocationService::SameProblem(const Solved& solved, const policy::PolicyInput& input) {
  if (solved.gpu_types != input.gpu_types || solved.gpu_counts != input.gpu_counts) return false;
  if (solved.jobs.size() != input.jobs.size()) return false;
  for (std::size_t i = 0; i < input.jobs.size(); ++i) {
    if (solved.jobs[i] != input.jobs[i].id) return false;
  }
  return true;
}

policy::PolicyOutput AllocationService::Restrict(const Solved& solved,
                                                 const policy::PolicyInput& input) {
  policy::PolicyOutput out;
  out.status = solved.output.status;
  out.note = "allocation of an earlier job set (a newer one is being computed)";
  out.allocation = Matrix(input.num_jobs(), input.num_types(), 0.0);
  if (solved.gpu_types != input.gpu_types) return out;  // another cluster: nothing carries over
  std::unordered_map<JobId, std::size_t> row;
  for (std::size_t i = 0; i < solved.jobs.size(); ++i) row[solved.jobs[i]] = i;
  for (std::size_t i = 0; i < input.num_jobs(); ++i) {
    const auto it = row.find(input.jobs[i].id);
    if (it == row.end()) continue;
    for (std::size_t t = 0; t < input.num_types(); ++t) {
      out.allocation(i, t) = solved.output.allocation(it->second, t);
    }
  }
  return out;
}

void AllocationService::SetSolveObserver(std::function<void(double)> observer) {
  MutexLock lock(mutex_);
  solve_observer_ = std::move(observer);
}

Result<policy::PolicyOutput> AllocationService::SolveLocked(const policy::PolicyInput& input) {
  const auto start = std::chrono::steady_clock::now();
  Result<policy::PolicyOutput> output = policy_->Allocate(input);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  MutexLock lock(mutex_);
  ++stats_.solves;
  stats_.last_solve_seconds = seconds;
  stats_.max_solve_seconds = std::max(stats_.max_solve_seconds, seconds);
  if (solve_observer_) solve_observer_(seconds);
  if (!output.ok()) return output;
  if (output->allocation.rows() != input.num_jobs() ||
      output->allocation.cols() != input.num_types()) {
    return Status::Internal("the policy returned an allocation of the wrong shape");
  }
  auto solved = std::make_shared<Solved>();
  for (const policy::PolicyJob& job : input.jobs) solved->jobs.push_back(job.id);
  solved->gpu_types = input.gpu_types;
  solved->gpu_counts = input.gpu_counts;
  solved->output = *output;
  std::erase_if(solved_, [&](const auto& s) { return SameProblem(*s, input); });
  solved_.push_front(std::move(solved));
  constexpr std::size_t kKeep = 4;
  if (solved_.size() > kKeep) solved_.pop_back();
  return output;
}

Result<policy::PolicyOutput> AllocationService::Allocate(const policy::PolicyInput& input) {
  {
    MutexLock lock(mutex_);
    fresh_ = false;  // whatever finished is taken now
    if (background_) {
      for (const auto& solved : solved_) {
        if (SameProblem(*solved, input)) {
          ++stats_.served_fresh;
          return solved->output;
        }
      }
      if (!solved_.empty()) {
        ++stats_.served_stale;
        ReplacePendingLocked({input}, /*take=*/true);
        cv_.notify_all();
        return Restrict(*solved_.front(), input);
      }
    }
    ++stats_.synchronous_solves;
  }
  MutexLock solve(solve_mutex_);
  return SolveLocked(input);
}

void AllocationService::Prefetch(std::vector<policy::PolicyInput> inputs, PrefetchUse use) {
  if (!background_) return;
  {
    MutexLock lock(mutex_);
    ReplacePendingLocked(std::move(inputs), use == PrefetchUse::kTakeWhenSolved);
  }
  cv_.notify_all();
}

void AllocationService::ReplacePendingLocked(std::vector<policy::PolicyInput> inputs,
                                             bool take) {
  // Newer problems replace those not yet started.
  for (const Pending& replaced : pending_) take = take || replaced.take;
  pending_.clear();
  for (policy::PolicyInput& input : inputs) pending_.push_back({std::move(input), take});
}

bool AllocationService::TakeFreshResult() {
  MutexLock lock(mutex_);
  const bool fresh = fresh_;
  fresh_ = false;
  return fresh;
}

void AllocationService::WaitIdle() {
  UniqueLock lock(mutex_);
  while (!((pending_.empty() && !busy_) || stop_)) cv_.wait(lock.native());
}

AllocationStats AllocationService::stats() const {
  MutexLock lock(mutex_);
  return stats_;
}

void AllocationService::BackgroundLoop() {
  UniqueLock lock(mutex_);
  while (true) {
    while (!stop_ && pending_.empty()) cv_.wait(lock.native());
    if (stop_) return;
    Pending next = std::move(pending_.front());
    pending_.pop_front();
    const policy::PolicyInput& input = next.input;
    busy_ = true;
    lock.Unlock();
    bool solved = false;
    {
      MutexLock solve(solve_mutex_);
      solved = SolveLocked(input).ok();
    }
    lock.Lock();
    if (solved && next.take) fresh_ = true;
    if (solved && notify_) {
      lock.Unlock();
      notify_();
      lock.Lock();
    }
    busy_ = false;  // only now: WaitIdle also waits for the notification
    cv_.notify_all();
  }
}

}  // namespace gavel::daemon
