// The translation unit that makes gavel_test_pch's precompiled header (cmake/GavelHelpers.cmake,
// gavel_test_pch_target); it has no code of its own, and nothing links its object.
