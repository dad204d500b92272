// Test helper: raw HTTP/1.1 exchanges (gavel/rpc/http_test_util.h), under the agent's names.
#pragma once

#include "gavel/rpc/http_test_util.h"

namespace gavel::agent::testing {

using rpc::testing::BodyOf;
using rpc::testing::Post;
using rpc::testing::RawExchange;

}  // namespace gavel::agent::testing
