#include "runtime/base/library_on_demand.h"

#include <dlfcn.h>

namespace sandbox {

LibraryOnDemand::LibraryOnDemand(const char* soname)
    : soname_(soname), handle_(::dlopen(soname, RTLD_NOW | RTLD_LOCAL)) {
  if (handle_ != nullptr) return;
  const char* reason = ::dlerror();
  error_ = reason != nullptr ? reason : "dlopen(" + soname_ + ") failed";
}

void* LibraryOnDemand::Symbol(const char* name) {
  void* symbol = ::dlsym(handle_, name);
  if (symbol == nullptr) error_ = soname_ + " lacks " + name;
  return symbol;
}

}  // namespace sandbox
