/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * turn-proxy.h - a TCP relay on 127.0.0.1 between the library and a
 * real redis-server, counting round trips ("turns").
 *
 * A turn is a burst of client-to-server bytes that begins after the
 * server's last bytes were passed to the client (or opens a connection):
 * a client that waits for each reply before sending again makes one turn
 * per command; one that sends a pipeline makes one turn for all of it.
 * Bytes that arrive within 2 ms of each other are one burst, so a
 * pipeline that the kernel happens to split still counts once.  The
 * relay can also cut a connection in the middle of a reply, or hold each
 * reply for a while (a slow server, or a slow network).
 *
 * It runs as a thread of the test; the test's main thread drives it.
 */
#ifndef TK_TESTS_KIT_TURN_PROXY_H
#define TK_TESTS_KIT_TURN_PROXY_H

struct turn_proxy;

/* Listen on a free port of 127.0.0.1, relaying to 127.0.0.1:@to_port:
 * 0, or -1. */
int turn_proxy_start(struct turn_proxy **out, int to_port);
/* The port it listens on. */
int turn_proxy_port(const struct turn_proxy *p);
/* Turns since the start or the last reset, over all connections. */
unsigned long turn_proxy_turns(struct turn_proxy *p);
void turn_proxy_reset(struct turn_proxy *p);
/* Connections accepted so far. */
unsigned long turn_proxy_accepted(struct turn_proxy *p);
/*
 * The next server burst is passed on only in part (its first half), then
 * both ends of that connection are closed.
 */
void turn_proxy_cut_next_reply(struct turn_proxy *p);
/*
 * Every server burst from now on is held @ms before it is passed on (0:
 * none).  The relay's one thread sleeps meanwhile: bytes of its other
 * connections wait too.
 */
void turn_proxy_delay_replies(struct turn_proxy *p, unsigned int ms);
/* Close every connection and the listener; join the thread. */
void turn_proxy_stop(struct turn_proxy *p);

struct redis_kit;
/* A redis-server of the test's own (redis_kit_start(), @password or
 * NULL) and a relay to it in *@p: 0, or -1. */
int turn_proxy_redis(struct redis_kit *kit, const char *password,
		     struct turn_proxy **p);

#endif
