// Access tokens for the runtime's RPCs (docs/runtime.md, "Access").
//
// The scheduler's token file names who may call it, one token per line:
//
//     # comments and blank lines are ignored
//     <token> <user> [admin|agent]
//
// A token is a run of at least 8 printable non-space characters; users are names of letters,
// digits and `._-@`. Three roles (docs/runtime.md, "Who may call what"): users submit, list
// and cancel their own jobs; agents (`gavel worker`) register GPUs and report for the agents
// they registered, nothing else; admins may do what users do to any job, and register
// workers. Without a token file the scheduler is open: every caller is the admin user
// "anonymous" (fine on loopback for one person, nowhere else).
//
// Tokens are kept only as SHA-256 digests once parsed (a lookup hashes the presented token),
// so no copy of a token outlives the call that read the file.
//
// A client's token file holds its token as the first field of its first non-comment line, so
// the scheduler's own file (or one line of it) works for a client too.
//
// On the wire a token travels as gRPC metadata `authorization: Bearer <token>`.
// TokenRegistry is immutable after loading; thread-safe.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "gavel/core/status.h"

namespace gavel::rpc {

// The metadata key that carries the token (gRPC keys are lower case).
inline constexpr std::string_view kAuthorizationKey = "authorization";

struct Principal {
  std::string user;
  bool admin = false;
  bool agent = false;  // the `agent` role: worker calls only (admin and agent never both)
};

class TokenRegistry {
 public:
  // An open registry: every call is the admin "anonymous".
  TokenRegistry() = default;
  // Errors name the file and line: a missing user, an unknown third field, a short token,
  // a token listed twice. The file's mode is checked first (CheckTokenFileMode): refused when
  // others may write it; when they may read it, the warning goes to *warning, or to stderr
  // when `warning` is null, so that no caller can lose it.
  static Result<TokenRegistry> LoadFile(const std::string& path, std::string* warning = nullptr);
  static Result<TokenRegistry> Parse(std::string_view text, const std::string& source_name);

  bool open() const { return tokens_.empty(); }
  std::size_t size() const { return tokens_.size(); }

  // Checks an `authorization` metadata value ("Bearer <token>"; nullopt = none sent).
  // Returns the caller, or nullopt when the registry is not open and the token is missing or
  // unknown.
  std::optional<Principal> Authenticate(std::optional<std::string_view> authorization) const;

 private:
  std::unordered_map<std::string, Principal> tokens_;
};

// Reads a client's token (see the file comment). Errors name the file. The mode is checked
// as in TokenRegistry::LoadFile, with the same `warning` contract.
Result<std::string> ReadClientToken(const std::string& path, std::string* warning = nullptr);

// Checks who else may use a token file: FailedPrecondition when group or others may write it
// (they could add tokens, admins included); OK with `*warning` set when they may read it
// (they could act as its users); OK with `*warning` cleared when it is private to its owner.
// Both readers above call it, so every user of a token file gets the same check.
Status CheckTokenFileMode(const std::string& path, std::string* warning);

// "Bearer <token>".
std::string BearerValue(std::string_view token);

// The SHA-256 digest of `text`, as 64 lower-case hex digits (OpenSSL's libcrypto).
std::string Sha256Hex(std::string_view text);
// A fresh secret for a credential the runtime issues itself (an agent's callback key, a job's
// key): 32 bytes from the system's CSPRNG as 64 hex digits. Aborts if no randomness is
// available (a credential that could be guessed is worse than none).
std::string NewSecret();
// Compares two secrets in time independent of where they differ.
bool SecretsEqual(std::string_view a, std::string_view b);
// The token of an `authorization` value "Bearer <token>"; "" when absent or malformed.
std::string_view BearerToken(std::string_view authorization);

}  // namespace gavel::rpc
