/* floor.c: the floor for one durable send, run once per message like mq-send.
 *
 *   floor [-n] DIR BODY
 *   floor -p DIR
 *
 * Opens the LMDB environment in DIR (created by `floor DIR --init`), appends BODY under the
 * next big-endian 8-byte key of the main database and commits with LMDB's default synced
 * commit (fdatasync of data, then of the meta page): the least any process can do to make one
 * message durable in LMDB. Built fully static (gcc -O2 -static floor.c -llmdb -lpthread), so
 * it also pays the least possible process start-up. -n sets MDB_NOSYNC (no fdatasync, as
 * mq-send --express) to separate the cost of the disk from that of the process.
 *
 * -p is the floor of one durable receive, run once per message like mq-receive: it takes the
 * first entry, writes its value and a newline to stdout, deletes it and commits (synced);
 * exit 1 if the database is empty.
 */
#include <lmdb.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void die(const char *what, int rc) {
  fprintf(stderr, "floor: %s: %s\n", what, mdb_strerror(rc));
  exit(1);
}

int main(int argc, char **argv) {
  unsigned flags = 0;
  int pop = 0;
  if (argc == 3 && strcmp(argv[1], "-p") == 0) {
    pop = 1;
    argv[1] = argv[2];
    argv[2] = "";
  } else if (argc > 1 && strcmp(argv[1], "-n") == 0) {
    flags = MDB_NOSYNC;
    argv++;
    argc--;
  }
  if (argc != 3) {
    fprintf(stderr, "usage: floor [-n] DIR BODY | floor -p DIR | floor DIR --init\n");
    return 2;
  }
  MDB_env *env;
  MDB_txn *txn;
  MDB_dbi dbi;
  MDB_cursor *cur;
  int rc;
  if ((rc = mdb_env_create(&env))) die("env_create", rc);
  mdb_env_set_mapsize(env, (size_t)1 << 30);
  if ((rc = mdb_env_open(env, argv[1], flags, 0600))) die("env_open", rc);
  if ((rc = mdb_txn_begin(env, NULL, 0, &txn))) die("txn_begin", rc);
  if ((rc = mdb_dbi_open(txn, NULL, 0, &dbi))) die("dbi_open", rc);
  if (pop) {
    MDB_val k, v;
    if ((rc = mdb_cursor_open(txn, dbi, &cur))) die("cursor_open", rc);
    if ((rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST))) die("cursor_get", rc);
    if (fwrite(v.mv_data, 1, v.mv_size, stdout) != v.mv_size || putchar('\n') == EOF ||
        fflush(stdout) != 0) {
      fprintf(stderr, "floor: cannot write the value\n");
      return 1;
    }
    if ((rc = mdb_cursor_del(cur, 0))) die("cursor_del", rc);
    mdb_cursor_close(cur);
  } else if (strcmp(argv[2], "--init") != 0) {
    uint64_t next = 1;
    MDB_val k, v;
    if ((rc = mdb_cursor_open(txn, dbi, &cur))) die("cursor_open", rc);
    rc = mdb_cursor_get(cur, &k, &v, MDB_LAST);
    if (rc == 0 && k.mv_size == 8) {
      const unsigned char *p = k.mv_data;
      next = 0;
      for (int i = 0; i < 8; i++) next = next << 8 | p[i];
      next++;
    } else if (rc != MDB_NOTFOUND && rc != 0) {
      die("cursor_get", rc);
    }
    mdb_cursor_close(cur);
    unsigned char key[8];
    for (int i = 0; i < 8; i++) key[i] = (unsigned char)(next >> (56 - 8 * i));
    k.mv_size = 8;
    k.mv_data = key;
    v.mv_size = strlen(argv[2]);
    v.mv_data = argv[2];
    if ((rc = mdb_put(txn, dbi, &k, &v, 0))) die("put", rc);
  }
  if ((rc = mdb_txn_commit(txn))) die("commit", rc);
  mdb_env_close(env);
  return 0;
}
