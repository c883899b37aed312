// bench/long-poll-clients.mjs in C, for targets 3 and 6: the same live long-polls over raw sockets, the same output
// ({"ready":true}, then {"status":…,"at":…} per answer once all are in). Node's client spends tens of microseconds of
// the two cores per answer (its JIT is cold in each round's new process); this one a few, so what the rounds measure
// is the server. It sleeps in epoll_wait between reads, as a real client does.
// bench/client-process.ts builds it with `cc -O2` when a C compiler is present (BENCH_CLIENTS=node keeps the Node one).
// Usage: long-poll-clients <url> <count>, or <@file> <count> for count polls of each URL in the file (one a line).
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

/** Polls opened before a pause of 20 ms, so that the server's accept backlog never overflows (as the Node client). */
#define GROUP 200

typedef struct {
  int fd;
  int status;
  double at;
  char *received;
  size_t length, room;
} poll_t;

static poll_t *polls;
static int poll_count;

/** Wall-clock milliseconds, as performance.timeOrigin + performance.now() in the parent. */
static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void fail(const char *what) {
  fprintf(stderr, "long-poll-clients: %s: %s\n", what, strerror(errno));
  exit(1);
}

/** Whether `poll` holds a whole response: its headers and content-length bytes of body. */
static int complete(const poll_t *poll) {
  const char *text = poll->received;
  const char *end = memmem(text, poll->length, "\r\n\r\n", 4);
  if (!end) return 0;
  size_t body = 0;
  for (const char *line = text; line < end;) {
    if (strncasecmp(line, "content-length:", 15) == 0) body = strtoul(line + 15, NULL, 10);
    const char *next = memchr(line, '\n', (size_t)(end - line));
    if (!next) break;
    line = next + 1;
  }
  return poll->length >= (size_t)(end + 4 - text) + body;
}

static void append(poll_t *poll, const char *data, size_t length) {
  if (poll->length + length > poll->room) {
    poll->room = (poll->length + length) * 2;
    poll->received = realloc(poll->received, poll->room);
    if (!poll->received) fail("realloc");
  }
  memcpy(poll->received + poll->length, data, length);
  poll->length += length;
}

/** Reads what a socket has; returns 1 once its answer is complete. */
static int read_poll(poll_t *poll) {
  static char buffer[65536];
  for (;;) {
    ssize_t got = read(poll->fd, buffer, sizeof buffer);
    if (got > 0) append(poll, buffer, (size_t)got);
    else if (got < 0 && errno == EINTR) continue;
    else if (got < 0 && errno == EAGAIN) break;
    else {
      fprintf(stderr, "long-poll-clients: a connection closed before its answer\n");
      exit(1);
    }
    if ((size_t)got < sizeof buffer) break;
  }
  if (!complete(poll)) return 0;
  poll->at = now_ms();
  poll->status = poll->length > 12 ? atoi(poll->received + 9) : 0;
  return 1;
}

/** The URLs: the one given, or each line of the file after `@`. */
static char **read_targets(const char *target, int *count) {
  static char *one[1];
  if (target[0] != '@') {
    one[0] = (char *)target;
    *count = 1;
    return one;
  }
  FILE *file = fopen(target + 1, "r");
  if (!file) fail(target + 1);
  char **urls = NULL, line[16384];
  int room = 0;
  *count = 0;
  while (fgets(line, sizeof line, file)) {
    line[strcspn(line, "\r\n")] = 0;
    if (!line[0]) continue;
    if (*count == room) {
      room = room ? room * 2 : 256;
      urls = realloc(urls, (size_t)room * sizeof *urls);
      if (!urls) fail("realloc");
    }
    urls[(*count)++] = strdup(line);
  }
  fclose(file);
  return urls;
}

static void open_poll(poll_t *poll, const char *url, int epoll) {
  char host[256], path[16384];
  int port;
  if (sscanf(url, "http://%255[^:/]:%d%16383s", host, &port, path) != 3) {
    fprintf(stderr, "long-poll-clients: cannot read %s\n", url);
    exit(2);
  }
  struct sockaddr_in address = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
  if (inet_pton(AF_INET, strcmp(host, "localhost") == 0 ? "127.0.0.1" : host, &address.sin_addr) != 1) {
    fprintf(stderr, "long-poll-clients: %s is not an IPv4 address\n", host);
    exit(2);
  }
  char request[17000];
  int length = snprintf(request, sizeof request, "GET %s HTTP/1.1\r\nHost: %s:%d\r\n\r\n", path, host, port);
  poll->fd = socket(AF_INET, SOCK_STREAM, 0);
  if (poll->fd < 0) fail("socket");
  if (connect(poll->fd, (struct sockaddr *)&address, sizeof address) != 0) fail("connect");
  if (write(poll->fd, request, (size_t)length) != length) fail("write");
  if (fcntl(poll->fd, F_SETFL, O_NONBLOCK) != 0) fail("fcntl");
  struct epoll_event event = {.events = EPOLLIN, .data.ptr = poll};
  if (epoll_ctl(epoll, EPOLL_CTL_ADD, poll->fd, &event) != 0) fail("epoll_ctl");
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: long-poll-clients <url|@file> <count>\n");
    return 2;
  }
  int url_count;
  char **urls = read_targets(argv[1], &url_count);
  int each = atoi(argv[2]);
  poll_count = url_count * each;
  struct rlimit files = {(rlim_t)poll_count + 64, (rlim_t)poll_count + 64};
  if (setrlimit(RLIMIT_NOFILE, &files) != 0) fail("setrlimit");
  polls = calloc((size_t)poll_count, sizeof *polls);
  if (!polls) fail("calloc");
  int epoll = epoll_create1(0);
  if (epoll < 0) fail("epoll_create1");
  for (int i = 0; i < poll_count; i++) {
    open_poll(&polls[i], urls[i / each], epoll);
    if ((i + 1) % GROUP == 0) {
      struct timespec pause = {0, 20000000};
      nanosleep(&pause, NULL);
    }
  }
  printf("{\"ready\":true}\n");
  fflush(stdout);
  struct epoll_event events[1024];
  for (int answered = 0; answered < poll_count;) {
    int ready = epoll_wait(epoll, events, 1024, -1);
    if (ready < 0 && errno == EINTR) continue;
    if (ready < 0) fail("epoll_wait");
    for (int e = 0; e < ready; e++) {
      poll_t *poll = events[e].data.ptr;
      if (!read_poll(poll)) continue;
      epoll_ctl(epoll, EPOLL_CTL_DEL, poll->fd, NULL);
      answered++;
    }
  }
  for (int i = 0; i < poll_count; i++) close(polls[i].fd);
  for (int i = 0; i < poll_count; i++) printf("{\"status\":%d,\"at\":%.3f}\n", polls[i].status, polls[i].at);
  return 0;
}
