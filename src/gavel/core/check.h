// Invariant checks. A failed check is a bug in Gavel, never bad user input (bad input gets
// a Status): it prints where and why, then aborts. Checks stay on in release builds.
#pragma once

namespace gavel::internal {
[[noreturn]] void CheckFailed(const char* file, int line, const char* condition,
                              const char* message);
}  // namespace gavel::internal

#define GAVEL_CHECK(cond)                                                        \
  do {                                                                           \
    if (!(cond)) ::gavel::internal::CheckFailed(__FILE__, __LINE__, #cond, ""); \
  } while (false)

#define GAVEL_CHECK_MSG(cond, msg)                                                 \
  do {                                                                             \
    if (!(cond)) ::gavel::internal::CheckFailed(__FILE__, __LINE__, #cond, (msg)); \
  } while (false)
