#include "tools/unmask_cli/live_view.h"

#include <algorithm>
#include <ostream>
#include <sstream>

#include "tools/unmask_cli/canvas_flags.h"
#include "tools/unmask_cli/likelihood_flags.h"
#include "tools/unmask_cli/tool_flags.h"

namespace unmask::cli {

std::string ProgressBar(double fraction, int width) {
  fraction = std::clamp(fraction, 0.0, 1.0);
  const int filled = static_cast<int>(fraction * width + 0.5);
  return "[" + std::string(filled, '#') + std::string(width - filled, '.') + "] " +
         std::to_string(static_cast<int>(fraction * 100 + 0.5)) + "%";
}

namespace {
std::string Tag(bool tagged, std::int64_t index) {
  return tagged ? "[choice " + std::to_string(index) + "] " : "";
}
}  // namespace

LiveView::Live& LiveView::LiveOf(std::int64_t index) {
  // An index past the choices asked for (a server's mistake) gets a place rather than a crash.
  const std::size_t i = index < 0 ? 0 : static_cast<std::size_t>(index);
  if (i >= live_.size()) live_.resize(i + 1);
  return live_[i];
}

void LiveView::Erase() {
  for (std::size_t i = 0; i < drawn_lines_; ++i) out_ << "\x1b[1A\x1b[2K";  // up one line, clear it
  drawn_lines_ = 0;
}

void LiveView::Draw() {
  for (std::size_t i = 0; i < live_.size(); ++i) {
    const Live& c = live_[i];
    if (!c.shown) continue;
    const std::string text = Tag(tagged_, static_cast<std::int64_t>(i)) + c.text + "\n  step " +
                             std::to_string(c.step + 1) + ", block " + std::to_string(c.block + 1);
    out_ << "\r\x1b[2K" << text << "\n";
    drawn_lines_ += 1 + static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n'));
  }
  out_.flush();
}

void LiveView::Print(const std::string& lines) {
  if (!terminal_) {
    out_ << lines;
    return;
  }
  Erase();
  out_ << lines;
  Draw();
}

bool LiveView::OnEvent(const v1::JobEvent& ev) {
  const std::string tag = Tag(tagged_, ev.index());
  std::ostringstream lines;
  switch (ev.event_case()) {
    case v1::JobEvent::kAccepted:
      lines << tag << "job " << ev.job_id() << " accepted" << (ev.accepted().duplicate() ? " (already submitted)" : "") << "\n";
      for (const auto& a : ev.accepted().adjustments())
        lines << tag << "  adjusted " << a.field() << ": " << a.asked() << " -> " << a.applied() << " (" << a.reason() << ")\n";
      Print(lines.str());
      return true;
    case v1::JobEvent::kQueued:
      if (!terminal_) out_ << tag << "queued at position " << ev.queued().position() << " of " << ev.queued().depth() << "\n";
      return true;
    case v1::JobEvent::kStarted:
      Print(tag + "running on " + ev.started().executor() + "\n");
      return true;
    case v1::JobEvent::kStep:
      // No text: the request did not ask for it (--no-live, or a job watched that was submitted
      // without it), so there is nothing to redraw.
      if (terminal_ && !ev.step().partial_text().empty()) {
        Live& c = LiveOf(ev.index());
        c.text = ev.step().partial_text();
        c.step = ev.step().step();
        c.block = ev.step().block();
        c.shown = true;
        Erase();
        Draw();
      }
      return true;
    case v1::JobEvent::kCompleted: {
      LiveOf(ev.index()).shown = false;
      const auto& c = ev.completed();
      lines << tag << c.text() << "\n";
      lines << tag << "(" << c.ids_size() << " tokens, finish: " << c.finish_reason() << ", sampler: " << c.sampler()
            << ", queued " << c.timings().queued_seconds() << " s, ran " << c.timings().running_seconds() << " s)\n";
      PrintToolCalls(lines, c, tag);
      PrintLogprobs(lines, c, tag);
      PrintLikelihood(lines, c, tag);
      Print(lines.str());
      return false;
    }
    case v1::JobEvent::kFailed:
      LiveOf(ev.index()).shown = false;
      Print(tag + "failed (code " + std::to_string(ev.failed().code()) + "): " + ev.failed().message() + "\n");
      exit_code_ = 1;
      return false;
    case v1::JobEvent::EVENT_NOT_SET:
      break;
  }
  return true;
}

}  // namespace unmask::cli
