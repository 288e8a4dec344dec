#pragma once
// A test that needs an optional dependency this build lacks skips and says which. The test
// suites of a build without one see GRAIN_TEST_WITHOUT_PAPI, _HWLOC, _OTF2 or _MPI
// (tests/CMakeLists.txt); the libraries then refuse what needs it (docs/user-guide.md).
#include <gtest/gtest.h>

#ifdef GRAIN_TEST_WITHOUT_HWLOC
// WHAT: what the test needs hwloc for (an XML topology, HWLOC_SYNTHETIC's machine, ...).
#define GRAIN_SKIP_WITHOUT_HWLOC(what) \
  GTEST_SKIP() << what << " needs hwloc: built with GRAIN_WITH_HWLOC=OFF"
#else
#define GRAIN_SKIP_WITHOUT_HWLOC(what) static_cast<void>(0)
#endif

#ifdef GRAIN_TEST_WITHOUT_OTF2
#define GRAIN_SKIP_WITHOUT_OTF2(what) \
  GTEST_SKIP() << what << " needs OTF2: built with GRAIN_WITH_OTF2=OFF"
#else
#define GRAIN_SKIP_WITHOUT_OTF2(what) static_cast<void>(0)
#endif
