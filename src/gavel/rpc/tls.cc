#include "gavel/rpc/tls.h"

#include "gavel/rpc/tls_front.h"

#include <fstream>
#include <sstream>

namespace gavel::rpc {
namespace {

// The PEM text of `path`; errors name `flag` and the file.
Result<std::string> ReadPem(const std::string& flag, const std::string& path) {
  std::ifstream in(path);
  if (!in) return Status::IoError(flag + " '" + path + "': cannot read the file");
  std::ostringstream text;
  text << in.rdbuf();
  const std::string pem = text.str();
  if (pem.find("-----BEGIN ") == std::string::npos) {
    return Status::InvalidArgument(flag + " '" + path + "': not a PEM file (no -----BEGIN line)");
  }
  return pem;
}

}  // namespace

Result<std::shared_ptr<grpc::ServerCredentials>> MakeServerCredentials(const ServerTlsFiles& files) {
  if (files.cert_file.empty() || files.key_file.empty()) {
    return Status::InvalidArgument("--tls-cert and --tls-key go together: give both or neither");
  }
  GAVEL_ASSIGN_OR_RETURN(std::string cert, ReadPem("--tls-cert", files.cert_file));
  GAVEL_ASSIGN_OR_RETURN(std::string key, ReadPem("--tls-key", files.key_file));
  if (key.find("PRIVATE KEY-----") == std::string::npos) {
    return Status::InvalidArgument("--tls-key '" + files.key_file + "': no PRIVATE KEY block");
  }
  grpc::SslServerCredentialsOptions options;
  options.pem_key_cert_pairs.push_back({std::move(key), std::move(cert)});
  return grpc::SslServerCredentials(options);
}

Result<std::shared_ptr<grpc::ChannelCredentials>> MakeChannelCredentials(const std::string& ca_file) {
  if (ca_file.empty()) return grpc::InsecureChannelCredentials();
  GAVEL_ASSIGN_OR_RETURN(std::string ca, ReadPem("--tls-ca", ca_file));
  grpc::SslCredentialsOptions options;
  options.pem_root_certs = std::move(ca);
  return grpc::SslCredentials(options);
}

Result<ServingGrpc> ServeGrpc(grpc::ServerBuilder& builder, const HostPort& address,
                              const ServerTlsFiles& tls, const ServerLimits& limits) {
  ServingGrpc out;
  ListenerOptions listener{limits.handshake_timeout, ListenerOptions().reserve, nullptr};
  if (tls.enabled()) {
    // The same checks and messages as gRPC's own credentials, then OpenSSL's.
    GAVEL_RETURN_IF_ERROR(MakeServerCredentials(tls).status());
    TlsFrontOptions front;
    front.cert_file = tls.cert_file;
    front.key_file = tls.key_file;
    front.handshake_timeout = limits.handshake_timeout;
    front.max_relays = limits.max_threads;
    GAVEL_ASSIGN_OR_RETURN(listener.tls_front, TlsFront::Make(front));
  }
  out.server = builder.BuildAndStart();
  if (!out.server) {
    return Status::IoError("--listen " + address.ToString() + ": cannot start the gRPC server");
  }
  GAVEL_ASSIGN_OR_RETURN(out.listener, GuardedListener::Start(address, out.server.get(), listener));
  out.port = out.listener->port();
  return out;
}

}  // namespace gavel::rpc
