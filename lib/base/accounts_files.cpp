// accounts_files.cpp: users and groups from /etc/passwd and /etc/group (accounts.hpp), for the
// statically linked tools: fgetpwent and fgetgrent parse the files without NSS. An account
// that only a network directory (LDAP, sssd) knows is not found here.
#include <grp.h>
#include <pwd.h>
#include <stdio.h>

#include <functional>

#include "base/accounts.hpp"

namespace mq {
namespace {

std::optional<Account> FindUser(const std::function<bool(const passwd&)>& match) {
  FILE* f = ::fopen("/etc/passwd", "re");
  if (!f) return std::nullopt;
  std::optional<Account> found;
  while (const passwd* pw = ::fgetpwent(f)) {
    if (!match(*pw)) continue;
    found = Account{pw->pw_uid, pw->pw_gid, pw->pw_name ? pw->pw_name : "",
                    pw->pw_dir ? pw->pw_dir : ""};
    break;
  }
  ::fclose(f);
  return found;
}

}  // namespace

std::optional<Account> UserByName(const std::string& name) {
  return FindUser([&](const passwd& pw) { return pw.pw_name && name == pw.pw_name; });
}

std::optional<Account> UserById(uid_t uid) {
  return FindUser([&](const passwd& pw) { return pw.pw_uid == uid; });
}

std::optional<gid_t> GroupByName(const std::string& name) {
  FILE* f = ::fopen("/etc/group", "re");
  if (!f) return std::nullopt;
  std::optional<gid_t> found;
  while (const group* g = ::fgetgrent(f)) {
    if (g->gr_name && name == g->gr_name) {
      found = g->gr_gid;
      break;
    }
  }
  ::fclose(f);
  return found;
}

}  // namespace mq
