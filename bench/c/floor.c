/* floor.c: the floor for one durable send, run once per message like mq-send.
 *
 *   floor [-n] DIR BODY
 *   floor -p DIR
 *   floor -P DIR
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
 * exit 1 if the database is empty. It writes its output inside its write transaction.
 *
 * -P is the same receive without holding a transaction across the output, as mq-receive
 * must (a stalled reader of its stdout would otherwise stop every writer of the store, and a
 * failed write must lose nothing): one commit marks the first entry taken (a key after all
 * others), then the value is written, then a second commit deletes the entry and its mark.
 * Both commits sync their pages and leave the meta page to the next commit's sync
 * (MDB_NOMETASYNC: a power cut can undo the last commit, which means only a redelivery), as
 * mq-receive's do.
 */
#include <errno.h>
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
  int pop = 0, marked = 0;
  if (argc == 3 && (strcmp(argv[1], "-p") == 0 || strcmp(argv[1], "-P") == 0)) {
    pop = 1;
    if (argv[1][1] == 'P') {
      marked = 1;
      flags = MDB_NOMETASYNC;
    }
    argv[1] = argv[2];
    argv[2] = "";
  } else if (argc > 1 && strcmp(argv[1], "-n") == 0) {
    flags = MDB_NOSYNC;
    argv++;
    argc--;
  }
  if (argc != 3) {
    fprintf(stderr, "usage: floor [-n] DIR BODY | floor -p|-P DIR | floor DIR --init\n");
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
  if (marked) {
    MDB_val k, v, mk, empty = {0, ""};
    unsigned char key[9], mark[10];
    if ((rc = mdb_cursor_open(txn, dbi, &cur))) die("cursor_open", rc);
    if ((rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST))) die("cursor_get", rc);
    if (k.mv_size > 8) die("cursor_get", MDB_NOTFOUND); /* only marks are left */
    mdb_cursor_close(cur);
    memcpy(key, k.mv_data, k.mv_size);
    k.mv_data = key;
    mark[0] = 0xff;
    memcpy(mark + 1, key, k.mv_size);
    mk.mv_size = k.mv_size + 1;
    mk.mv_data = mark;
    if ((rc = mdb_put(txn, dbi, &mk, &empty, 0))) die("put", rc);
    char *copy = malloc(v.mv_size + 1);
    if (!copy) die("malloc", ENOMEM);
    memcpy(copy, v.mv_data, v.mv_size);
    copy[v.mv_size] = '\n';
    size_t n = v.mv_size + 1;
    if ((rc = mdb_txn_commit(txn))) die("commit", rc);
    if (fwrite(copy, 1, n, stdout) != n || fflush(stdout) != 0) {
      fprintf(stderr, "floor: cannot write the value\n");
      return 1;
    }
    free(copy);
    if ((rc = mdb_txn_begin(env, NULL, 0, &txn))) die("txn_begin", rc);
    if ((rc = mdb_del(txn, dbi, &k, NULL))) die("del", rc);
    if ((rc = mdb_del(txn, dbi, &mk, NULL))) die("del", rc);
  } else if (pop) {
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
