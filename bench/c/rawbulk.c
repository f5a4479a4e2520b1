/* rawbulk.c: raw LMDB loops that bound what mq can do in bulk.
 *
 *   rawbulk fill DIR N [BATCH]    N puts of 100-byte values under big-endian 8-byte counter
 *                                 keys (plain mdb_put, as mq does), BATCH (1000) per write
 *                                 transaction, each commit synced
 *   rawbulk drain DIR N [BATCH]   takes the first entry, writes its value to stdout and
 *                                 deletes it, BATCH (1000) per transaction, each commit synced
 *                                 and made only after the batch's output was written (as
 *                                 mq-receive does); fails unless exactly N entries were there
 *   rawbulk fill3 DIR N           the same N messages in mq's layout, 10,000 a commit: a record
 *                                 of 135 bytes (a 100-byte body's lean record) under queue id +
 *                                 lookup id in "messages", its 13-byte key in "order"
 *   rawbulk drain3 DIR N [BATCH]  mq's drain with nothing of mq but its LMDB work: per BATCH
 *                                 (4000), one transaction walks "order", reads each record,
 *                                 deletes each order key, appends it to "locked", puts a lease
 *                                 record of the keys and commits without the meta sync; the
 *                                 bodies are written; a second transaction deletes each record,
 *                                 drops "locked", deletes the lease and commits synced. Its
 *                                 time against drain's is what the store's layout costs; mq's
 *                                 against it is what mq's own code costs
 *   rawbulk fill1 DIR N           the same messages in a layout mq does not have: the record
 *                                 keyed by its 13-byte order key, one tree, no "order"
 *   rawbulk drain1 DIR N [BATCH]  drain3 in that layout: the lock walks the records and
 *                                 appends each key to "locked" (the records stay where they
 *                                 are); the commit deletes them: one B-tree delete a message,
 *                                 not two. What that layout would allow
 *   rawbulk drain1r DIR N [BATCH] drain1 with the Locked marks as ranges, as that layout needs
 *                                 them for readers to seek past what others hold: the walk
 *                                 first looks for a range over the head, the lock puts one
 *                                 range (first key -> last key, lease) for the batch, the
 *                                 commit deletes it with the records (fill1's store)
 *   rawbulk drain3r DIR N [BATCH] the same ranges in mq's layout (fill3's store): the order
 *                                 keys stay in "order" while Locked (readers seek past the
 *                                 range) and the commit deletes them with the records
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
  mdb_env_set_maxdbs(env, 8);
  if ((rc = mdb_env_open(env, dir, 0, 0600))) die("env_open", rc);
  return env;
}

static MDB_dbi open_db(MDB_txn* txn, const char* name) {
  MDB_dbi dbi;
  int rc = mdb_dbi_open(txn, name, MDB_CREATE, &dbi);
  if (rc) die("dbi_open", rc);
  return dbi;
}

static void put_be(unsigned char* p, uint64_t v, int n) {
  for (int b = 0; b < n; b++) p[b] = (unsigned char)(v >> (8 * (n - 1 - b)));
}

static int drained_all(uint64_t got, uint64_t n) {
  if (got == n) return 1;
  fprintf(stderr, "rawbulk: drained %llu entries, expected %llu\n", (unsigned long long)got,
          (unsigned long long)n);
  return 0;
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

/* The key of message i: in "messages" (queue id, lookup id: 12 bytes), or its order key
 * (queue id, band, lookup id: 13 bytes), which in the one-tree layout keys the record. */
static void msg_key(unsigned char *k, uint64_t i) {
  put_be(k, 1, 4);
  put_be(k + 4, i, 8);
}
static void order_key(unsigned char *k, uint64_t i) {
  put_be(k, 1, 4);
  k[4] = 4; /* the band of priority 3 */
  put_be(k + 5, i, 8);
}

/* fill3 (one_tree 0) and fill1 (1): N records of 135 bytes, 10,000 a commit. */
static void layout_fill(MDB_env *env, uint64_t n, int one_tree) {
  char value[135];
  memset(value, 'x', sizeof value);
  MDB_txn *txn;
  int rc;
  uint64_t i = 0;
  while (i < n) {
    if ((rc = mdb_txn_begin(env, NULL, 0, &txn))) die("txn_begin", rc);
    MDB_dbi msgs = open_db(txn, "messages"), order = one_tree ? 0 : open_db(txn, "order");
    for (uint64_t j = 0; j < 10000 && i < n; j++) {
      ++i;
      unsigned char mk[12], ok[13];
      msg_key(mk, i);
      order_key(ok, i);
      snprintf(value + 20, sizeof value - 20, "%llu", (unsigned long long)i);
      MDB_val k = {12, mk}, v = {sizeof value, value}, o = {13, ok}, e = {0, ""};
      if ((rc = mdb_put(txn, msgs, one_tree ? &o : &k, &v, MDB_APPEND))) die("put record", rc);
      if (!one_tree && (rc = mdb_put(txn, order, &o, &e, MDB_APPEND))) die("put order", rc);
    }
    if ((rc = mdb_txn_commit(txn))) die("commit", rc);
  }
}

/* Puts `c` on `want` (size n): the first of a batch by a search, each next one where the
 * last delete left the cursor. */
static void seek_next(MDB_cursor *c, const unsigned char *want, size_t n, int first) {
  MDB_val k = {n, (void *)want}, v;
  int rc = mdb_cursor_get(c, &k, &v, first ? MDB_SET : MDB_GET_CURRENT);
  if (rc) die("seek", rc);
  if (k.mv_size != n || memcmp(k.mv_data, want, n)) die("not the next key", 0);
}

/* drain3 (one_tree 0), drain1 (1), and with ranges 1 drain3r and drain1r; returns how many
 * were drained. */
static uint64_t layout_drain(MDB_env* env, uint64_t batch, int one_tree, int ranges) {
  MDB_txn *txn;
  int rc;
  uint64_t got = 0;
  char *out = malloc(batch * 100);
  unsigned char *keys = malloc(batch * 13);
  MDB_val lk = {12, "\0\0\0\1\0\0\0\0\0\0\0\1"}, holder = {8, "\0\0\0\0\0\0\0\1"};
  for (;;) {
    /* The lock: walk the head ("order" and each record; or the records themselves), mark
     * each Locked (out of "order" into "locked"; or into "locked" alone), the lease record;
     * committed without the meta sync. */
    if ((rc = mdb_env_set_flags(env, MDB_NOMETASYNC, 1))) die("set_flags", rc);
    if ((rc = mdb_txn_begin(env, NULL, 0, &txn))) die("txn_begin", rc);
    MDB_dbi msgs = open_db(txn, "messages"), order = one_tree ? 0 : open_db(txn, "order"),
            locked = open_db(txn, "locked"), leases = open_db(txn, "leases");
    MDB_cursor *walk, *cm = NULL, *cl;
    if ((rc = mdb_cursor_open(txn, one_tree ? msgs : order, &walk)) ||
        (!one_tree && (rc = mdb_cursor_open(txn, msgs, &cm))) ||
        (rc = mdb_cursor_open(txn, locked, &cl)))
      die("cursor_open", rc);
    MDB_val k, v;
    uint64_t j = 0;
    size_t used = 0;
    /* A drain alone: the last batch's records were deleted, so the head is the first. */
    rc = mdb_cursor_get(walk, &k, &v, MDB_FIRST);
    if (ranges && rc == 0) {
      /* A reader's look for a range over the head: one that starts at it, or the one before
       * it if that ends at or after it (there is none: the drain is alone). */
      MDB_val rk = k, rv;
      int r2 = mdb_cursor_get(cl, &rk, &rv, MDB_SET_RANGE);
      if (r2 && r2 != MDB_NOTFOUND) die("range seek", r2);
      if (r2 == 0 && !memcmp(rk.mv_data, k.mv_data, 13)) die("a range over the head", 0);
      r2 = mdb_cursor_get(cl, &rk, &rv, r2 == 0 ? MDB_PREV : MDB_LAST);
      if (r2 && r2 != MDB_NOTFOUND) die("range seek", r2);
      if (r2 == 0 && memcmp(rv.mv_data, k.mv_data, 13) >= 0) die("a range over the head", 0);
    }
    for (; rc == 0 && j < batch; rc = mdb_cursor_get(walk, &k, &v, MDB_NEXT), j++) {
      memcpy(keys + 13 * j, k.mv_data, 13);
      if (!one_tree) {
        unsigned char mk[12];
        memcpy(mk, keys + 13 * j, 4);
        memcpy(mk + 4, keys + 13 * j + 5, 8);
        MDB_val rk = {12, mk};
        if ((rc = mdb_cursor_get(cm, &rk, &v, j ? MDB_NEXT : MDB_SET_KEY))) die("get", rc);
      }
      memcpy(out + used, (char *)v.mv_data + 35, 100);
      used += 100;
    }
    if (rc && rc != MDB_NOTFOUND) die("cursor_get", rc);
    if (j == 0) {
      mdb_txn_abort(txn);
      break;
    }
    for (uint64_t i = 0; i < j; i++) {
      MDB_val ok = {13, keys + 13 * i};
      if (!one_tree && !ranges) {
        seek_next(walk, keys + 13 * i, 13, i == 0);
        if ((rc = mdb_cursor_del(walk, 0))) die("cursor_del", rc);
      }
      if (!ranges && (rc = mdb_cursor_put(cl, &ok, &holder, MDB_APPEND))) die("put locked", rc);
    }
    if (ranges) {
      unsigned char range[21];
      memcpy(range, keys + 13 * (j - 1), 13);
      memcpy(range + 13, holder.mv_data, 8);
      MDB_val first = {13, keys}, rv = {sizeof range, range};
      if ((rc = mdb_put(txn, locked, &first, &rv, 0))) die("put range", rc);
    }
    MDB_val lv = {13 * j, keys};
    if ((rc = mdb_put(txn, leases, &lk, &lv, 0))) die("put lease", rc);
    if ((rc = mdb_txn_commit(txn))) die("commit", rc);
    if (write_all(out, used)) die("write", 0);
    /* The commit: the records out, "locked" dropped, the lease gone; synced. */
    if ((rc = mdb_env_set_flags(env, MDB_NOMETASYNC, 0))) die("set_flags", rc);
    if ((rc = mdb_txn_begin(env, NULL, 0, &txn))) die("txn_begin", rc);
    if ((rc = mdb_cursor_open(txn, msgs, &cm))) die("cursor_open", rc);
    if (!one_tree && ranges) { /* drain3r: the order keys leave with their records */
      if ((rc = mdb_cursor_open(txn, order, &walk))) die("cursor_open", rc);
      for (uint64_t i = 0; i < j; i++) {
        seek_next(walk, keys + 13 * i, 13, i == 0);
        if ((rc = mdb_cursor_del(walk, 0))) die("cursor_del", rc);
      }
    }
    for (uint64_t i = 0; i < j; i++) {
      unsigned char mk[12];
      memcpy(mk, keys + 13 * i, 4);
      memcpy(mk + 4, keys + 13 * i + 5, 8);
      seek_next(cm, one_tree ? keys + 13 * i : mk, one_tree ? 13 : 12, i == 0);
      if ((rc = mdb_cursor_del(cm, 0))) die("cursor_del", rc);
    }
    MDB_val first = {13, keys};
    if ((rc = ranges ? mdb_del(txn, locked, &first, NULL) : mdb_drop(txn, locked, 0)))
      die(ranges ? "del range" : "drop", rc);
    if ((rc = mdb_del(txn, leases, &lk, NULL))) die("del", rc);
    if ((rc = mdb_txn_commit(txn))) die("commit", rc);
    got += j;
  }
  free(out);
  free(keys);
  return got;
}

int main(int argc, char **argv) {
  if (argc < 4 || argc > 5) {
    fprintf(stderr,
            "usage: rawbulk fill|drain|fill3|drain3|drain3r|fill1|drain1|drain1r DIR N [BATCH]\n");
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
    if (!drained_all(got, n)) return 1;
  } else if (strcmp(argv[1], "fill3") == 0 || strcmp(argv[1], "fill1") == 0) {
    layout_fill(env, n, argv[1][4] == '1');
  } else if (strcmp(argv[1], "drain3") == 0 || strcmp(argv[1], "drain1") == 0 ||
             strcmp(argv[1], "drain1r") == 0 || strcmp(argv[1], "drain3r") == 0) {
    if (!drained_all(layout_drain(env, argc == 5 ? batch : 4000, argv[1][5] == '1',
                                  argv[1][6] == 'r'),
                     n))
      return 1;
  } else {
    fprintf(stderr, "rawbulk: unknown mode %s\n", argv[1]);
    return 2;
  }
  mdb_env_close(env);
  return 0;
}
