#include "gavel/rpc/grpc_util.h"

#include <gtest/gtest.h>

namespace gavel::rpc {
namespace {

TEST(ParseAddressTest, AcceptsV4V6AndNames) {
  auto v4 = ParseAddress("127.0.0.1:50060");
  ASSERT_TRUE(v4.ok());
  EXPECT_EQ(v4->host, "127.0.0.1");
  EXPECT_EQ(v4->port, 50060);
  EXPECT_EQ(v4->ToString(), "127.0.0.1:50060");
  auto v6 = ParseAddress("[::1]:0");
  ASSERT_TRUE(v6.ok());
  EXPECT_EQ(v6->host, "::1");
  EXPECT_EQ(v6->port, 0);
  EXPECT_EQ(v6->ToString(), "[::1]:0");
  EXPECT_TRUE(ParseAddress("localhost:1").ok());
}

TEST(ParseAddressTest, RefusesMalformedAddresses) {
  for (const char* bad : {"", "127.0.0.1", ":80", "127.0.0.1:", "127.0.0.1:x", "127.0.0.1:70000",
                          "::1:80", "[::1]80", "[::1]"}) {
    auto parsed = ParseAddress(bad);
    EXPECT_FALSE(parsed.ok()) << bad;
  }
}

TEST(LoopbackTest, RecognisesLoopbackHosts) {
  EXPECT_TRUE(IsLoopbackHost("127.0.0.1"));
  EXPECT_TRUE(IsLoopbackHost("127.1.2.3"));
  EXPECT_TRUE(IsLoopbackHost("::1"));
  EXPECT_TRUE(IsLoopbackHost("localhost"));
  EXPECT_FALSE(IsLoopbackHost("10.0.0.1"));
  EXPECT_FALSE(IsLoopbackHost("0.0.0.0"));
}

TEST(StatusMappingTest, RoundTripsCodesAndKeepsMessages) {
  EXPECT_TRUE(ToGrpc(Status::Ok()).ok());
  EXPECT_EQ(ToGrpc(Status::InvalidArgument("spec.total_steps: must be >= 1")).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(ToGrpc(Status::NotFound("job 7")).error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(ToGrpc(Status::Internal("x")).error_code(), grpc::StatusCode::INTERNAL);
  const Status back = FromGrpc(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "field x"),
                               "submit");
  EXPECT_EQ(back.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(back.message(), "submit: field x");
  const Status denied =
      FromGrpc(grpc::Status(grpc::StatusCode::PERMISSION_DENIED, "job 3 is bob's"), "cancel");
  EXPECT_NE(denied.message().find("permission denied"), std::string::npos);
  // A refusal of the caller keeps its own code, apart from FAILED_PRECONDITION ("not now"),
  // and survives the round trip.
  EXPECT_EQ(denied.code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(FromGrpc(grpc::Status(grpc::StatusCode::UNAUTHENTICATED, "bad token"), "x").code(),
            StatusCode::kPermissionDenied);
  EXPECT_EQ(FromGrpc(grpc::Status(grpc::StatusCode::FAILED_PRECONDITION, "not yet"), "x").code(),
            StatusCode::kFailedPrecondition);
  EXPECT_EQ(ToGrpc(denied).error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_TRUE(FromGrpc(grpc::Status::OK, "x").ok());
}

}  // namespace
}  // namespace gavel::rpc
