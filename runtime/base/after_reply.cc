#include "runtime/base/after_reply.h"

#include <utility>

namespace sandbox {

namespace {

thread_local AfterReply* innermost = nullptr;

}  // namespace

AfterReply::AfterReply() : outer_(innermost) { innermost = this; }

AfterReply::~AfterReply() {
  Run();
  innermost = outer_;
}

void AfterReply::Run() {
  // Work may defer more (it runs inside this scope): take the list each round.
  while (!work_.empty()) {
    std::vector<std::function<void()>> now;
    now.swap(work_);
    for (auto& work : now) work();
  }
}

void AfterReply::Defer(std::function<void()> work) {
  if (innermost == nullptr) return work();
  innermost->work_.push_back(std::move(work));
}

}  // namespace sandbox
