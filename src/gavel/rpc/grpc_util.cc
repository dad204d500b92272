#include "gavel/rpc/grpc_util.h"

#include <sys/resource.h>

#include <charconv>
#include <chrono>

namespace gavel::rpc {

std::string HostPort::ToString() const {
  const bool v6 = host.find(':') != std::string::npos;
  return (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

Result<HostPort> ParseAddress(std::string_view text) {
  const std::string quoted = "address \"" + std::string(text) + "\"";
  HostPort out;
  std::string_view rest;
  if (text.starts_with("[")) {
    const std::size_t close = text.find(']');
    if (close == std::string_view::npos || close + 1 >= text.size() || text[close + 1] != ':') {
      return Status::InvalidArgument(quoted + ": expected [v6-host]:port");
    }
    out.host = std::string(text.substr(1, close - 1));
    rest = text.substr(close + 2);
  } else {
    const std::size_t colon = text.rfind(':');
    if (colon == std::string_view::npos || colon == 0) {
      return Status::InvalidArgument(quoted + ": expected host:port, e.g. 127.0.0.1:50060");
    }
    out.host = std::string(text.substr(0, colon));
    if (out.host.find(':') != std::string::npos) {
      return Status::InvalidArgument(quoted + ": write an IPv6 host in brackets, [::1]:port");
    }
    rest = text.substr(colon + 1);
  }
  const auto [end, error] = std::from_chars(rest.data(), rest.data() + rest.size(), out.port);
  if (error != std::errc() || end != rest.data() + rest.size() || out.port < 0 ||
      out.port > 65535 || out.host.empty()) {
    return Status::InvalidArgument(quoted + ": the port must be a number in 0..65535");
  }
  return out;
}

bool IsLoopbackHost(std::string_view host) {
  return host == "localhost" || host == "::1" || host.starts_with("127.");
}

std::shared_ptr<grpc::Channel> MakeChannel(const std::string& address,
                                           std::shared_ptr<grpc::ChannelCredentials> credentials) {
  grpc::ChannelArguments args;
  // A restarted peer is found again within a second or two, not after gRPC's default
  // exponential backoff of up to two minutes.
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 200);
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 200);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
  return grpc::CreateCustomChannel(
      address, credentials ? std::move(credentials) : grpc::InsecureChannelCredentials(), args);
}

void ApplyServerLimits(grpc::ServerBuilder* builder, const ServerLimits& limits) {
  const auto ms = [](Seconds s) { return static_cast<int>(s.value() * 1000.0); };
  builder->AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  builder->AddChannelArgument(GRPC_ARG_SERVER_HANDSHAKE_TIMEOUT_MS, ms(limits.handshake_timeout));
  builder->AddChannelArgument(GRPC_ARG_MAX_CONNECTION_IDLE_MS, ms(limits.max_connection_idle));
  builder->AddChannelArgument(GRPC_ARG_MAX_CONNECTION_AGE_MS, ms(limits.max_connection_age));
  builder->AddChannelArgument(GRPC_ARG_MAX_CONNECTION_AGE_GRACE_MS,
                              ms(limits.max_connection_age_grace));
  builder->AddChannelArgument(GRPC_ARG_MAX_CONCURRENT_STREAMS, limits.max_concurrent_streams);
  grpc::ResourceQuota quota("gavel-server");
  quota.SetMaxThreads(limits.max_threads);
  builder->SetResourceQuota(quota);
}

std::uint64_t RaiseDescriptorLimit() {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0) return 0;
  if (limit.rlim_cur < limit.rlim_max) {
    rlimit raised = limit;
    raised.rlim_cur = limit.rlim_max;
    if (::setrlimit(RLIMIT_NOFILE, &raised) == 0) limit = raised;
  }
  return static_cast<std::uint64_t>(limit.rlim_cur);
}

void PrepareContext(grpc::ClientContext* context, Seconds timeout, std::string_view token) {
  context->set_deadline(std::chrono::system_clock::now() +
                        std::chrono::duration_cast<std::chrono::system_clock::duration>(
                            std::chrono::duration<double>(timeout.value())));
  if (!token.empty()) context->AddMetadata(std::string(kAuthorizationKey), BearerValue(token));
}

std::optional<Principal> Authenticate(const grpc::ServerContextBase& context,
                                      const TokenRegistry& tokens) {
  const auto& metadata = context.client_metadata();
  const auto it = metadata.find(grpc::string_ref(kAuthorizationKey.data(),
                                                 kAuthorizationKey.size()));
  std::optional<std::string_view> value;
  if (it != metadata.end()) value = std::string_view(it->second.data(), it->second.size());
  return tokens.Authenticate(value);
}

grpc::Status Unauthenticated() {
  return grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                      "missing or unknown token (pass --token-file)");
}

grpc::Status ToGrpc(const Status& status) {
  switch (status.code()) {
    case StatusCode::kOk: return grpc::Status::OK;
    case StatusCode::kInvalidArgument:
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, status.message());
    case StatusCode::kNotFound: return grpc::Status(grpc::StatusCode::NOT_FOUND, status.message());
    case StatusCode::kFailedPrecondition:
      return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION, status.message());
    case StatusCode::kPermissionDenied:
      return grpc::Status(grpc::StatusCode::PERMISSION_DENIED, status.message());
    case StatusCode::kUnimplemented:
      return grpc::Status(grpc::StatusCode::UNIMPLEMENTED, status.message());
    case StatusCode::kIoError:
      return grpc::Status(grpc::StatusCode::UNAVAILABLE, status.message());
    case StatusCode::kInternal: break;
  }
  return grpc::Status(grpc::StatusCode::INTERNAL, status.message());
}

Status FromGrpc(const grpc::Status& status, std::string_view what) {
  if (status.ok()) return Status::Ok();
  const std::string prefix = std::string(what) + ": ";
  const std::string& message = status.error_message();
  switch (status.error_code()) {
    case grpc::StatusCode::INVALID_ARGUMENT: return Status::InvalidArgument(prefix + message);
    case grpc::StatusCode::NOT_FOUND: return Status::NotFound(prefix + message);
    // Their own code, not kFailedPrecondition (which FAILED_PRECONDITION maps to), so that a
    // caller can tell "your token was refused" from "not now" (the agent's on_refused).
    case grpc::StatusCode::UNAUTHENTICATED:
      return Status::PermissionDenied(prefix + "unauthenticated: " + message);
    case grpc::StatusCode::PERMISSION_DENIED:
      return Status::PermissionDenied(prefix + "permission denied: " + message);
    case grpc::StatusCode::FAILED_PRECONDITION:
      return Status::FailedPrecondition(prefix + message);
    case grpc::StatusCode::UNIMPLEMENTED: return Status::Unimplemented(prefix + message);
    case grpc::StatusCode::UNAVAILABLE:
      return Status::IoError(prefix + "unavailable (is the scheduler running?): " + message);
    case grpc::StatusCode::DEADLINE_EXCEEDED:
      return Status::IoError(prefix + "no answer before the deadline: " + message);
    default: break;
  }
  return Status::Internal(prefix + message);
}

}  // namespace gavel::rpc
