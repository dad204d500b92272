#include "gavel/rpc/auth.h"

#include <cstdio>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include <set>

namespace gavel::rpc {
namespace {

TEST(TokenRegistryTest, ParsesUsersAndAdmins) {
  auto registry = TokenRegistry::Parse(
      "# the cluster's tokens\n"
      "alice-token-123 alice\n"
      "\n"
      "root-token-456 ops admin  # the operators\n",
      "tokens");
  ASSERT_TRUE(registry.ok()) << registry.status().ToString();
  EXPECT_FALSE(registry->open());
  EXPECT_EQ(registry->size(), 2u);
  auto alice = registry->Authenticate("Bearer alice-token-123");
  ASSERT_TRUE(alice.has_value());
  EXPECT_EQ(alice->user, "alice");
  EXPECT_FALSE(alice->admin);
  auto ops = registry->Authenticate("Bearer root-token-456");
  ASSERT_TRUE(ops.has_value());
  EXPECT_EQ(ops->user, "ops");
  EXPECT_TRUE(ops->admin);
}

TEST(TokenRegistryTest, AgentRoleIsNeitherUserNorAdmin) {
  auto registry = TokenRegistry::Parse("agent-token-789 host1 agent\nroot-token-456 ops admin\n",
                                       "tokens");
  ASSERT_TRUE(registry.ok()) << registry.status().ToString();
  auto host1 = registry->Authenticate("Bearer agent-token-789");
  ASSERT_TRUE(host1.has_value());
  EXPECT_EQ(host1->user, "host1");
  EXPECT_TRUE(host1->agent);
  EXPECT_FALSE(host1->admin);
  EXPECT_FALSE(registry->Authenticate("Bearer root-token-456")->agent);
}

// FIPS 180-2's test vectors, so the digest is SHA-256 and not merely some hash.
TEST(SecretsTest, Sha256MatchesTheStandardVectors) {
  EXPECT_EQ(Sha256Hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(Sha256Hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

TEST(SecretsTest, FreshSecretsAreLongHexAndDistinct) {
  std::set<std::string> seen;
  for (int i = 0; i < 1000; ++i) {
    const std::string secret = NewSecret();
    ASSERT_EQ(secret.size(), 64u);
    ASSERT_EQ(secret.find_first_not_of("0123456789abcdef"), std::string::npos);
    seen.insert(secret);
  }
  EXPECT_EQ(seen.size(), 1000u);
  EXPECT_TRUE(SecretsEqual("abcdef", "abcdef"));
  EXPECT_FALSE(SecretsEqual("abcdef", "abcdeg"));
  EXPECT_FALSE(SecretsEqual("abcdef", "abcde"));
  EXPECT_EQ(BearerToken("Bearer xyz"), "xyz");
  EXPECT_EQ(BearerToken("bearer xyz"), "");
}

TEST(TokenRegistryTest, RefusesMissingWrongAndMalformedTokens) {
  auto registry = TokenRegistry::Parse("alice-token-123 alice\n", "tokens");
  ASSERT_TRUE(registry.ok());
  EXPECT_FALSE(registry->Authenticate(std::nullopt).has_value());
  EXPECT_FALSE(registry->Authenticate("").has_value());
  EXPECT_FALSE(registry->Authenticate("alice-token-123").has_value());  // no "Bearer "
  EXPECT_FALSE(registry->Authenticate("Bearer alice-token-12").has_value());
  EXPECT_FALSE(registry->Authenticate("Bearer alice-token-1234").has_value());
  EXPECT_FALSE(registry->Authenticate("bearer alice-token-123").has_value());
}

TEST(TokenRegistryTest, OpenRegistryLetsEveryoneInAsAdmin) {
  TokenRegistry open;
  EXPECT_TRUE(open.open());
  auto anyone = open.Authenticate(std::nullopt);
  ASSERT_TRUE(anyone.has_value());
  EXPECT_EQ(anyone->user, "anonymous");
  EXPECT_TRUE(anyone->admin);
}

TEST(TokenRegistryTest, ErrorsNameTheLine) {
  auto missing_user = TokenRegistry::Parse("# x\nalice-token-123\n", "f");
  ASSERT_FALSE(missing_user.ok());
  EXPECT_NE(missing_user.status().message().find("f:2"), std::string::npos);

  auto bad_flag = TokenRegistry::Parse("alice-token-123 alice root\n", "f");
  ASSERT_FALSE(bad_flag.ok());
  EXPECT_NE(bad_flag.status().message().find("f:1"), std::string::npos);
  EXPECT_NE(bad_flag.status().message().find("root"), std::string::npos);

  auto short_token = TokenRegistry::Parse("abc alice\n", "f");
  ASSERT_FALSE(short_token.ok());
  EXPECT_NE(short_token.status().message().find("8 to 4096"), std::string::npos);

  auto duplicate = TokenRegistry::Parse("alice-token-123 alice\nalice-token-123 bob\n", "f");
  ASSERT_FALSE(duplicate.ok());
  EXPECT_NE(duplicate.status().message().find("f:2"), std::string::npos);

  auto bad_user = TokenRegistry::Parse("alice-token-123 al/ice\n", "f");
  EXPECT_FALSE(bad_user.ok());
  EXPECT_FALSE(TokenRegistry::Parse("# nothing\n", "f").ok());
  EXPECT_FALSE(TokenRegistry::LoadFile("/nonexistent/gavel/tokens").ok());
}

TEST(ClientTokenTest, ReadsTheFirstTokenOfEitherFormat) {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("gavel_auth_test_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string plain = (dir / "plain").string();
  const std::string server = (dir / "server").string();
  std::ofstream(plain) << "just-a-token-value\n";
  std::ofstream(server) << "# tokens\nroot-token-456 ops admin\nalice-token-123 alice\n";
  auto a = ReadClientToken(plain);
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(*a, "just-a-token-value");
  auto b = ReadClientToken(server);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(*b, "root-token-456");
  EXPECT_FALSE(ReadClientToken((dir / "missing").string()).ok());
  std::filesystem::remove_all(dir);
}

TEST(TokenRegistryTest, TokensAndUsersHaveBoundedLengths) {
  // gRPC refuses metadata beyond 8 KiB: a longer token could never authenticate anyone.
  const std::string long_token(5000, 'x');
  auto too_long = TokenRegistry::Parse("ok-token-1 alice\n" + long_token + " bob\n", "f");
  ASSERT_FALSE(too_long.ok());
  EXPECT_NE(too_long.status().message().find("f:2"), std::string::npos);
  EXPECT_TRUE(TokenRegistry::Parse(std::string(4096, 'y') + " bob\n", "f").ok());
  auto long_user = TokenRegistry::Parse("ok-token-1 " + std::string(300, 'a') + "\n", "f");
  ASSERT_FALSE(long_user.ok());
  EXPECT_NE(long_user.status().message().find("f:1"), std::string::npos);
  EXPECT_LT(long_user.status().message().size(), 200u);  // the name is not echoed in full
}

TEST(TokenFileModeTest, WritableByOthersIsRefusedReadableByOthersWarned) {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("gavel_auth_mode_test_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "tokens").string();
  std::ofstream(path) << "alice-token-123 alice\n";
  using std::filesystem::perms;
  const auto set = [&](perms p) {
    std::filesystem::permissions(path, p, std::filesystem::perm_options::replace);
  };
  std::string warning = "stale";
  set(perms::owner_read | perms::owner_write);
  ASSERT_TRUE(CheckTokenFileMode(path, &warning).ok());
  EXPECT_EQ(warning, "");
  set(perms::owner_read | perms::owner_write | perms::others_read);
  ASSERT_TRUE(CheckTokenFileMode(path, &warning).ok());
  EXPECT_NE(warning.find("0604"), std::string::npos) << warning;
  EXPECT_NE(warning.find(path), std::string::npos);
  // The readers check the mode themselves: a readable file loads, with the warning.
  warning.clear();
  ASSERT_TRUE(TokenRegistry::LoadFile(path, &warning).ok());
  EXPECT_NE(warning.find("0604"), std::string::npos) << warning;
  warning.clear();
  ASSERT_TRUE(ReadClientToken(path, &warning).ok());
  EXPECT_NE(warning.find("0604"), std::string::npos) << warning;
  set(perms::owner_read | perms::owner_write | perms::group_write);
  const Status writable = CheckTokenFileMode(path, &warning);
  ASSERT_FALSE(writable.ok());
  EXPECT_NE(writable.message().find("0620"), std::string::npos);
  // ... and refuse a file others may write, whoever calls them.
  const auto registry = TokenRegistry::LoadFile(path, &warning);
  ASSERT_FALSE(registry.ok());
  EXPECT_NE(registry.status().message().find("0620"), std::string::npos);
  const auto token = ReadClientToken(path);
  ASSERT_FALSE(token.ok());
  EXPECT_NE(token.status().message().find("0620"), std::string::npos);
  EXPECT_FALSE(CheckTokenFileMode((dir / "missing").string(), &warning).ok());
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace gavel::rpc
