// paths.hpp: every file name of a store, in one place; no other file builds a path by hand.
//
//   DIR/data.mdb DIR/lock.mdb   the LMDB environment (never opened with plain open(): closing
//                               such a descriptor would drop LMDB's own fcntl locks)
//   DIR/locks/                  lock files of cursors and transactions
//   DIR/notify/Q                one doorbell file per queue id; writers touch it after commit
#pragma once

#include <cstdint>
#include <string>

#include "status.hpp"

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

 private:
  std::string dir_;
};

// The default store directory: $MQ_STORE, else $XDG_DATA_HOME/mq, else ~/.local/share/mq.
Result<std::string> DefaultStoreDir();

}  // namespace mq
