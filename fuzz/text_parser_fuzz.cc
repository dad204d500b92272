// The generic fuzz target for a text parser: GAVEL_FUZZ_PARSER(text, "fuzz") on every input,
// which must return a value or an error and never crash, hang or leak (fuzz/CMakeLists.txt
// names the parser and its header). Whatever it returns is dropped.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include GAVEL_FUZZ_HEADER

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  const auto result = GAVEL_FUZZ_PARSER(text, "fuzz");
  (void)result.ok();
  return 0;
}
