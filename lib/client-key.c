/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * client-key.c - the rate-limit key of a client address: its network.
 *
 * One IPv6 host usually owns a whole /64 (SLAAC, privacy addresses), so a
 * per-address limit on IPv6 is a limit it can dodge by rotating addresses;
 * keying on the masked network closes that.  IPv4 addresses, and IPv6
 * addresses that merely carry one (IPv4-mapped ::ffff:a.b.c.d, RFC 4291
 * 2.5.5.2, what a dual-stack socket reports for an IPv4 peer), are masked
 * to the IPv4 prefix and written in IPv4 form, so a client keeps one key
 * whichever socket it arrived on.
 *
 * Parsing is inet_pton(3), which takes exactly the textual forms of RFC
 * 4291 2.2 and dotted-quad IPv4 without leading zeros, spaces or signs.
 * A zone index ("fe80::1%eth0", RFC 4007 11) is checked and dropped: it
 * names an interface of this host, not a part of the client's address,
 * and servers (APR among them) append it to link-local peers.
 */
#include "error.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#define V6_DEFAULT 64
#define V4_DEFAULT 32

/* RFC 6874 2: a zone index as it may appear in text, unreserved bytes. */
static int zone_valid(const char *z)
{
	size_t i;

	for (i = 0; z[i]; i++)
		if (!((z[i] >= 'a' && z[i] <= 'z') ||
		      (z[i] >= 'A' && z[i] <= 'Z') ||
		      (z[i] >= '0' && z[i] <= '9') || z[i] == '-' ||
		      z[i] == '.' || z[i] == '_' || z[i] == '~'))
			return 0;
	return i > 0;
}

/* Clear every bit of @a (@n bytes) after the first @bits. */
static void mask(unsigned char *a, size_t n, unsigned int bits)
{
	size_t i;

	for (i = 0; i < n; i++) {
		if (bits >= 8)
			bits -= 8;
		else {
			a[i] &= (unsigned char)(0xff00u >> bits);
			bits = 0;
		}
	}
}

static const unsigned char v4_mapped[12] = { 0, 0, 0, 0, 0,    0,
					     0, 0, 0, 0, 0xff, 0xff };

static int client_key(const char *addr, unsigned int v6_prefix,
		      unsigned int v4_prefix, char *buf, size_t len)
{
	char text[INET6_ADDRSTRLEN], net[INET6_ADDRSTRLEN];
	unsigned char a[16];
	const char *zone;
	size_t n;
	int family = AF_INET6, bits, rc;

	if (!addr || (!buf && len) || v6_prefix > 128 || v4_prefix > 32)
		return -EINVAL;
	if (!v6_prefix)
		v6_prefix = V6_DEFAULT;
	if (!v4_prefix)
		v4_prefix = V4_DEFAULT;
	zone = strchr(addr, '%');
	n = zone ? (size_t)(zone - addr) : strlen(addr);
	if (n == 0 || n >= sizeof(text) || (zone && !zone_valid(zone + 1)))
		return -EINVAL;
	memcpy(text, addr, n);
	text[n] = '\0';
	if (!strchr(text, ':')) {
		/* A zone belongs to IPv6 text only. */
		if (zone || inet_pton(AF_INET, text, a) != 1)
			return -EINVAL;
		family = AF_INET;
	} else if (inet_pton(AF_INET6, text, a) != 1) {
		return -EINVAL;
	} else if (memcmp(a, v4_mapped, sizeof(v4_mapped)) == 0) {
		memmove(a, a + 12, 4);
		family = AF_INET;
	}
	bits = (int)(family == AF_INET ? v4_prefix : v6_prefix);
	mask(a, family == AF_INET ? 4 : 16, (unsigned int)bits);
	if (!inet_ntop(family, a, net, sizeof(net)))
		return -EINVAL;
	rc = snprintf(buf, len, "%s/%d", net, bits);
	return rc < 0 ? -EINVAL : rc;
}

TK_API int tk_client_key(const char *addr, unsigned int v6_prefix,
			 unsigned int v4_prefix, char *buf, size_t len)
{
	return tk__rc(client_key(addr, v6_prefix, v4_prefix, buf, len));
}
