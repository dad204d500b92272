// The free GPUs of a round's placement and the rules that pick from them. Topology-aware
// placement (opt-in; SchedulerOptions::topology_aware_placement): the free
// GPUs, CPU cores and host memory of every server during one round's placement, and the rule
// that picks GPUs for a job so that every resource fits and the job is as consolidated as the
// cluster allows — one server if any has room (best fit: the fullest server that fits), else
// one rack (best fit among racks, its roomiest servers first), else the roomiest servers of
// the type wherever they are. A job that does not fit at all is not placed this round (it
// waits: the Philly study's fragmentation delay).
//
// Demands are per GPU (a worker): a job of n GPUs takes n × cpus and n × memory, split over
// the servers it lands on in proportion to its GPUs there. Zero demand or zero capacity means
// "not limited".
// Plain value; reset per round, not shared between threads.
#pragma once

#include <optional>
#include <utility>
#include <vector>

#include "gavel/core/ids.h"
#include "gavel/mechanism/cluster_layout.h"

namespace gavel::mechanism {

struct WorkerDemand {
  double cpus = 0.0;    // CPU cores per GPU
  double mem_gb = 0.0;  // host memory per GPU
};

class ResourcePool {
 public:
  // Everything free.
  explicit ResourcePool(const ClusterLayout& layout);
  // Everything of `layout` free again, keeping the memory (a placer reuses one pool every
  // round).
  void Reset(const ClusterLayout& layout);

  // Takes exactly `workers` if all are free and their servers have room for `demand`.
  bool TryTake(const std::vector<WorkerId>& workers, const WorkerDemand& demand);
  // Chooses `gpus` GPUs of layout type `type` by the rule above and takes them; nullopt (and
  // nothing taken) when they do not fit.
  std::optional<std::vector<WorkerId>> Take(int type, int gpus, const WorkerDemand& demand);
  // Takes the first `gpus` free GPUs of layout type `type` in server order (the original's
  // consolidation: fill from the first server with free GPUs onwards), host resources
  // ignored; nullopt (and nothing taken) when the type has fewer free.
  std::optional<std::vector<WorkerId>> TakeFirstFit(int type, int gpus);

  int free_gpus(int server) const {
    return static_cast<int>(free_[static_cast<std::size_t>(server)].size());
  }
  double free_cpus(int server) const { return cpus_[static_cast<std::size_t>(server)]; }
  double free_mem_gb(int server) const { return mem_[static_cast<std::size_t>(server)]; }

 private:
  // GPUs of the job the server can still take.
  int Capacity(int server, const WorkerDemand& demand) const;
  void TakeFrom(int server, int gpus, const WorkerDemand& demand, std::vector<WorkerId>& out);

  const ClusterLayout* layout_;
  std::vector<std::vector<WorkerId>> free_;  // per server, ascending ids
  std::vector<double> cpus_;                 // per server; +inf when not limited
  std::vector<double> mem_;
  std::vector<std::pair<int, int>> per_server_;  // TryTake's scratch: (server, GPUs)
};

}  // namespace gavel::mechanism
