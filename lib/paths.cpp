// paths.cpp: the default store location of CLI.md.
#include "paths.hpp"

#include <pwd.h>
#include <unistd.h>

#include <cstdlib>

namespace mq {

Result<std::string> DefaultStoreDir() {
  if (const char* s = std::getenv("MQ_STORE"); s && *s) return std::string(s);
  if (const char* x = std::getenv("XDG_DATA_HOME"); x && *x) return std::string(x) + "/mq";
  const char* home = std::getenv("HOME");
  if (!home || !*home) {
    if (passwd* pw = getpwuid(getuid()); pw && pw->pw_dir) home = pw->pw_dir;
  }
  if (!home || !*home)
    return Status(Code::kServiceNotAvailable,
                  "no default store: set MQ_STORE, XDG_DATA_HOME or HOME, or use --store");
  return std::string(home) + "/.local/share/mq";
}

}  // namespace mq
