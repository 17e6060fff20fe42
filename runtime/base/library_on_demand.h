// A shared library opened at its first use (dlopen) instead of at the program's start, and the
// entry points bound from it. The program links none of the libraries a run seldom needs
// (libarchive, libcurl, libcrypto, libcjose, libsystemd): bound at start, their symbols cost every
// start of mcp-sandbox thousands of lookups in the dynamic linker, a one-shot `run` most of all.
// Each user keeps a struct of entry points filled once by a function-local static, and defines
// the library's own functions to forward to it, so its callers include the library's headers as
// usual (rootfs/libarchive_on_demand.cc, runtime/docker/libcurl_on_demand.cc, ...).
#pragma once

#include <string>

namespace sandbox {

class LibraryOnDemand {
 public:
  // Opens `soname` with RTLD_NOW | RTLD_LOCAL: its symbols serve only Bind (and the libraries
  // that name it themselves), never another library's lookups. The handle is kept for the life
  // of the process: a library's global state may outlive every handle made from it.
  explicit LibraryOnDemand(const char* soname);

  // Binds `entry` to the symbol `name`, unless the library or an earlier Bind failed.
  template <typename Function>
  void Bind(const char* name, Function*& entry) {
    if (error_.empty()) entry = reinterpret_cast<Function*>(Symbol(name));
  }

  // Why the library is unusable: dlopen's own reason, or "<soname> lacks <symbol>" for the first
  // entry point it lacks. Empty when it opened and every Bind found its symbol.
  const std::string& error() const { return error_; }

 private:
  void* Symbol(const char* name);

  std::string soname_;
  void* handle_ = nullptr;
  std::string error_;
};

}  // namespace sandbox
