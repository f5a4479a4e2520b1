// accounts.cpp: users and groups through the C library's NSS lookups (accounts.hpp).
#include "base/accounts.hpp"

#include <grp.h>
#include <pwd.h>

namespace mq {
namespace {

Account Of(const passwd& pw) {
  return Account{pw.pw_uid, pw.pw_gid, pw.pw_name ? pw.pw_name : "", pw.pw_dir ? pw.pw_dir : ""};
}

}  // namespace

std::optional<Account> UserByName(const std::string& name) {
  const passwd* pw = ::getpwnam(name.c_str());
  if (!pw) return std::nullopt;
  return Of(*pw);
}

std::optional<Account> UserById(uid_t uid) {
  const passwd* pw = ::getpwuid(uid);
  if (!pw) return std::nullopt;
  return Of(*pw);
}

std::optional<gid_t> GroupByName(const std::string& name) {
  const group* g = ::getgrnam(name.c_str());
  if (!g) return std::nullopt;
  return g->gr_gid;
}

}  // namespace mq
