// accounts.hpp: users and groups, by name or by id. Two implementations of the one interface,
// chosen when a program is linked:
//  - accounts.cpp, in libmq: the C library's getpwnam & co., through NSS (files, LDAP, sssd,
//    whatever nsswitch.conf names). mq-admin and the unit tests take it.
//  - accounts_files.cpp, compiled into mq-send, mq-peek, mq-receive and mq-watch: the local
//    account files, /etc/passwd and /etc/group, read with fgetpwent and fgetgrent. Those tools
//    are linked statically (a quarter of a single send was the dynamic loader), and NSS in a
//    static program loads the shared modules of the very glibc it was linked with at run
//    time. They need an account only to find the home directory when HOME is unset
//    (paths.cpp); making or sharing a store, which names owners and groups, is mq-admin's.
// An object file given to the linker wins over an archive's member for the same symbols, so a
// tool that compiles accounts_files.cpp never pulls accounts.o out of libmq.a.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>

namespace mq {

struct Account {
  uid_t uid = 0;
  gid_t gid = 0;  // the user's own group
  std::string name;
  std::string home;
};

std::optional<Account> UserByName(const std::string& name);
std::optional<Account> UserById(uid_t uid);
std::optional<gid_t> GroupByName(const std::string& name);

}  // namespace mq
