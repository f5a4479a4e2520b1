/* rawbulk.c: raw LMDB loops that bound what mq can do in bulk.
 *
 *   rawbulk fill DIR N [BATCH]    N puts of 100-byte values under big-endian 8-byte counter
 *                                 keys (plain mdb_put, as mq does), BATCH (1000) per write
 *                                 transaction, each commit synced
 *   rawbulk drain DIR N [BATCH]   takes the first entry, writes its value to stdout and
 *                                 deletes it, BATCH (1000) per transaction, each commit synced
 *                                 and made only after the batch's output was written (as
 *                                 mq-receive does); fails unless exactly N entries were there
 *
 * Built like the floor: gcc -O2 -static rawbulk.c -llmdb -lpthread.
 */
#include <lmdb.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void die(const char *what, int rc) {
  fprintf(stderr, "rawbulk: %s: %s\n", what, mdb_strerror(rc));
  exit(1);
}

static MDB_env *open_env(const char *dir) {
  MDB_env *env;
  int rc;
  if ((rc = mdb_env_create(&env))) die("env_create", rc);
  mdb_env_set_mapsize(env, (size_t)16 << 30);
  if ((rc = mdb_env_open(env, dir, 0, 0600))) die("env_open", rc);
  return env;
}

static int write_all(const char *p, size_t n) {
  while (n) {
    ssize_t w = write(1, p, n);
    if (w < 0) return -1;
    p += w;
    n -= (size_t)w;
  }
  return 0;
}

int main(int argc, char **argv) {
  if (argc < 4 || argc > 5) {
    fprintf(stderr, "usage: rawbulk fill|drain DIR N [BATCH]\n");
    return 2;
  }
  uint64_t n = strtoull(argv[3], NULL, 10);
  uint64_t batch = argc == 5 ? strtoull(argv[4], NULL, 10) : 1000;
  MDB_env *env = open_env(argv[2]);
  MDB_txn *txn;
  MDB_dbi dbi;
  int rc;

  if (strcmp(argv[1], "fill") == 0) {
    char value[100];
    memset(value, 'x', sizeof value);
    uint64_t i = 0;
    while (i < n) {
      if ((rc = mdb_txn_begin(env, NULL, 0, &txn))) die("txn_begin", rc);
      if ((rc = mdb_dbi_open(txn, NULL, 0, &dbi))) die("dbi_open", rc);
      for (uint64_t j = 0; j < batch && i < n; j++) {
        ++i;
        unsigned char key[8];
        for (int b = 0; b < 8; b++) key[b] = (unsigned char)(i >> (56 - 8 * b));
        snprintf(value, sizeof value, "%llu", (unsigned long long)i);  /* vary the value */
        MDB_val k = {8, key}, v = {sizeof value, value};
        if ((rc = mdb_put(txn, dbi, &k, &v, 0))) die("put", rc);
      }
      if ((rc = mdb_txn_commit(txn))) die("commit", rc);
    }
  } else if (strcmp(argv[1], "drain") == 0) {
    uint64_t got = 0;
    char *out = malloc(1 << 20);
    size_t used = 0;
    for (;;) {
      MDB_cursor *cur;
      MDB_val k, v;
      uint64_t j = 0;
      if ((rc = mdb_txn_begin(env, NULL, 0, &txn))) die("txn_begin", rc);
      if ((rc = mdb_dbi_open(txn, NULL, 0, &dbi))) die("dbi_open", rc);
      if ((rc = mdb_cursor_open(txn, dbi, &cur))) die("cursor_open", rc);
      for (; j < batch; j++) {
        rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST);
        if (rc == MDB_NOTFOUND) break;
        if (rc) die("cursor_get", rc);
        if (used + v.mv_size > (1 << 20)) {
          if (write_all(out, used)) die("write", 0);
          used = 0;
        }
        memcpy(out + used, v.mv_data, v.mv_size);
        used += v.mv_size;
        if ((rc = mdb_cursor_del(cur, 0))) die("cursor_del", rc);
      }
      mdb_cursor_close(cur);
      if (write_all(out, used)) die("write", 0);
      used = 0;
      if (j == 0) {
        mdb_txn_abort(txn);
        break;
      }
      if ((rc = mdb_txn_commit(txn))) die("commit", rc);
      got += j;
    }
    if (got != n) {
      fprintf(stderr, "rawbulk: drained %llu entries, expected %llu\n", (unsigned long long)got,
              (unsigned long long)n);
      return 1;
    }
  } else {
    fprintf(stderr, "rawbulk: unknown mode %s\n", argv[1]);
    return 2;
  }
  mdb_env_close(env);
  return 0;
}
