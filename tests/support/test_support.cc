#include "tests/support/test_support.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <iostream>

#include "runtime/base/files.h"

namespace sandbox::testing {

void SkipTest(std::string_view reason) {
  std::cout << "SKIPPED: " << reason << std::endl;
  std::cerr << "SKIPPED: " << reason << std::endl;
  std::_Exit(77);
}

void SkipDockerTest(std::string_view reason) {
  const char* required = getenv("SANDBOX_TEST_REQUIRE_DOCKER");
  // Not root: the daemon's socket is root's, so the runner's daemon is not this test's to use.
  if (required == nullptr || std::string_view(required) != "1" || geteuid() != 0) {
    SkipTest(reason);
  }
  std::cout << "FAILED: a Docker test could not run where the daemon is required: " << reason
            << std::endl;
  std::cerr << "FAILED: a Docker test could not run where the daemon is required: " << reason
            << std::endl;
  std::_Exit(1);
}

std::string SourceDir() { return SANDBOX_SOURCE_DIR; }
std::string BinaryDir() { return SANDBOX_BINARY_DIR; }

TempDir::TempDir() {
  const char* base = getenv("TMPDIR");
  std::string templ = std::string(base != nullptr ? base : "/tmp") + "/sbx-test.XXXXXX";
  char* made = mkdtemp(templ.data());
  if (made == nullptr) {
    perror("mkdtemp");
    std::abort();
  }
  path_ = made;
}

TempDir::~TempDir() { (void)RemoveTree(path_); }

int RunShell(const std::string& command, std::string* output) {
  FILE* pipe = popen(command.c_str(), "re");
  if (pipe == nullptr) return -1;
  char buf[4096];
  size_t n = 0;
  while ((n = fread(buf, 1, sizeof buf, pipe)) > 0) {
    if (output != nullptr) output->append(buf, n);
  }
  int status = pclose(pipe);
  if (status == -1) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

}  // namespace sandbox::testing
