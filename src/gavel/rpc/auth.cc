#include "gavel/rpc/auth.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <sys/stat.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>
#include <vector>

namespace gavel::rpc {
namespace {

constexpr std::size_t kMinTokenLength = 8;
// gRPC refuses metadata beyond 8 KiB by default: a longer token could never be sent.
constexpr std::size_t kMaxTokenLength = 4096;
constexpr std::size_t kMaxUserLength = 256;

std::vector<std::string> Fields(std::string_view line) {
  std::vector<std::string> fields;
  std::istringstream in{std::string(line)};
  std::string field;
  while (in >> field) fields.push_back(field);
  return fields;
}

bool ValidUser(const std::string& user) {
  return !user.empty() && user.size() <= kMaxUserLength && std::all_of(user.begin(), user.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '.' || c == '_' ||
           c == '-' || c == '@';
  });
}

bool ValidToken(const std::string& token) {
  return token.size() >= kMinTokenLength && token.size() <= kMaxTokenLength &&
         std::all_of(token.begin(), token.end(), [](char c) {
           return std::isgraph(static_cast<unsigned char>(c)) != 0;
         });
}

Result<std::string> ReadWholeFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Status::IoError("cannot read token file " + path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// CheckTokenFileMode for the two readers: the warning to `warning`, or to stderr without one.
Status CheckModeAndWarn(const std::string& path, std::string* warning) {
  std::string text;
  GAVEL_RETURN_IF_ERROR(CheckTokenFileMode(path, &text));
  if (warning != nullptr) {
    *warning = std::move(text);
  } else if (!text.empty()) {
    std::cerr << "gavel: warning: " << text << "\n";
  }
  return Status::Ok();
}

}  // namespace

Result<TokenRegistry> TokenRegistry::Parse(std::string_view text, const std::string& source_name) {
  TokenRegistry registry;
  std::istringstream in{std::string(text)};
  std::string line;
  int number = 0;
  while (std::getline(in, line)) {
    ++number;
    const std::string where = source_name + ":" + std::to_string(number);
    const std::size_t hash = line.find('#');
    if (hash != std::string::npos) line.resize(hash);
    const std::vector<std::string> fields = Fields(line);
    if (fields.empty()) continue;
    if (fields.size() < 2) {
      return Status::InvalidArgument(where + ": expected `<token> <user> [admin|agent]`, got " +
                                     "only a token");
    }
    if (fields.size() > 3 ||
        (fields.size() == 3 && fields[2] != "admin" && fields[2] != "agent")) {
      return Status::InvalidArgument(where + ": the third field may only be `admin` or `agent`, "
                                     "got `" + fields.back() + "`");
    }
    if (!ValidToken(fields[0])) {
      return Status::InvalidArgument(where + ": a token needs " +
                                     std::to_string(kMinTokenLength) + " to " +
                                     std::to_string(kMaxTokenLength) +
                                     " printable characters");
    }
    if (!ValidUser(fields[1])) {
      return Status::InvalidArgument(where + ": user `" + fields[1].substr(0, 64) +
                                     "` may only use letters, digits and ._-@ (at most " +
                                     std::to_string(kMaxUserLength) + ")");
    }
    Principal principal{fields[1], fields.size() == 3 && fields[2] == "admin",
                        fields.size() == 3 && fields[2] == "agent"};
    if (!registry.tokens_.emplace(Sha256Hex(fields[0]), std::move(principal)).second) {
      return Status::InvalidArgument(where + ": this token is already listed above");
    }
  }
  if (registry.tokens_.empty()) {
    return Status::InvalidArgument(source_name + ": the token file lists no token");
  }
  return registry;
}

Result<TokenRegistry> TokenRegistry::LoadFile(const std::string& path, std::string* warning) {
  GAVEL_RETURN_IF_ERROR(CheckModeAndWarn(path, warning));
  GAVEL_ASSIGN_OR_RETURN(const std::string text, ReadWholeFile(path));
  return Parse(text, path);
}

std::optional<Principal> TokenRegistry::Authenticate(
    std::optional<std::string_view> authorization) const {
  if (open()) return Principal{"anonymous", true, false};
  if (!authorization) return std::nullopt;
  const std::string_view token = BearerToken(*authorization);
  if (token.empty()) return std::nullopt;
  const auto it = tokens_.find(Sha256Hex(token));
  if (it == tokens_.end()) return std::nullopt;
  return it->second;
}

Result<std::string> ReadClientToken(const std::string& path, std::string* warning) {
  GAVEL_RETURN_IF_ERROR(CheckModeAndWarn(path, warning));
  GAVEL_ASSIGN_OR_RETURN(const std::string text, ReadWholeFile(path));
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    const std::size_t hash = line.find('#');
    if (hash != std::string::npos) line.resize(hash);
    const std::vector<std::string> fields = Fields(line);
    if (fields.empty()) continue;
    if (!ValidToken(fields[0])) {
      return Status::InvalidArgument(path + ": the token needs " +
                                     std::to_string(kMinTokenLength) + " to " +
                                     std::to_string(kMaxTokenLength) +
                                     " printable characters");
    }
    return fields[0];
  }
  return Status::InvalidArgument(path + ": the token file holds no token");
}

Status CheckTokenFileMode(const std::string& path, std::string* warning) {
  warning->clear();
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0) return Status::IoError("cannot read token file " + path);
  char mode[8];
  std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(info.st_mode & 07777));
  if ((info.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
    return Status::FailedPrecondition("token file " + path + " (mode " + mode +
                                      ") may be written by other users, who could add tokens "
                                      "or admins: chmod 600 it");
  }
  if ((info.st_mode & (S_IRGRP | S_IROTH)) != 0) {
    *warning = "token file " + path + " (mode " + std::string(mode) +
               ") may be read by other users, who could act as the users it lists: chmod 600 it";
  }
  return Status::Ok();
}

std::string BearerValue(std::string_view token) { return "Bearer " + std::string(token); }

std::string_view BearerToken(std::string_view authorization) {
  constexpr std::string_view kBearer = "Bearer ";
  if (!authorization.starts_with(kBearer)) return {};
  return authorization.substr(kBearer.size());
}

namespace {
std::string Hex(const unsigned char* bytes, std::size_t size) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(2 * size);
  for (std::size_t i = 0; i < size; ++i) {
    out.push_back(kDigits[bytes[i] >> 4]);
    out.push_back(kDigits[bytes[i] & 0xf]);
  }
  return out;
}
}  // namespace

std::string Sha256Hex(std::string_view text) {
  std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
  unsigned int size = 0;
  if (EVP_Digest(text.data(), text.size(), digest.data(), &size, EVP_sha256(), nullptr) != 1) {
    std::fputs("gavel: FATAL: SHA-256 unavailable in libcrypto\n", stderr);
    std::abort();
  }
  return Hex(digest.data(), size);
}

std::string NewSecret() {
  std::array<unsigned char, 32> bytes{};
  if (RAND_bytes(bytes.data(), static_cast<int>(bytes.size())) != 1) {
    std::fputs("gavel: FATAL: no randomness for a fresh credential (RAND_bytes)\n", stderr);
    std::abort();
  }
  return Hex(bytes.data(), bytes.size());
}

bool SecretsEqual(std::string_view a, std::string_view b) {
  return a.size() == b.size() && CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

}  // namespace gavel::rpc
