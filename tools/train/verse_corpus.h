// The training corpus: one verse per line, "<book><chapter>:<verse> <text>", as the `bible`
// program of Debian's bible-kjv package prints the King James Version (tools/make_corpus.sh).
// Chapters are the documents; a fixed share of them is held out and never trained on.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/util/status.h"

namespace unmask::train {

struct Verse {
  std::string book;  // as in the corpus, e.g. "Ge", "1Sm"
  int chapter = 0;
  int verse = 0;
  std::string text;
};

struct Chapter {
  std::string book;
  int chapter = 0;
  std::vector<Verse> verses;
  std::string Text() const;  // the verses joined by single spaces
};

struct VerseCorpus {
  std::vector<Chapter> train, held_out;
};

// Reads the corpus; every `held_out_every`-th chapter (counting from 0, at `held_out_every / 2`)
// is held out. NotFound for a missing file; InvalidArgument naming the line for a line that is
// not "<book><chapter>:<verse> <text>", and for a corpus without a verse or without training
// chapters.
StatusOr<VerseCorpus> ReadVerseCorpus(const std::string& path, int held_out_every = 50);
StatusOr<VerseCorpus> ParseVerseCorpus(const std::string& text, const std::string& source, int held_out_every = 50);

// The words of `text`, lower-cased: runs of ASCII letters with an optional 's-style suffix
// (how tests/data/corpus/kjv-words.txt was cut from the corpus).
std::vector<std::string> Words(const std::string& text);

// "Genesis" for "Ge", "1 Samuel" for "1Sm"; an unknown abbreviation is returned as it is.
std::string BookName(const std::string& abbreviation);

}  // namespace unmask::train
