// paths.hpp: every file name of a store, in one place; no other file builds a path by hand.
//
//   DIR/data.mdb DIR/lock.mdb   the LMDB environment (never opened with plain open(): closing
//                               such a descriptor would drop LMDB's own fcntl locks)
//   DIR/locks/                  lock files of cursors and transactions
//   DIR/notify/Q                one doorbell file per queue id; writers touch it after commit
//   DIR/mq-store                "mq store GUID": written once the store is made, so that a
//                               missing or empty data.mdb is seen as damage, not a new store;
//                               also the store lock: every process that has the store open
//                               holds a shared flock on it (taken before it looks at any other
//                               file), mq-admin compact an exclusive one
//   DIR/compact.tmp/            where mq-admin compact writes the new data.mdb
//
// Files of a store are opened with O_NOFOLLOW and checked on the descriptor: a symbolic link,
// a file with other hard links or anything but a regular file is refused (a member of a
// group store, or a store's owner against root, could plant one to have the tools write
// through it). A tool running as root gives what it creates in a store to the store's owner
// and group (the store directory's), so that the owner is never locked out.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>

#include "base/status.hpp"

namespace mq {

class StorePaths {
 public:
  explicit StorePaths(std::string dir) : dir_(std::move(dir)) {}
  const std::string& dir() const { return dir_; }
  std::string data() const { return dir_ + "/data.mdb"; }
  std::string lock() const { return dir_ + "/lock.mdb"; }
  std::string locks_dir() const { return dir_ + "/locks"; }
  std::string notify_dir() const { return dir_ + "/notify"; }
  std::string notify(uint32_t queue_id) const {
    return notify_dir() + "/" + std::to_string(queue_id);
  }
  // Lock files (locks/): a cursor's, a process lease's, a link's forward, a waiting reader's
  // mark, and any entry of the directory by name.
  std::string in_locks(const std::string& name) const { return locks_dir() + "/" + name; }
  std::string cursor_lock(uint32_t queue_id, const std::string& cursor) const {
    return in_locks("cursor." + std::to_string(queue_id) + "." + cursor);
  }
  std::string lease_lock(uint32_t queue_id, uint64_t lease_id) const {
    return in_locks("lease." + std::to_string(queue_id) + "." + std::to_string(lease_id));
  }
  std::string link_lock(const std::string& link) const { return in_locks("link." + link); }
  std::string wait_mark(uint32_t queue_id, long pid) const {
    return in_locks("wait." + std::to_string(queue_id) + "." + std::to_string(pid));
  }
  std::string marker() const { return dir_ + "/mq-store"; }
  std::string compact_dir() const { return dir_ + "/compact.tmp"; }

 private:
  std::string dir_;
};

// The default store directory: $MQ_STORE, else $XDG_DATA_HOME/mq, else ~/.local/share/mq.
Result<std::string> DefaultStoreDir();

// The program `name` in this program's own directory (/proc/self/exe's): mq-watch's receivers
// (mq-receive), the static tools' XML checker (mq-admin). Just `name` if that cannot be read.
std::string SiblingProgram(const char* name);

// The owner and group of the store in use (its directory's), set by Store::Open.
void SetStoreOwner(uid_t uid, gid_t gid);
// Gives a file or directory just created in the store to the store's owner and group when
// the tool runs as root and is not the owner (lchown for a path: never follows a link).
// Errors are ignored: the file works for root either way.
void AdoptFd(int fd);
void AdoptPath(const std::string& path);
// Opens a file of the store with `flags` (O_CLOEXEC|O_NOFOLLOW added), creating it with
// `mode` if missing: a file it creates gets exactly `mode` (whatever the umask) and is
// adopted; an existing one must be a regular file with one link (Code::kCorrupted names it
// otherwise).
Result<int> OpenStoreFile(const std::string& path, int flags, unsigned mode);

}  // namespace mq
