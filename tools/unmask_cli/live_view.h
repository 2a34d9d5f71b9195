// The terminal view of a generation: the text so far with masked positions shown as blocks,
// redrawn in place after every step on a terminal; plain lines elsewhere.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

#include "unmask/v1/scheduler.pb.h"

namespace unmask::cli {

class LiveView {
 public:
  // `choices` > 1: the events of several choices interleave. Every line then starts with its
  // choice ("[choice 1] "); on a terminal each running choice keeps its own text, redrawn in place
  // below the lines already printed, and a finished choice's result is printed above them.
  LiveView(std::ostream& out, bool terminal, int choices = 1)
      : out_(out), terminal_(terminal), tagged_(choices > 1), live_(static_cast<std::size_t>(choices < 1 ? 1 : choices)) {}
  // Returns false when the event ends its choice's job.
  bool OnEvent(const v1::JobEvent& event);
  int exit_code() const { return exit_code_; }

 private:
  // A choice's latest step, shown while it runs.
  struct Live {
    std::string text;
    std::int64_t step = 0, block = 0;
    bool shown = false;  // has a step to show and has not ended
  };
  Live& LiveOf(std::int64_t index);
  // Lines that stay: the drawn choices are erased, the lines written, the choices drawn again.
  void Print(const std::string& lines);
  void Erase();
  void Draw();

  std::ostream& out_;
  bool terminal_;
  bool tagged_;
  std::vector<Live> live_;  // by choice index
  std::size_t drawn_lines_ = 0;
  int exit_code_ = 0;
};

// A one-line progress bar: "[#####.....] 52% 3/6 layers 1.2/2.3 GB name".
std::string ProgressBar(double fraction, int width);

}  // namespace unmask::cli
