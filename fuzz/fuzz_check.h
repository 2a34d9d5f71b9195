// What a fuzz target asserts beyond "no crash": a property the parser's callers rely on. A
// violation prints what was expected and aborts, which libFuzzer records as a crash with the input.
#pragma once

#include <cstdio>
#include <cstdlib>

#define UNMASK_FUZZ_CHECK(cond, what)                                                     \
  do {                                                                                    \
    if (!(cond)) {                                                                        \
      std::fprintf(stderr, "fuzz property violated at %s:%d: %s\n  (%s)\n", __FILE__,     \
                   __LINE__, what, #cond);                                                \
      std::abort();                                                                       \
    }                                                                                     \
  } while (0)
