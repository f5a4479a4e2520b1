/* amqp_confirm.c: the broker's ceiling for bench/bridge.sh: N persistent messages of SIZE
 * bytes published to the default exchange with routing key QUEUE, on a channel in confirm
 * mode, waiting for the confirms every BATCH messages (rabbitmq-c, one connection).
 * Prints messages per second.
 *
 *   amqp_confirm HOST PORT QUEUE N SIZE BATCH */
#include <amqp.h>
#include <amqp_tcp_socket.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec / 1e9;
}

int main(int argc, char** argv) {
  if (argc != 7) {
    fprintf(stderr, "usage: amqp_confirm HOST PORT QUEUE N SIZE BATCH\n");
    return 2;
  }
  long n = atol(argv[4]), size = atol(argv[5]), batch = atol(argv[6]);
  amqp_connection_state_t c = amqp_new_connection();
  amqp_socket_t* s = amqp_tcp_socket_new(c);
  if (!s || amqp_socket_open(s, argv[1], atoi(argv[2])) != AMQP_STATUS_OK) return 1;
  if (amqp_login(c, "/", 0, AMQP_DEFAULT_FRAME_SIZE, 0, AMQP_SASL_METHOD_PLAIN, "guest", "guest")
          .reply_type != AMQP_RESPONSE_NORMAL)
    return 1;
  amqp_channel_open(c, 1);
  amqp_confirm_select(c, 1);
  if (amqp_get_rpc_reply(c).reply_type != AMQP_RESPONSE_NORMAL) return 1;
  char* body = malloc(size);
  memset(body, 'x', size);
  amqp_basic_properties_t p;
  memset(&p, 0, sizeof p);
  p._flags = AMQP_BASIC_DELIVERY_MODE_FLAG;
  p.delivery_mode = 2;
  double t0 = now();
  long sent = 0, acked = 0;
  while (acked < n) {
    while (sent < n && sent - acked < batch) {
      amqp_bytes_t b = {size, body};
      if (amqp_basic_publish(c, 1, amqp_empty_bytes, amqp_cstring_bytes(argv[3]), 0, 0, &p, b))
        return 1;
      sent++;
    }
    amqp_frame_t f;
    if (amqp_simple_wait_frame(c, &f) != AMQP_STATUS_OK) return 1;
    if (f.frame_type == AMQP_FRAME_METHOD && f.payload.method.id == AMQP_BASIC_ACK_METHOD) {
      amqp_basic_ack_t* a = f.payload.method.decoded;
      acked = a->multiple ? (long)a->delivery_tag : acked + 1;
    }
    amqp_maybe_release_buffers(c);
  }
  printf("%.0f\n", n / (now() - t0));
  return 0;
}
