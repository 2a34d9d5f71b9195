// The terminal view of a generation: the text so far with masked positions shown as blocks,
// redrawn in place after every step on a terminal; plain lines elsewhere.
#pragma once

#include <iosfwd>
#include <string>

#include "unmask/v1/scheduler.pb.h"

namespace unmask::cli {

class LiveView {
 public:
  // `choices` > 1: the events of several choices interleave, so nothing is redrawn in place and
  // every line starts with its choice ("[choice 1] ").
  LiveView(std::ostream& out, bool terminal, int choices = 1)
      : out_(out), terminal_(terminal && choices <= 1), tagged_(choices > 1) {}
  // Returns false when the event ends the job.
  bool OnEvent(const v1::JobEvent& event);
  int exit_code() const { return exit_code_; }

 private:
  void Redraw(const std::string& text);

  std::ostream& out_;
  bool terminal_;
  bool tagged_;
  std::size_t drawn_lines_ = 0;
  int exit_code_ = 0;
};

// A one-line progress bar: "[#####.....] 52% 3/6 layers 1.2/2.3 GB name".
std::string ProgressBar(double fraction, int width);

}  // namespace unmask::cli
