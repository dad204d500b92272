// AgentRegistry alone: worker ids, liveness, the live cluster's layout, and what it stages.
#include "gavel/daemon/agent_registry.h"

#include <gtest/gtest.h>

#include "gavel/core/shipped_table.h"

namespace gavel::daemon {
namespace {

const rpc::Principal kAdmin{"ops", true, "admin-token"};

wire::RegisterWorkerRequest Request(const std::string& id, const std::string& type,
                                    std::uint32_t gpus) {
  wire::RegisterWorkerRequest r;
  r.set_agent_id(id);
  r.set_gpu_type(type);
  r.set_num_gpus(gpus);
  r.set_address("127.0.0.1:4000");
  return r;
}

class RegistryTest : public ::testing::Test {
 protected:
  RegistryTest() : registry_(&journal_, AgentRules{ShippedThroughputTable().get(), nullptr, "p"}) {}
  const Agent* Register(const std::string& id, const std::string& type, std::uint32_t gpus,
                        std::int64_t now, bool* changed) {
    auto agent = registry_.Register(kAdmin, Request(id, type, gpus), now, changed);
    EXPECT_TRUE(agent.ok()) << agent.status().ToString();
    return agent.ok() ? *agent : nullptr;
  }
  Journal journal_;
  AgentRegistry registry_;
};

TEST_F(RegistryTest, WorkerIdsAreNeverReusedAndAReattachChangesNothing) {
  bool changed = false;
  const Agent* a = Register("a", "k80", 2, 0, &changed);
  EXPECT_TRUE(changed);
  EXPECT_EQ(a->row.first_worker_id, 0u);
  EXPECT_EQ(Register("b", "v100", 1, 0, &changed)->row.first_worker_id, 2u);
  Register("a", "k80", 2, 10, &changed);  // same GPUs: a reattach
  EXPECT_FALSE(changed);
  a = Register("a", "k80", 3, 20, &changed);  // other GPUs: fresh ids
  EXPECT_TRUE(changed);
  EXPECT_EQ(a->row.first_worker_id, 3u);
  EXPECT_EQ(registry_.AgentOfWorker(0), nullptr);
  EXPECT_TRUE(registry_.OwnsWorker("a", 5));
  EXPECT_EQ(journal_.batch.meta.at("next_worker_id"), "6");
  EXPECT_EQ(journal_.dirty_agents, (std::set<std::string>{"a", "b"}));
}

TEST_F(RegistryTest, SilentAgentsDieAndTheLayoutListsLiveGpusInTheOriginalsTypeOrder) {
  bool changed = false;
  Register("k", "k80", 2, 0, &changed);    // workers 0, 1
  Register("v", "v100", 1, 0, &changed);   // worker 2
  Register("p", "p100", 1, 0, &changed);   // worker 3
  std::vector<std::uint64_t> workers;
  auto layout = registry_.LiveLayout(&workers);
  ASSERT_TRUE(layout.ok());
  // Layout ids run type after type in name order: k80, p100, v100.
  EXPECT_EQ(workers, (std::vector<std::uint64_t>{0, 1, 3, 2}));
  EXPECT_EQ(layout->type_names(), (std::vector<std::string>{"k80", "p100", "v100"}));
  EXPECT_EQ(layout->type_name(layout->preference_order().front()), "v100");
  EXPECT_TRUE(registry_.Heartbeat("k", 4000));
  EXPECT_EQ(registry_.DeclareSilentDead(6000, 5000), (std::vector<std::string>{"p", "v"}));
  EXPECT_FALSE(registry_.Heartbeat("v", 6001));  // dead: must register again
  EXPECT_EQ(registry_.LiveGpus(), 2);
  EXPECT_EQ(registry_.LiveGpuTypes(), (std::vector<std::string>{"k80"}));
  ASSERT_TRUE(registry_.LiveLayout(&workers).ok());
  EXPECT_EQ(workers, (std::vector<std::uint64_t>{0, 1}));
  registry_.DeclareSilentDead(20000, 5000);
  EXPECT_EQ(registry_.LiveLayout(&workers).status().code(), StatusCode::kFailedPrecondition);
}

TEST_F(RegistryTest, BadRegistrationsNameTheField) {
  bool changed = false;
  auto bad = registry_.Register(kAdmin, Request("a b", "v100", 1), 0, &changed);
  EXPECT_NE(bad.status().message().find("agent_id"), std::string::npos);
  bad = registry_.Register(kAdmin, Request("a", "tpu", 1), 0, &changed);
  EXPECT_NE(bad.status().message().find("gpu_type"), std::string::npos);
  bad = registry_.Register(kAdmin, Request("a", "v100", 0), 0, &changed);
  EXPECT_NE(bad.status().message().find("num_gpus"), std::string::npos);
  EXPECT_TRUE(registry_.agents().empty());
}

}  // namespace
}  // namespace gavel::daemon
