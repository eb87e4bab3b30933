#include <gtest/gtest.h>

// Exit status 77 when tests ran, none failed and every one of them skipped (e.g. GPU tests on a
// machine without a usable device): CTest's SKIP_RETURN_CODE then reports the entry as skipped.
// A skip never hides a failure in the same run, as a "skipped" pattern in the output would.
int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  const int rc = RUN_ALL_TESTS();
  const ::testing::UnitTest& unit = *::testing::UnitTest::GetInstance();
  if (rc == 0 && unit.test_to_run_count() > 0 && unit.skipped_test_count() == unit.test_to_run_count()) return 77;
  return rc;
}
