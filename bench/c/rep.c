/* rep.c: runs a command N times, one after the other, and reports wall-clock time and the
 * peak resident set size of the runs.
 *
 *   rep N [-i FILE] [-o FILE] [-s FILE] -- COMMAND [ARG...]
 *
 * Each run is started with posix_spawn (no shell), stdin from FILE (default /dev/null), stdout
 * to FILE (default /dev/null, appended if given), stderr inherited; the clock
 * (CLOCK_MONOTONIC) runs from just before the spawn to just after wait4, so the harness adds
 * only the spawn itself. Any run that does not exit 0 stops rep with status 1. Prints one line:
 *
 *   RUNS TOTAL_NS MEDIAN_NS MIN_NS MAX_NS MAXRSS_KB_MEDIAN MAXRSS_KB_MAX MINFLT_MEDIAN
 *
 * (peak RSS per run from wait4's rusage, ru_maxrss, in KiB; minor page faults, ru_minflt:
 * each maps one page of the heap or of the store's file, or for a file up to 16 pages at
 * once (the kernel's fault-around), so RSS grows in steps a fault count shows as one; they
 * show what a run touched better than RSS does). With -s, the time of every run
 * (ns) is also appended to FILE, one a line, in the order of the runs.
 */
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}
static int cmp_long(const void *a, const void *b) {
  long x = *(const long *)a, y = *(const long *)b;
  return x < y ? -1 : x > y;
}

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int main(int argc, char **argv) {
  const char *in = "/dev/null", *out = NULL, *samples = NULL;
  if (argc < 4) goto usage;
  long n = strtol(argv[1], NULL, 10);
  int i = 2;
  for (; i < argc && strcmp(argv[i], "--") != 0; i++) {
    if (strcmp(argv[i], "-i") == 0 && i + 1 < argc) in = argv[++i];
    else if (strcmp(argv[i], "-o") == 0 && i + 1 < argc) out = argv[++i];
    else if (strcmp(argv[i], "-s") == 0 && i + 1 < argc) samples = argv[++i];
    else goto usage;
  }
  if (n < 1 || i + 1 >= argc) goto usage;
  char **cmd = argv + i + 1;

  uint64_t *ns = calloc((size_t)n, sizeof *ns);
  long *rss = calloc((size_t)n, sizeof *rss);
  long *flt = calloc((size_t)n, sizeof *flt);
  uint64_t total = 0;
  for (long r = 0; r < n; r++) {
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, in, O_RDONLY, 0);
    if (out)
      posix_spawn_file_actions_addopen(&fa, 1, out, O_WRONLY | O_CREAT | O_APPEND, 0644);
    else
      posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    pid_t pid;
    uint64_t t0 = now_ns();
    int rc = posix_spawnp(&pid, cmd[0], &fa, NULL, cmd, environ);
    if (rc != 0) {
      fprintf(stderr, "rep: cannot run %s: %s\n", cmd[0], strerror(rc));
      return 1;
    }
    int status;
    struct rusage ru;
    if (wait4(pid, &status, 0, &ru) < 0) {
      perror("rep: wait4");
      return 1;
    }
    uint64_t t1 = now_ns();
    posix_spawn_file_actions_destroy(&fa);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      fprintf(stderr, "rep: run %ld of %s failed (status 0x%x)\n", r + 1, cmd[0], status);
      return 1;
    }
    ns[r] = t1 - t0;
    rss[r] = ru.ru_maxrss;
    flt[r] = ru.ru_minflt;
    total += ns[r];
  }
  if (samples) {
    FILE *f = fopen(samples, "a");
    if (!f) {
      fprintf(stderr, "rep: cannot open %s: %s\n", samples, strerror(errno));
      return 1;
    }
    for (long r = 0; r < n; r++) fprintf(f, "%llu\n", (unsigned long long)ns[r]);
    if (fclose(f) != 0) {
      fprintf(stderr, "rep: cannot write %s\n", samples);
      return 1;
    }
  }
  qsort(ns, (size_t)n, sizeof *ns, cmp_u64);
  qsort(rss, (size_t)n, sizeof *rss, cmp_long);
  qsort(flt, (size_t)n, sizeof *flt, cmp_long);
  printf("%ld %llu %llu %llu %llu %ld %ld %ld\n", n, (unsigned long long)total,
         (unsigned long long)ns[n / 2], (unsigned long long)ns[0],
         (unsigned long long)ns[n - 1], rss[n / 2], rss[n - 1], flt[n / 2]);
  return 0;
usage:
  fprintf(stderr, "usage: rep N [-i FILE] [-o FILE] [-s FILE] -- COMMAND [ARG...]\n");
  return 2;
}
