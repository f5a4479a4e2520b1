/* http_floor.c: the floor of MSMQ's HTTP transport on this machine, for bench/serve_http.sh.
 *
 *   http_floor [--libcurl] REQUEST N CONNECTIONS
 *
 * Sends the HTTP request in the file REQUEST (head and body, as mq-admin forward posts one
 * SRMP message) N times over CONNECTIONS kept-alive loopback TCP connections, at most one
 * request in flight on each, to a server it forks: a child that reads each request whole
 * (its Content-Length) and answers "200 OK" with an empty body. Both sides are one thread
 * with epoll, do no parsing beyond finding the end of a request, and copy nothing: what is
 * left is the kernel's loopback TCP and the two processes' wake-ups, the cost any HTTP
 * sender and receiver pay per message whatever their libraries.
 *
 * With --libcurl the sender is libcurl's multi interface instead, driven as mq-admin forward
 * drives it (curl_multi_socket_action on its own epoll, one easy handle a connection, set up
 * once and added again for each POST): the cost of the library the issue asks forward to use,
 * with nothing of mq around it.
 *
 * Prints "N SECONDS CPU-SECONDS": the wall time of the N POSTs, and the CPU time (user and
 * system) of both processes for the whole run.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void die(const char* what) {
  perror(what);
  exit(1);
}

static const char kAnswer[] = "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n";

/* A connection of the receiver: its request so far. */
struct conn {
  int fd;
  size_t have; /* bytes of the current request read */
  size_t need; /* the request's whole length, once its head is in */
  char buf[65536];
};

/* A connection of the plain sender: how much of the answers it has read. */
struct peer {
  int fd;
  size_t have;
};

/* The server: one request at a time per connection, answered when it is whole; ends when
 * the first `conns` connections it took are all closed. */
static void serve(int lfd, int conns) {
  int ep = epoll_create1(0);
  struct conn* cs = calloc((size_t)conns, sizeof *cs);
  struct epoll_event lev = {.events = EPOLLIN, .data.ptr = NULL};
  if (epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &lev) < 0) die("epoll_ctl");
  int accepted = 0, open_conns = 0;
  struct epoll_event evs[256];
  while (accepted < conns || open_conns > 0) {
    int n = epoll_wait(ep, evs, 256, -1);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) die("epoll_wait");
    for (int i = 0; i < n; i++) {
      struct conn* c = evs[i].data.ptr;
      if (!c) {
        int fd = accept(lfd, NULL, NULL);
        if (fd < 0) die("accept");
        if (accepted == conns) {
          close(fd);
          continue;
        }
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        cs[accepted].fd = fd;
        struct epoll_event ev = {.events = EPOLLIN, .data.ptr = &cs[accepted]};
        if (epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) < 0) die("epoll_ctl");
        accepted++;
        open_conns++;
        continue;
      }
      ssize_t r = read(c->fd, c->buf + c->have, sizeof c->buf - c->have);
      if (r <= 0) {
        close(c->fd);
        open_conns--;
        continue;
      }
      c->have += (size_t)r;
      for (;;) {
        if (!c->need) {
          char* end = memmem(c->buf, c->have, "\r\n\r\n", 4);
          if (!end) break;
          char* cl = memmem(c->buf, (size_t)(end - c->buf), "Content-Length: ", 16);
          size_t body = cl ? strtoul(cl + 16, NULL, 10) : 0;
          c->need = (size_t)(end + 4 - c->buf) + body;
        }
        if (c->have < c->need) break;
        if (write(c->fd, kAnswer, sizeof kAnswer - 1) != (ssize_t)(sizeof kAnswer - 1))
          die("write");
        memmove(c->buf, c->buf + c->need, c->have - c->need);
        c->have -= c->need;
        c->need = 0;
      }
    }
  }
  exit(0);
}

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* The plain sender: writes the request, reads the answer, writes the next. */
static void post_plain(const struct sockaddr_in* a, const char* req, size_t len, long total,
                       int conns) {
  int ep = epoll_create1(0);
  struct peer* cs = calloc((size_t)conns, sizeof *cs);
  long sent = 0, done = 0;
  for (int i = 0; i < conns; i++) {
    int s = socket(AF_INET, SOCK_STREAM, 0);
    if (s < 0 || connect(s, (const struct sockaddr*)a, sizeof *a) < 0) die("connect");
    int one = 1;
    setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    cs[i].fd = s;
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = &cs[i]};
    if (epoll_ctl(ep, EPOLL_CTL_ADD, s, &ev) < 0) die("epoll_ctl");
  }
  for (int i = 0; i < conns && sent < total; i++, sent++)
    if (write(cs[i].fd, req, len) != (ssize_t)len) die("write");
  struct epoll_event evs[256];
  char sink[4096];
  while (done < total) {
    int n = epoll_wait(ep, evs, 256, -1);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) die("epoll_wait");
    for (int i = 0; i < n; i++) {
      struct peer* c = evs[i].data.ptr;
      ssize_t r = read(c->fd, sink, sizeof sink);
      if (r <= 0) die("read answer");
      c->have += (size_t)r;
      while (c->have >= sizeof kAnswer - 1) {
        c->have -= sizeof kAnswer - 1;
        done++;
        if (sent < total) {
          if (write(c->fd, req, len) != (ssize_t)len) die("write");
          sent++;
        }
      }
    }
  }
  for (int i = 0; i < conns; i++) close(cs[i].fd);
}

/* The libcurl sender, as mq-admin forward drives libcurl. */
struct multi {
  CURLM* m;
  int ep;
  long due; /* libcurl's timer, ms from now; -1 none */
};

static int on_socket(CURL* e, curl_socket_t fd, int what, void* mp, void* sp) {
  (void)e;
  (void)sp;
  struct multi* m = mp;
  struct epoll_event ev = {.events = 0, .data.fd = fd};
  if (what & CURL_POLL_IN) ev.events |= EPOLLIN;
  if (what & CURL_POLL_OUT) ev.events |= EPOLLOUT;
  if (what == CURL_POLL_REMOVE) {
    epoll_ctl(m->ep, EPOLL_CTL_DEL, fd, NULL);
  } else if (epoll_ctl(m->ep, EPOLL_CTL_MOD, fd, &ev) < 0) {
    if (epoll_ctl(m->ep, EPOLL_CTL_ADD, fd, &ev) < 0) die("epoll_ctl");
  }
  return 0;
}

static int on_timer(CURLM* cm, long ms, void* mp) {
  (void)cm;
  ((struct multi*)mp)->due = ms;
  return 0;
}

static size_t discard(char* p, size_t size, size_t n, void* u) {
  (void)p;
  (void)u;
  return size * n;
}

static void post_libcurl(const struct sockaddr_in* a, const char* req, size_t len, long total,
                         int conns) {
  /* The request's path, its headers but Host and Content-Length (libcurl writes those), and
   * its body. */
  const char* sp1 = memchr(req, ' ', len);
  const char* sp2 = sp1 ? memchr(sp1 + 1, ' ', len - (size_t)(sp1 + 1 - req)) : NULL;
  const char* head_end = memmem(req, len, "\r\n\r\n", 4);
  if (!sp2 || !head_end) {
    fprintf(stderr, "http_floor: REQUEST is not an HTTP request\n");
    exit(2);
  }
  char url[512];
  snprintf(url, sizeof url, "http://127.0.0.1:%u%.*s", ntohs(a->sin_port), (int)(sp2 - sp1 - 1),
           sp1 + 1);
  struct curl_slist* headers = NULL;
  for (const char* l = strstr(req, "\r\n") + 2; l < head_end;) {
    const char* e = memmem(l, (size_t)(head_end + 2 - l), "\r\n", 2);
    char h[1024];
    snprintf(h, sizeof h, "%.*s", (int)(e - l), l);
    if (strncasecmp(h, "Host:", 5) && strncasecmp(h, "Content-Length:", 15))
      headers = curl_slist_append(headers, h);
    l = e + 2;
  }
  const char* body = head_end + 4;
  curl_off_t body_len = (curl_off_t)(req + len - body);

  curl_global_init(CURL_GLOBAL_DEFAULT);
  struct multi m = {.m = curl_multi_init(), .ep = epoll_create1(0), .due = -1};
  curl_multi_setopt(m.m, CURLMOPT_MAX_HOST_CONNECTIONS, (long)conns);
  curl_multi_setopt(m.m, CURLMOPT_MAXCONNECTS, (long)conns);
  curl_multi_setopt(m.m, CURLMOPT_SOCKETFUNCTION, on_socket);
  curl_multi_setopt(m.m, CURLMOPT_SOCKETDATA, &m);
  curl_multi_setopt(m.m, CURLMOPT_TIMERFUNCTION, on_timer);
  curl_multi_setopt(m.m, CURLMOPT_TIMERDATA, &m);
  long sent = 0, done = 0;
  for (int i = 0; i < conns && sent < total; i++, sent++) {
    CURL* e = curl_easy_init();
    curl_easy_setopt(e, CURLOPT_URL, url);
    curl_easy_setopt(e, CURLOPT_POST, 1L);
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(e, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, body_len);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, discard);
    if (curl_multi_add_handle(m.m, e) != CURLM_OK) die("curl_multi_add_handle");
  }
  int running = 0;
  curl_multi_socket_action(m.m, CURL_SOCKET_TIMEOUT, 0, &running);
  struct epoll_event evs[256];
  while (done < total) {
    int n = epoll_wait(m.ep, evs, 256, m.due < 0 ? 1000 : (int)m.due);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) die("epoll_wait");
    if (n == 0) {
      m.due = -1;
      curl_multi_socket_action(m.m, CURL_SOCKET_TIMEOUT, 0, &running);
    }
    for (int i = 0; i < n; i++) {
      int mask = 0;
      if (evs[i].events & (EPOLLIN | EPOLLHUP)) mask |= CURL_CSELECT_IN;
      if (evs[i].events & EPOLLOUT) mask |= CURL_CSELECT_OUT;
      if (evs[i].events & EPOLLERR) mask |= CURL_CSELECT_ERR;
      curl_multi_socket_action(m.m, evs[i].data.fd, mask, &running);
    }
    int left = 0;
    CURLMsg* msg;
    while ((msg = curl_multi_info_read(m.m, &left))) {
      if (msg->msg != CURLMSG_DONE) continue;
      long code = 0;
      curl_easy_getinfo(msg->easy_handle, CURLINFO_RESPONSE_CODE, &code);
      if (msg->data.result != CURLE_OK || code != 200) {
        fprintf(stderr, "http_floor: POST failed: %s, %ld\n", curl_easy_strerror(msg->data.result),
                code);
        exit(1);
      }
      CURL* e = msg->easy_handle;
      curl_multi_remove_handle(m.m, e);
      done++;
      if (sent < total) {
        if (curl_multi_add_handle(m.m, e) != CURLM_OK) die("curl_multi_add_handle");
        sent++;
      } else {
        curl_easy_cleanup(e);
      }
    }
  }
  curl_multi_cleanup(m.m);
  curl_slist_free_all(headers);
}

int main(int argc, char** argv) {
  int libcurl = argc > 1 && !strcmp(argv[1], "--libcurl");
  argv += libcurl;
  argc -= libcurl;
  if (argc != 4) {
    fprintf(stderr, "usage: http_floor [--libcurl] REQUEST N CONNECTIONS\n");
    return 2;
  }
  int fd = open(argv[1], O_RDONLY);
  struct stat st;
  if (fd < 0 || fstat(fd, &st) < 0) die(argv[1]);
  char* req = malloc((size_t)st.st_size);
  if (read(fd, req, (size_t)st.st_size) != st.st_size) die("read");
  close(fd);
  long total = atol(argv[2]);
  int conns = atoi(argv[3]);
  if (total <= 0 || conns <= 0 || conns > 256) {
    fprintf(stderr, "http_floor: N > 0 and 0 < CONNECTIONS <= 256\n");
    return 2;
  }

  int lfd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t alen = sizeof a;
  if (lfd < 0 || bind(lfd, (struct sockaddr*)&a, sizeof a) < 0 || listen(lfd, 512) < 0 ||
      getsockname(lfd, (struct sockaddr*)&a, &alen) < 0)
    die("listen");
  pid_t child = fork();
  if (child < 0) die("fork");
  if (child == 0) serve(lfd, conns);
  close(lfd);

  double t0 = now();
  if (libcurl)
    post_libcurl(&a, req, (size_t)st.st_size, total, conns);
  else
    post_plain(&a, req, (size_t)st.st_size, total, conns);
  double t1 = now();
  int status;
  waitpid(child, &status, 0);
  struct rusage self, kids;
  getrusage(RUSAGE_SELF, &self);
  getrusage(RUSAGE_CHILDREN, &kids);
  double cpu = (double)(self.ru_utime.tv_sec + self.ru_stime.tv_sec + kids.ru_utime.tv_sec +
                        kids.ru_stime.tv_sec) +
               (double)(self.ru_utime.tv_usec + self.ru_stime.tv_usec + kids.ru_utime.tv_usec +
                        kids.ru_stime.tv_usec) /
                   1e6;
  printf("%ld %.3f %.3f\n", total, t1 - t0, cpu);
  return 0;
}
