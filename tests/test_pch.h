// The headers nearly every test file reads, precompiled once per optimization level and shared by the test
// binaries (CMakeLists.txt, LCTX_PCH): only third-party and standard headers, never the project's own,
// so that a change to a source header never rebuilds it.
#pragma once
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>
