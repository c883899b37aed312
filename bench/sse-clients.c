// bench/sse-clients.mjs in C, for target 5: the same streams, output and stop line, but each socket read costs the
// client ~2 µs instead of Node's ~10 µs. On a 2-core machine the clients' process competes with the server's two writing
// threads, so its own cost is part of what it measures; this client leaves the measurement to the server.
// Once the streams are open it polls them every 200 µs instead of sleeping in epoll_wait: on loopback the server's
// write runs the receiving side of TCP too, and waking a sleeping reader per socket is part of that cost, which a
// server writing to remote clients does not pay (the added delay is at most 0.2 ms).
// bench/client-process.ts builds it with `cc -O2` when a C compiler is present (BENCH_CLIENTS=node keeps the Node one).
// Usage: sse-clients <url> <count>
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#define BATCH 250
#define TEXT_BYTES 8192

typedef struct {
  int fd;
  int headers;
  int ended;
  double last_event;
  double delivered;
  size_t text_length;
  char text[TEXT_BYTES];
} stream_t;

static stream_t *streams;
static int stream_count;
static double *gaps;
static size_t gap_count, gap_room;

/** Wall-clock milliseconds, as performance.timeOrigin + performance.now() in the parent. */
static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void fail(const char *what) {
  fprintf(stderr, "sse-clients: %s: %s\n", what, strerror(errno));
  exit(1);
}

static void add_gap(double gap) {
  if (gap_count == gap_room) {
    gap_room = gap_room ? gap_room * 2 : 16384;
    gaps = realloc(gaps, gap_room * sizeof *gaps);
    if (!gaps) fail("realloc");
  }
  gaps[gap_count++] = gap;
}

/** What bench/sse-clients.mjs does with each chunk a stream receives. */
static void received(stream_t *stream, const char *data, size_t length, double at) {
  if (length > TEXT_BYTES - stream->text_length) {
    size_t keep = length >= TEXT_BYTES ? 0 : TEXT_BYTES - length;
    if (keep > stream->text_length) keep = stream->text_length;
    memmove(stream->text, stream->text + stream->text_length - keep, keep);
    stream->text_length = keep;
    if (length > TEXT_BYTES) data += length - TEXT_BYTES, length = TEXT_BYTES;
  }
  memcpy(stream->text + stream->text_length, data, length);
  stream->text_length += length;
  char *text = stream->text;
  size_t size = stream->text_length;
  if (!stream->headers) {
    char *end = memmem(text, size, "\r\n\r\n", 4);
    if (!end) return;
    stream->headers = 1;
    size_t skip = (size_t)(end + 4 - text);
    memmove(text, text + skip, size - skip);
    stream->text_length = size -= skip;
    stream->last_event = at;
  }
  if (memmem(text, size, ": keep-alive", 12)) add_gap(at - stream->last_event);
  if (stream->delivered < 0 && memmem(text, size, "\"up-to-date\"", 12)) stream->delivered = at;
  char *last = NULL;
  for (char *from = text; (from = memmem(from, size - (size_t)(from - text), "\n\n", 2)); from += 2) last = from;
  if (last) {
    stream->last_event = at;
    size_t skip = (size_t)(last + 2 - text);
    memmove(text, text + skip, size - skip);
    stream->text_length = size - skip;
  }
}

static void print_result(void) {
  printf("{\"delivered\":[");
  int ended = 0;
  for (int i = 0; i < stream_count; i++) {
    if (streams[i].delivered < 0) printf("%snull", i ? "," : "");
    else printf("%s%.3f", i ? "," : "", streams[i].delivered);
    ended += streams[i].ended;
  }
  printf("],\"keepAliveGaps\":[");
  for (size_t i = 0; i < gap_count; i++) printf("%s%.3f", i ? "," : "", gaps[i]);
  printf("],\"ended\":%d}\n", ended);
  fflush(stdout);
}

/** Reads what a socket has; returns 0 once it reached the end or failed. */
static int read_stream(stream_t *stream) {
  static char buffer[65536];
  for (;;) {
    ssize_t got = read(stream->fd, buffer, sizeof buffer);
    if (got > 0) {
      received(stream, buffer, (size_t)got, now_ms());
      if ((size_t)got < sizeof buffer) return 1;
    } else if (got < 0 && (errno == EAGAIN || errno == EINTR)) {
      return 1;
    } else {
      stream->ended = 1;
      return 0;
    }
  }
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: sse-clients <url> <count>\n");
    return 2;
  }
  char host[256], path[8192];
  int port;
  if (sscanf(argv[1], "http://%255[^:/]:%d%8191s", host, &port, path) != 3) {
    fprintf(stderr, "sse-clients: cannot read %s\n", argv[1]);
    return 2;
  }
  stream_count = atoi(argv[2]);
  struct rlimit files = {stream_count + 64, stream_count + 64};
  if (setrlimit(RLIMIT_NOFILE, &files) != 0) fail("setrlimit");
  streams = calloc((size_t)stream_count, sizeof *streams);
  if (!streams) fail("calloc");
  char request[9000];
  int request_length = snprintf(request, sizeof request,
                                "GET %s HTTP/1.1\r\nHost: %s:%d\r\nAccept: text/event-stream\r\n\r\n", path, host, port);
  struct sockaddr_in address = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
  if (inet_pton(AF_INET, strcmp(host, "localhost") == 0 ? "127.0.0.1" : host, &address.sin_addr) != 1) {
    fprintf(stderr, "sse-clients: %s is not an IPv4 address\n", host);
    return 2;
  }
  int epoll = epoll_create1(0);
  if (epoll < 0) fail("epoll_create1");
  struct epoll_event events[1024];
  for (int opened = 0; opened < stream_count; opened += BATCH) {
    int batch = stream_count - opened < BATCH ? stream_count - opened : BATCH;
    for (int i = opened; i < opened + batch; i++) {
      stream_t *stream = &streams[i];
      stream->delivered = -1;
      stream->fd = socket(AF_INET, SOCK_STREAM, 0);
      if (stream->fd < 0) fail("socket");
      if (connect(stream->fd, (struct sockaddr *)&address, sizeof address) != 0) fail("connect");
      if (write(stream->fd, request, (size_t)request_length) != request_length) fail("write");
      if (fcntl(stream->fd, F_SETFL, O_NONBLOCK) != 0) fail("fcntl");
      struct epoll_event event = {.events = EPOLLIN, .data.u32 = (uint32_t)i};
      if (epoll_ctl(epoll, EPOLL_CTL_ADD, stream->fd, &event) != 0) fail("epoll_ctl");
    }
    for (int waiting = batch; waiting > 0;) {
      int ready = epoll_wait(epoll, events, 1024, 10000);
      if (ready <= 0) fail("waiting for headers");
      for (int e = 0; e < ready; e++) {
        stream_t *stream = &streams[events[e].data.u32];
        int had = stream->headers;
        if (!read_stream(stream)) {
          fprintf(stderr, "sse-clients: a stream closed before its headers\n");
          return 1;
        }
        if (!had && stream->headers) waiting--;
      }
    }
  }
  printf("{\"ready\":true}\n");
  fflush(stdout);
  struct epoll_event input = {.events = EPOLLIN, .data.u32 = UINT32_MAX};
  if (epoll_ctl(epoll, EPOLL_CTL_ADD, 0, &input) != 0) fail("epoll_ctl stdin");
  for (;;) {
    int ready = epoll_wait(epoll, events, 1024, 0);
    if (ready == 0) {
      struct timespec pause = {0, 200000};
      nanosleep(&pause, NULL);
      continue;
    }
    if (ready < 0 && errno == EINTR) continue;
    if (ready < 0) fail("epoll_wait");
    for (int e = 0; e < ready; e++) {
      if (events[e].data.u32 == UINT32_MAX) {
        char line[256];
        ssize_t got = read(0, line, sizeof line - 1);
        if (got <= 0 || memmem(line, (size_t)got, "stop", 4)) {
          print_result();
          return 0;
        }
        continue;
      }
      stream_t *stream = &streams[events[e].data.u32];
      if (!read_stream(stream)) epoll_ctl(epoll, EPOLL_CTL_DEL, stream->fd, NULL);
    }
  }
}
