#include "tools/train/verse_corpus.h"

#include <fstream>
#include <map>
#include <regex>
#include <sstream>

namespace unmask::train {
namespace {

// Parses "<book><chapter>:<verse> <text>"; false when the line has another form.
bool ParseVerse(const std::string& line, Verse* v) {
  const size_t space = line.find(' ');
  if (space == std::string::npos || space + 1 >= line.size()) return false;
  const std::string ref = line.substr(0, space);
  const size_t colon = ref.rfind(':');
  if (colon == std::string::npos || colon + 1 >= ref.size()) return false;
  size_t digits = colon;
  while (digits > 0 && std::isdigit(static_cast<unsigned char>(ref[digits - 1]))) --digits;
  if (digits == 0 || digits == colon) return false;
  for (size_t i = colon + 1; i < ref.size(); ++i)
    if (!std::isdigit(static_cast<unsigned char>(ref[i]))) return false;
  if (colon - digits > 4 || ref.size() - colon - 1 > 4) return false;
  v->book = ref.substr(0, digits);
  v->chapter = std::stoi(ref.substr(digits, colon - digits));
  v->verse = std::stoi(ref.substr(colon + 1));
  v->text = line.substr(space + 1);
  while (!v->text.empty() && (v->text.back() == ' ' || v->text.back() == '\r')) v->text.pop_back();
  return !v->text.empty();
}

}  // namespace

std::string Chapter::Text() const {
  std::string out;
  for (const auto& v : verses) out += (out.empty() ? "" : " ") + v.text;
  return out;
}

StatusOr<VerseCorpus> ParseVerseCorpus(const std::string& text, const std::string& source, int held_out_every) {
  if (held_out_every < 2) return InvalidArgumentError("held_out_every must be at least 2");
  std::vector<Chapter> chapters;
  std::istringstream in(text);
  std::string line;
  int line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    Verse v;
    if (!ParseVerse(line, &v))
      return InvalidArgumentError(source + ":" + std::to_string(line_no) +
                                  ": not a verse line '<book><chapter>:<verse> <text>': '" + line.substr(0, 60) + "'");
    if (chapters.empty() || chapters.back().book != v.book || chapters.back().chapter != v.chapter)
      chapters.push_back({v.book, v.chapter, {}});
    chapters.back().verses.push_back(std::move(v));
  }
  if (chapters.empty()) return InvalidArgumentError(source + ": the corpus holds no verse");
  VerseCorpus corpus;
  for (size_t i = 0; i < chapters.size(); ++i) {
    const bool held = static_cast<int>(i % held_out_every) == held_out_every / 2;
    (held ? corpus.held_out : corpus.train).push_back(std::move(chapters[i]));
  }
  if (corpus.train.empty()) return InvalidArgumentError(source + ": too few chapters to train on");
  return corpus;
}

StatusOr<VerseCorpus> ReadVerseCorpus(const std::string& path, int held_out_every) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFoundError(path + ": cannot open the corpus");
  std::stringstream buf;
  buf << in.rdbuf();
  return ParseVerseCorpus(buf.str(), path, held_out_every);
}

std::vector<std::string> Words(const std::string& text) {
  static const std::regex word("[A-Za-z]+('[A-Za-z]+)?");
  std::vector<std::string> out;
  for (std::sregex_iterator it(text.begin(), text.end(), word), end; it != end; ++it) {
    std::string w = it->str();
    for (auto& c : w) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    out.push_back(w);
  }
  return out;
}

std::string BookName(const std::string& a) {
  static const std::map<std::string, std::string> names = {
      {"Ge", "Genesis"}, {"Exo", "Exodus"}, {"Lev", "Leviticus"}, {"Num", "Numbers"}, {"Deu", "Deuteronomy"},
      {"Josh", "Joshua"}, {"Jdgs", "Judges"}, {"Ruth", "Ruth"}, {"1Sm", "1 Samuel"}, {"2Sm", "2 Samuel"},
      {"1Ki", "1 Kings"}, {"2Ki", "2 Kings"}, {"1Chr", "1 Chronicles"}, {"2Chr", "2 Chronicles"}, {"Ezra", "Ezra"},
      {"Neh", "Nehemiah"}, {"Est", "Esther"}, {"Job", "Job"}, {"Psa", "Psalms"}, {"Prv", "Proverbs"},
      {"Eccl", "Ecclesiastes"}, {"SSol", "Song of Solomon"}, {"Isa", "Isaiah"}, {"Jer", "Jeremiah"},
      {"Lam", "Lamentations"}, {"Eze", "Ezekiel"}, {"Dan", "Daniel"}, {"Hos", "Hosea"}, {"Joel", "Joel"},
      {"Amos", "Amos"}, {"Obad", "Obadiah"}, {"Jonah", "Jonah"}, {"Mic", "Micah"}, {"Nahum", "Nahum"},
      {"Hab", "Habakkuk"}, {"Zep", "Zephaniah"}, {"Hag", "Haggai"}, {"Zec", "Zechariah"}, {"Mal", "Malachi"},
      {"Mat", "Matthew"}, {"Mark", "Mark"}, {"Luke", "Luke"}, {"John", "John"}, {"Acts", "Acts"},
      {"Rom", "Romans"}, {"1Cor", "1 Corinthians"}, {"2Cor", "2 Corinthians"}, {"Gal", "Galatians"},
      {"Eph", "Ephesians"}, {"Phi", "Philippians"}, {"Col", "Colossians"}, {"1Th", "1 Thessalonians"},
      {"2Th", "2 Thessalonians"}, {"1Tim", "1 Timothy"}, {"2Tim", "2 Timothy"}, {"Titus", "Titus"},
      {"Phmn", "Philemon"}, {"Heb", "Hebrews"}, {"Jas", "James"}, {"1Pet", "1 Peter"}, {"2Pet", "2 Peter"},
      {"1Jn", "1 John"}, {"2Jn", "2 John"}, {"3Jn", "3 John"}, {"Jude", "Jude"}, {"Rev", "Revelation"}};
  auto it = names.find(a);
  return it == names.end() ? a : it->second;
}

}  // namespace unmask::train
