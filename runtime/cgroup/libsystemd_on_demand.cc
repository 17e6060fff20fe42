// libsystemd's sd-bus, loaded the first time an sd_bus_* function is called rather than when the
// program starts. Only the scope the user's systemd manager delegates (systemd_scope.cc: an
// ordinary user's cgroup v2 limits) talks to D-Bus, yet libsystemd and the libraries it pulls in
// (gcrypt, lz4, zstd, lzma, cap) cost every start of mcp-sandbox about 2 ms of CPU in the
// dynamic linker: a one-shot `run` as root, a CLI command or a server that never asks systemd
// for a scope no longer pays it. The functions below have sd-bus's own signatures (so
// systemd_scope.cc includes <systemd/sd-bus.h> as usual) and forward to libsystemd.so.0 opened
// with dlopen; when it cannot be opened, sd_bus_open_user fails with -ELIBACC and the scope is
// refused as it is when the user's manager does not answer.
#include <cerrno>
#include <cstdarg>
#include <cstring>
#include <string>

#include <systemd/sd-bus.h>

#include "runtime/base/library_on_demand.h"

namespace sandbox::cgroup {
namespace {

// The entry points of libsystemd.so.0 systemd_scope.cc calls.
struct Libsystemd {
  bool loaded = false;
  int (*open_user)(sd_bus** bus) = nullptr;
  sd_bus* (*flush_close_unref)(sd_bus* bus) = nullptr;
  int (*wait)(sd_bus* bus, uint64_t timeout_usec) = nullptr;
  int (*process)(sd_bus* bus, sd_bus_message** message) = nullptr;
  int (*call)(sd_bus* bus, sd_bus_message* message, uint64_t usec, sd_bus_error* error,
              sd_bus_message** reply) = nullptr;
  int (*match_signal)(sd_bus* bus, sd_bus_slot** slot, const char* sender, const char* path,
                      const char* interface, const char* member, sd_bus_message_handler_t callback,
                      void* userdata) = nullptr;
  int (*get_property_string)(sd_bus* bus, const char* destination, const char* path,
                             const char* interface, const char* member, sd_bus_error* error,
                             char** value) = nullptr;
  sd_bus_slot* (*slot_unref)(sd_bus_slot* slot) = nullptr;
  int (*message_new_method_call)(sd_bus* bus, sd_bus_message** message, const char* destination,
                                 const char* path, const char* interface,
                                 const char* member) = nullptr;
  sd_bus_message* (*message_unref)(sd_bus_message* message) = nullptr;
  int (*message_appendv)(sd_bus_message* message, const char* types, va_list arguments) = nullptr;
  int (*message_readv)(sd_bus_message* message, const char* types, va_list arguments) = nullptr;
  int (*message_append_strv)(sd_bus_message* message, char** list) = nullptr;
  int (*message_open_container)(sd_bus_message* message, char type, const char* contents) = nullptr;
  int (*message_close_container)(sd_bus_message* message) = nullptr;
  int (*message_enter_container)(sd_bus_message* message, char type,
                                 const char* contents) = nullptr;
  int (*error_is_set)(const sd_bus_error* error) = nullptr;
  int (*error_has_name)(const sd_bus_error* error, const char* name) = nullptr;
  void (*error_free)(sd_bus_error* error) = nullptr;
};

Libsystemd Open() {
  Libsystemd lib;
  LibraryOnDemand library("libsystemd.so.0");
  library.Bind("sd_bus_open_user", lib.open_user);
  library.Bind("sd_bus_flush_close_unref", lib.flush_close_unref);
  library.Bind("sd_bus_wait", lib.wait);
  library.Bind("sd_bus_process", lib.process);
  library.Bind("sd_bus_call", lib.call);
  library.Bind("sd_bus_match_signal", lib.match_signal);
  library.Bind("sd_bus_get_property_string", lib.get_property_string);
  library.Bind("sd_bus_slot_unref", lib.slot_unref);
  library.Bind("sd_bus_message_new_method_call", lib.message_new_method_call);
  library.Bind("sd_bus_message_unref", lib.message_unref);
  library.Bind("sd_bus_message_appendv", lib.message_appendv);
  library.Bind("sd_bus_message_readv", lib.message_readv);
  library.Bind("sd_bus_message_append_strv", lib.message_append_strv);
  library.Bind("sd_bus_message_open_container", lib.message_open_container);
  library.Bind("sd_bus_message_close_container", lib.message_close_container);
  library.Bind("sd_bus_message_enter_container", lib.message_enter_container);
  library.Bind("sd_bus_error_is_set", lib.error_is_set);
  library.Bind("sd_bus_error_has_name", lib.error_has_name);
  library.Bind("sd_bus_error_free", lib.error_free);
  lib.loaded = library.error().empty();
  return lib;
}

// Opened once, by the first caller (a function-local static: thread-safe).
const Libsystemd& Loaded() {
  static const Libsystemd lib = Open();
  return lib;
}

}  // namespace
}  // namespace sandbox::cgroup

// sd-bus's own signatures (systemd/sd-bus.h). Without libsystemd no bus is ever opened, so the
// functions that take a bus or a message are never reached with one; they fail with -ELIBACC or
// do nothing all the same.
using sandbox::cgroup::Loaded;

extern "C" {

int sd_bus_open_user(sd_bus** bus) { return Loaded().loaded ? Loaded().open_user(bus) : -ELIBACC; }

sd_bus* sd_bus_flush_close_unref(sd_bus* bus) {
  return bus != nullptr && Loaded().loaded ? Loaded().flush_close_unref(bus) : nullptr;
}

int sd_bus_wait(sd_bus* bus, uint64_t timeout_usec) {
  return Loaded().loaded ? Loaded().wait(bus, timeout_usec) : -ELIBACC;
}

int sd_bus_process(sd_bus* bus, sd_bus_message** message) {
  return Loaded().loaded ? Loaded().process(bus, message) : -ELIBACC;
}

int sd_bus_call(sd_bus* bus, sd_bus_message* message, uint64_t usec, sd_bus_error* error,
                sd_bus_message** reply) {
  return Loaded().loaded ? Loaded().call(bus, message, usec, error, reply) : -ELIBACC;
}

int sd_bus_match_signal(sd_bus* bus, sd_bus_slot** slot, const char* sender, const char* path,
                        const char* interface, const char* member,
                        sd_bus_message_handler_t callback, void* userdata) {
  return Loaded().loaded
             ? Loaded().match_signal(bus, slot, sender, path, interface, member, callback, userdata)
             : -ELIBACC;
}

int sd_bus_get_property_string(sd_bus* bus, const char* destination, const char* path,
                               const char* interface, const char* member, sd_bus_error* error,
                               char** value) {
  return Loaded().loaded
             ? Loaded().get_property_string(bus, destination, path, interface, member, error, value)
             : -ELIBACC;
}

sd_bus_slot* sd_bus_slot_unref(sd_bus_slot* slot) {
  return slot != nullptr && Loaded().loaded ? Loaded().slot_unref(slot) : nullptr;
}

int sd_bus_message_new_method_call(sd_bus* bus, sd_bus_message** message, const char* destination,
                                   const char* path, const char* interface, const char* member) {
  return Loaded().loaded
             ? Loaded().message_new_method_call(bus, message, destination, path, interface, member)
             : -ELIBACC;
}

sd_bus_message* sd_bus_message_unref(sd_bus_message* message) {
  return message != nullptr && Loaded().loaded ? Loaded().message_unref(message) : nullptr;
}

// The variadic ones go through their va_list forms, which sd-bus exports for this.
int sd_bus_message_append(sd_bus_message* message, const char* types, ...) {
  if (!Loaded().loaded) return -ELIBACC;
  va_list arguments;
  va_start(arguments, types);
  int result = Loaded().message_appendv(message, types, arguments);
  va_end(arguments);
  return result;
}

int sd_bus_message_read(sd_bus_message* message, const char* types, ...) {
  if (!Loaded().loaded) return -ELIBACC;
  va_list arguments;
  va_start(arguments, types);
  int result = Loaded().message_readv(message, types, arguments);
  va_end(arguments);
  return result;
}

int sd_bus_message_append_strv(sd_bus_message* message, char** list) {
  return Loaded().loaded ? Loaded().message_append_strv(message, list) : -ELIBACC;
}

int sd_bus_message_open_container(sd_bus_message* message, char type, const char* contents) {
  return Loaded().loaded ? Loaded().message_open_container(message, type, contents) : -ELIBACC;
}

int sd_bus_message_close_container(sd_bus_message* message) {
  return Loaded().loaded ? Loaded().message_close_container(message) : -ELIBACC;
}

int sd_bus_message_enter_container(sd_bus_message* message, char type, const char* contents) {
  return Loaded().loaded ? Loaded().message_enter_container(message, type, contents) : -ELIBACC;
}

// An sd_bus_error is filled only by a call that ran, so without libsystemd none is ever set.
int sd_bus_error_is_set(const sd_bus_error* error) {
  return Loaded().loaded ? Loaded().error_is_set(error) : 0;
}

int sd_bus_error_has_name(const sd_bus_error* error, const char* name) {
  return Loaded().loaded ? Loaded().error_has_name(error, name) : 0;
}

void sd_bus_error_free(sd_bus_error* error) {
  if (Loaded().loaded) Loaded().error_free(error);
}

}  // extern "C"
