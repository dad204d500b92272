#include "gavel/agent/iterator_endpoint.h"

#include <google/protobuf/util/json_util.h>

#include <future>
#include <memory>
#include <optional>

#include "gavel/rpc/auth.h"

namespace gavel::agent {
namespace {

namespace pbutil = google::protobuf::util;

HttpResponse Error(int status, const std::string& message) {
  HttpResponse response;
  response.status = status;
  std::string quoted;
  for (char c : message) {
    switch (c) {
      case '"':
        quoted += "\\\"";
        break;
      case '\\':
        quoted += "\\\\";
        break;
      case '\n':
        quoted += "\\n";
        break;
      case '\r':
        quoted += "\\r";
        break;
      case '\t':
        quoted += "\\t";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          quoted += ' ';
        } else {
          quoted.push_back(c);
        }
    }
  }
  response.body = "{\"error\": \"" + quoted + "\"}";
  return response;
}

HttpResponse FromStatus(const Status& status) {
  switch (status.code()) {
    case StatusCode::kNotFound:
      return Error(404, status.message());
    case StatusCode::kInvalidArgument:
      return Error(400, status.message());
    case StatusCode::kPermissionDenied:
      return Error(401, status.message() +
                            " (send 'Authorization: Bearer <GAVEL_TOKEN>' of that process)");
    default:
      return Error(500, status.message());
  }
}

template <class Message>
Status Parse(const std::string& body, Message* message) {
  pbutil::JsonParseOptions options;
  options.ignore_unknown_fields = true;  // newer clients may send fields we do not know yet
  const auto status = pbutil::JsonStringToMessage(body.empty() ? "{}" : body, message, options);
  if (!status.ok()) {
    return Status::InvalidArgument(std::string(Message::descriptor()->name()) + ": " +
                                   std::string(status.message()));
  }
  return Status::Ok();
}

template <class Message>
HttpResponse Print(const Message& message) {
  pbutil::JsonPrintOptions options;
  options.always_print_primitive_fields = true;
  HttpResponse response;
  const auto status = pbutil::MessageToJsonString(message, &response.body, options);
  if (!status.ok()) return Error(500, "cannot print response: " + std::string(status.message()));
  return response;
}

}  // namespace

// Parses the body into `message`, then checks that the caller holds the key of the process
// the message names (its GAVEL_TOKEN); nullopt = go ahead.
template <class Message>
std::optional<HttpResponse> ParseAndAdmit(const Agent& agent, const HttpRequest& request,
                                          Message* message) {
  if (Status s = Parse(request.body, message); !s.ok()) return FromStatus(s);
  const std::string authorization = request.Header("authorization").value_or("");
  if (Status s = agent.CheckJobKey(message->job_id(), message->worker_id(),
                                   rpc::BearerToken(authorization));
      !s.ok()) {
    return FromStatus(s);
  }
  return std::nullopt;
}

HttpHandler MakeIteratorHandler(Agent* agent) {
  return [agent](const HttpRequest& request) -> HttpResponse {
    constexpr std::string_view kPrefix = "/gavel.wire.Iterator/";
    if (request.target.rfind(kPrefix, 0) != 0)
      return Error(404, "unknown path '" + request.target + "'");
    if (request.method != "POST") return Error(405, "use POST");
    const std::string method = request.target.substr(kPrefix.size());
    if (method == "Init") {
      wire::InitRequest message;
      if (auto refused = ParseAndAdmit(*agent, request, &message)) return *refused;
      Result<wire::InitResponse> response = agent->Init(message);
      return response.ok() ? Print(*response) : FromStatus(response.status());
    }
    if (method == "Progress") {
      wire::ProgressRequest message;
      if (auto refused = ParseAndAdmit(*agent, request, &message)) return *refused;
      Result<wire::ProgressResponse> response = agent->Progress(message);
      return response.ok() ? Print(*response) : FromStatus(response.status());
    }
    if (method == "Done") {
      wire::DoneRequest message;
      if (auto refused = ParseAndAdmit(*agent, request, &message)) return *refused;
      auto promise = std::make_shared<std::promise<Result<wire::DoneResponse>>>();
      std::future<Result<wire::DoneResponse>> future = promise->get_future();
      agent->Done(message, [promise](Result<wire::DoneResponse> result) {
        promise->set_value(std::move(result));
      });
      Result<wire::DoneResponse> response = future.get();
      return response.ok() ? Print(*response) : FromStatus(response.status());
    }
    return Error(404, "unknown method '" + method + "' (Init, Progress, Done)");
  };
}

}  // namespace gavel::agent
