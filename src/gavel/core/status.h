// Status and Result<T>: how every boundary in Gavel reports failure.
//
// A Status says whether a call *worked*; it never encodes "the problem has no good answer"
// (an infeasible LP is a successful solve with an infeasible outcome, see lp/solver.h).
// Messages name the offending file, line or field so that a user can fix their input.
// Value types; not synchronised (copy them freely across threads).
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <variant>

#include "gavel/core/check.h"

namespace gavel {

enum class StatusCode {
  kOk,
  kInvalidArgument,     // the caller's input is malformed or inconsistent
  kNotFound,            // a named thing (policy, job type, file) does not exist
  kFailedPrecondition,  // the input is well-formed but the operation cannot apply to it
  kPermissionDenied,    // the caller was refused: no, an unknown, or a too weak credential
  kUnimplemented,
  kInternal,            // a bug or a failing dependency (e.g. the solver library crashed)
  kIoError,
};

const char* StatusCodeName(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status Ok() { return {}; }
  static Status InvalidArgument(std::string m) { return {StatusCode::kInvalidArgument, std::move(m)}; }
  static Status NotFound(std::string m) { return {StatusCode::kNotFound, std::move(m)}; }
  static Status FailedPrecondition(std::string m) {
    return {StatusCode::kFailedPrecondition, std::move(m)};
  }
  static Status PermissionDenied(std::string m) {
    return {StatusCode::kPermissionDenied, std::move(m)};
  }
  static Status Unimplemented(std::string m) { return {StatusCode::kUnimplemented, std::move(m)}; }
  static Status Internal(std::string m) { return {StatusCode::kInternal, std::move(m)}; }
  static Status IoError(std::string m) { return {StatusCode::kIoError, std::move(m)}; }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // "INVALID_ARGUMENT: <message>", or "OK".
  std::string ToString() const;

  // Returns a copy whose message is "<context>: <message>".
  Status WithContext(const std::string& context) const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

// Either a value or a non-OK Status.
template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : state_(std::move(value)) {}  // NOLINT(google-explicit-constructor)
  Result(Status status) : state_(std::move(status)) {  // NOLINT(google-explicit-constructor)
    GAVEL_CHECK_MSG(!std::get<Status>(state_).ok(), "a Result cannot hold an OK status");
  }

  bool ok() const { return std::holds_alternative<T>(state_); }
  Status status() const { return ok() ? Status::Ok() : std::get<Status>(state_); }

  const T& value() const& {
    GAVEL_CHECK_MSG(ok(), status().ToString().c_str());
    return std::get<T>(state_);
  }
  T& value() & {
    GAVEL_CHECK_MSG(ok(), status().ToString().c_str());
    return std::get<T>(state_);
  }
  T&& value() && {
    GAVEL_CHECK_MSG(ok(), status().ToString().c_str());
    return std::move(std::get<T>(state_));
  }
  const T& operator*() const& { return value(); }
  T& operator*() & { return value(); }
  T&& operator*() && { return std::move(*this).value(); }
  const T* operator->() const { return &value(); }
  T* operator->() { return &value(); }

 private:
  std::variant<T, Status> state_;
};

}  // namespace gavel

#define GAVEL_STATUS_CONCAT_INNER(a, b) a##b
#define GAVEL_STATUS_CONCAT(a, b) GAVEL_STATUS_CONCAT_INNER(a, b)

// Returns the Status from the enclosing function if `expr` is not OK.
#define GAVEL_RETURN_IF_ERROR(expr)              \
  do {                                           \
    ::gavel::Status gavel_status_ = (expr);      \
    if (!gavel_status_.ok()) return gavel_status_; \
  } while (false)

// `GAVEL_ASSIGN_OR_RETURN(auto x, MakeX());` declares x from a Result or returns its Status.
#define GAVEL_ASSIGN_OR_RETURN(lhs, expr) \
  GAVEL_ASSIGN_OR_RETURN_IMPL(GAVEL_STATUS_CONCAT(gavel_result_, __LINE__), lhs, expr)
#define GAVEL_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                                \
  if (!tmp.ok()) return tmp.status();               \
  lhs = std::move(tmp).value()
