// The start-up profile (runtime/startup_profile.h): phases in order with their parts, the total from the process's
// start, closed by the first result so that later phases are dropped, and the report's lines.
#include <gtest/gtest.h>

#include <thread>

#include "runtime/startup_profile.h"

namespace spire::rt::startup {
namespace {

// One test: the profile is the process's, and this binary's other tests record nothing into it.
TEST(StartupProfile, RecordsPhasesUntilTheFirstResultAndReportsThemWithinTheTotal) {
  const double since_start = ms_since_process_start();
  EXPECT_GT(since_start, 0);
  EXPECT_LT(since_start, 24 * 3600e3);  // the process started today, not at boot
  {
    PhaseTimer t("device opened (test:0)");
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    t.detail("a detail");
    t.part("a part", 1.5, "of it");
  }  // recorded by the destructor
  PhaseTimer second("bundle checked and parsed");
  second.record();
  EXPECT_FALSE(snapshot().closed);
  close();
  record({"after the first result", 1, "", {}});  // dropped: start-up is over
  close();                                        // only the first close counts

  const Profile p = snapshot();
  ASSERT_TRUE(p.closed);
  ASSERT_EQ(p.phases.size(), 2u);
  EXPECT_EQ(p.phases[0].name, "device opened (test:0)");
  EXPECT_GE(p.phases[0].ms, 5.0);
  EXPECT_EQ(p.phases[0].detail, "a detail");
  ASSERT_EQ(p.phases[0].parts.size(), 1u);
  EXPECT_EQ(p.phases[1].name, "bundle checked and parsed");
  EXPECT_GE(p.total_ms, since_start + p.phases[0].ms + p.phases[1].ms - 10);  // the start is rounded down to 10 ms
  EXPECT_EQ(snapshot().total_ms, p.total_ms);  // fixed at the close

  const std::string text = report(p);
  EXPECT_NE(text.find("device opened (test:0)"), std::string::npos) << text;
  EXPECT_NE(text.find("\n  a part"), std::string::npos) << text;  // parts indented beneath their phase
  EXPECT_NE(text.find("outside these phases"), std::string::npos) << text;
  EXPECT_NE(text.find("to the first result"), std::string::npos) << text;
  EXPECT_EQ(text.find("after the first result"), std::string::npos) << text;
}

}  // namespace
}  // namespace spire::rt::startup
