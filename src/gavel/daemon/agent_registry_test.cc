// AgentRegistry alone: worker ids, liveness, the live cluster's layout, and what it stages.
#include "gavel/daemon/agent_registry.h"

#include <gtest/gtest.h>

#include <tuple>

#include "gavel/core/shipped_table.h"

namespace gavel::daemon {
namespace {

const rpc::Principal kAdmin{"ops", true, false};

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

// An agent id belongs to the identity that registered it. Another agent may neither
// take it over nor speak for it; the owner re-registers (a restart, a rotated token); an admin
// may reassign it, after which only the admin speaks for it.
TEST_F(RegistryTest, AnAgentIdBelongsToTheIdentityThatRegisteredIt) {
  const rpc::Principal host1{"host1", false, true};
  const rpc::Principal host2{"host2", false, true};
  bool changed = false;
  wire::RegisterWorkerRequest request = Request("a", "k80", 1);
  request.set_callback_token("cb-1");
  ASSERT_TRUE(registry_.Register(host1, request, 0, &changed).ok());
  EXPECT_EQ(registry_.Find("a")->row.owner, "host1");
  EXPECT_EQ(registry_.Find("a")->row.token, "cb-1");
  EXPECT_EQ(registry_.Endpoint(*registry_.Find("a")).token, "cb-1");  // what calls it present

  request.set_callback_token("cb-evil");
  const auto taken = registry_.Register(host2, request, 1, &changed);
  ASSERT_FALSE(taken.ok());
  EXPECT_EQ(taken.status().code(), StatusCode::kPermissionDenied);
  EXPECT_NE(taken.status().message().find("agent_id"), std::string::npos);
  EXPECT_EQ(registry_.Find("a")->row.token, "cb-1") << "a refused takeover changes nothing";
  EXPECT_TRUE(registry_.MaySpeakFor(host1, "a"));
  EXPECT_FALSE(registry_.MaySpeakFor(host2, "a"));
  EXPECT_FALSE(registry_.MaySpeakFor(kAdmin, "a"));
  EXPECT_TRUE(registry_.MaySpeakFor(host2, "unknown"));  // answered "register first"

  request.set_callback_token("cb-2");
  ASSERT_TRUE(registry_.Register(host1, request, 2, &changed).ok());
  EXPECT_EQ(registry_.Find("a")->row.token, "cb-2");
  ASSERT_TRUE(registry_.Register(kAdmin, request, 3, &changed).ok());
  EXPECT_EQ(registry_.Find("a")->row.owner, "ops");
  EXPECT_FALSE(registry_.MaySpeakFor(host1, "a"));
  EXPECT_TRUE(registry_.MaySpeakFor(kAdmin, "a"));

  request.set_callback_token(std::string(5000, 'x'));
  EXPECT_EQ(registry_.Register(kAdmin, request, 4, &changed).status().code(),
            StatusCode::kInvalidArgument);
}

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

// Host resources the agents advertise (`gavel worker --cpus/--mem-gb`) become the layout's
// per-server figures. Hand-worked: v100 agents of 4 GPUs/8 cores and 2 GPUs/2 cores make servers
// of gcd(4, 2) = 2 GPUs; the first offers 8 / 2 = 4 cores per server, the second 2 / 1 = 2, so
// 2 per server (never more than some host has): 3 servers, 6 cores in all. Memory is limited only
// if every agent advertises it: the second does not, so it is unlimited (0).
TEST_F(RegistryTest, AdvertisedHostResourcesBecomeTheSmallestSharePerServer) {
  bool changed = false;
  wire::RegisterWorkerRequest big = Request("big", "v100", 4);
  big.set_host_cpus(8.0);
  big.set_host_mem_gb(64.0);
  ASSERT_TRUE(registry_.Register(kAdmin, big, 0, &changed).ok());
  wire::RegisterWorkerRequest small = Request("small", "v100", 2);
  small.set_host_cpus(2.0);
  ASSERT_TRUE(registry_.Register(kAdmin, small, 0, &changed).ok());
  std::vector<std::uint64_t> workers;
  auto layout = registry_.LiveLayout(&workers);
  ASSERT_TRUE(layout.ok()) << layout.status().ToString();
  EXPECT_EQ(layout->num_servers(), 3);
  EXPECT_DOUBLE_EQ(layout->host_resources().cpus_per_server, 2.0);
  EXPECT_DOUBLE_EQ(layout->host_resources().mem_gb_per_server, 0.0);

  // Advertising other figures is a cluster change; out-of-range figures are refused by name.
  small.set_host_cpus(4.0);
  ASSERT_TRUE(registry_.Register(kAdmin, small, 1, &changed).ok());
  EXPECT_TRUE(changed);
  EXPECT_DOUBLE_EQ(registry_.LiveLayout(&workers)->host_resources().cpus_per_server, 4.0);
  for (const auto& [cpus, mem, field] :
       {std::tuple{-1.0, 0.0, "host_cpus"}, std::tuple{0.0, 1e300, "host_mem_gb"}}) {
    wire::RegisterWorkerRequest bad = Request("bad", "v100", 1);
    bad.set_host_cpus(cpus);
    bad.set_host_mem_gb(mem);
    const auto refused = registry_.Register(kAdmin, bad, 2, &changed);
    ASSERT_FALSE(refused.ok());
    EXPECT_NE(refused.status().message().find(field), std::string::npos)
        << refused.status().message();
  }
}

}  // namespace
}  // namespace gavel::daemon
