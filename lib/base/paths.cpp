// paths.cpp: the default store location of CLI.md.
#include "base/paths.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>

#include <fmt/format.h>

#include "base/accounts.hpp"

namespace mq {

Result<std::string> DefaultStoreDir() {
  if (const char* s = std::getenv("MQ_STORE"); s && *s) return std::string(s);
  if (const char* x = std::getenv("XDG_DATA_HOME"); x && *x) return std::string(x) + "/mq";
  const char* home = std::getenv("HOME");
  std::string account_home;  // the account's, when HOME is unset (a cron job, a service)
  if (!home || !*home) {
    if (auto pw = UserById(getuid()); pw && !pw->home.empty()) account_home = pw->home;
    home = account_home.c_str();
  }
  if (!home || !*home)
    return Status::ServiceNotAvailable(
        "no default store: set MQ_STORE, XDG_DATA_HOME or HOME, or use --store");
  return std::string(home) + "/.local/share/mq";
}

std::string SiblingProgram(const char* name) {
  char self[PATH_MAX];
  ssize_t n = ::readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) return name;
  std::string dir(self, static_cast<size_t>(n));
  return dir.substr(0, dir.rfind('/') + 1) + name;
}

namespace {
bool g_owner_set = false;
uid_t g_owner_uid = 0;
gid_t g_owner_gid = 0;
}  // namespace

void SetStoreOwner(uid_t uid, gid_t gid) {
  g_owner_set = true;
  g_owner_uid = uid;
  g_owner_gid = gid;
}

void AdoptFd(int fd) {
  if (!g_owner_set || ::geteuid() != 0 || g_owner_uid == 0) return;
  (void)::fchown(fd, g_owner_uid, g_owner_gid);
}

void AdoptPath(const std::string& path) {
  if (!g_owner_set || ::geteuid() != 0 || g_owner_uid == 0) return;
  (void)::lchown(path.c_str(), g_owner_uid, g_owner_gid);
}

Result<int> OpenStoreFile(const std::string& path, int flags, unsigned mode) {
  flags |= O_CLOEXEC | O_NOFOLLOW;
  int fd = ::open(path.c_str(), flags);  // usually it exists
  for (int attempt = 0; fd < 0 && errno == ENOENT && attempt < 4; ++attempt) {
    fd = ::open(path.c_str(), flags | O_CREAT | O_EXCL, static_cast<mode_t>(mode));
    if (fd >= 0) {
      // The umask may have taken the group's bits of a group-shared store's file.
      (void)::fchmod(fd, static_cast<mode_t>(mode));
      AdoptFd(fd);
      return fd;
    }
    if (errno == EEXIST) fd = ::open(path.c_str(), flags);  // made meanwhile by another
  }
  if (fd < 0) {
    if (errno == ELOOP) return Status::Corrupted("is a symbolic link: refusing to open it", path);
    return ErrnoStatus(errno, path, "cannot open");
  }
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    int err = errno;
    ::close(fd);
    return ErrnoStatus(err, path, "cannot stat");
  }
  if (!S_ISREG(st.st_mode) || st.st_nlink != 1) {
    ::close(fd);
    return Status::Corrupted(S_ISREG(st.st_mode)
                                 ? fmt::format("has {} hard links: refusing to write through it",
                                               st.st_nlink)
                                 : std::string("is not a regular file: refusing to open it"),
                             path);
  }
  return fd;
}

}  // namespace mq
