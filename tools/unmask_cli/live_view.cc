#include "tools/unmask_cli/live_view.h"

#include <algorithm>
#include <ostream>

#include "tools/unmask_cli/canvas_flags.h"

namespace unmask::cli {

std::string ProgressBar(double fraction, int width) {
  fraction = std::clamp(fraction, 0.0, 1.0);
  const int filled = static_cast<int>(fraction * width + 0.5);
  return "[" + std::string(filled, '#') + std::string(width - filled, '.') + "] " +
         std::to_string(static_cast<int>(fraction * 100 + 0.5)) + "%";
}

void LiveView::Redraw(const std::string& text) {
  if (!terminal_) return;
  for (std::size_t i = 0; i < drawn_lines_; ++i) out_ << "\x1b[1A\x1b[2K";  // up one line, clear it
  out_ << "\r\x1b[2K" << text << "\n";
  drawn_lines_ = 1 + static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n'));
  out_.flush();
}

bool LiveView::OnEvent(const v1::JobEvent& ev) {
  const std::string tag = tagged_ ? "[choice " + std::to_string(ev.index()) + "] " : "";
  switch (ev.event_case()) {
    case v1::JobEvent::kAccepted: {
      out_ << tag << "job " << ev.job_id() << " accepted" << (ev.accepted().duplicate() ? " (already submitted)" : "") << "\n";
      for (const auto& a : ev.accepted().adjustments())
        out_ << tag << "  adjusted " << a.field() << ": " << a.asked() << " -> " << a.applied() << " (" << a.reason() << ")\n";
      return true;
    }
    case v1::JobEvent::kQueued:
      if (!terminal_) out_ << tag << "queued at position " << ev.queued().position() << " of " << ev.queued().depth() << "\n";
      return true;
    case v1::JobEvent::kStarted:
      out_ << tag << "running on " << ev.started().executor() << "\n";
      drawn_lines_ = 0;
      return true;
    case v1::JobEvent::kStep:
      if (terminal_) {
        Redraw(ev.step().partial_text() + "\n  step " + std::to_string(ev.step().step() + 1) + ", block " +
               std::to_string(ev.step().block() + 1));
      }
      return true;
    case v1::JobEvent::kCompleted: {
      Redraw("");
      const auto& c = ev.completed();
      out_ << tag << c.text() << "\n";
      out_ << tag << "(" << c.ids_size() << " tokens, finish: " << c.finish_reason() << ", sampler: " << c.sampler()
           << ", queued " << c.timings().queued_seconds() << " s, ran " << c.timings().running_seconds() << " s)\n";
      PrintLogprobs(out_, c, tag);
      return false;
    }
    case v1::JobEvent::kFailed:
      out_ << tag << "failed (code " << ev.failed().code() << "): " << ev.failed().message() << "\n";
      exit_code_ = 1;
      return false;
    case v1::JobEvent::EVENT_NOT_SET:
      break;
  }
  return true;
}

}  // namespace unmask::cli
