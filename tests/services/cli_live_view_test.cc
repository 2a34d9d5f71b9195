// The CLI's live view (tools/unmask_cli/live_view.h) fed the events a Generate streams: one
// choice redrawn in place, several choices each redrawn in place with their results printed above,
// and plain tagged lines off a terminal.
#include "tools/unmask_cli/live_view.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

namespace unmask::cli {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

constexpr const char* kUpAndClear = "\x1b[1A\x1b[2K";

v1::JobEvent Step(int index, int step, const std::string& text) {
  v1::JobEvent ev;
  ev.set_index(index);
  ev.mutable_step()->set_step(step);
  ev.mutable_step()->set_partial_text(text);
  return ev;
}

v1::JobEvent Completed(int index, const std::string& text) {
  v1::JobEvent ev;
  ev.set_index(index);
  ev.mutable_completed()->set_text(text);
  ev.mutable_completed()->set_finish_reason("length");
  return ev;
}

int Count(const std::string& s, const std::string& what) {
  int n = 0;
  for (auto at = s.find(what); at != std::string::npos; at = s.find(what, at + what.size())) ++n;
  return n;
}

// What is on the screen after the output: each "up one line, clear it" removes the line above.
std::string Screen(const std::string& out) {
  std::string lines;
  std::vector<std::string> screen;
  std::string current;
  for (std::size_t i = 0; i < out.size();) {
    if (out.compare(i, 8, kUpAndClear) == 0) {
      if (!screen.empty()) screen.pop_back();
      i += 8;
    } else if (out.compare(i, 5, "\r\x1b[2K") == 0) {
      current.clear();
      i += 5;
    } else if (out[i] == '\n') {
      screen.push_back(current);
      current.clear();
      ++i;
    } else {
      current += out[i++];
    }
  }
  for (const auto& l : screen) lines += l + "\n";
  return lines;
}

TEST(LiveViewTest, OneChoiceIsRedrawnInPlaceAndEndsWithItsText) {
  std::ostringstream out;
  LiveView view(out, /*terminal=*/true);
  EXPECT_TRUE(view.OnEvent(Step(0, 0, "In the ____")));
  EXPECT_TRUE(view.OnEvent(Step(0, 1, "In the begin")));
  EXPECT_FALSE(view.OnEvent(Completed(0, "In the beginning")));
  EXPECT_EQ(Count(out.str(), kUpAndClear), 4);  // two drawn lines erased twice
  EXPECT_EQ(Screen(out.str()), "In the beginning\n(0 tokens, finish: length, sampler: , queued 0 s, ran 0 s)\n");
}

TEST(LiveViewTest, SeveralChoicesEachKeepTheirOwnLiveTextAndPrintTheirResultAbove) {
  std::ostringstream out;
  LiveView view(out, /*terminal=*/true, 2);
  view.OnEvent(Step(0, 0, "a___"));
  view.OnEvent(Step(1, 0, "b___"));
  EXPECT_EQ(Screen(out.str()), "[choice 0] a___\n  step 1, block 1\n[choice 1] b___\n  step 1, block 1\n");
  view.OnEvent(Step(1, 1, "bb__"));
  EXPECT_EQ(Screen(out.str()), "[choice 0] a___\n  step 1, block 1\n[choice 1] bb__\n  step 2, block 1\n");
  EXPECT_FALSE(view.OnEvent(Completed(1, "bbbb")));  // the finished choice above, the running one below
  EXPECT_EQ(Screen(out.str()),
            "[choice 1] bbbb\n[choice 1] (0 tokens, finish: length, sampler: , queued 0 s, ran 0 s)\n"
            "[choice 0] a___\n  step 1, block 1\n");
  view.OnEvent(Completed(0, "aaaa"));
  EXPECT_EQ(Screen(out.str()),
            "[choice 1] bbbb\n[choice 1] (0 tokens, finish: length, sampler: , queued 0 s, ran 0 s)\n"
            "[choice 0] aaaa\n[choice 0] (0 tokens, finish: length, sampler: , queued 0 s, ran 0 s)\n");
}

TEST(LiveViewTest, AFailedChoiceEndsAloneAndSetsTheExitCode) {
  std::ostringstream out;
  LiveView view(out, /*terminal=*/true, 2);
  view.OnEvent(Step(0, 0, "a___"));
  view.OnEvent(Step(1, 0, "b___"));
  v1::JobEvent failed;
  failed.set_index(0);
  failed.mutable_failed()->set_code(13);
  failed.mutable_failed()->set_message("the executor went away");
  EXPECT_FALSE(view.OnEvent(failed));
  EXPECT_EQ(view.exit_code(), 1);
  EXPECT_EQ(Screen(out.str()), "[choice 0] failed (code 13): the executor went away\n[choice 1] b___\n  step 1, block 1\n");
}

TEST(LiveViewTest, OffATerminalNothingIsRedrawnAndLinesAreTagged) {
  std::ostringstream out;
  LiveView view(out, /*terminal=*/false, 2);
  view.OnEvent(Step(0, 0, "a___"));
  view.OnEvent(Completed(1, "bbbb"));
  EXPECT_THAT(out.str(), Not(HasSubstr("\x1b[")));
  EXPECT_THAT(out.str(), Not(HasSubstr("a___")));
  EXPECT_THAT(out.str(), HasSubstr("[choice 1] bbbb\n"));
}

TEST(LiveViewTest, StepsWithoutTextDrawNothing) {  // --no-live, or a watched job submitted without text
  std::ostringstream out;
  LiveView view(out, /*terminal=*/true);
  view.OnEvent(Step(0, 0, ""));
  view.OnEvent(Step(0, 1, ""));
  EXPECT_EQ(out.str(), "");
  view.OnEvent(Completed(0, "done"));
  EXPECT_THAT(Screen(out.str()), HasSubstr("done\n"));
}

TEST(LiveViewTest, AnIndexPastTheChoicesIsShownNotACrash) {
  std::ostringstream out;
  LiveView view(out, /*terminal=*/true, 2);
  view.OnEvent(Step(5, 0, "x"));
  view.OnEvent(Step(-1, 0, "y"));
  EXPECT_THAT(Screen(out.str()), HasSubstr("[choice 5] x\n"));
}

}  // namespace
}  // namespace unmask::cli
